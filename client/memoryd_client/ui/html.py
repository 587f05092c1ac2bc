"""The viewer's HTML: the page around every view, and the fragments pages share (an entry's
line, its age, a button that asks before it acts).

Pages are rendered here, in Python, with every value escaped (:func:`esc`) and the control
characters of memory's text shown, not acting, as the `memory` command shows them
(memoryd_client.printable: an ESC as ``\\x1b``, a right-to-left override as ``\\u202e``); text
that came from an agent, a transcript or a file is isolated besides (:func:`isolated`), so that
its direction (Hebrew, Arabic) cannot reorder the page's own words next to it. The script
(static/viewer.js) only fetches fragments of them (search as you type, the live health view)
and asks for confirmation before a POST. Links are relative to ``<base href="/TOKEN/">``, so
that every request carries the token without each link spelling it.
"""

from __future__ import annotations

import html
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import quote, urlencode

from memoryd_client.errors import BadParamsError, UsageError
from memoryd_client.printable import UNSAFE, printable
from memoryd_client.views import duration, when
from memoryd_client.wire import PARAMS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: The furthest a page of a long list may start (as the daemon's ``offset``).
MAX_OFFSET = 10_000_000
#: The pages of the navigation bar: (path, title).
NAV = (("search", "Search"), ("timeline", "Timeline"), ("sessions", "Sessions"),
       ("passes", "Passes"), ("health", "Health"))


@dataclass(frozen=True)
class Page:
    """A rendered view: its title, the navigation entry it belongs to, and its body."""

    title: str
    section: str
    body: str
    status: int = 200


_UNSAFE = re.compile("[" + "".join(re.escape(chr(c)) for c in UNSAFE) + "]")


def esc(value: Any) -> str:
    """Any value as HTML text (None as an empty string), its control characters shown as
    escapes (``\\u202e``): in an attribute, a title, an option, as in the page's text."""
    return "" if value is None else html.escape(printable(str(value)), quote=True)


def attr(value: Any) -> str:
    """A value as an HTML attribute, as it is: a form field's value, given back when the form
    is sent (not for text shown: :func:`esc`)."""
    return "" if value is None else html.escape(str(value), quote=True)


def isolated(value: Any) -> str:
    """Text that came from outside (an entry's text, a name, a path, a line of a file) as
    HTML: escaped, each control character shown as its escape in a marked span, the whole
    isolated (``<bdi>``) so that its direction does not reorder what is around it."""
    if value is None:
        return ""
    text, parts, start = str(value), [], 0
    for found in _UNSAFE.finditer(text):
        parts.append(html.escape(text[start:found.start()], quote=True))
        parts.append(f'<span class="ctl" title="a control character, shown as its escape">'
                     f"{html.escape(printable(found.group()))}</span>")
        start = found.end()
    parts.append(html.escape(text[start:], quote=True))
    return f"<bdi>{''.join(parts)}</bdi>"


def link(page: str, text: str, item: str | None = None, **query: Any) -> str:
    """A link to a page of the viewer (relative to the base, which carries the token):
    ``page`` ("sessions"), and ``item``, what it shows (an id), percent-encoded whole, "/" and
    "." too: a session id from a transcript may be ``../../etc/passwd``, which must stay the
    id, not become steps of the path. An id of dots alone ("..") goes in the query instead
    (``?id=``): a browser takes even "%2E%2E" as a step up."""
    args = {k: v for k, v in query.items() if v not in (None, "")}
    href = quote(page, safe="/")
    if item is not None and item.strip("."):
        href += "/" + quote(item, safe="").replace(".", "%2E")
    elif item is not None:
        args = {"id": item, **args}
    href += f"?{urlencode(args)}" if args else ""
    return f'<a href="{esc(href)}">{isolated(text)}</a>'


def offset_of(query: dict[str, str]) -> int:
    """Where a page of a long list starts (the query's ``offset``; 0 when it says none). An
    offset that is no whole number the daemon takes (0 to :data:`MAX_OFFSET`, in ASCII
    digits: "²" is a digit to :meth:`str.isdigit`, not to :func:`int`) is refused, not read
    as another."""
    value = query.get("offset") or ""
    if not value:
        return 0
    if not (value.isascii() and value.isdigit()) or int(value) > MAX_OFFSET:
        raise UsageError(f"The offset {printable(value)!r} is no number of 0 to {MAX_OFFSET:,} "
                         "(where a page of the list starts).")
    return int(value)


#: The request parameters the pages send, in the pages' words (an error names them so).
PARAM_WORDS = {"id": "The id", "query": "The query", "agent": "The agent filter",
               "agents": "The agent filter", "kind": "The kind filter",
               "status": "The status filter", "since": "The “written” filter",
               "project": "The project filter", "session": "The session id",
               "name": "The pass", "offset": "The offset"}


def refusal(exc: BadParamsError | UsageError) -> str:
    """A refused request in the viewer's words: the parameter as the page names it (the
    kind filter), not the daemon's method (``list: kind must be …``)."""
    if isinstance(exc, BadParamsError) and exc.param and exc.detail:
        said = f"{PARAM_WORDS.get(exc.param, f'The {exc.param}')} {exc.detail}"
    else:
        method, colon, rest = exc.message.partition(": ")
        said = rest if colon and method in PARAMS else exc.message
    return said[:1].upper() + said[1:]


def pager(path: str, what: str, offset: int, shown: int, total: int, size: int,
          **query: Any) -> str:
    """Which part of a long list a page shows ("sessions 1–100 of 109, newest first"), with
    links to the newer and the older pages; nothing when the page shows the whole list."""
    if offset == 0 and shown >= total:
        return ""
    last = offset + shown
    said = (f"{what.capitalize()} {offset + 1:,}–{last:,} of {total:,}, newest first." if shown else
            f"No {what} from {offset + 1:,} on: {total:,} in all.")
    links = []
    if offset > 0:
        links.append(link(path, f"← newer {min(size, offset):,}", **query,
                          offset=max(offset - size, 0) or None))
    if last < total:
        links.append(link(path, f"older {min(size, total - last):,} →", **query, offset=last))
    return f'<p class="pager">{esc(said)} {" · ".join(links)}</p>'


def entry_link(entry_id: str, text: str | None = None) -> str:
    return link("entry", text or entry_id, entry_id)


def ago(ts: float | None, now: float | None = None) -> str:
    """How long ago, as people say it ("3 days ago"), with the date in a tooltip."""
    if not ts:
        return "-"
    seconds = max((now or time.time()) - ts, 0.0)
    said = "just now" if seconds < 60 else f"{duration(seconds)} ago"
    return (f'<time datetime="{esc(iso_time(ts))}" title="{esc(when(ts))}">{esc(said)}'
            '</time>')


def iso_time(ts: float) -> str:
    """A time as a ``<time datetime>`` says it: ISO 8601, local with its offset."""
    from datetime import datetime

    return datetime.fromtimestamp(ts).astimezone().isoformat(timespec="seconds")


def clipped(text: str, chars: int = 400) -> str:
    return text if len(text) <= chars else text[:chars - 1].rstrip() + "…"


def badge(text: str, kind: str = "") -> str:
    return f'<span class="badge {esc(kind)}">{esc(text)}</span>'


def status_badges(entry: dict[str, Any], status: bool = True) -> str:
    """An entry's state in words: not active (unless ``status`` is False: the page shows it
    already), stale, quarantined."""
    said = []
    if status and entry.get("status") and entry["status"] != "active":
        said.append(badge(entry["status"], "muted"))
    if entry.get("stale"):
        said.append(badge(f"stale: {entry['stale']}", "warn"))
    if entry.get("quarantined"):
        said.append(badge("quarantined: looks like an instruction to the model; never injected "
                          "until a person releases it", "bad"))
    return " ".join(said)


def entry_meta(entry: dict[str, Any]) -> str:
    """Whose it is and what it is, one line: agent/category, kind, key, age."""
    key = f" {entry['key']}" if entry.get("key") else ""
    note = f" ({entry['age_note']})" if entry.get("age_note") else ""
    return (f'<span class="meta">{isolated(entry.get("agent"))}/'
            f'{isolated(entry.get("category") or "-")} '
            f'· {esc(entry.get("kind"))}{isolated(key)} · written {ago(entry.get("created"))}'
            f'{esc(note)}</span>')


def action_button(action: str, target: str, label: str, confirm: str, *,
                  danger: bool = False) -> str:
    """A button that asks ``confirm`` first, then POSTs ``action`` on ``target`` (the script
    does both; without the confirmation nothing is sent)."""
    return (f'<button type="button" class="action{" danger" if danger else ""}" '
            f'data-action="{esc(action)}" data-target="{esc(target)}" '
            f'data-confirm="{esc(confirm)}">{esc(label)}</button>')


def table(headers: tuple[str, ...], rows: Sequence[tuple[str, ...]], cls: str = "") -> str:
    """A table of HTML cells (already escaped by the caller)."""
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>"
                   for row in rows)
    return f'<table class="{esc(cls)}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def layout(page: Page, base: str) -> str:
    """The whole document: head (the base with the token, the stylesheet, the script),
    navigation, the page's body."""
    nav = "".join(
        f'<a href="{path}"{" class=current" if path == page.section else ""}>{title}</a>'
        for path, title in NAV)
    return (
        "<!doctype html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f'<base href="{esc(base)}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta name="referrer" content="no-referrer">'
        # no icon: else the browser asks for /favicon.ico, which has no token (403)
        '<link rel="icon" href="data:,">'
        f"<title>{esc(page.title)} · memoryd</title>"
        '<link rel="stylesheet" href="static/viewer.css">'
        '<script src="static/viewer.js" defer></script>'
        "</head><body>"
        f'<header><span class="brand">memoryd</span><nav>{nav}</nav></header>'
        f'<main id="page" data-section="{esc(page.section)}">{page.body}</main>'
        '<div id="notice" role="status" hidden></div>'
        "</body></html>"
    )


def message(title: str, text: str, section: str = "", status: int = 200) -> Page:
    """A page that only says something (not found, the daemon is down)."""
    return Page(title, section, f'<h1>{esc(title)}</h1><p class="message">{esc(text)}</p>',
                status)
