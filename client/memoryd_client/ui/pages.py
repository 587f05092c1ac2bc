"""The viewer's pages about entries and sessions: Search, Entry, Sessions and one session.

Each page is a function of the client and the request's query (a dict of single values) that
returns an :class:`memoryd_client.ui.html.Page`; what it shows comes from the daemon's read
methods (search with ``explain``, list, get, history, sessions, session, explain).
"""

from __future__ import annotations

from memoryd_client.errors import BadParamsError, UsageError
from memoryd_client.ui.html import (
    Page,
    action_button,
    ago,
    attr,
    badge,
    clipped,
    entry_link,
    entry_meta,
    esc,
    isolated,
    link,
    offset_of,
    pager,
    refusal,
    status_badges,
    table,
)
from memoryd_client.views import (
    no_directory,
    unknown_agents,
    unknown_category,
    usage_words,
    when,
)
from memoryd_client.wire import HUMAN_CHANNELS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from memoryd_client.client import Client

KINDS = ("fact", "lesson", "feedback", "note", "turn", "summary")
#: The time filter's choices: (value, words).
SINCE = (("", "any time"), ("1d", "last day"), ("7d", "last week"), ("30d", "last month"),
         ("365d", "last year"))
STATUSES = (("", "active"), ("any", "any status"), ("superseded", "superseded"),
            ("forgotten", "forgotten"), ("archived", "archived"))
#: Hits asked for: enough to see past the matches, few enough to answer as one types (and
#: entries on a page of the newest, without a query).
HITS = 20
#: Sessions on a page of the Sessions list.
SESSIONS = 100


def _select(name: str, value: str, options: list[tuple[str, str]], label: str) -> str:
    shown = "".join(f'<option value="{esc(v)}"{" selected" if v == value else ""}>{esc(w)}'
                    "</option>" for v, w in options)
    return f'<label>{esc(label)} <select name="{name}">{shown}</select></label>'


def _filters(client: Client, query: dict[str, str]) -> dict[str, Any]:
    """The search's and list's filters from the page's query."""
    agent = query.get("agent") or ""
    return {"agents": [agent] if agent else ["*"], "kind": query.get("kind") or None,
            "project": query.get("project") or None, "since": query.get("since") or None,
            "status": query.get("status") or None}


def search_page(client: Client, query: dict[str, str]) -> Page:
    """The form (a query and its filters) and the results under it."""
    agents = client.status().get("agents") or []
    form = (
        '<form id="search" action="search" method="get" role="search">'
        f'<input type="search" name="q" value="{attr(query.get("q"))}" autofocus '
        'placeholder="ask in words: what did we decide about the speech bubble?" '
        'aria-label="query" autocomplete="off">'
        '<div class="filters">'
        + _select("agent", query.get("agent", ""), [("", "every agent")]
                  + [(a, a) for a in agents], "agent")
        + _select("kind", query.get("kind", ""), [("", "every kind")]
                  + [(k, k) for k in KINDS], "kind")
        + _select("since", query.get("since", ""), list(SINCE), "written")
        + _select("status", query.get("status", ""), list(STATUSES), "status")
        + f'<label>project <input name="project" value="{attr(query.get("project"))}" '
        'placeholder="a directory of the project"></label>'
        '<noscript><button>Search</button></noscript></div></form>'
    )
    try:
        results, status = search_results(client, query), 200
    except (BadParamsError, UsageError) as exc:  # a filter of the address: the form stays
        results, status = _refused(exc), 400
    return Page("Search", "search", f'<h1>Search</h1>{form}<section id="results">'
                f"{results}</section>", status)


def _refused(exc: BadParamsError | UsageError) -> str:
    return f'<p class="message refused">{esc(refusal(exc))}</p>'


def search_fragment(client: Client, query: dict[str, str]) -> str:
    """The results as the script fetches them while one types: a filter refused is said
    in their place."""
    try:
        return search_results(client, query)
    except (BadParamsError, UsageError) as exc:
        return _refused(exc)


