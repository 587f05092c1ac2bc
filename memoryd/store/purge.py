"""``memory purge``: the one operation that really deletes, for the day a secret got in anyway.

Everything else in memoryd keeps history (a forget is a status, a pass's change is undoable).
A purge removes an agent's entries — those created since a time, those whose text holds a
string, or both — from every place memoryd keeps text:

- the index: the rows, their full-text postings (the FTS5 index is merged so no old segment
  keeps a term), their vectors, their journal events and marks, with ``secure_delete`` on so
  freed pages are zeroed, and the WAL checkpointed and truncated afterwards;
- the agent's ledger, rewritten atomically (temporary file, fsync, rename, fsync of the
  directory) without the records of those entries;
- the agent's transcript archive, rewritten the same way;
- journals: the memory-tool journal of the agent's files and the maintenance passes' changes
  that hold the string lose those events; other events and ledger records that merely mention
  it (a forget's reason, a session's last message, a transcript's open exchange) get it replaced by ``[PURGED]``.

It is journaled as a ``purge`` event (``memory history purge:AGENT``) with the ids and
counts, never the matched text. Files are the user's: a purged entry that came from a watched
file comes back when the file is indexed again, so the reply names those files.
"""

from __future__ import annotations

import base64
import json
import logging
import re
import time
import zlib
from pathlib import Path
from typing import Any

from memoryd.store.archive import (
    TRANSCRIPT_PREFIX,
    AgentArchive,
    MemberWriter,
    meta_key,
)
from memoryd.store.database import SELECT_ENTRY, Store, row_to_entry
from memoryd.store.durable import replace_file
from memoryd.store.ledger import Ledger, encode_record

log = logging.getLogger(__name__)

PURGED = "[PURGED]"


def _strings(value: Any) -> str:
    """Every string inside a JSON value, joined: what a match is looked for in."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        texts = [_strings(v) for v in value.values()]
        if isinstance(value.get("insert_z"), str):  # a memory-tool journal delta, compressed
            try:
                texts.append(zlib.decompress(base64.b64decode(value["insert_z"])).decode(
                    "utf-8", "replace"))
            except (ValueError, zlib.error):
                pass
        return "\n".join(texts)
    if isinstance(value, list):
        return "\n".join(_strings(v) for v in value)
    return ""


def _json(raw: str | None) -> Any:
    """A journal column's value (JSON text), or the text itself when it is not JSON."""
    if not raw:
        return ""
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def _scrub(value: Any, pattern: re.Pattern[str]) -> Any:
    if isinstance(value, str):
        return pattern.sub(PURGED, value)
    if isinstance(value, dict):
        return {k: _scrub(v, pattern) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub(v, pattern) for v in value]
    return value


