"""The memory tools' file versions, kept small: one delta per write instead of two whole
copies.

Each ``file_write`` / ``file_replace`` / ``file_insert`` records one event under the uid
``file:<agent>:<path>``:

    before  {"sha256": …, "bytes": …}                     the text before, by its hash
            (+ "text": the whole text, when it is a *base*: the first event of a file, or the
            file was changed outside the tools since the last event)
    after   {"sha256": …, "bytes": …, "head": H, "tail": T, "insert": "…"}
            the text after = before[:H] + insert + before[len(before) - T:]
            (``insert_z``: the insert zlib-compressed and base64-encoded, when it is large)

So a one-line edit of a 1 MB file costs a few hundred bytes, and :func:`versions` rebuilds every
version from the newest base forward. Events written before this format (``{"text": …}`` before
and after) are read as they are. The retain pass moves old versions (:func:`old_versions`) to
the history archive, ``history/<agent>.jsonl.gz`` under the state dir, each with its whole
texts (:func:`archive_records`), and then drops them here (:func:`drop`): the oldest version
kept becomes a base, so what is kept can still be rebuilt, and nothing is lost. Every event is
also in that archive as it is, appended at its write (:func:`record_version` returns the
record: memoryd.store.file_history), so a rebuild of the index restores it.
"""

from __future__ import annotations

import base64
import builtins
import hashlib
import json
import os
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, cast

from memoryd.store.archive import MemberWriter
from memoryd.store.database import Store
from memoryd.store.fetch import one

ZIP_ABOVE_CHARS = 4096
#: the retain pass keeps every version newer than this, and at least KEEP_VERSIONS per file
KEEP_DAYS = 30
KEEP_VERSIONS = 20


