"""``memory list``, ``recent``, ``export`` and ``import``: entries without a query, and moving
them between stores.

- list/recent: the daemon's ``list`` method, newest first, with search's filters.
- export: every page of ``list`` (oldest first) as JSONL, one entry per line with its
  provenance (writer, via, session, source file and lines, message id, dates).
- import: the lines of an export (or any JSONL of maps with agent, category, text) through the
  daemon's write path, ``remember_many`` in batches: exact duplicates are not stored again,
  every stored entry is in its agent's ledger and history, dated by its ``created``
  (``via: import``). A line whose entry is here already, imported before (or this store's
  own: same agent, text and ``created``) and since forgotten, superseded or archived, is not
  stored again: a decision the import must not overrule. Entries that are not active,
  entries indexed from watched files (their file is the source of truth: watch it instead)
  and a team's (its repository is: `memory sync add-shared`) are skipped and counted. Each
  batch is one agent's, so that a refused batch stored nothing (the client sends a batch of
  several agents as one request each).
"""

from __future__ import annotations

import sys

from memoryd_client.printable import json_safe
from memoryd_client.wire import MAX_FRAME_BYTES, TEAM_PREFIX

TYPE_CHECKING = False  # see memoryd_client/__init__.py

if TYPE_CHECKING:
    from collections.abc import Iterator
    from contextlib import AbstractContextManager as ContextManager
    from typing import Any, Literal, TextIO

    from memoryd_client.client import Client
    from memoryd_client.command_spec import Args

#: The lines an import's message names, of those whose secrets were redacted (--json: all).
SHOWN_LINES = 10
PAGE = 1000  # entries per list call in an export (the daemon ends a page sooner by bytes)
BATCH = 500  # entries per remember_many call in an import ...
#: ... and their lines' bytes: a request is one frame (wire.MAX_FRAME_BYTES), and 500 long
#: entries are more. A line's JSON is about the size of its entry packed (msgpack is no
#: longer than JSON, but for a few bytes of each number): half a frame leaves room to spare.
BATCH_BYTES = MAX_FRAME_BYTES // 2
#: What an import carries over from an exported entry (the rest is recomputed, or provenance
#: that only the original store can vouch for: id, hash, updated, source file and lines, and
#: writer and via, which the daemon sets: who imported it, through which channel).
IMPORTED_FIELDS = ("agent", "category", "text", "kind", "key", "tags", "confidence", "project",
                   "session", "polarity", "created", "message_id")
EXPORT_DROPS = ("age_note",)
#: The views of `memory list --usage` (memoryd.store.usage.RANKINGS, and all of them).
USAGE_VIEWS = ("broken", "followed", "unused", "all")
USAGE_TITLES = {
    "broken": "most broken (sessions broken / sessions injected into)",
    "unused": "never used (injected into judged sessions, never followed nor broken)",
    "followed": "most followed (sessions followed / sessions injected into)",
}


def named_agents(given: str | None, command: str) -> list[str]:
    """The agents a comma-separated AGENT names (None: every one, ``*``); one that names
    none (``''``, ``','``: an unset variable) is a usage error, not every agent's entries."""
    if given is None:
        return ["*"]
    names = [name for name in given.split(",") if name.strip()]
    if not names:
        from memoryd_client.errors import UsageError

        raise UsageError(f"memory {command}: the agent {given!r} names no agent ('*' is every "
                         "agent)")
    return names


def filters(args: Args, agents: str | None, command: str) -> dict[str, Any]:
    from memoryd_client.project import here_directory

    return {
        "agents": named_agents(agents, command),
        "category": args.category, "kind": args.kind, "tags": args.tags,
        "project": args.project,  # a relative one is resolved by the client
        "cwd": here_directory(args.project) if args.here else None,  # never with --project
        "since": args.since, "until": args.until, "status": args.status,
    }


def list_page(args: Args, client: Client) -> Any:
    """`memory list` and `recent`: a page of entries, newest (or --oldest) first."""
    return client.list_entries(**filters(args, args.agent, "list"), limit=args.limit,
                               offset=args.offset,
                               order="oldest" if args.oldest else "newest")


def list_or_usage(args: Args, client: Client) -> Any:
    """`memory list`: a page of entries, or with --usage the entries ranked by use."""
    return usage_ranking(args, client) if args.usage else list_page(args, client)


def print_list_or_usage(result: dict[str, Any], args: Args) -> None:
    (print_usage if args.usage else print_page)(result, args)


