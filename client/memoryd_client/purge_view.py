"""How ``memory purge`` prints what it deleted (or would delete): an agent's entries, for good,
for the day a secret got in. Its arguments and exit rule are in the table
(memoryd_client.commands)."""

from __future__ import annotations

import shlex
import sys
import time

TYPE_CHECKING = False  # see memoryd_client/__init__.py

if TYPE_CHECKING:
    from typing import Any

    from memoryd_client.command_spec import Args


def purge_exit(result: dict[str, Any], args: Args) -> int:
    """`memory purge` exits 1 when there was nothing to purge."""
    return 0 if _anything(result) else 1


def _anything(result: dict[str, Any]) -> bool:
    return bool(result["entries"] or result["events"] or result["changes"]
                or result["ledger_records"] or result["archive_records"]
                or result.get("mentions") or result.get("torn") or result.get("sealed"))


def print_purge(result: dict[str, Any]) -> None:
    from memoryd_client.views import count as _count

    verb = "would purge" if result["dry_run"] else "purged"
    n = len(result["entries"])
    if not _anything(result):
        print(f"nothing to purge for agent {result['agent']}")
        return
    print(f"{verb} {_count(n, 'entry', 'entries')} of agent {result['agent']}, "
          f"{_count(result['ledger_records'], 'ledger record', 'ledger records')}, "
          f"{_count(result['archive_records'], 'archive record', 'archive records')}, "
          f"{_count(result['events'], 'history event', 'history events')}, "
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
    for path in result.get("torn") or []:
        print(f"{'would delete' if result['dry_run'] else 'deleted'} {path} (a torn line set "
              "aside: a write never acknowledged)")
    for session in result.get("sealed") or []:
        verb = "would not be" if result["dry_run"] else "is not"
        print(f"session {session}: what it did until now {verb} judged again (its transcript "
              "holds the text)")
    for path in result.get("backups") or []:
        print(f"{'would delete' if result['dry_run'] else 'deleted'} {path} (the index a reindex "
              "replaced: a copy from before this purge)")
    for path in result.get("damaged_copies") or []:
        print(f"maybe still in {path} (an index set aside as damaged before this purge): "
              f"delete it, rm {shlex.quote(path)}*", file=sys.stderr)
    for path in result["files_still_holding"]:
        print(f"still in {path}: edit the file, or it is indexed again", file=sys.stderr)
    for path in result["transcripts_still_holding"]:
        print(f"still in the agent's transcript {path}", file=sys.stderr)
    for copy in result.get("shared") or []:
        print(f"{copy['id']} was shared with team {copy['team']}: its copy {copy['copy']}, "
              f"with its text, stays in the team's repository ({copy['remote']}) and every "
              "member's memory; to take it out there, remove its line from entries.jsonl in "
              "a clone of that repository, commit and push (each member's next sync drops "
              "it; git's history keeps it, docs/sync.md)", file=sys.stderr)
    if result["dry_run"]:
        print("dry run: nothing was deleted; run again with --yes to purge")
