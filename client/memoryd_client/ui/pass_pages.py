"""The viewer's Passes pages: the runs with their counts, and one run (or change) with each
change as a readable before/after — a file's as a side-by-side diff, an entry's as its fields
— and the buttons that undo a run or a change, or accept a proposal, after a confirmation.
"""

from __future__ import annotations

import difflib
import time

from memoryd_client.pass_view import changes_span, grouped_why, state_said
from memoryd_client.status_view import next_run
from memoryd_client.ui.html import (
    Page,
    action_button,
    ago,
    badge,
    esc,
    isolated,
    link,
    offset_of,
    pager,
    table,
)
from memoryd_client.views import when
from memoryd_client.wire import HUMAN_CHANNELS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from memoryd_client.client import Client

#: Unchanged lines kept around each change of a file (the rest folds into "… n lines …").
CONTEXT = 3
#: Runs on a page of the Passes page.
RUNS = 60


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{name} {n}" for name, n in sorted(counts.items())) or "nothing to do"


def passes_page(client: Client, query: dict[str, str]) -> Page:
    listing = client.pass_list()
    offset = offset_of(query)
    page = client.pass_runs(query.get("pass") or None, limit=RUNS, offset=offset)
    runs = page["runs"]
    where = pager("passes", "runs", offset, len(runs), page["total"], RUNS,
                  **{"pass": query.get("pass")})
    running = listing.get("running")
    now = time.time()
    # a time gone by is "due" (it waits for a quiet moment or its turn), as `memory status`
    # and `memory pass list` say it, with the time itself in a tooltip
    schedule = [(esc(p["pass"]), esc(p["schedule"]),
                 f'<span title="{esc(when(p["next"]))}">{esc(next_run(p["next"], now))}</span>'
                 if p.get("next") else "off",
                 link("passes", p["last"]["run"], p["last"]["run"]) if p.get("last")
                 else "never run",
                 badge("running", "warn") if running == p["pass"] else "")
                for p in listing["passes"]]
    rows = [(link("passes", r["run"], r["run"]), esc(r["pass"]), ago(r["started"]),
             esc(r["status"]) + (" " + badge("dry run", "muted") if r.get("dry_run") else ""),
             esc(_counts(r.get("counts") or {})))
            for r in runs]
    body = ("<h1>Passes</h1>"
            "<p>Every change a pass makes is recorded: open a run to see each change and "
            "undo it.</p>"
            + table(("pass", "schedule", "next run", "last run", ""), schedule, "schedule")
            + "<h2>Runs, newest first</h2>" + where
            + (table(("run", "pass", "started", "status", "counts"), rows, "runs") + where
               if rows else "" if page["total"] else _no_run(query.get("pass"))))
    return Page("Passes", "passes", body)


def _no_run(name: str | None) -> str:
    """What the list says when it holds no run: none at all, or none of the pass asked for
    (with the way back to every run)."""
    if not name:
        return "<p>No run yet.</p>"
    return (f"<p>No run of {isolated(repr(name))}: none for this filter. "
            f'{link("passes", "Every run")}</p>')


def run_page(client: Client, target: str, query: dict[str, str] | None = None) -> Page:
    """A run with its changes (a page of them, from the query's ``offset``, when they are
    many or big), or one change (c345)."""
    shown = client.pass_show(target, offset=offset_of(query or {}) or None)
    if "changes" not in shown:  # one change
        return Page(f"Change {shown['change']}", "passes",
                    f"<h1>Change {esc(shown['change'])}</h1>"
                    f"{change_view(shown, client.channel in HUMAN_CHANNELS)}")
    # what an undo of the run takes back: its changes applied now, on every page of it (the
    # daemon counts them; this page holds some of them only)
    applied = shown["undoable"]
    took = (f", {shown['finished'] - shown['started']:.1f} s" if shown.get("finished") else "")
    head = (f"<h1>Run {esc(shown['run'])}: {esc(shown['pass'])}</h1>"
            f'<p class="summary">{esc(shown["status"])}'
            + (" (dry run: nothing changed)" if shown.get("dry_run") else "")
            + f", {esc(when(shown['started']))}{esc(took)}: "
            f"{esc(_counts(shown.get('counts') or {}))}</p>"
            + (f'<p class="bad">error: {isolated(shown["error"])}</p>' if shown.get("error")
               else ""))
    every = " (on every page of it)" if shown["changes_total"] > len(shown["changes"]) else ""
    actions = action_button(
        "undo", shown["run"], f"Undo run {shown['run']}",
        f"Undo run {shown['run']} ({shown['pass']})? Its {applied:,} applied change(s){every} are "
        "taken back as a new run (which can itself be undone); a file edited since keeps the "
        "edit.", danger=True) if applied else ""
    at_terminal = client.channel in HUMAN_CHANNELS
    changes = "".join(change_view(c, at_terminal) for c in shown["changes"]) or \
        "<p>This run changed nothing.</p>"
    return Page(f"Run {shown['run']}", "passes",
                f'{head}<div class="actions">{actions}</div>{changes}{_change_pager(shown)}')


