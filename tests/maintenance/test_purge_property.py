"""A purge removes what it selects and nothing else (R1), as a property: random stores — API
entries of three agents whose categories, tags, kinds, keys and names share words with their
texts, forgets with reasons, supersedes, key conflicts, archived transcript turns — and a
random purge (a word or part of one, a time, or both). A rebuild of the index from the files
must give back every entry the purge did not select exactly as a rebuild before the purge
did, and none of those it selected; the selected texts are left nowhere in the agent's files
or the journal, and the other agents' files are not touched. Each example builds its store
through the store's own write path (no daemon, no model: entries without vectors)."""

from __future__ import annotations

import itertools
import re
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memoryd.config import load_config
from memoryd.maintenance.purge import Purge
from memoryd.maintenance.replay import replay_ledgers
from memoryd.server.params import Params
from memoryd.server.requests import remember_request, supersede_request
from memoryd.store.archive import AgentArchive, archive_now, restore_archives
from memoryd.store.database import SELECT_ENTRY, Store, row_to_entry
from memoryd.store.entries import Entries
from memoryd.store.ledger import Ledger

AGENTS = ("designer", "billing", "scribe")
#: Words that are also agent names, categories, tags, kinds, keys and a transcript's path.
WORDS = ("design", "designer", "note", "billing", "sticker", "teal", "fact", "lesson", "ink",
         "turn", "shop", "pref")
CATEGORIES = ("design", "billing", "notes", "")
KINDS = ("note", "fact", "lesson")
BASE = 1_700_000_000.0
_count = itertools.count()


def words(draw: Any, low: int = 2, high: int = 5) -> str:
    return " ".join(draw(st.lists(st.sampled_from(WORDS), min_size=low, max_size=high)))


@st.composite
def stores(draw: Any) -> dict[str, Any]:
    entries = [{"agent": draw(st.sampled_from(AGENTS)), "category": draw(st.sampled_from(CATEGORIES)),
                "kind": draw(st.sampled_from(KINDS)), "text": words(draw),
                "tags": draw(st.lists(st.sampled_from(WORDS), max_size=3)),
                "key": draw(st.sampled_from((None, None, "pref.design", "pref.note")))}
               for _ in range(draw(st.integers(3, 10)))]
    ops = draw(st.lists(st.tuples(st.sampled_from(("forget", "supersede")),
                                  st.integers(0, 9), st.booleans()), max_size=4))
    turns = [words(draw) for _ in range(draw(st.integers(0, 3)))]
    agent = draw(st.sampled_from(AGENTS))
    word = draw(st.sampled_from(WORDS))
    start = draw(st.integers(0, len(word) - 1))
    match = draw(st.sampled_from((None, word, word[start:start + draw(st.integers(3, 6))])))
    since = draw(st.sampled_from((None, None, 3.0, 6.0)))
    if match is None and since is None:
        since = 4.0
    return {"entries": entries, "ops": ops, "turns": turns, "agent": agent, "match": match,
            "since": None if since is None else BASE + since * 60}


def build(home: Path, example: dict[str, Any]) -> tuple[Store, Entries, AgentArchive]:
    config = load_config()
    store = Store(home / "memoryd.db")
    entries = Entries(config.remember, store, Ledger(home / "ledger"))
    ids = []
    for number, item in enumerate(example["entries"]):
        params = {k: v for k, v in item.items() if v is not None}
        params.update(text=f"{item['text']} [{number}]", created=BASE + number * 60)
        drafts = entries.drafts([remember_request(Params("remember", params))])
        done = entries.remember_many(drafts, [None], {}, 10.0)
        ids.append(done.written[0].entry.uid)
    for number, (op, which, reason) in enumerate(example["ops"]):
        entry = store.entry_by_uid(ids[which % len(ids)])
        assert entry is not None
        if entry.status != "active":
            continue
        if op == "forget":
            entries.forget_entry(entry, "user", "the design note moved" if reason else None)
        else:
            entries.supersede(supersede_request(Params("supersede", {
                "id": entry.uid, "text": f"teal note now [s{number}]"})), None)
    for number, text in enumerate(example["turns"]):
        with store.transaction():
            store.insert_entry({
                "uid": f"t{next(_count):031x}", "agent": "designer", "kind": "turn",
                "category": "", "text": f"User: {text} [t{number}]", "hash": f"h{number}",
                "status": "active", "created": BASE + number * 120, "updated": BASE,
                "via": "watch", "source": "/home/u/.claude/projects/-home-u-design-shop/s.jsonl",
                "session": "s1", "tags": [], "confidence": 0.5})
    archive = AgentArchive(home / "transcripts")
    archive_now(store, archive)
    return store, entries, archive


def rebuilt(home: Path, name: str) -> dict[str, dict[str, Any]]:
    """Every entry of an index rebuilt from the files, by id (without the row number)."""
    store = Store(home / name)
    try:
        restore_archives(store, AgentArchive(home / "transcripts"))
        replay_ledgers(store, Ledger(home / "ledger"))
        return rows(store)
    finally:
        store.close()


def rows(store: Store) -> dict[str, dict[str, Any]]:
    found = {}
    for row in store._db.execute(SELECT_ENTRY):
        entry = row_to_entry(row).as_dict()
        entry.pop("rowid")
        found[entry["id"]] = entry
    return found


def selected(entry: dict[str, Any], example: dict[str, Any]) -> bool:
    match, since = example["match"], example["since"]
    return (entry["agent"] == example["agent"]
            and (since is None or entry["created"] >= since)
            and (match is None
                 or re.search(re.escape(match), entry["text"], re.IGNORECASE) is not None))


def files(home: Path) -> dict[str, bytes]:
    return {str(p.relative_to(home)): p.read_bytes() for p in sorted(home.rglob("*.jsonl*"))}


@settings(max_examples=20, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(example=stores())
def test_a_rebuild_after_a_purge_restores_every_entry_it_did_not_select(
        tmp_path_factory: Any, example: dict[str, Any]) -> None:
    home = tmp_path_factory.mktemp("purge")
    store, entries, archive = build(home, example)
    try:
        before = rebuilt(home, "before.db")
        live = rows(store)
        old_files = files(home)
        purge = Purge(store, entries.ledger, archive, example["agent"], example["since"],
                      example["match"], history=AgentArchive(home / "history"))
        report = purge.run(dry_run=False, actor="user")
        gone = {uid for uid, entry in before.items() if selected(entry, example)}
        assert {e.uid for e in report.entries} == gone
        # live: the others untouched, row for row
        assert rows(store) == {uid: e for uid, e in live.items() if uid not in gone}
        texts = [live[uid]["text"] for uid in gone]
        for (uid, before_json, after_json) in store._db.execute(
                "SELECT uid, before, after FROM events"):
            assert uid not in gone
            assert not any(t in (before_json or "") + (after_json or "") for t in texts)
    finally:
        store.close()
    after = rebuilt(home, "after.db")
    assert after == {uid: entry for uid, entry in before.items() if uid not in gone}
    new_files = files(home)
    for name, data in new_files.items():
        if example["agent"] not in name:  # another agent's ledger or archive: byte for byte
            assert data == old_files[name], name
    agent_files = [data for name, data in new_files.items() if example["agent"] in name]
    for text in texts:
        assert not any(text.encode() in data for data in agent_files if data[:2] != b"\x1f\x8b")
    for name in (f"transcripts/{example['agent']}.jsonl.gz",):
        if (home / name).exists():
            archived = "\n".join(str(r) for _, recs in archive.read(example["agent"]) for r in recs)
            assert not any(text in archived for text in texts)