class Purge:
    """One purge of one agent's entries (database thread)."""

    def __init__(self, store: Store, ledger: Ledger, archive: AgentArchive, agent: str,
                 since: float | None, match: str | None) -> None:
        self.store, self.ledger, self.archive = store, ledger, archive
        self.agent, self.since, self.match = agent, since, match
        self.pattern = re.compile(re.escape(match), re.IGNORECASE) if match else None

    def holds(self, value: Any) -> bool:
        return self.pattern is not None and self.pattern.search(_strings(value)) is not None

    def selected(self) -> list[dict[str, Any]]:
        where, params = "agent=?", [self.agent]
        if self.since is not None:
            where += " AND created >= ?"
            params.append(self.since)
        rows = [row_to_entry(r) for r in self.store.db.execute(
            SELECT_ENTRY + f" WHERE {where} ORDER BY created", params)]
        if self.pattern is not None:
            rows = [e for e in rows if self.pattern.search(e["text"])]
        return rows

    def run(self, dry_run: bool, actor: str) -> dict[str, Any]:
        entries = self.selected()
        ids = {e["id"] for e in entries}
        files = sorted({e["source"] for e in entries
                        if e["via"] == "watch" and e["source"]
                        and not e["id"].startswith(TRANSCRIPT_PREFIX) and Path(e["source"]).exists()})
        transcripts = sorted({e["source"] for e in entries if e["via"] == "watch" and e["source"]
                              and e["id"].startswith(TRANSCRIPT_PREFIX)
                              and Path(e["source"]).exists()})
        events = self._events(ids)
        changes = self._changes(ids)
        report: dict[str, Any] = {
            "agent": self.agent, "dry_run": dry_run,
            "entries": [{"id": e["id"], "rowid": e["rowid"], "kind": e["kind"],
                         "category": e["category"],
                         "created": e["created"], "via": e["via"], "source": e["source"]}
                        for e in entries],
            "events": len(events), "changes": len(changes),
            "files_still_holding": files, "transcripts_still_holding": transcripts,
        }
        if dry_run or not (entries or events or changes or self._other_texts()):
            report["ledger_records"] = self._rewrite_ledger(ids, dry_run=True)
            report["archive_records"] = self._rewrite_archive(ids, dry_run=True)
            return report
        self.store.db.execute("PRAGMA secure_delete=ON")
        try:
            with self.store.db:
                report["ledger_records"] = self._rewrite_ledger(ids, dry_run=False)
                report["archive_records"] = self._rewrite_archive(ids, dry_run=False)
                self._delete(entries, events, changes)
                self.store.journal(f"purge:{self.agent}", "purge", actor, None, {
                    "agent": self.agent, "since": self.since, "matched_text": self.match is not None,
                    "ids": sorted(ids), "events": len(events), "changes": len(changes),
                    "ledger_records": report["ledger_records"],
                    "archive_records": report["archive_records"]}, time.time())
            self.store.db.execute("INSERT INTO entries_fts(entries_fts) VALUES ('optimize')")
        finally:
            self.store.db.execute("PRAGMA secure_delete=OFF")
        self.store.db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
        log.info("Purged %d entries of agent %s (%d events, %d changes).",
                 len(entries), self.agent, len(events), len(changes))
        return report

    # -- the database -------------------------------------------------------------------

    def _events(self, ids: set[str]) -> list[int]:
        """Events of the purged entries, and memory-tool events of the agent's files that
        hold the string."""
        found = []
        for rowid, ts, uid, before, after in self.store.db.execute(
                "SELECT id, ts, uid, before, after FROM events WHERE uid NOT LIKE 'purge:%'"):
            tool = (uid.startswith(f"file:{self.agent}:")
                    and (self.pattern is None or self.holds([_json(before), _json(after)]))
                    and (self.since is None or ts >= self.since))
            if uid in ids or tool:
                found.append(rowid)
        return found

    def _changes(self, ids: set[str]) -> list[int]:
        """Pass changes that touched a purged entry or hold the string (a file's text)."""
        found = []
        for rowid, target, before, after in self.store.db.execute(
                "SELECT id, target, before, after FROM changes"):
            if target in ids or self.holds([before or "", after or ""]) or any(
                    i in (before or "") or i in (after or "") for i in ids):
                found.append(rowid)
        return found

    def _other_texts(self) -> bool:
        if self.pattern is None:
            return False
        return any(self.holds(list(r)) for r in self.store.db.execute(
            "SELECT before, after FROM events UNION ALL SELECT last_message, '' FROM sessions "
            "UNION ALL SELECT value, '' FROM meta WHERE key LIKE 'transcript:open:%'"))

    def _delete(self, entries: list[dict[str, Any]], events: list[int], changes: list[int]) -> None:
        db = self.store.db
        rowids = [e["rowid"] for e in entries]
        db.executemany("DELETE FROM entries WHERE id=?", ((r,) for r in rowids))
        self.store.delete_vectors(rowids)
        db.executemany("DELETE FROM marks WHERE agent=? AND target=?",
                       ((self.agent, t) for e in entries
                        for t in (f"hash:{e['hash']}", f"uid:{e['id']}", f"release:{e['hash']}")))
        db.executemany("DELETE FROM events WHERE id=?", ((r,) for r in events))
        db.executemany("DELETE FROM changes WHERE id=?", ((r,) for r in changes))
        if self.pattern is None:
            return
        for rowid, before, after in db.execute(
                "SELECT id, before, after FROM events WHERE before IS NOT NULL OR after IS NOT NULL"
                ).fetchall():
            if self.holds([before or "", after or ""]):
                db.execute("UPDATE events SET before=?, after=? WHERE id=?", (
                    json.dumps(_scrub(json.loads(before), self.pattern), sort_keys=True)
                    if before else None,
                    json.dumps(_scrub(json.loads(after), self.pattern), sort_keys=True)
                    if after else None, rowid))
        for key, value in db.execute(  # a transcript's open exchange (ingest.open_exchange)
                "SELECT key, value FROM meta WHERE key LIKE 'transcript:open:%'").fetchall():
            if self.pattern.search(value):
                db.execute("UPDATE meta SET value=? WHERE key=?", (json.dumps(
                    _scrub(_json(value), self.pattern), ensure_ascii=False), key))
        for session, message in db.execute(
                "SELECT id, last_message FROM sessions WHERE last_message IS NOT NULL").fetchall():
            if self.pattern.search(message):
                db.execute("UPDATE sessions SET last_message=? WHERE id=?",
                           (self.pattern.sub(PURGED, message), session))

    # -- the files ----------------------------------------------------------------------

    def _rewrite_ledger(self, ids: set[str], dry_run: bool) -> int:
        """Drop the purged entries' records from the agent's ledger, scrub the string from the
        rest; returns how many records were dropped or scrubbed."""
        path = self.ledger.path(self.agent)
        if not path.exists():
            return 0
        kept: list[bytes] = []
        touched = 0
        for raw in path.read_bytes().splitlines(keepends=True):
            try:
                record = json.loads(raw)
            except (json.JSONDecodeError, UnicodeDecodeError):
                kept.append(raw)  # not ours to judge: the ledger's reader reports it
                continue
            if not isinstance(record, dict):
                kept.append(raw)
                continue
            record.pop("crc", None)  # a line's checksum, if the ledger writes one
            entry = record.get("entry") if isinstance(record.get("entry"), dict) else {}
            if entry.get("uid") in ids or record.get("id") in ids:
                touched += 1
                continue
            if self.holds(record):
                touched += 1
                assert self.pattern is not None
                raw = encode_record(_scrub(record, self.pattern))
            kept.append(raw)
        if dry_run or not touched:
            return touched
        kept.append(encode_record({"op": "purge", "ts": time.time(), "ids": sorted(ids)}))
        size = _replace_file(path, b"".join(kept))
        self.store.set_meta(f"ledger:{self.agent}", str(size))
        return touched

    def _rewrite_archive(self, ids: set[str], dry_run: bool) -> int:
        path = self.archive.path(self.agent)
        if not path.exists():
            return 0
        writer = MemberWriter()
        dropped = 0
        for _, records in self.archive.read(self.agent):
            lines = []
            for record in records:
                entry = record.get("entry") if isinstance(record.get("entry"), dict) else {}
                if entry.get("uid") in ids or self.holds(record):
                    dropped += 1
                    continue
                lines.append(json.dumps(record, ensure_ascii=False, sort_keys=True)
                             .encode("utf-8") + b"\n")
            writer.add(lines)
        if dry_run or not dropped:
            return dropped
        size = _replace_file(path, writer.data())
        self.store.set_meta(meta_key(self.agent), str(size))
        return dropped


def _replace_file(path: Path, data: bytes) -> int:
    """Write ``data`` over ``path`` atomically and durably; returns its size."""
    replace_file(path, data)
    return len(data)
