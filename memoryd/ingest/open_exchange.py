"""The open exchange of a transcript, kept with its offset so a restart does not split it.

A transcript is read in batches; the last exchange of a batch (the last user message and the
answers after it so far) is still open: its answer may arrive in the next batch, and the chunk
is then rebuilt whole under the same id. Those open turns used to live only in memory, so a
restart (kill -9 or a clean stop) made the answer an orphan chunk of its own. They are now
stored in the ``meta`` table (key ``transcript:open:<path>``) in the same transaction as the
file's offset, redacted like the chunks, and loaded when the daemon reads the file again.
"""

from __future__ import annotations

import json
from dataclasses import asdict, fields
from typing import Any

from memoryd.ingest.transcript import Turn
from memoryd.redact import redact
from memoryd.store.database import Store

_FIELDS = {f.name for f in fields(Turn)}


def _key(path: str) -> str:
    return "transcript:open:" + path


def save_open_turns(store: Store, path: str, turns: list[Turn]) -> None:
    """Record the open turns (in the caller's transaction, with the offset)."""
    store.set_meta(_key(path), json.dumps(
        [{**asdict(t), "text": redact(t.text)} for t in turns], ensure_ascii=False))


def load_open_turns(store: Store, path: str) -> list[Turn]:
    raw = store.meta(_key(path))
    if not raw:
        return []
    try:
        data: Any = json.loads(raw)
        return [Turn(**{k: v for k, v in item.items() if k in _FIELDS}) for item in data]
    except (ValueError, TypeError):
        return []  # unreadable: the next answer becomes a chunk of its own, nothing is lost


def forget_open_turns(store: Store, path: str) -> None:
    store.delete_meta(_key(path))


def move_open_turns(store: Store, old: str, new: str) -> None:
    """The file was renamed: its open exchange goes with it (in the caller's transaction), so
    the answer written to the new path joins its question; one that a file renamed over the
    new path had is gone with that file."""
    raw = store.meta(_key(old))
    if raw is not None:
        store.set_meta(_key(new), raw)
        store.delete_meta(_key(old))
    else:
        store.delete_meta(_key(new))