def search_results(client: Client, query: dict[str, str]) -> str:
    """The results alone (the script fetches them as one types): the hits of the query, or
    the newest entries when there is none."""
    filters = _filters(client, query)
    text = (query.get("q") or "").strip()
    if not text:
        offset = offset_of(query)
        page = client.list_entries(limit=HITS, offset=offset,
                                   **{k: v for k, v in filters.items() if v is not None})
        items = "".join(_entry_item(entry) for entry in page["entries"])
        shown, total = len(page["entries"]), page["total"]
        named = {k: query.get(k) for k in ("agent", "kind", "since", "status", "project")}
        where = pager("search", "entries", offset, shown, total, HITS, **named)
        said = ("No query: the newest entries." if where else
                f"No query: all {total:,} entries, newest first." if total else
                "No entries match the filters." if any(named.values()) else "No entries yet.")
        return (f'<p class="summary">{esc(said)}</p>'
                + _notes(page, query.get("project"), found=bool(total))
                + f'{where}<ol class="hits">{items}</ol>{where}')
    reply = client.search(text, limit=HITS, explain=True,
                          **{k: v for k, v in filters.items() if v is not None})
    hits = reply["hits"]
    matches = sum(1 for h in hits if h.get("match"))
    threshold = reply.get("threshold")
    said = (f"{matches} match{'es' if matches != 1 else ''} among {len(hits)} ranked "
            f"hit{'s' if len(hits) != 1 else ''}." if hits else "Nothing found.")
    if threshold is not None:
        said += (f" A hit is a match when it is at least {threshold:.0%} likely to be "
                 "relevant (search.match_precision).")
    if reply.get("degraded"):
        said += " Keyword-only: the embedding model is not loaded."
    items = "".join(_hit_item(hit) for hit in hits)
    return (f'<p class="summary">{esc(said)}</p>'
            + _notes(reply, query.get("project"), found=bool(hits))
            + f'<ol class="hits">{items}</ol>')


def _notes(reply: dict[str, Any], project: str | None, found: bool) -> str:
    """What the `memory` command notes of the filters: an agent or a category with no entries
    at all, and (when nothing was found) a project filter that names no directory."""
    said = [unknown_agents(reply), unknown_category(reply),
            None if found else no_directory(project)]
    return "".join(f'<p class="note">Note: {esc(note)}.</p>' for note in said if note)


def _hit_item(hit: dict[str, Any]) -> str:
    relevance = hit["score"]["relevance"]
    decision = ('<span class="decision match">match</span>' if hit.get("match") else
                '<span class="decision">not a match: below the threshold</span>')
    why = hit.get("why") or []
    because = (f'<p class="why">Why it ranks here: {esc("; ".join(why))}.</p>' if why else
               '<p class="why">Why it ranks here: only weakly related to the query.</p>')
    return (f'<li class="hit{" is-match" if hit.get("match") else ""}">'
            f'<div class="hit-head"><span class="relevance" title="probability that it is '
            f'relevant">{relevance:.0%} likely relevant</span> {decision} {entry_meta(hit)} '
            f'{entry_link(hit["id"], "open")}</div>'
            f'<p class="text">{isolated(clipped(hit["text"]))}</p>{because}'
            f'<p class="state">{status_badges(hit)}</p></li>')


def _entry_item(entry: dict[str, Any]) -> str:
    return (f'<li class="hit"><div class="hit-head">{entry_meta(entry)} '
            f'{entry_link(entry["id"], "open")}</div>'
            f'<p class="text">{isolated(clipped(entry["text"]))}</p>'
            f'<p class="state">{status_badges(entry)}</p></li>')


# -- Entry ------------------------------------------------------------------------------------

def entry_page(client: Client, entry_id: str) -> Page:
    """One entry: its text, where it came from, its versions and history, what became of it
    in sessions, and what a person may do about it."""
    entry = client.get(entry_id)
    history = client.history(entry["id"])
    provenance = [
        ("agent", isolated(entry["agent"])),
        ("category", isolated(entry.get("category") or "-")),
        ("kind", esc(entry["kind"]) + (f" ({esc(entry['polarity'])})"
                                       if entry.get("polarity") else "")),
        ("key", isolated(entry.get("key") or "-")),
        ("project", isolated(entry.get("project") or "global (every project)")),
        ("written by", isolated(entry.get("writer") or "-")),
        ("channel", esc(entry.get("via"))),
        ("session", link("sessions", entry["session"], entry["session"])
         if entry.get("session") else "-"),
        ("source file", isolated(entry["source"]) + (
            f" lines {entry['line_start']}-{entry['line_end']}" if entry.get("line_start")
            else "") if entry.get("source") else "-"),
        ("created", f"{esc(when(entry['created']))} ({ago(entry['created'])})"
         + (f" · {esc(entry['age_note'])}" if entry.get("age_note") else "")),
        ("updated", esc(when(entry.get("updated")))),
        ("confidence", f"{entry['confidence']:.2f}"),
        ("tags", ", ".join(isolated(t) for t in entry.get("tags") or []) or "-"),
        ("seen", f"{entry.get('occurrences') or 1} time(s)"),
    ]
    if entry.get("superseded_by"):
        provenance.append(("superseded by", entry_link(entry["superseded_by"])))
    rows = "".join(f"<tr><th>{name}</th><td>{value}</td></tr>" for name, value in provenance)
    usage = entry.get("usage")
    body = (
        f'<h1>Entry <code>{esc(entry["id"])}</code></h1>'
        f'<p class="state">'
        f'{badge(entry["status"], "ok" if entry["status"] == "active" else "muted")}'
        f' {status_badges(entry, status=False)}</p>'
        f'<blockquote class="entry-text">{isolated(entry["text"])}</blockquote>'
        f'<div class="actions">{_entry_actions(entry, client.channel in HUMAN_CHANNELS)}</div>'
        f"{_forgotten(client, entry, history)}"
        f'<h2>Provenance</h2><table class="facts">{rows}</table>'
        f'<h2>Usage</h2><p class="usage">{esc(usage_words(usage)) if usage else "no usage record"}'
        "</p>"
        f"<h2>History</h2>{_versions(history, entry['id'])}{_events(history, entry['id'])}"
    )
    return Page(f"Entry {entry['id']}", "search", body)


