"""remember: namespaces, exact and near duplicates, key conflicts, history (seed 001, 003)."""

from __future__ import annotations

import asyncio
import gc
import itertools
import logging
import threading
from typing import Any

import numpy as np
import pytest
from memoryd_client import BadParamsError, Client, ForbiddenError, NotFoundError

from memoryd.text import split_parts
from tests.conftest import RunningDaemon, start_daemon, wait_until


def test_stored_entry_carries_its_provenance(client: Client, tmp_path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "src").mkdir()
    reply = client.remember("designer", "rejected-designs", "floating speech bubble on a sticker",
                            tags=["Sticker", "die-cut"], cwd=str(tmp_path / "src"), session="s1")
    assert reply["stored"] is True
    entry = client.get(reply["entry"]["id"])
    assert entry["agent"] == "designer"
    assert entry["category"] == "rejected-designs"
    assert entry["kind"] == "note"
    assert entry["tags"] == ["die-cut", "sticker"]
    assert entry["project"] == str(tmp_path)
    assert entry["confidence"] == pytest.approx(0.95)
    assert entry["via"] == "api" and entry["writer"] == "designer" and entry["session"] == "s1"
    assert entry["status"] == "active"


def test_exact_duplicate_is_not_stored_and_returns_the_existing_entry(client: Client) -> None:
    first = client.remember("social", "exhausted-stories", "The SQLite WAL data-loss war story")
    again = client.remember("social", "exhausted-stories", "  the sqlite WAL   data-loss war STORY ")
    assert again["stored"] is False and again["duplicate"] == "exact"
    assert again["entry"]["id"] == first["entry"]["id"]
    # the same text in another category or agent is a different memory
    assert client.remember("social", "other", "The SQLite WAL data-loss war story")["stored"]
    assert client.remember("coder", "exhausted-stories", "The SQLite WAL data-loss war story")["stored"]


def test_near_duplicate_is_reported_and_stored_only_with_force(client: Client) -> None:
    client.remember("social", "stories", "We lost data because SQLite WAL files were deleted during a deploy.")
    near = client.remember("social", "stories", "We lost data because the SQLite WAL files got deleted during a deploy.")
    assert near["stored"] is False and near["duplicate"] == "near"
    assert near["cosine"] >= 0.92
    forced = client.remember("social", "stories", "We lost data because the SQLite WAL files got deleted during a deploy.", force=True)
    assert forced["stored"] is True and forced["similar"]["cosine"] >= 0.92
    # related but distinct (seed 001's example) is not a duplicate
    assert client.remember("social", "stories", "SQLite WAL mode configuration for our service")["stored"]


@pytest.mark.parametrize("first, then", [
    ("build status: ✅", "build status: ❌"),
    ("deploy window: 🟢", "deploy window: 🔴"),
    ("ฉันชอบกาแฟ", "ฉันไม่ชอบชา"),  # Thai: "I like coffee" / "I don't like tea"
])
def test_texts_the_model_cannot_read_apart_are_not_duplicates(client: Client, first: str,
                                                              then: str) -> None:
    """Symbols and scripts the model has no tokens for read as one unknown token, so the two
    texts' vectors are one (cosine 1.0); their words tell them apart, and the second is
    stored, not refused as a near duplicate of the first."""
    client.remember("status", "ci", first)
    result = client.remember("status", "ci", then)
    assert result["stored"] and result["entry"]["text"] == then


def test_a_supersede_to_a_text_another_agent_holds_leaves_no_error_in_the_log(
        client: Client, caplog: pytest.LogCaptureFixture) -> None:
    """A new text known already takes its vectors from the cache and gives up the embedding
    of it and its sentences begun meanwhile: that left "_GatheringFuture exception was never
    retrieved … CancelledError" in the daemon's log, an ERROR, at every such supersede."""
    client.remember("ops", "ports", "The web listens on port 9090")
    with caplog.at_level(logging.ERROR):
        for agent in ("dev", "qa", "docs"):
            old = client.remember(agent, "ports", "The web listens on port 8080")["entry"]
            client.supersede(old["id"], "The web listens on port 9090", agent=agent)
        gc.collect()
        client.status()
    assert not [r for r in caplog.records if "never retrieved" in r.getMessage()]