def usage_ranking(args: Args, client: Client) -> Any:
    """`memory list --usage [VIEW]`: entries ranked by use (the daemon's ``usage``)."""
    from memoryd_client.errors import UsageError

    other = [name for name, default in (("category", None), ("tags", None), ("project", None),
                                        ("here", False), ("since", None), ("until", None),
                                        ("status", "active"), ("offset", 0), ("oldest", False))
             if getattr(args, name) != default]
    if other:
        raise UsageError(f"memory list --usage: ranks active entries by AGENT, --kind and "
                         f"--limit only; not with --{other[0]}")
    limit = args.limit if args.limit != 20 else 10  # per view
    return client.call("usage", {"by": args.usage, "limit": limit, "kind": args.kind,
                                 "agents": named_agents(args.agent, "list")})


def print_usage(result: dict[str, Any], args: Args) -> None:
    from memoryd_client.views import entry_line

    for view in ("broken", "unused", "followed"):
        if view not in result:
            continue
        print(f"{USAGE_TITLES[view]}:")
        if not result[view]:
            print("  (none)")
        for entry in result[view]:
            usage = entry["usage"]
            count = {"broken": usage["broken"], "followed": usage["followed"],
                     "unused": usage["injected"]}[view]
            share = f"{count}/{usage['injected']}" if view != "unused" else f"{count}"
            print(f"  {share:>7}  {entry_line(entry)}")


def print_page(result: dict[str, Any], args: Args) -> None:
    import time

    from memoryd_client.views import entry_line, note_no_directory, note_unknown_agents

    for entry in result["entries"]:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(entry["created"]))
        print(f"{when}  {entry_line(entry)}")
    shown = len(result["entries"])
    more = (f"; next page: --offset {args.offset + shown}"
            if args.offset + shown < result["total"] else "")
    if shown:
        print(f"entries {args.offset + 1}-{args.offset + shown} of {result['total']}{more}",
              file=sys.stderr)
    elif result["total"]:
        print(f"no entries from --offset {args.offset}: {result['total']} in all",
              file=sys.stderr)
    else:
        print("no entries", file=sys.stderr)
        note_no_directory(args.project)
    note_unknown_agents(result)


def iter_entries(client: Client, **params: Any) -> Iterator[dict[str, Any]]:
    """Every entry the filters select, oldest first, a page at a time."""
    cursor = None
    while True:
        page = client.list_entries(**params, order="oldest", limit=PAGE, cursor=cursor)
        yield from page["entries"]
        cursor = page["next"]
        if cursor is None:
            return


def export(args: Args, client: Client) -> int:
    """Its own output: JSONL to stdout or --output, the count on stderr (not one reply). A
    file is written whole or not at all (a temporary file beside it, renamed at the end: an
    export that fails midway leaves no truncated backup looking complete, and an older file of
    that name as it was); stdout, or a file that is no regular file, is told it is cut short
    (but for a reader of stdout that went away, `memory export | head`: it wanted no more,
    and the command stops quietly)."""
    import json

    from memoryd_client.atomic_file import replaced_at_end
    from memoryd_client.views import count as counted

    count = 0
    output = None if args.output == "-" else args.output  # as import reads "-"
    selected = filters(args, args.agent, "export")  # a usage error: before anything is written
    with replaced_at_end(output, sys.stdout) as (out, whole):
        try:
            for entry in iter_entries(client, **selected):
                line = {k: v for k, v in entry.items() if k not in EXPORT_DROPS}
                out.write(json_safe(json.dumps(line, ensure_ascii=False, sort_keys=True))
                          + "\n")
                count += 1
        except BaseException as exc:
            left = isinstance(exc, BrokenPipeError) and output is None  # (cli.stdout_closed)
            if (whole or count) and not left:  # (a refused first page wrote nothing)
                print(f"memory export: stopped after {counted(count, 'entry', 'entries')}; " + (
                    f"nothing was written to {output}" if whole else
                    f"the {'output' if output is None else output} is incomplete"),
                    file=sys.stderr)
            raise
    print(f"exported {counted(count, 'entry', 'entries')}"
          + (f" to {args.output}" if output else ""),
          file=sys.stderr)
    return 0