def _entry_actions(entry: dict[str, Any], at_terminal: bool) -> str:
    """What a person may do about the entry from here: a quarantined one is released by a
    person at a terminal only (the daemon refuses another channel), so a viewer started
    without one says where instead of offering a button the daemon would refuse."""
    buttons = []
    if entry.get("quarantined") and at_terminal:
        buttons.append(action_button(
            "release", entry["id"], "Release",
            "Release this entry? It was held back because its text looks like an instruction "
            "to the model; once released it can be injected into the agent's sessions.",
            danger=True))
    elif entry.get("quarantined"):
        buttons.append(f'<p class="note">A person releases a quarantined entry, at a terminal: '
                       f"this viewer was not started at one. Type <code>memory release "
                       f"{esc(entry['id'])}</code> there, or start <code>memory ui</code> "
                       "there to release it from this page.</p>")
    if entry.get("status") == "active":
        buttons.append(action_button(
            "forget", entry["id"], "Forget",
            "Forget this entry? It stops being searched and injected; its history keeps it, "
            "and the Passes page can undo the forget.", danger=True))
    return " ".join(buttons)


def _forgotten(client: Client, entry: dict[str, Any], history: dict[str, Any]) -> str:
    """Who forgot a forgotten entry, and the run that takes the forget back (``memory
    forget`` records one: its scope names the entry)."""
    if entry.get("status") != "forgotten":
        return ""
    events = [e for e in history.get("events") or [] if e["action"] == "forgotten"]
    who = (f"Forgotten by {isolated(events[-1].get('actor') or 'someone')} "
           f"{ago(events[-1]['ts'])}." if events else "Forgotten.")
    runs = client.pass_runs("forget", entry=entry["id"], limit=1)["runs"]
    if not runs:
        return f'<p class="message">{who}</p>'
    run = runs[0]["run"]
    return (f'<p class="message">{who} {link("passes", "Run " + run, run)} did it; undoing it '
            "makes the entry active again, with its id, date and history.</p>"
            + action_button("undo", run, f"Undo the forget ({run})",
                            f"Undo run {run}: make this entry active again?"))


def _versions(history: dict[str, Any], current: str) -> str:
    versions = history.get("entries") or []
    if len(versions) < 2:
        return ""
    items = "".join(
        f'<li>{entry_link(v["id"]) if v["id"] != current else "<strong>this one</strong>"} '
        f'{badge(v["status"], "muted" if v["status"] != "active" else "ok")} '
        f'{isolated(clipped(v["text"], 200))} <span class="meta">{ago(v["created"])}</span></li>'
        for v in versions)
    return f"<h3>Versions</h3><ol class=versions>{items}</ol>"


def _changed(before: dict[str, Any] | None, after: dict[str, Any] | None) -> str:
    """What an event changed, in a few words (HTML: each value isolated, so that a value in a
    right-to-left script does not turn the arrow and the other value around)."""
    if before is None:
        return "written"
    if after is None:
        return "removed"
    names = [n for n in sorted(set(before) | set(after))
             if before.get(n) != after.get(n) and n not in ("updated",)]
    parts = []
    for name in names[:4]:
        old, new = before.get(name), after.get(name)
        if isinstance(old, str) and isinstance(new, str) and len(old) + len(new) > 80:
            parts.append(f"{esc(name)} changed")
        else:
            parts.append(f"{esc(name)}: {isolated(repr(old))} → {isolated(repr(new))}")
    return "; ".join(parts) or "no field changed"


def _events(history: dict[str, Any], current: str) -> str:
    """The events of every version, each naming its version (as `memory history` does): a
    superseded entry's history holds the new version's writing too."""
    rows = [(esc(when(e["ts"])), esc(e["action"]), _version(e.get("id"), current),
             isolated(e.get("actor") or "-"), _changed(e.get("before"), e.get("after")))
            for e in history.get("events") or []]
    if not rows:
        return "<p>No events.</p>"
    return "<h3>Events</h3>" + table(("when", "what", "version", "who", "change"), rows,
                                     "events")


