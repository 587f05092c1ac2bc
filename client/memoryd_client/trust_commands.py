"""The commands of ``memory`` that decide what memory may be trusted with: ``purge`` (delete an
agent's entries for good, for the day a secret got in) and ``release`` (let a quarantined
entry into the memory block). Exit codes as for every command (memoryd_client.cli)."""

from __future__ import annotations

import sys
import time

TYPE_CHECKING = False  # see memoryd_client/__init__.py

if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable
    from typing import Any

    from memoryd_client.client import Client

COMMANDS = ("purge", "release")


def add_parsers(add_command: Callable[..., Any], common: argparse.ArgumentParser) -> None:
    purge = add_command(
        "purge", parents=[common], help="delete an agent's entries for good (a leaked secret)",
        description="The one operation that really deletes: the agent's entries created since "
        "T and/or whose text holds TEXT (case-insensitive; names, categories, tags and kinds "
        "are not searched) go from the index, the agent's ledger, its transcript archive and "
        "the journals, with every record of theirs; free text that only mentions TEXT (a "
        "forget's reason, an older version, a session's last message) gets it replaced by "
        "[PURGED]; nothing else is touched. The purge is journaled without the text (memory "
        "history purge:AGENT). Without --yes it is a dry run that lists the entries it would "
        "remove and where it would replace TEXT. A watched file still holding the text brings "
        "it back when it is indexed again: edit the file (the output names it).")
    purge.add_argument("--agent", required=True, help="whose entries (one agent)")
    purge.add_argument("--since", metavar="T", help="entries created since T (epoch seconds, "
                       "ISO date, or an age like 2h)")
    purge.add_argument("--match", metavar="TEXT", help="entries whose text holds TEXT")
    purge.add_argument("--yes", action="store_true", help="do it (default: a dry run)")

    release = add_command(
        "release", parents=[common], help="let a quarantined entry into the memory block",
        description="An entry whose text looks like an instruction to the model (ignore previous "
        "instructions, role tags, tool-call syntax, memoryd's own markers) is stored but "
        "quarantined: never injected, flagged in search. Read it (memory get ID), then release "
        "it if it is yours. Only a person at a terminal can release.")
    release.add_argument("id", help="entry id or a unique prefix of it")


def run(args: argparse.Namespace, client: Client, emit: Callable[..., None]) -> int:
    if args.command == "release":
        entry = client.release(args.id)
        emit(args, entry, lambda e: print(f"released {e['id']}: it may be injected again"))
        return 0
    if not args.since and not args.match:
        print("Error: give --since T, --match TEXT, or both", file=sys.stderr)
        return 2
    result = client.purge(args.agent, since=args.since, match=args.match, confirm=args.yes)
    emit(args, result, _print_purge)
    return 0 if _anything(result) else 1


def _anything(result: dict[str, Any]) -> bool:
    return bool(result["entries"] or result["events"] or result["changes"]
                or result["ledger_records"] or result["archive_records"]
                or result.get("mentions"))


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _print_purge(result: dict[str, Any]) -> None:
    verb = "would purge" if result["dry_run"] else "purged"
    n = len(result["entries"])
    if not _anything(result):
        print(f"nothing to purge for agent {result['agent']}")
        return
    print(f"{verb} {_count(n, 'entry', 'entries')} of agent {result['agent']}, "
          f"{_count(result['ledger_records'], 'ledger record', 'ledger records')}, "
          f"{_count(result['archive_records'], 'archive record', 'archive records')}, "
          f"{_count(result['events'], 'journal event', 'journal events')}, "
          f"{_count(result['changes'], 'pass change', 'pass changes')}")
    for entry in result["entries"]:
        when = (time.strftime("%Y-%m-%d %H:%M", time.localtime(entry["created"]))
                if isinstance(entry.get("created"), int | float) else "-")
        where = f" {entry['source']}" if entry.get("source") else ""
        held = f" ({entry['where']})" if entry.get("where") else ""
        print(f"  {entry['id']}  {entry['kind']} {entry['category'] or '-'}  {when}  "
              f"via {entry['via']}{where}{held}")
    mentions = result.get("mentions") or []
    if mentions:
        print(f"{'would replace' if result['dry_run'] else 'replaced'} the text by [PURGED] "
              "where it is only mentioned:")
    for mention in mentions:
        print(f"  {mention['id']}: {mention['where']}")
    for path in result["files_still_holding"]:
        print(f"still in {path}: edit the file, or it is indexed again", file=sys.stderr)
    for path in result["transcripts_still_holding"]:
        print(f"still in the agent's transcript {path}", file=sys.stderr)
    if result["dry_run"]:
        print("dry run: nothing was deleted; run again with --yes to purge")
