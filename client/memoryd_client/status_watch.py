"""`memory status --watch`: the daemon's state again every few seconds, until Ctrl-C.

On a terminal the view is drawn over itself in place (the terminal's alternate screen, the
cursor hidden, as `top` and `watch` do; both given back at the end, also on Ctrl-C or SIGTERM):

    memoryd 0.1.0 · pid 4242 · up 3 min · 14:02:11 · every 2 s · Ctrl-C to quit
    healthy · indexing files 1,234/5,000 (24%, ~2 min left) · embedding 250 done, 750 waiting

    indexing   [#####-------------------] 1,234/5,000 (24%) ~2 min left
    embedding  [##----------------------] 250/1,000 (25%) ~40 s left
    queue      12 files waiting (scanning)
    passes     consolidate running; next: notebooks 16:35, promote 16:35, …
    entries    1,234 active, 12 superseded · vectors 1,200 · agents designer, coder

    last errors
      14:01  notes: /home/me/notes/a.md: not valid UTF-8

Into a pipe or a file it prints one plain line a snapshot (no escape codes), and under --json
one JSON document a line (JSON Lines). A daemon that goes away is not the end of the watch: the
view says since when it has not answered and why, and the watch carries on asking until it
answers again (a restart, a daemon started after the watch). Ctrl-C ends it with exit code 0.

No curses: a handful of ANSI sequences that every terminal emulator of this century knows, so
the command needs nothing the client does not ship.
"""

from __future__ import annotations

import os
import signal
import sys
import time

from memoryd_client.command_spec import MAX_SECONDS
from memoryd_client.errors import MemorydError, UsageError
from memoryd_client.printable import json_safe, printable, unfiltered
from memoryd_client.progress_view import bar, columns
from memoryd_client.status_view import duration, health_line, keyword_only, next_run

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TextIO

    from memoryd_client.client import Client
    from memoryd_client.command_spec import Args

#: The shortest interval: the daemon answers status on its event loop, between searches.
MIN_INTERVAL_S = 0.2
#: Errors listed under "last errors", newest first.
LAST_ERRORS = 5
ENTER = "\x1b[?1049h\x1b[?25l"  # the alternate screen, the cursor hidden
LEAVE = "\x1b[?25h\x1b[?1049l"  # the cursor shown, the screen as it was
HOME, CLEAR_LINE, CLEAR_BELOW = "\x1b[H", "\x1b[K", "\x1b[J"


class Stop(Exception):
    """SIGTERM or SIGHUP during a watch: end it as Ctrl-C does."""


class Away:
    """The daemon not answering: since when, and what the last attempt said (``told``: the
    plain lines said it already)."""

    def __init__(self, since: float, error: MemorydError) -> None:
        self.since = since
        self.error = error
        self.told = ""


def watch(args: Args, client: Client) -> int:
    """Run the watch until Ctrl-C (exit 0)."""
    interval = args.interval
    if not MIN_INTERVAL_S <= interval <= MAX_SECONDS:  # nan fails both
        raise UsageError(f"memory status: --interval must be {MIN_INTERVAL_S} s or more, and "
                         "at most a week")
    out = sys.stdout
    screen = Screen(out) if not args.json and out.isatty() else None
    previous = {sig: signal.signal(sig, _stop) for sig in (signal.SIGTERM, signal.SIGHUP)}
    away: Away | None = None
    try:
        if screen is not None:
            screen.enter()
        while True:
            try:
                snapshot: dict[str, Any] | Away = client.status(sources=args.sources)
                away = None
            except MemorydError as exc:  # gone, stopping, restarting: ask again later
                away = away or Away(time.time(), exc)
                away.error = exc
                snapshot = away
            if screen is not None:
                screen.show(snapshot, interval)
                screen.wait(interval)
            else:
                print(json_line(snapshot) if args.json else plain_line(snapshot, interval),
                      file=out, flush=True)
                time.sleep(interval)
    except (KeyboardInterrupt, Stop):
        return 0
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if screen is not None:
            screen.leave()


