"""The memory tools' history archive syncs as the union of both machines' records: each
machine's index gets the other's writes of a memory file (memoryd.sync.apply), in the order
they were written, and a rebuild of either index shows the same versions (docs/sync.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.sync.test_sync import Machine, init, machines, remote, sync  # noqa: F401 (fixtures)

UID = "file:designer:notes.md"


def shown(m: Machine, uid: str = UID) -> list[tuple[Any, ...]]:
    with m.client() as c:
        return [(e["action"], e["ts"], (e["before"] or {}).get("text"), e["after"]["text"])
                for e in c.history(uid)["events"]]


def test_the_tools_writes_of_two_machines_are_each_machines_history(
        machines, remote: Path) -> None:  # noqa: F811
    a, b = machines(2, (False, False))
    init(remote, a, b)
    with a.client("designer") as c:
        c.file("write", "designer", "notes.md", text="- indent with tabs\n")
        c.file("replace", "designer", "notes.md", old="tabs", new="spaces")
    sync(a, b)
    assert [v[2:] for v in shown(b)] == [(None, "- indent with tabs\n"),
                                         ("- indent with tabs\n", "- indent with spaces\n")]
    # both write between two syncs: the archives merge with the driver; a's file holds a
    # byte that is not UTF-8 (its versions keep it as an escape)
    raw = a.home / "agents" / "designer" / "raw.md"
    raw.write_bytes(b"- caf\xe9 opens at 8\n")
    with a.client("designer") as c:
        c.file("replace", "designer", "raw.md", old="8", new="9")
    with b.client("designer") as c:
        c.file("replace", "designer", "notes.md", old="spaces", new="2 spaces")
    sync(a, b, a)
    expected = [(None, "- indent with tabs\n"),
                ("- indent with tabs\n", "- indent with spaces\n"),
                ("- indent with spaces\n", "- indent with 2 spaces\n")]
    assert [v[2:] for v in shown(a)] == expected
    assert shown(a) == shown(b)
    [(_, _, was, now)] = shown(b, "file:designer:raw.md")  # (the wire shows U+FFFD)
    assert was.endswith(" opens at 8\n") and now.endswith(" opens at 9\n")
    before = shown(b)
    b.stop()
    for name in ("memoryd.db", "memoryd.db-wal", "memoryd.db-shm"):
        (b.home / name).unlink(missing_ok=True)
    b.start()  # a new index: the versions come back from the merged archive
    assert shown(b) == before