def _version(entry_id: str | None, current: str) -> str:
    if not entry_id:
        return "-"
    if entry_id == current:
        return f'<code>{esc(entry_id)}</code> <span class="meta">(this one)</span>'
    return f"<code>{entry_link(entry_id)}</code>"


# -- Sessions ---------------------------------------------------------------------------------

def sessions_page(client: Client, query: dict[str, str]) -> Page:
    agent = query.get("agent") or None
    offset = offset_of(query)
    page = client.sessions(agent=agent, limit=SESSIONS, offset=offset)
    sessions = page["sessions"]
    where = pager("sessions", "sessions", offset, len(sessions), page["total"], SESSIONS,
                  agent=agent)
    rows = [(link("sessions", s["id"][:12], s["id"]), isolated(s["agent"]),
             ago(s.get("last_seen")), esc(s.get("user_messages", 0)),
             isolated(s.get("project") or s.get("cwd") or "-")) for s in sessions]
    none = (f"<p>No session of agent {isolated(repr(agent))}: none for this filter. "
            f'{link("sessions", "Every session")}</p>' if agent else
            "<p>No agent session recorded yet: the hooks record them (memory hook install "
            "claude-code).</p>")
    body = "<h1>Sessions</h1>" + where + (
        table(("session", "agent", "last seen", "user messages", "project"), rows, "sessions")
        + where if rows else "" if page["total"] else none)
    return Page("Sessions", "sessions", body)


def session_page(client: Client, session_id: str) -> Page:
    """One session: what was injected (as the agent read it), why, what became of it, the
    transcript steps that show it, and the entries taken from the session."""
    shown = client.session(session_id)
    s = shown["session"]
    explained = client.explain(s["id"])["injections"]
    facts = [("agent", isolated(s["agent"])), ("harness", esc(s.get("harness"))),
             ("project", isolated(s.get("project") or s.get("cwd") or "-")),
             ("transcript", isolated(s.get("transcript_path") or "-")),
             ("started", esc(when(s.get("started")))),
             ("last seen", esc(when(s.get("last_seen")))),
             ("state", esc(f"closed {when(s['closed'])}" if s.get("closed") else "open")),
             ("user messages", esc(s.get("user_messages")))]
    rows = "".join(f"<tr><th>{n}</th><td>{v}</td></tr>" for n, v in facts)
    injections = "".join(_injection(i) for i in explained) or \
        "<p>Nothing was injected into this session.</p>"
    taken = "".join(_entry_item(e) for e in shown.get("entries") or [])
    body = (f'<h1>Session <code>{isolated(s["id"])}</code></h1><table class="facts">{rows}</table>'
            f"<h2>Injected</h2>{injections}"
            f"<h2>Entries taken from this session</h2>"
            + (f'<ol class="hits">{taken}</ol>' if taken else "<p>None.</p>"))
    return Page(f"Session {s['id'][:12]}", "sessions", body)


def _outcome(item: dict[str, Any]) -> str:
    """What became of an injected entry, said once ("broken: Bash: pip install …")."""
    outcome, why = item.get("outcome") or "", item.get("outcome_why") or ""
    return why if why.startswith(outcome) else f"{outcome}: {why}" if why else outcome


def _injection(injection: dict[str, Any]) -> str:
    items = []
    for item in injection.get("items") or []:
        outcome = item.get("outcome")
        excerpt = "".join(f"<li><code>{isolated(step.get('what'))}</code>"
                          + (f" <span class=meta>{isolated(step.get('why'))}</span>"
                             if step.get("why") else "") + "</li>"
                          for step in item.get("outcome_evidence") or [])
        # an entry's item links to it; a memory file's names its path, unless its text (the
        # line "- PATH: what it holds" the agent read) does already
        path = item.get("path") or ""
        target = entry_link(item["id"], "entry") if item.get("id") else \
            "" if path in (item.get("text") or "") else isolated(path)
        items.append(
            f'<li class="item"><p class="text">{isolated(item.get("text"))} {target}</p>'
            f'<p class="why">Why: {isolated(item.get("reason"))}</p>'
            + (f'<p class="outcome {esc(outcome)}">Outcome: {isolated(_outcome(item))}</p>'
               if outcome else "")
            + (f'<p class="meta">From the transcript:</p><ul class="excerpt">{excerpt}</ul>'
               if excerpt else "") + "</li>")
    return (f'<section class="injection"><h3>{esc(injection.get("event"))} · '
            f'{esc(when(injection.get("ts")))} · {esc(injection.get("chars"))} characters</h3>'
            f'<ol class="items">{"".join(items)}</ol></section>')