def _stop(signum: int, frame: object) -> None:
    raise Stop


def clock(ts: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(ts))


def _away_text(away: Away, interval: float) -> str:
    return (f"no status from memoryd since {clock(away.since)}: {away.error.message}; "
            f"trying again every {interval:g} s")


def json_line(snapshot: dict[str, Any] | Away) -> str:
    import json

    if isinstance(snapshot, Away):
        return json_safe(json.dumps({"error": {"code": snapshot.error.code,
                                               "message": snapshot.error.message},
                                     "since": snapshot.since, "time": time.time()},
                                    ensure_ascii=False))
    return json_safe(json.dumps({**snapshot, "time": time.time()}, ensure_ascii=False))


def plain_line(snapshot: dict[str, Any] | Away, interval: float) -> str:
    """One snapshot as one line: the time, the health line, the queue, the pass running and
    the newest error."""
    now = clock(time.time())
    if isinstance(snapshot, Away):
        if snapshot.told == snapshot.error.message:  # said once is enough in a log
            return f"{now} still no status from memoryd (since {clock(snapshot.since)})"
        snapshot.told = snapshot.error.message
        return f"{now} {_away_text(snapshot, interval)}"
    parts = [health_line(snapshot)]
    ingest = snapshot.get("ingest") or {}
    if ingest.get("queue"):
        parts.append(f"queue {ingest['queue']:,}")
    if snapshot.get("pass_running"):
        parts.append(f"running {snapshot['pass_running']}")
    errors = last_errors(snapshot)
    if errors:
        parts.append(f"last error: {errors[0][1]}")
    return f"{now} " + " · ".join(parts)


def last_errors(status: dict[str, Any]) -> list[tuple[float | None, str]]:
    """(when, what) of the daemon's current warnings and problems and each source's last
    problem, newest first (the checks, which have no time, first)."""
    found: list[tuple[float | None, str]] = []
    for check in (status.get("health") or {}).get("checks") or []:
        found.append((None, (f"{check.get('state', 'warning')}: {check.get('check')}: "
                            f"{check.get('detail')}")))
    sources = [s for s in (status.get("ingest") or {}).get("sources") or [] if s.get("last_error")]
    sources.sort(key=lambda s: s.get("last_error_at") or 0, reverse=True)
    for source in sources:
        path = f"{source['last_error_path']}: " if source.get("last_error_path") else ""
        found.append((source.get("last_error_at"),
                      f"{source['name']}: {path}{source['last_error']}"))
    return found[:LAST_ERRORS]


def _row(label: str, text: str) -> str:
    return f"{label:<11}{text}"


def _progress(label: str, done: int, total: int, eta_s: float | None, width: int) -> str:
    left = f" ~{duration(eta_s)} left" if eta_s else ""
    numbers = f"{done:,}/{total:,} ({100 * min(done, total) // total if total else 100}%){left}"
    room = width - 11 - len(numbers) - 3
    return _row(label, f"{bar(done, total, min(room, 30))} {numbers}" if room >= 8 else numbers)