def _change_pager(shown: dict[str, Any]) -> str:
    """Which of the run's changes the page shows, with links to the pages before and after,
    when it does not show them all."""
    span = changes_span(shown)
    if span is None:
        return ""
    offset, last, total = span
    links = []
    if offset:
        links.append(link("passes", "← first changes", shown["run"]))
    if shown.get("next") is not None:
        links.append(link("passes", f"next changes ({total - last:,} more) →", shown["run"],
                          offset=shown["next"]))
    return (f'<p class="pager">{esc(f"Changes {offset + 1:,}–{last:,} of {total:,}.")} '
            f'{" · ".join(links)}</p>')


def change_view(change: dict[str, Any], at_terminal: bool = True) -> str:
    """One change: what, why, its state, its before and after, and what may be done (a
    proposal accepted from a viewer started without a terminal: only one of lessons no agent
    wrote, as the daemon has it, which the page says)."""
    undoes = f" (undoes {change['undoes']})" if change.get("undoes") else ""
    buttons = []
    if change["state"] == "applied":
        buttons.append(action_button(
            "undo", change["change"], f"Undo change {change['change']}",
            f"Undo change {change['change']} ({change['kind']} {change['action']} of "
            f"{change['target']})? Files written together with it go back with it.",
            danger=True))
    if change["state"] == "proposed":
        buttons.append(action_button(
            "promote", change["change"], f"Accept {change['change']}",
            f"Accept proposal {change['change']}: write it into {change['target']}?"))
        if not at_terminal:
            buttons.append(
                '<p class="note">This viewer was not started at a terminal: memoryd accepts '
                "from it only a proposal of lessons no agent wrote. One of lessons an agent "
                "wrote is accepted by a person, at a terminal: <code>memory promote accept "
                f"{esc(change['change'])}</code>.</p>")
    why = f'<p class="why">Why: {isolated(grouped_why(change["why"]))}</p>' \
        if change.get("why") \
        else ""
    return (f'<section class="change" id="{esc(change["change"])}">'
            f'<div class="change-head"><strong>'
            f'{link("passes", change["change"], change["change"])}'
            f"</strong> {esc(change['kind'])} {esc(change['action'])} "
            f"{badge(state_said(change), 'ok' if change['state'] == 'applied' else 'muted')}"
            f"{esc(undoes)} <code>{isolated(change['target'])}</code></div>{why}"
            f"{_before_after(change)}"
            f'<div class="actions">{" ".join(buttons)}</div></section>')


def _before_after(change: dict[str, Any]) -> str:
    before, after = change.get("before"), change.get("after")
    if change["kind"] == "file":
        return side_by_side((before or {}).get("text", ""), (after or {}).get("text", ""))
    if change["kind"] == "entry":
        names = sorted(set(before or {}) | set(after or {}))
        rows = []
        for name in names:
            old, new = (before or {}).get(name), (after or {}).get(name)
            cls = ' class="changed"' if old != new else ""
            rows.append(f"<tr><th>{esc(name)}</th><td>{isolated(old)}</td>"
                        f"<td{cls}>{isolated(new)}</td></tr>")
        return ('<table class="fields"><thead><tr><th>field</th><th>before</th><th>after</th>'
                f'</tr></thead><tbody>{"".join(rows)}</tbody></table>')
    if after:
        rows = [f"<tr><th>{esc(name)}</th><td>{isolated(value)}</td></tr>"
                for name, value in after.items()]
        return f'<table class="fields">{"".join(rows)}</table>'
    return ""


def side_by_side(old: str, new: str, context: int = CONTEXT) -> str:
    """A file's before and after as two columns: removed lines on the left, added on the
    right, ``context`` unchanged lines around each change and the rest folded."""
    left, right = old.splitlines(), new.splitlines()
    if left == right:
        return '<p class="meta">The text is the same before and after.</p>'
    rows = []
    for group in difflib.SequenceMatcher(None, left, right, autojunk=False) \
            .get_grouped_opcodes(context):
        first = group[0]
        rows.append(f'<tr class="gap"><td colspan="4">lines {first[1] + 1} → {first[3] + 1}'
                    "</td></tr>")
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                rows += [_row(i, left[i], "", j, right[j], "")
                         for i, j in zip(range(i1, i2), range(j1, j2))]
                continue
            olds, news = left[i1:i2], right[j1:j2]
            for k in range(max(len(olds), len(news))):
                rows.append(_row(i1 + k if k < len(olds) else None,
                                 olds[k] if k < len(olds) else "", "del" if k < len(olds) else "",
                                 j1 + k if k < len(news) else None,
                                 news[k] if k < len(news) else "", "ins" if k < len(news) else ""))
    return ('<table class="diff"><colgroup><col class="n"><col><col class="n"><col></colgroup>'
            '<thead><tr><th colspan="2">before</th><th colspan="2">after</th></tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table>')


def _row(i: int | None, old: str, old_cls: str, j: int | None, new: str, new_cls: str) -> str:
    def number(n: int | None) -> str:
        return "" if n is None else str(n + 1)

    return (f'<tr><td class="n">{number(i)}</td><td class="{old_cls}">{isolated(old)}</td>'
            f'<td class="n">{number(j)}</td><td class="{new_cls}">{isolated(new)}</td></tr>')