def test_a_search_right_after_a_write_finds_it_by_its_vector_and_its_new_words(
        client: Client) -> None:
    """A write is answered before its new words reach the lexicon and its vector the index
    (README, "Performance"); a search right after it still finds it by meaning, with both.
    (The next write's near-duplicate decision: test_near_duplicate_is_reported….)"""
    client.remember("designer", "print", "Invoices are exported to the accountant every Monday.")
    stored = client.remember("designer", "print",
                             "Tentacles thinner than 1.5 mm tear off on the plotter. Use a "
                             "sharper zorbulating blade for them.")
    result = client.search("how skinny can a decal's arm be", agent="designer")
    assert result["hits"][0]["id"] == stored["entry"]["id"]
    assert "scored_without" not in result["hits"][0], result["hits"][0]["scored_without"]
    assert result["degraded"] is False, result["degraded_reason"]


def test_key_conflict_higher_confidence_wins_and_loser_is_kept(client: Client) -> None:
    vim = client.remember("coder", "prefs", "The user's editor is vim", key="pref.editor")["entry"]
    low = client.remember("coder", "prefs", "The user's editor is emacs", key="pref.editor", confidence=0.5)
    assert low["stored"] is True and low["entry"]["status"] == "superseded"
    assert low["entry"]["superseded_by"] == vim["id"]
    high = client.remember("coder", "prefs", "The user's editor is helix", key="pref.editor", confidence=0.99)
    assert high["entry"]["status"] == "active" and high["entry"]["kind"] == "fact"
    assert [old["id"] for old in high["superseded"]] == [vim["id"]]
    history = client.history(agent="coder", key="pref.editor")
    assert [e["text"] for e in history["entries"]] == [
        "The user's editor is vim", "The user's editor is emacs", "The user's editor is helix"]
    assert [e["status"] for e in history["entries"]] == ["superseded", "superseded", "active"]
    assert ("superseded", vim["id"]) in {(ev["action"], ev["id"]) for ev in history["events"]}
    hits = client.search("editor", agent="coder")["hits"]
    assert [h["text"] for h in hits] == ["The user's editor is helix"]


def test_the_same_value_under_another_key_is_stored_not_refused_as_a_duplicate(
        client: Client) -> None:
    """A fact's key is what its text is about: "emacs" as the editor and as the mail client
    are two memories (the second was refused as an exact duplicate of the first)."""
    editor = client.remember("coder", "prefs", "emacs with evil mode", key="pref.editor")
    mail = client.remember("coder", "prefs", "emacs with evil mode", key="pref.mail")
    assert mail["stored"] is True and mail["entry"]["id"] != editor["entry"]["id"]
    assert {e["key"] for e in client.list_entries(agent="coder")["entries"]} == {"pref.editor", "pref.mail"}
    again = client.remember("coder", "prefs", "emacs with evil mode", key="pref.mail")
    assert again["stored"] is False and again["duplicate"] == "exact"


def test_forget_is_soft_journaled_and_namespaced(client: Client) -> None:
    entry = client.remember("designer", "notes", "Die-cut stickers need one continuous shape")["entry"]
    with pytest.raises(ForbiddenError, match="belongs to agent 'designer'"):
        client.forget(entry["id"], agent="social")
    forgotten = client.forget(entry["id"][:10], agent="designer", reason="obsolete")
    assert forgotten["status"] == "forgotten"
    assert client.search("continuous shape stickers", agent="designer")["hits"] == []
    assert client.search("continuous shape", agent="designer", status="forgotten")["hits"]
    events = client.history(entry["id"])["events"]
    assert [e["action"] for e in events] == ["remember", "forgotten"]
    assert events[1]["before"]["status"] == "active" and events[1]["after"]["status"] == "forgotten"


def test_supersede_keeps_the_old_text(client: Client) -> None:
    old = client.remember("coder", "deploy", "Deploy with make release")["entry"]
    reply = client.supersede(old["id"], "Deploy with the release workflow, never by hand", agent="coder")
    assert reply["superseded"]["status"] == "superseded"
    assert reply["superseded"]["superseded_by"] == reply["entry"]["id"]
    texts = [e["text"] for e in client.history(reply["entry"]["id"])["entries"]]
    assert texts == ["Deploy with make release", "Deploy with the release workflow, never by hand"]


def test_remember_many_applies_the_same_rules(client: Client) -> None:
    results = client.remember_many([
        {"agent": "a1", "category": "c", "text": "alpha fact one"},
        {"agent": "a1", "category": "c", "text": "ALPHA fact one"},
        {"agent": "a2", "category": "c", "text": "beta fact"},
    ])["results"]
    assert [r["stored"] for r in results] == [True, False, True]
    assert results[1]["id"] == results[0]["id"] and results[1]["duplicate"] == "exact"


