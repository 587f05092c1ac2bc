"""``memory list``, ``recent``, ``export`` and ``import``: entries without a query, and moving
them between stores.

- list/recent: the daemon's ``list`` method, newest first, with search's filters.
- export: every page of ``list`` (oldest first) as JSONL, one entry per line with its
  provenance (writer, via, session, source file and lines, message id, dates).
- import: the lines of an export (or any JSONL of maps with agent, category, text) through the
  daemon's write path, ``remember_many`` in batches: exact duplicates are not stored again,
  every stored entry is in its agent's ledger and journal, dated by its ``created``
  (``via: import``). Entries that are not active, and entries indexed from watched files (their
  file is the source of truth: watch it instead), are skipped and counted.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # see memoryd_client/__init__.py

if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable, Iterator
    from typing import Any, TextIO

    from memoryd_client.client import Client

COMMANDS = ("list", "recent", "export", "import")
PAGE = 1000  # entries per list call in an export
BATCH = 500  # entries per remember_many call in an import
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


def add_parsers(add_command: Callable[..., Any], common: argparse.ArgumentParser) -> None:
    from memoryd_client.cli_help import epilog

    for name in ("list", "recent"):
        recent = name == "recent"
        parser = add_command(
            name, parents=[common], epilog=epilog(name),
            help="entries written in the last days, newest first" if recent else
            "an agent's entries without a query, newest first",
            description=("What was written lately: entries of every agent (or AGENT), newest "
                         "first, by default of the last 7 days." if recent else
                         "Entries of AGENT (every agent by default) without a query, newest first, "
                         "with the filters of search.")
            + " Each line: when it was written, id, agent/category, kind, text; the count and "
            "the option for the next page go to stderr.")
        parser.add_argument("agent", nargs="?", default="*",
                            help="an agent, a comma-separated list, or '*' for every agent "
                            "(default: every agent)")
        add_filters(parser, since_default="7d" if recent else None)
        parser.add_argument("--limit", type=int, default=20, metavar="N",
                            help="entries per page, 1 to 1000 (default: %(default)s)")
        parser.add_argument("--offset", type=int, default=0, metavar="N",
                            help="skip the first N entries (the next page; default: 0)")
        parser.add_argument("--oldest", action="store_true", help="oldest first")
        if not recent:
            parser.add_argument(
                "--usage", nargs="?", const="all", choices=USAGE_VIEWS, metavar="VIEW",
                help="rank entries by what became of them in sessions (docs/outcomes.md): "
                "broken (most broken first), followed (most followed first), unused "
                "(injected, never followed nor broken), or all three (the default); each "
                "line: the count, the sessions it was injected into, the entry; with AGENT, "
                "--kind (lesson, fact, note, feedback) and --limit (per view, default 10)")

    export = add_command(
        "export", parents=[common], epilog=epilog("export"),
        help="write entries as JSONL (with their provenance), to stdout or a file",
        description="One JSON object per line, oldest first: id, agent, project, kind, category, "
        "key, text, confidence, tags, status, created, updated and provenance (writer, via, "
        "session, source file and lines, message id). `memory import` reads it back.")
    export.add_argument("--agent", help="an agent or a comma-separated list (default: every agent)")
    add_filters(export, since_default=None)
    export.add_argument("-o", "--output", metavar="FILE", help="write here (default: stdout)")

    imports = add_command(
        "import", parents=[common], epilog=epilog("import"),
        help="store the entries of a JSONL export through the daemon's write path",
        description="Each line a JSON object with agent, category and text (an export's "
        "lines); stored as the agent's entries with their date (created), kind, key, tags, "
        "confidence, project and polarity, in batches, through the write path: exact "
        "duplicates are not stored again (importing twice changes nothing), near duplicates "
        "are kept (they were kept where they came from), and every entry goes to the agent's "
        "ledger and journal (via: import). Entries that are not active, and entries indexed from "
        "watched files (watch their files instead), are skipped and counted. A terminal "
        "shows how far it is; the command waits as long as the daemon reports progress, and "
        "if the daemon stops answering (exit 3), running it again is safe.")
    imports.add_argument("file", metavar="FILE", help="a JSONL file, or - for standard input")


def add_filters(parser: argparse.ArgumentParser, since_default: str | None) -> None:
    from memoryd_client.parser import HERE_HELP, PROJECT_HELP

    parser.add_argument("--category", help="only this category")
    parser.add_argument("--kind", help="comma-separated kinds (fact, lesson, feedback, note, "
                        "turn, summary)")
    parser.add_argument("--tags", help="comma-separated tags; all must be present")
    parser.add_argument("--project", metavar="DIR", help=PROJECT_HELP)
    parser.add_argument("--here", action="store_true", help=HERE_HELP)
    parser.add_argument("--since", default=since_default, metavar="T",
                        help="epoch seconds, ISO date, or an age like 7d"
                        + (f" (default: {since_default})" if since_default else ""))
    parser.add_argument("--until", metavar="T", help="epoch seconds, ISO date, or an age like 7d")
    parser.add_argument("--status", default="active",
                        help="active (default), superseded, forgotten, archived, or any")


def filters(args: argparse.Namespace, agents: str | None) -> dict[str, Any]:
    from memoryd_client.cli import here_directory

    return {
        "agents": [a for a in (agents or "*").split(",") if a],
        "category": args.category, "kind": args.kind, "tags": args.tags,
        "project": args.project,  # a relative one is resolved by the client
        "cwd": here_directory() if args.here else None,
        "since": args.since, "until": args.until, "status": args.status,
    }


def run(args: argparse.Namespace, client: Client, emit: Callable[..., None],
        entry_line: Callable[[dict[str, Any]], str]) -> int:
    if getattr(args, "usage", None):
        return usage_view(args, client, emit, entry_line)
    if args.command in ("list", "recent"):
        result = client.list_entries(**filters(args, args.agent), limit=args.limit,
                                     offset=args.offset,
                                     order="oldest" if args.oldest else "newest")

        def show(r: dict[str, Any]) -> None:
            import time

            from memoryd_client.views import note_unknown_agents

            for entry in r["entries"]:
                when = time.strftime("%Y-%m-%d %H:%M", time.localtime(entry["created"]))
                print(f"{when}  {entry_line(entry)}")
            shown = len(r["entries"])
            more = (f"; next page: --offset {args.offset + shown}"
                    if args.offset + shown < r["total"] else "")
            if shown:
                print(f"entries {args.offset + 1}-{args.offset + shown} of {r['total']}{more}",
                      file=sys.stderr)
            elif r["total"]:
                print(f"no entries from --offset {args.offset}: {r['total']} in all",
                      file=sys.stderr)
            else:
                print("no entries", file=sys.stderr)
            note_unknown_agents(r)

        emit(args, result, show)
        return 0
    if args.command == "export":
        return export(args, client)
    return import_file(args, client, emit)


def usage_view(args: argparse.Namespace, client: Client, emit: Callable[..., None],
               entry_line: Callable[[dict[str, Any]], str]) -> int:
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
    result = client.call("usage", {"by": args.usage, "limit": limit, "kind": args.kind,
                                   "agents": [a for a in args.agent.split(",") if a]})

    def show(r: dict[str, Any]) -> None:
        for view in ("broken", "unused", "followed"):
            if view not in r:
                continue
            print(f"{USAGE_TITLES[view]}:")
            if not r[view]:
                print("  (none)")
            for entry in r[view]:
                usage = entry["usage"]
                count = {"broken": usage["broken"], "followed": usage["followed"],
                         "unused": usage["injected"]}[view]
                share = f"{count}/{usage['injected']}" if view != "unused" else f"{count}"
                print(f"  {share:>7}  {entry_line(entry)}")

    emit(args, result, show)
    return 0


def iter_entries(client: Client, **params: Any) -> Iterator[dict[str, Any]]:
    """Every entry the filters select, oldest first, a page at a time."""
    cursor = None
    while True:
        page = client.list_entries(**params, order="oldest", limit=PAGE, cursor=cursor)
        yield from page["entries"]
        cursor = page["next"]
        if cursor is None:
            return


def export(args: argparse.Namespace, client: Client) -> int:
    import json

    out: TextIO = open(args.output, "w", encoding="utf-8") if args.output else sys.stdout
    count = 0
    try:
        for entry in iter_entries(client, **filters(args, args.agent)):
            line = {k: v for k, v in entry.items() if k not in EXPORT_DROPS}
            out.write(json.dumps(line, ensure_ascii=False, sort_keys=True) + "\n")
            count += 1
    finally:
        if args.output:
            out.close()
    print(f"exported {count} entries" + (f" to {args.output}" if args.output else ""),
          file=sys.stderr)
    return 0


def import_file(args: argparse.Namespace, client: Client, emit: Callable[..., None]) -> int:
    import json

    from memoryd_client.errors import BadParamsError, DaemonUnreachableError, ForbiddenError

    counts = {"stored": 0, "duplicate": 0, "skipped_inactive": 0, "skipped_watched": 0,
              "refused": 0}
    progress = client.progress  # the terminal's progress line (memoryd_client.progress_view)
    if progress is not None:
        progress.prefix = f"importing {args.file}"
        progress.total = _lines(args.file)
    lines_sent = read = 0  # the lines before the batch being sent; the lines read
    refused: list[dict[str, Any]] = []
    batch: list[tuple[int, dict[str, Any]]] = []

    def flush() -> None:
        nonlocal lines_sent
        if not batch:
            return
        if progress is not None:
            progress.offset = lines_sent
        try:
            results = client.remember_many([item for _, item in batch])["results"]
        except DaemonUnreachableError as exc:
            raise DaemonUnreachableError(
                f"{exc.message}. The entries sent before it stopped may be stored: running "
                f"`memory import {args.file}` again is safe (entries already there are not "
                f"stored twice; a longer --timeout waits longer)") from None
        except (BadParamsError, ForbiddenError):  # one bad entry refuses the batch (feedback
            results = []                            # not from a terminal): find it, keep the others
            for number, item in batch:
                try:
                    results += client.remember_many([item])["results"]
                except (BadParamsError, ForbiddenError) as exc:
                    results.append({"refused": exc.message})
        for (number, _), result in zip(batch, results):
            if result.get("refused"):
                counts["refused"] += 1
                refused.append({"line": number, "reason": result["refused"]})
            elif result["stored"]:
                counts["stored"] += 1
            else:
                counts["duplicate"] += 1
        batch.clear()
        lines_sent = read

    source: TextIO = sys.stdin if args.file == "-" else open(args.file, encoding="utf-8")
    try:
        for number, line in enumerate(source, 1):
            if not line.strip():
                continue
            read += 1
            try:
                entry = json.loads(line)
            except ValueError as exc:
                counts["refused"] += 1
                refused.append({"line": number, "reason": f"not JSON ({exc})"})
                continue
            if not isinstance(entry, dict) or not entry.get("agent") or not entry.get("text"):
                counts["refused"] += 1
                refused.append({"line": number, "reason": "not an object with agent and text"})
                continue
            if entry.get("status", "active") != "active":
                counts["skipped_inactive"] += 1
                continue
            if entry.get("via") == "watch":
                counts["skipped_watched"] += 1
                continue
            item = {k: entry[k] for k in IMPORTED_FIELDS if entry.get(k) is not None}
            item.setdefault("category", "")
            item["force"] = True  # near duplicates were kept where they come from
            batch.append((number, item))
            if len(batch) >= BATCH:
                flush()
        flush()
    finally:
        if source is not sys.stdin:
            source.close()
    result = {"file": args.file, "counts": counts, "refused": refused}

    def show(r: dict[str, Any]) -> None:
        for problem in r["refused"]:
            print(f"line {problem['line']}: refused: {problem['reason']}", file=sys.stderr)
        c = r["counts"]
        print(f"imported {r['file']}: stored {c['stored']}, already there {c['duplicate']}, "
              f"skipped {c['skipped_inactive']} not active and {c['skipped_watched']} from "
              f"watched files, refused {c['refused']}")

    emit(args, result, show)
    return 1 if counts["refused"] else 0


def _lines(path: str) -> int | None:
    """The non-empty lines of the file to import, for the progress line (None: stdin)."""
    if path == "-":
        return None
    with open(path, "rb") as source:
        return sum(1 for line in source if line.strip())