def text_sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _common_prefix(a: str, b: str) -> int:
    low, high = 0, min(len(a), len(b))
    while low < high:  # the longest equal prefix, by halving (string compares run in C)
        middle = (low + high + 1) // 2
        if a[low:middle] == b[low:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def zipped(text: str) -> str:
    """A text zlib-compressed and base64-encoded, to keep in JSON (:func:`unzipped`)."""
    return base64.b64encode(zlib.compress(text.encode("utf-8", "surrogatepass"), 6)).decode()


def unzipped(packed: str) -> str:
    return zlib.decompress(base64.b64decode(packed)).decode("utf-8", "surrogatepass")


def delta(before: str, after: str) -> dict[str, Any]:
    head = _common_prefix(before, after)
    rest_b, rest_a = before[head:], after[head:]
    tail = _common_prefix(rest_b[::-1], rest_a[::-1])
    insert = rest_a[:len(rest_a) - tail]
    out: dict[str, Any] = {"head": head, "tail": tail}
    if len(insert) > ZIP_ABOVE_CHARS:
        out["insert_z"] = zipped(insert)
    else:
        out["insert"] = insert
    return out


def apply_delta(before: str, change: dict[str, Any]) -> str:
    insert = unzipped(change["insert_z"]) if "insert_z" in change else change.get("insert", "")
    tail = int(change["tail"])
    return before[:int(change["head"])] + insert + (before[len(before) - tail:] if tail else "")


def file_uid(agent: str, relative: str) -> str:
    return f"file:{agent}:{relative}"


def tool_written(store: Store, agent: str, root: str) -> set[str]:
    """The files of ``agent``'s memory directory (``root``) that its memory tools wrote for
    someone other than a person at a terminal — an agent's MCP or library connection, a
    script — as normalised paths (memoryd.provenance.agent_wrote). A version recorded
    before the events named their channel names the agent alone, and counts as an agent's."""
    prefix = file_uid(agent, "")
    found = set()
    for (uid,) in store._db.execute(
            "SELECT DISTINCT uid FROM events WHERE uid >= ? AND uid < ? "
            "AND coalesce(actor, '') NOT LIKE '% (terminal)'", (prefix, prefix + "\uffff")):
        found.add(os.path.normpath(os.path.join(root, uid[len(prefix):])))
    return found


def last_after(store: Store, uid: str) -> str | None:
    """The hash of the text after the file's last recorded write."""
    row = store._db.execute("SELECT after FROM events WHERE uid=? ORDER BY id DESC LIMIT 1",
                           (uid,)).fetchone()
    if not row or not row[0]:
        return None
    after = json.loads(row[0])
    return after.get("sha256") or (text_sha(after["text"]) if "text" in after else None)


def record_version(store: Store, agent: str, relative: str, action: str, before: str | None,
                   after: str, ts: float | None = None, actor: str | None = None
                   ) -> dict[str, Any]:
    """One event for a write (in the caller's transaction or its own); ``actor``: who wrote
    (``designer (mcp)``; the agent when not given). Returns the history archive's record of
    it (memoryd.store.file_history: the event as it is, a ``delta`` record)."""
    uid = file_uid(agent, relative)
    old: dict[str, Any] | None = None
    if before is not None:
        old = {"sha256": text_sha(before), "bytes": len(before.encode("utf-8", "surrogatepass"))}
        if last_after(store, uid) != old["sha256"]:
            old["text"] = before  # a base: first event, or the file was edited outside the tools
    new = {"sha256": text_sha(after), "bytes": len(after.encode("utf-8", "surrogatepass")),
           **delta(before or "", after)}
    when = ts if ts is not None else time.time()
    store.record_event(uid, action, actor or agent, old, new, when)
    return {"op": "delta", "uid": uid, "ts": when, "action": action, "actor": actor or agent,
            "before": old, "after": new}


@dataclass(frozen=True)
class Version:
    ts: float
    action: str
    before: str | None
    after: str | None  # None: the chain is broken (an event lost to an older compaction)


def versions(store: Store, uid: str) -> list[Version]:
    """Every recorded write of one file, with the whole text before and after, in the order
    they were written (as ``memory history`` lists events: by time). A write's text before
    is the version whose hash it names, whichever earlier write made it: the writes of two
    machines (a sync) or one never answered (memoryd.store.file_history) between two others
    leave the chain whole."""
    out: list[Version] = []
    texts: dict[str, str] = {}  # hash → text, of every version rebuilt so far
    for _id, ts, action, before_raw, after_raw in store._db.execute(
            "SELECT id, ts, action, before, after FROM events WHERE uid=? ORDER BY ts, id",
            (uid,)):
        before = json.loads(before_raw) if before_raw else None
        after = json.loads(after_raw) if after_raw else {}
        if before is None:
            text_before: str | None = None
        elif "text" in before:
            text_before = before["text"]
            texts[before.get("sha256") or text_sha(before["text"])] = before["text"]
        else:
            text_before = texts.get(before.get("sha256", ""))
        if "head" in after:
            base = text_before if text_before is not None else ("" if before is None else None)
            current = apply_delta(base, after) if base is not None else None
        else:
            current = after.get("text")
        if current is not None:
            texts[after.get("sha256") or text_sha(current)] = current
        out.append(Version(ts, action, text_before, current))
    return out


@dataclass(frozen=True)
class OldVersions:
    """A file's events past keeping (see :func:`old_versions`), and the versions they
    hold (the texts before and after each), for the history archive."""

    uid: str
    events: list[int]
    bytes: int
    first_kept: int  # the event that becomes a base
    kept_before: str | None  # its text before: the base's whole text
    versions: list[Version]

    @property
    def agent(self) -> str:
        return self.uid.split(":", 2)[1]

    def records(self) -> list[builtins.bytes]:  # ``bytes`` is a field
        """The history archive's lines: one a version, with its whole text."""
        return [history_line({"op": "version", "uid": self.uid, "ts": v.ts,
                              "action": v.action, "before": v.before, "after": v.after})
                for v in self.versions]


def history_line(record: dict[str, Any]) -> builtins.bytes:
    """One line of the history archive, in the bytes a sync's merge writes it in
    (memoryd.sync.merge): UTF-8, or JSON's escapes when the text holds bytes that are not
    UTF-8 (a file's, kept as surrogate escapes), which a reader could not decode otherwise."""
    try:
        return json.dumps(record, ensure_ascii=False, sort_keys=True).encode() + b"\n"
    except UnicodeEncodeError:
        return json.dumps(record, sort_keys=True).encode() + b"\n"


def old_versions(store: Store, now: float | None = None, keep_days: float = KEEP_DAYS,
                 keep_versions: int = KEEP_VERSIONS) -> Iterator[OldVersions]:
    """Each memory file's events older than ``keep_days`` beyond its newest
    ``keep_versions``, a file at a time: the retain pass moves them to the history archive
    (:func:`archive_records`, then :func:`drop`)."""
    cutoff = (now if now is not None else time.time()) - keep_days * 86_400
    uids = [r[0] for r in store._db.execute(  # a range, not LIKE: it reads events_uid's
        # "file:" rows only (LIKE scanned all 600k events of the bench store: 70 ms)
        "SELECT DISTINCT uid FROM events WHERE uid >= 'file:' AND uid < 'file;' AND ts < ?",
        (cutoff,))]
    for uid in uids:
        rows = cast(list[tuple[int, float, int]], store._db.execute(
            "SELECT id, ts, length(coalesce(before, '')) + length(coalesce(after, '')) "
            "FROM events WHERE uid=? ORDER BY ts, id", (uid,)).fetchall())  # as versions()
        old = [r for r in rows[:max(0, len(rows) - keep_versions)] if r[1] < cutoff]
        if not old:
            continue
        history = versions(store, uid)
        yield OldVersions(uid, [r[0] for r in old], sum(r[2] for r in old), rows[len(old)][0],
                          history[len(old)].before, history[:len(old)])


def history_key(agent: str) -> str:
    """Meta key of where the agent's history archive ends (as the transcript archives'): an
    append past it cuts a torn tail without reading the archive from its start."""
    return f"history:{agent}"


def archive_records(old: list[OldVersions]) -> dict[str, bytes]:
    """The history archive's gzip members for these versions, by agent (off the database
    thread: compressing)."""
    writers: dict[str, MemberWriter] = {}
    for item in old:
        writers.setdefault(item.agent, MemberWriter()).add(item.records())
    return {agent: writer.data() for agent, writer in writers.items()}


def drop(store: Store, item: OldVersions) -> None:
    """Delete a file's old events (archived first), the oldest kept one becoming a base, so
    what is kept can still be rebuilt."""
    with store.transaction():
        if item.kept_before is not None:
            (before_raw,) = one(store._db, "SELECT before FROM events WHERE id=?",
                                (item.first_kept,))
            before = json.loads(before_raw) if before_raw else {}
            before["text"] = item.kept_before
            store._db.execute("UPDATE events SET before=? WHERE id=?",
                             (json.dumps(before, sort_keys=True), item.first_kept))
        store._db.execute(f"DELETE FROM events WHERE id IN ({','.join('?' * len(item.events))})",
                         item.events)