AGENTS_TEXTS = {
    "backend": ["Run the migrations before the API tests", "The billing service retries twice",
                "Postgres runs on port 5433 in the dev stack"],
    "designer": ["Speech bubbles never float over the cat's face", "Stickers use the warm palette"],
    "ops": ["Rotate the deploy keys every quarter", "The staging cluster sleeps at night",
            "Grafana alerts go to the on-call channel", "Backups are checked on Mondays"],
}


def many_agents_entries() -> list[dict[str, str]]:
    """Entries of three agents, interleaved as an import of mixed history sends them."""
    rows = [(agent, text) for agent, texts in AGENTS_TEXTS.items() for text in texts]
    order = sorted(range(len(rows)), key=lambda i: (i * 7) % len(rows))
    return [{"agent": rows[i][0], "category": "notes", "text": rows[i][1]} for i in order]


def assert_each_has_its_own_vector(client: Client, entries: list[dict[str, str]],
                                   results: list[dict]) -> None:
    """Results in the entries' order, each entry in its agent's namespace and found by its own
    text with the vector of that text (the agents' entries are embedded together)."""
    stored = [client.get(r["id"]) for r in results]
    assert [(e["agent"], e["text"]) for e in stored] == \
        [(e["agent"], e["text"]) for e in entries]
    for entry, result in zip(entries, results):
        hit = client.search(entry["text"], agent=entry["agent"])["hits"][0]
        assert hit["id"] == result["id"]
        assert hit["evidence"]["cos"] >= 0.98, (entry["text"], hit["evidence"])


def test_entries_of_several_agents_are_embedded_together_each_with_its_own_vector(
        client: Client) -> None:
    entries = many_agents_entries()
    results = client.remember_many(entries)["results"]
    assert all(r["stored"] for r in results)
    assert_each_has_its_own_vector(client, entries, results)


def test_the_async_client_sends_several_agents_entries_at_once(daemon, client: Client) -> None:
    from memoryd_client import AsyncClient

    entries = many_agents_entries()

    async def run() -> list[dict]:
        async with AsyncClient(daemon.socket) as c:
            return (await c.remember_many(entries))["results"]

    assert_each_has_its_own_vector(client, entries, asyncio.run(run()))


def test_a_refused_agents_entries_raise_and_the_client_goes_on(daemon, client: Client) -> None:
    """One agent's entries refused (feedback from a program): the error is raised, and the
    client's next calls, on the connection whose answer was left unread too, get their own
    answers."""
    with Client(daemon.socket) as mine:
        with pytest.raises(ForbiddenError, match="only a person creates it"):
            mine.remember_many([
                {"agent": "designer", "category": "c", "text": "Short answers", "kind": "feedback"},
                {"agent": "backend", "category": "c", "text": "The queue drains at midnight"},
            ])
        reply = mine.remember("backend", "c", "Pager rotation is weekly")
        assert reply["stored"] and reply["entry"]["text"] == "Pager rotation is weekly"
        hits = mine.search("pager rotation", agent="backend")["hits"]
        assert hits[0]["text"] == "Pager rotation is weekly"
    assert client.search("Short answers", agent="designer")["hits"] == []


@pytest.mark.parametrize("params, message", [
    ({"category": "c", "text": "x"}, "agent is required"),
    ({"agent": "../etc", "category": "c", "text": "x"}, "not a valid agent name"),
    ({"agent": "a", "category": "c", "text": "   "}, "text must not be empty"),
    ({"agent": "a", "category": "c", "text": 5}, "text must be a string"),
    ({"agent": "a", "category": "c", "text": "x", "confidence": 2}, "confidence must be between"),
    ({"agent": "a", "category": "c", "text": "x", "kind": "poem"}, "kind must be one of"),
    ({"agent": "a", "category": "c", "text": "x", "key": "has space"}, "not a dotted key"),
    ({"agent": "a", "category": "c", "text": "x", "tags": [1]}, "tags must be a list of strings"),
])
def test_bad_params_get_a_specific_message(client: Client, params, message) -> None:
    with pytest.raises(BadParamsError, match=message):
        client.call("remember", params)


def test_unknown_id(client: Client) -> None:
    with pytest.raises(NotFoundError):
        client.get("ffffffffffffffff")


