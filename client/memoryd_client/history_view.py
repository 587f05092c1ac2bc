"""`memory import-history` as text: what was imported, or (--dry-run) what would be."""

from __future__ import annotations

import time

from memoryd_client.views import count

TYPE_CHECKING = False  # see memoryd_client/__init__.py
if TYPE_CHECKING:
    from typing import Any

    from memoryd_client.command_spec import Args


def _harnesses(result: dict[str, Any]) -> str:
    return ", ".join(result.get("harnesses") or []) or "every harness"


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{name} {n:,}" for name, n in counts.items() if n) or "nothing new"


def show(result: dict[str, Any], args: Args) -> None:
    if result.get("dry_run"):
        show_preview(result)
        return
    if result.get("detached"):
        print(f"importing the history of {_harnesses(result)} in the background: "
              "`memory status` shows how far it is")
        return
    files, sessions = result["files"], result["sessions"]
    print(f"imported the history of {_harnesses(result)}: {count(files['total'], 'file')}, "
          f"{count(sessions['total'], 'finished session')} extracted "
          f"({_counts(result['counts'])})")


def show_preview(result: dict[str, Any]) -> None:
    files = result["files"]
    by_harness = ", ".join(f"{name} {row['to_index']:,} of {row['files']:,}"
                           for name, row in sorted(result["by_harness"].items()))
    print(f"would index {files['to_index']:,} of {count(files['total'], 'file')} "
          f"({files['bytes_to_index'] / 1e6:.1f} MB)" + (f": {by_harness}" if by_harness else ""))
    counts = result["counts"]
    print(f"would extract from {count(counts['sessions'], 'finished session')}: "
          f"{count(counts['candidates'], 'entry', 'entries')} to keep"
          + (f", {count(counts['too short'], 'session')} too short" if counts["too short"]
             else "")
          + (f", {counts['unreadable']:,} unreadable" if counts["unreadable"] else ""))
    for session in result["sessions"]:
        when = time.strftime("%Y-%m-%d", time.localtime(session["last_seen"])) \
            if session.get("last_seen") else "undated"
        print(f"session {session['id']} ({session['harness']}, agent {session['agent']}, "
              f"{when}, {session['messages']} user messages)")
        for entry in session["candidates"]:
            key = f" {entry['key']}" if entry.get("key") else ""
            print(f"  → {entry['kind']}{key} [{entry['category']}] {entry['text']!r}")
    listed = sum(len(s["candidates"]) for s in result["sessions"])
    if listed < counts["candidates"]:
        print(f"(and {counts['candidates'] - listed:,} more)")