def screen_lines(snapshot: dict[str, Any] | Away, interval: float, width: int) -> list[str]:
    """The whole view of one snapshot, line by line (not yet cut to the terminal's size)."""
    now = clock(time.time())
    tail = f"{now} · every {interval:g} s · Ctrl-C to quit"
    if isinstance(snapshot, Away):
        return [f"memoryd · {tail}", "", _away_text(snapshot, interval)]
    status = snapshot
    lines = [(f"memoryd {status.get('version', '?')} · pid {status.get('pid', '?')} · up "
             f"{duration(status.get('uptime_s'))} · {tail}"), health_line(status), ""]
    ingest = status.get("ingest") or {}
    initial = ingest.get("initial") or {}
    later = ingest.get("indexing") or {}
    if initial.get("started") and initial.get("finished") is None and initial.get("total"):
        lines.append(_progress("indexing", initial.get("done", 0), initial["total"],
                               initial.get("eta_s"), width))
    elif initial.get("started") and initial.get("finished") is None:
        lines.append(_row("indexing", "scanning the watched files"))
    elif later.get("total"):
        lines.append(_progress("indexing", later.get("done", 0), later["total"], None, width))
    else:
        watched = initial.get("watched")
        lines.append(_row("indexing", "up to date" + (f" ({watched:,} files watched)"
                                                      if watched else "")))
    backlog = status.get("backlog") or 0
    embedding = status.get("embedding") or {}
    if status.get("model_loading"):
        lines.append(_row("embedding", "loading the model"))
    elif backlog:
        done = embedding.get("done") or 0
        lines.append(_progress("embedding", done, done + backlog, embedding.get("eta_s"), width))
    else:
        lines.append(_row("embedding", "up to date" if not keyword_only(status) else
                          f"off ({status.get('degraded_reason') or status['degraded']})"))
    queue = ingest.get("queue") or 0
    lines.append(_row("queue", (f"{queue:,} file{'' if queue == 1 else 's'} waiting" if queue
                                else "empty") + (" (scanning)" if ingest.get("scanning") else "")))
    upcoming = [p for p in status.get("passes") or [] if p.get("next")]
    running = f"{status['pass_running']} running" if status.get("pass_running") else "none running"
    when: dict[str, list[str]] = {}  # passes due at the same time, named together
    for p in upcoming:
        when.setdefault(next_run(p["next"], time.time()), []).append(p["pass"])
    nexts = "; ".join(f"{', '.join(names)} {at}" for at, names in when.items())
    lines.append(_row("passes", running + (f"; next: {nexts}" if nexts else "")))
    entries = status.get("entries") or {}
    counts = ", ".join(f"{n:,} {s}" for s, n in sorted(entries.items())) or "none"
    agents = ", ".join(status.get("agents") or []) or "none"
    lines.append(_row("entries", f"{counts} · vectors {status.get('vectors', 0):,} · agents "
                                 f"{agents}"))
    if status.get("rss_bytes"):
        lines.append(_row("memory", f"{status['rss_bytes'] / 1e6:.0f} MB RSS"))
    lines += ["", "last errors"]
    errors = last_errors(status)
    lines += [f"  {time.strftime('%H:%M', time.localtime(at)) if at else 'now  '}  {what}"
              for at, what in errors] or ["  none"]
    return lines


class Screen:
    """The terminal, drawn over in place. A resize (SIGWINCH) redraws the last view at once,
    cut to the new size: lines are never wider than the terminal (a wrapped line would push
    the view down) nor more than its height."""

    def __init__(self, out: TextIO) -> None:
        self.out = unfiltered(out)  # its own escape sequences; the lines made printable
        self.resized = False
        self.last: tuple[dict[str, Any] | Away, float] | None = None
        self._winch: Any = None

    def enter(self) -> None:
        self._winch = signal.signal(signal.SIGWINCH, self._on_resize)
        self.out.write(ENTER)
        self.out.flush()

    def leave(self) -> None:
        if self._winch is not None:
            signal.signal(signal.SIGWINCH, self._winch)
        self.out.write(LEAVE)
        self.out.flush()

    def _on_resize(self, signum: int, frame: object) -> None:
        self.resized = True

    def show(self, snapshot: dict[str, Any] | Away, interval: float) -> None:
        self.last = snapshot, interval
        width = columns(self.out)
        try:
            height = os.get_terminal_size(self.out.fileno()).lines or 24
        except OSError:
            height = 24
        lines = [printable(line)[:width - 1]
                 for line in screen_lines(snapshot, interval, width)]
        self.out.write(HOME + "".join(line + CLEAR_LINE + "\r\n" for line in lines[:height - 1])
                       + CLEAR_BELOW)
        self.out.flush()

    def wait(self, seconds: float) -> None:
        """Sleep, waking to redraw when the terminal is resized."""
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            time.sleep(min(left, 0.1))
            if self.resized and self.last is not None:
                self.resized = False
                self.show(*self.last)