def import_file(args: Args, client: Client) -> dict[str, Any]:
    """`memory import FILE`: every line through the write path, in batches; the reply counts
    what was stored, was already there, was skipped, and names the refused lines."""
    importer = _Importer(client, args.file)
    # bytes that are not UTF-8 are kept as such (surrogates), so that their line is refused
    # alone instead of the import stopping there
    stdin: TextIO = sys.stdin
    if args.file == "-" and hasattr(sys.stdin, "buffer"):
        import io

        stdin = io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="surrogateescape")
    with _opened(None if args.file == "-" else args.file, "r", stdin,
                 errors="surrogateescape") as source:
        for number, line in enumerate(source, 1):
            # the byte-order mark an editor on Windows begins a file with is not the line's
            importer.add(number, line.removeprefix("\ufeff") if number == 1 else line)
        importer.flush()
    return {"file": args.file, "counts": importer.counts, "refused": importer.refused,
            "redacted": importer.redacted}


def print_import(result: dict[str, Any]) -> None:
    for problem in result["refused"]:
        print(f"line {problem['line']}: refused: {problem['reason']}", file=sys.stderr)
    c = result["counts"]
    skipped = [f"{c['skipped_inactive']} not active", f"{c['skipped_watched']} from watched files"]
    if c["skipped_team"]:
        skipped.append(f"{c['skipped_team']} of a team (`memory sync add-shared` brings a "
                       "team's entries)")
    if c["skipped_decided"]:
        skipped.append(f"{c['skipped_decided']} already imported (since forgotten, superseded "
                       "or archived)")
    # the same text dated otherwise: another sighting of the entry, counted on it
    again = (f", counted again {c['seen_again']} (the text of an entry here, dated otherwise: "
             "another sighting of it)") if c.get("seen_again") else ""
    print(f"imported {result['file']}: stored {c['stored']}, already there {c['duplicate']}"
          f"{again}, skipped {', '.join(skipped[:-1])} and {skipped[-1]}, refused "
          f"{c['refused']}")
    redacted = result.get("redacted") or []
    if redacted:  # as `memory store` says it: the file imported still holds them
        from memoryd_client.views import count as counted

        kinds = sorted({kind for line in redacted for kind in line["kinds"]})
        lines = ", ".join(str(line["line"]) for line in redacted[:SHOWN_LINES])
        more = f" and {len(redacted) - SHOWN_LINES} more" if len(redacted) > SHOWN_LINES else ""
        print(f"redacted before it was stored: {', '.join(kinds)}, in "
              f"{counted(len(redacted), 'entry', 'entries')} (line{'s' * (len(redacted) > 1)} "
              f"{lines}{more} of {result['file']}, which still holds them)", file=sys.stderr)


