"""The viewer's Health page: `memory doctor`'s checks and what the daemon is still doing
(indexing, embedding, the queue, a pass running, the last problems), redrawn every few
seconds by the page's script from :func:`live`.
"""

from __future__ import annotations

import time

from memoryd_client.doctor import examine
from memoryd_client.errors import DaemonUnreachableError
from memoryd_client.status_view import duration, health_line
from memoryd_client.ui.html import Page, esc, isolated, table
from memoryd_client.views import when

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from memoryd_client.client import Client

#: How often the page asks again for the daemon's state (cheap: one status request), and for
#: the doctor's checks (which read the whole store: most of a second on 10,000 entries), in
#: milliseconds.
LIVE_MS = 2000
CHECKS_MS = 30_000


def health_page(client: Client) -> Page:
    """The page comes at once with the daemon's state; the doctor's checks follow (the
    script fetches them, then again every half minute)."""
    return Page("Health", "health", "<h1>Health</h1>"
                f'<div id="live" class="live" data-fragment="health?fragment=live" '
                f'data-every="{LIVE_MS}">{live(client)}</div>'
                '<h2>Checks</h2><div id="checks" class="live" data-fragment="health?fragment='
                f'checks" data-every="{CHECKS_MS}" data-now="1"><p class="meta">running '
                "memory doctor's checks…</p></div>")


def live(client: Client) -> str:
    """The part redrawn every few seconds: the verdict, the work in progress."""
    try:
        status = client.status()
    except DaemonUnreachableError as exc:
        return f'<p class="check-problem">{esc(exc.message)}</p>'
    return (f'<p class="now"><strong>{esc(health_line(status))}</strong> '
            f'<span class="meta">(updated {time.strftime("%H:%M:%S")})</span></p>'
            + _progress(status))


def checks(client: Client) -> str:
    """`memory doctor`'s checks, each with its fix."""
    report = examine(client)
    rows = [(f'<span class="check-{esc(c["status"])}">{esc(c["status"])}</span>',
             esc(c["check"]), esc(c["detail"])
             + (f'<br><span class="meta">fix: {esc(c["fix"])}</span>'
                if c.get("fix") and c["status"] != "ok" else ""))
            for c in report["checks"]]
    verdict = "healthy" if report["healthy"] else "not healthy"
    said = (f'<p class="summary"><strong>{verdict}</strong>: {report["problems"]} problem(s), '
            f'{report["warnings"]} warning(s) (checked {time.strftime("%H:%M:%S")})</p>')
    if report.get("not_checked"):
        said += (f"<p>Not checked without the daemon: "
                 f"{esc(', '.join(report['not_checked']))}</p>")
    return said + table(("", "check", "detail"), rows, "checks")


def _bar(what: str, done: int, total: int, eta_s: float | None) -> str:
    left = f", about {duration(eta_s)} left" if eta_s else ""
    return (f'<p>{esc(what)}: <progress max="{max(total, 1)}" value="{done}"></progress> '
            f"{done:,} of {total:,}{esc(left)}</p>")


def _progress(status: dict[str, Any]) -> str:
    """Indexing and embedding as progress bars, the queue, the pass running, problems."""
    parts = ["<h2>Work in progress</h2>"]
    ingest = status.get("ingest") or {}
    initial = ingest.get("initial") or {}
    if initial.get("started") and initial.get("finished") is None and initial.get("total"):
        parts.append(_bar("indexing the watched files", initial.get("done", 0),
                          initial["total"], initial.get("eta_s")))
    later = ingest.get("indexing") or {}
    if later.get("total"):
        parts.append(_bar("indexing changed files", later.get("done", 0), later["total"], None))
    backlog = status.get("backlog") or 0
    embedding = status.get("embedding") or {}
    done = embedding.get("done") or 0
    if backlog:
        parts.append(_bar("embedding", done, done + backlog, embedding.get("eta_s")))
    entries = status.get("entries") or {}
    parts.append(f"<p>{sum(entries.values()):,} entries ("
                 + esc(", ".join(f"{n:,} {s}" for s, n in sorted(entries.items())) or "none")
                 + f"), {status.get('vectors', 0):,} vectors; file queue "
                 f"{ingest.get('queue', 0):,}"
                 + (" (scanning)" if ingest.get("scanning") else "") + "</p>")
    running = status.get("pass_running")
    parts.append(f"<p>Pass running: {esc(running) if running else 'none'}</p>")
    errors = [s for s in ingest.get("sources") or [] if s.get("last_error")]
    if errors:
        rows = [(esc(s["name"]), isolated(s.get("last_error_path")), isolated(s["last_error"]),
                 esc(when(s.get("last_error_at")))) for s in errors]
        parts.append("<h3>Last problems</h3>"
                     + table(("source", "file", "problem", "when"), rows, "errors"))
    return "".join(parts)