#: The same rule twice (memoryd.meaning: one wording only adds filler), ~0.955 apart.
BORDER_PAIR = ("Deploys go through the release workflow; never push to production by hand.",
               "Deploys always go through the release workflow: never push to production by "
               "hand, please.")


def _mates(count: int) -> list[str]:
    return [f"Unrelated note number {i} about {word} and its quirks."
            for i, word in zip(range(count), itertools.cycle(["tabs", "ruff", "redis", "cron"]))]


def borderline_daemon(monkeypatch, embedder, mates: int) -> tuple[RunningDaemon, float]:
    """A daemon whose near-duplicate threshold lies just under the pair's cosine embedded alone
    (~0.955, by the CPU's int8 kernels) and, where a batch moves the second text's vector
    (to ~0.950-0.952 among 7 or 40 others), above the cosine it has in that batch: a decision
    made with the batch's vector would turn."""
    first, second = embedder.embed_alone(list(BORDER_PAIR))
    alone = float(first @ second)
    batched = float(first @ embedder.embed_entries([*_mates(mates), BORDER_PAIR[1]])[-1][0])
    threshold = (alone + batched) / 2 if batched < alone - 1e-4 else alone - 0.002
    monkeypatch.setenv("MEMORYD_REMEMBER_NEAR_DUPLICATE_COSINE", f"{threshold:.5f}")
    return start_daemon(embedder), threshold


@pytest.mark.parametrize("mates", [0, 7, 40])
def test_a_borderline_near_duplicate_does_not_depend_on_its_batch_mates(monkeypatch, embedder,
                                                                        mates) -> None:
    running, threshold = borderline_daemon(monkeypatch, embedder, mates)
    try:
        with Client(running.socket) as client:
            client.remember("coder", "deploy", BORDER_PAIR[0])
            others = [{"agent": "coder", "category": f"other-{i}", "text": text}
                      for i, text in enumerate(_mates(mates))]
            results = client.remember_many([*others, {"agent": "coder", "category": "deploy",
                                                      "text": BORDER_PAIR[1]}])["results"]
    finally:
        running.stop()
    assert results[-1]["stored"] is False and results[-1]["duplicate"] == "near"
    assert results[-1]["cosine"] >= threshold


def test_a_borderline_near_duplicate_written_alone_is_decided_the_same(monkeypatch,
                                                                       embedder) -> None:
    running, threshold = borderline_daemon(monkeypatch, embedder, 0)
    try:
        with Client(running.socket) as client:
            client.remember("coder", "deploy", BORDER_PAIR[0])
            result = client.remember("coder", "deploy", BORDER_PAIR[1])
            forced = client.remember("coder", "deploy", BORDER_PAIR[1], force=True)
    finally:
        running.stop()
    assert result["stored"] is False and result["duplicate"] == "near"
    assert result["cosine"] >= threshold
    assert forced["stored"] is True and forced["similar"]["cosine"] >= threshold


def test_a_bad_entry_anywhere_in_a_bulk_write_stores_none_of_it(client: Client) -> None:
    # entries are embedded and stored 256 at a time: a bad one in the second slice must not
    # leave the first stored behind the error
    entries = [{"agent": "bulk", "category": "c", "text": f"note {i} about item {i * 7}"}
               for i in range(300)]
    entries[280]["confidence"] = 2
    with pytest.raises(BadParamsError, match="confidence must be between"):
        client.remember_many(entries)
    assert client.list_entries(agents=["bulk"])["total"] == 0
    stored = sum(r["stored"] for r in client.remember_many(entries[:280])["results"])
    assert client.list_entries(agents=["bulk"])["total"] == stored > 256


#: Two sentences: a question about the first matches it far better than the whole text.
TWO_SENTENCES = ("The staging database listens on port 5433. Lunch on Fridays is at the Thai "
                 "place on Elm Street.")


def _pair_thread_held(running: RunningDaemon) -> threading.Event:
    """The embedder's pair thread busy with other work (as a bulk write's borderline pairs
    keep it) until the event is set."""
    release = threading.Event()
    running.daemon.threads.pair_thread.submit(release.wait, 60)
    return release