class _Importer:
    """One import: the batch being filled, what became of each line, how far it is."""

    #: the terminal's progress line (memoryd_client.progress_view.ProgressLine), or None
    progress: Any

    def __init__(self, client: Client, file: str) -> None:
        self.client = client
        self.file = file
        self.counts = {"stored": 0, "duplicate": 0, "seen_again": 0, "skipped_inactive": 0,
                       "skipped_watched": 0, "skipped_team": 0, "skipped_decided": 0,
                       "refused": 0}
        self.refused: list[dict[str, Any]] = []
        #: the lines whose secrets the daemon redacted: {line, kinds}
        self.redacted: list[dict[str, Any]] = []
        #: each agent's entries waiting to be sent (line number, entry), and their lines' bytes
        self.batches: dict[str, list[tuple[int, dict[str, Any]]]] = {}
        self.sizes: dict[str, int] = {}
        self.read = 0  # the lines read
        self.progress = client.progress
        if self.progress is not None:
            self.progress.prefix = f"importing {file}"
            self.progress.total = _lines(file)

    def add(self, number: int, line: str) -> None:
        """Line ``number`` of the file: refused, skipped, or into the batch."""
        if not line.strip():
            return
        self.read += 1
        entry, problem = _entry_of(line)
        size = len(line.encode("utf-8", "surrogateescape"))
        if problem is None and size > BATCH_BYTES:
            problem = (f"a line of {size:,} bytes; a request carries {BATCH_BYTES:,} bytes of "
                       "entries at most")
        if problem is not None:
            self._refuse(number, problem)
        elif entry.get("status", "active") != "active":
            self.counts["skipped_inactive"] += 1
        elif entry.get("via") == "watch":
            self.counts["skipped_watched"] += 1
        elif str(entry["agent"]).startswith(TEAM_PREFIX):
            self.counts["skipped_team"] += 1
        else:
            item = {k: entry[k] for k in IMPORTED_FIELDS if entry.get(k) is not None}
            item.setdefault("category", "")
            item["force"] = True  # near duplicates were kept where they come from
            agent = str(entry["agent"])
            if self.sizes.get(agent, 0) + size > BATCH_BYTES:
                self._flush(agent)
            self.batches.setdefault(agent, []).append((number, item))
            self.sizes[agent] = self.sizes.get(agent, 0) + size
            if len(self.batches[agent]) >= BATCH:
                self._flush(agent)

    def flush(self) -> None:
        """Send what waits."""
        for agent in self.batches:
            self._flush(agent)

    def _flush(self, agent: str) -> None:
        """Send one agent's batch; count what became of each of its entries."""
        batch = self.batches.get(agent)
        self.sizes[agent] = 0
        if not batch:
            return
        if self.progress is not None:  # the lines before the ones waiting are done
            self.progress.offset = self.read - sum(map(len, self.batches.values()))
        for (number, _), result in zip(batch, self._send(batch)):
            if result.get("redacted"):  # (a daemon before 2026-12 does not say)
                self.redacted.append({"line": number, "kinds": list(result["redacted"])})
            if result.get("refused"):
                self._refuse(number, result["refused"])
            elif result["stored"]:
                self.counts["stored"] += 1
            elif result.get("duplicate") == "inactive":  # imported before, and forgotten,
                self.counts["skipped_decided"] += 1       # superseded or archived since
            elif result.get("duplicate") == "seen again":  # its text here, dated otherwise
                self.counts["seen_again"] += 1
            else:
                self.counts["duplicate"] += 1
        batch.clear()

    def _send(self, batch: list[tuple[int, dict[str, Any]]]) -> list[dict[str, Any]]:
        from memoryd_client.errors import BadParamsError, DaemonUnreachableError, ForbiddenError

        try:
            return self.client.remember_many([item for _, item in batch])["results"]
        except DaemonUnreachableError as exc:
            raise DaemonUnreachableError(
                f"{exc.message}. The entries sent before it stopped may be stored: running "
                f"`memory import {self.file}` again is safe (entries already there are not "
                f"stored twice; a longer --timeout waits longer)") from None
        except (BadParamsError, ForbiddenError):  # one bad entry refuses the batch (feedback
            results: list[dict[str, Any]] = []    # not from a terminal): find it, keep the rest
            for _, item in batch:
                try:
                    results += self.client.remember_many([item])["results"]
                except (BadParamsError, ForbiddenError) as exc:
                    results.append({"refused": exc.message})
            return results

    def _refuse(self, number: int, reason: str) -> None:
        self.counts["refused"] += 1
        self.refused.append({"line": number, "reason": reason})


def _entry_of(line: str) -> tuple[dict[str, Any], str | None]:
    """A line's entry, or why it is refused."""
    import json

    try:
        line.encode("utf-8")
    except UnicodeEncodeError as exc:
        byte = ord(line[exc.start]) - 0xDC00  # as surrogateescape kept it
        return {}, f"not UTF-8 text (byte {byte:#04x} at character {exc.start + 1})"
    try:
        entry = json.loads(line)
    except ValueError as exc:
        return {}, f"not JSON ({exc})"
    if not isinstance(entry, dict) or not entry.get("agent") or not entry.get("text"):
        return {}, "not an object with agent and text"
    try:  # a lone surrogate written as an escape ("\udcff") is no text either
        json.dumps(entry, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return {}, "holds a lone surrogate (an escape such as \\udcff), which is not text"
    return entry, None


def _opened(path: str | None, mode: Literal["r", "w"], standard: TextIO,
            errors: str = "strict") -> ContextManager[TextIO]:
    """The file at ``path``, closed after use; without one, the standard stream (left open)."""
    import contextlib

    if path is None:
        return contextlib.nullcontext(standard)
    if mode == "r" and _gzipped(path):  # an export kept compressed: read as it is
        import gzip

        return gzip.open(path, "rt", encoding="utf-8", errors=errors)
    return open(path, mode, encoding="utf-8", errors=errors)


def _gzipped(path: str) -> bool:
    with open(path, "rb") as start:
        return start.read(2) == b"\x1f\x8b"


def _lines(path: str) -> int | None:
    """The non-empty lines of the file to import, for the progress line (None: stdin)."""
    if path == "-":
        return None
    if _gzipped(path):
        import gzip

        with gzip.open(path, "rb") as packed:
            return sum(1 for line in packed if line.strip())
    with open(path, "rb") as source:
        return sum(1 for line in source if line.strip())