def test_a_write_is_answered_before_its_sentences_are_embedded_and_a_search_waits_for_them(
        embedder) -> None:
    """What the acknowledgement waits for is the durable write and the decision that needs
    the text's vector; the sentences' vectors come after it (issue 35 §3), and a search
    right after the write still finds the entry by its sentence."""
    running = start_daemon(embedder)
    release = threading.Event()
    try:
        with Client(running.socket, timeout_s=10) as client:
            # its words known already: a search does not wait for them to be learned
            client.remember("team", "infra", " ".join(reversed(split_parts(TWO_SENTENCES))))
            wait_until(lambda: client.status()["lexicon"]["entries_behind"] == 0)
            release = _pair_thread_held(running)
            stored = client.remember("ops", "infra", TWO_SENTENCES)  # the pair thread is busy
            assert stored["stored"] is True
            threading.Timer(0.3, release.set).start()
            [hit, *_] = client.search("which port does the staging database listen on",
                                      agent="ops")["hits"]
    finally:
        release.set()
        running.stop()
    assert hit["id"] == stored["entry"]["id"]
    assert "scored_without" not in hit, hit["scored_without"]
    assert hit["score"]["part"] > hit["score"]["vector"] + 0.2  # its first sentence's vector


def test_a_near_duplicate_written_right_after_is_compared_with_the_first_writes_vector(
        embedder) -> None:
    """The first write's own vector is in the index before the next write's decision, its
    sentences' vectors or not."""
    running = start_daemon(embedder)
    release = _pair_thread_held(running)
    try:
        with Client(running.socket, timeout_s=10) as client:
            first = client.remember("ops", "infra", TWO_SENTENCES)
            threading.Timer(0.3, release.set).start()
            again = client.remember("ops", "infra", TWO_SENTENCES.replace(
                "Lunch on Fridays", "On Fridays lunch"))
    finally:
        release.set()
        running.stop()
    assert again["stored"] is False and again["duplicate"] == "near"
    assert again["entry"]["id"] == first["entry"]["id"]


def test_a_single_writes_vectors_are_its_text_and_its_sentences_embedded_as_before(
        embedder) -> None:
    """The text in a run of its own, its sentences together: what a single write was given
    when both were embedded before the acknowledgement (the model's work moved, not
    changed)."""
    running = start_daemon(embedder)
    try:
        with Client(running.socket, timeout_s=30) as client:
            stored = client.remember("ops", "infra", TWO_SENTENCES)["entry"]["id"]
            client.search("staging", agent="ops")  # after the write's vectors are stored
        store = running.daemon.parts.store  # type: ignore[union-attr]

        def read() -> tuple[Any, Any]:
            (rowid,) = store._db.execute("SELECT id FROM entries WHERE uid=?",
                                         (stored,)).fetchone()
            return (store.vectors_by_rowids([rowid])[rowid],
                    store.part_vectors_by_rowids([rowid])[rowid])

        vector, parts = asyncio.run_coroutine_threadsafe(
            running.daemon.db(read), running.loop).result(30)
    finally:
        running.stop()
    assert np.array_equal(vector, embedder.embed_alone([TWO_SENTENCES])[0])
    assert np.array_equal(parts, embedder.embed(split_parts(TWO_SENTENCES)))


def long_text(number: int, chars: int) -> str:
    """A text of about ``chars`` characters, its words its own (no two alike)."""
    words = (f"w{(number * 7919 + i * 104_729) % 1_000_003}" for i in itertools.count())
    text = f"entry {number}:"
    while len(text) < chars:
        text += " " + next(words)
    return text


def test_a_bulk_write_of_long_entries_is_answered_by_ids_not_texts(keyword_daemon) -> None:
    """remember_many answered each entry whole, with the entries it was near: a 7.8 MB batch
    got a 40 MB reply, refused for its size after every entry was stored (the import said it
    failed). Each result now names entries by id, whatever their length."""
    import msgpack

    entries = [{"agent": "long", "category": "c", "text": long_text(i, 16_000)}
               for i in range(60)]
    request = len(msgpack.packb({"entries": entries}))
    with Client(keyword_daemon.socket) as c:
        first = c.remember_many(entries)
        again = c.remember_many(entries)
        for reply in (first, again):
            assert len(msgpack.packb(reply)) < request / 100
            assert not any("text" in result or "entry" in result for result in reply["results"])
        assert [r["stored"] for r in first["results"]] == [True] * len(entries)
        assert [c.get(r["id"])["text"] for r in first["results"]] == [e["text"] for e in entries]
        assert [(r["stored"], r["duplicate"], r["id"]) for r in again["results"]] == \
            [(False, "exact", r["id"]) for r in first["results"]]
