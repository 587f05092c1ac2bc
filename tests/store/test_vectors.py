"""The vector index agrees with exact search, scores parts, applies filters, and keeps only bits
and columns in memory."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import apsw
import numpy as np
import pytest
from memoryd_client import Client
from memoryd_client.status_view import health_line

from memoryd.config import load_config
from memoryd.embedding import vectors as vectors_work
from memoryd.embedding.model import LATE_CHUNKING, SENTENCES, Embedder
from memoryd.store import vectors as vector_module
from memoryd.store.vectors import VectorFilter, VectorIndex
from memoryd.text import split_parts
from tests.conftest import start_daemon, wait_until

SUBJECTS = ["ruff", "pytest", "postgres", "deploys", "stickers", "the cat", "commit messages",
            "docker images", "the release train", "code review", "invoices", "the API gateway"]
VERBS = ["must never", "should always", "tends to", "is not allowed to", "was seen to"]
OBJECTS = ["break on Mondays", "use tabs", "run before merging", "be signed", "need a changelog",
           "fail under load", "log secrets", "retry three times"]
NONE = np.zeros((0, 384), dtype=np.float32)


def corpus() -> list[str]:
    return [f"{s} {v} {o}" for s in SUBJECTS for v in VERBS for o in OBJECTS]


@pytest.fixture
def new_index(tmp_path: Path):  # type: ignore[no-untyped-def]
    made: list[VectorIndex] = []

    def make(**options: int) -> VectorIndex:
        made.append(VectorIndex(384, tmp_path / f"rows{len(made)}", **options))
        return made[-1]

    yield make
    for index in made:
        index.close()


def meta(agent: str = "a", category: str = "c", project: str | None = None, kind: str = "note",
         status: str = "active", created: float = 0.0) -> tuple:
    return (agent, category, project, kind, status, created)


@pytest.mark.parametrize("block", [vector_module.HAMMING_BLOCK, 7])  # 7: the scan in many blocks
def test_index_top_hits_match_exact_search(embedder: Embedder, new_index, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch, block: int) -> None:
    monkeypatch.setattr(vector_module, "HAMMING_BLOCK", block)
    texts = corpus()
    vectors = embedder.embed(texts)
    index = new_index(min_rerank=64)  # the bit scan really narrows
    index.add_many(range(1, len(texts) + 1), vectors, [NONE] * len(texts), [meta()] * len(texts))
    queries = embedder.embed(["which tools break at the start of the week",
                              "signing requirements for releases", "leaking credentials in logs"])
    recall = []
    for q in queries:
        exact = set((np.argsort(-(vectors @ q))[:10] + 1).tolist())
        found = index.search(q, 10, VectorFilter())
        recall.append(len(exact & set(found)) / 10)
        for rowid, (whole, part) in found.items():  # int8 rows with a scale: the exact cosine, nearly
            assert abs(whole - float(vectors[rowid - 1] @ q)) < 0.005 and part == whole
    assert np.mean(recall) >= 0.8


@pytest.mark.parametrize("block", [vector_module.HAMMING_BLOCK, 7])
def test_a_narrow_filter_scans_its_own_rows(embedder: Embedder, new_index, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch, block: int) -> None:
    """A filter that allows a few of many rows (one agent's) finds that agent's best, as exact
    search over its entries does, when the bit scan narrows to fewer rows than it has."""
    monkeypatch.setattr(vector_module, "HAMMING_BLOCK", block)
    texts = corpus()
    vectors = embedder.embed(texts)
    index = new_index(min_rerank=16)
    agents = [f"agent-{n % 6}" for n in range(len(texts))]
    index.add_many(range(1, len(texts) + 1), vectors, [NONE] * len(texts),
                   [meta(agent) for agent in agents])
    mine = np.array([n for n, agent in enumerate(agents) if agent == "agent-2"])
    assert 16 < len(mine) < len(texts) / 3
    recall = []
    for q in embedder.embed(["which tools break at the start of the week",
                             "signing requirements for releases", "leaking credentials in logs"]):
        found = index.search(q, 5, VectorFilter(agents=["agent-2"]))
        assert {agents[r - 1] for r in found} == {"agent-2"} and len(found) == 5
        exact = set((mine[np.argsort(-(vectors[mine] @ q))[:5]] + 1).tolist())
        recall.append(len(exact & set(found)) / 5)
    assert np.mean(recall) >= 0.8


def test_a_search_follows_the_writes_since_the_last(embedder: Embedder, new_index,
                                                    tmp_path: Path) -> None:
    """The rows a filter allows are kept between searches; any write since counts: a new
    entry is found, a forgotten or moved one is not."""
    vectors = embedder.embed(["alpha note", "beta note", "gamma note"])
    index = new_index()
    index.add_many([1, 2], vectors[:2], [NONE] * 2, [meta(), meta()])
    q = vectors[2]
    assert set(index.search(q, 10, VectorFilter(agents=["a"]))) == {1, 2}
    index.add(3, vectors[2], NONE, meta())
    assert list(index.search(q, 10, VectorFilter(agents=["a"])))[0] == 3
    index.set_status(3, "forgotten")
    assert set(index.search(q, 10, VectorFilter(agents=["a"]))) == {1, 2}
    index.set_meta(2, meta("b"))
    assert set(index.search(q, 10, VectorFilter(agents=["a"]))) == {1}
    index.remove(1)
    assert index.search(q, 10, VectorFilter(agents=["a"])) == {}


def test_an_entry_is_found_by_its_best_part(embedder: Embedder, new_index, tmp_path: Path) -> None:
    whole = "Sprint retro notes. The staging database moved to Postgres 16. Lunch was pizza."
    parts = embedder.embed(["Sprint retro notes.", "The staging database moved to Postgres 16.",
                            "Lunch was pizza."])
    others = corpus()[:40]
    index = new_index()
    index.add_many(range(2, 42), embedder.embed(others), [NONE] * 40, [meta()] * 40)
    index.add(1, embedder.embed([whole])[0], parts, meta())
    q = embedder.embed(["which Postgres version does staging run"])[0]
    found = index.search(q, 3, VectorFilter())
    assert list(found)[0] == 1
    cosine, best_part = found[1]
    assert best_part > cosine and abs(best_part - float(parts[1] @ q)) < 0.005
    assert index.scores([1], q)[1] == found[1]


def test_filters_and_status(embedder: Embedder, new_index, tmp_path: Path) -> None:
    vectors = embedder.embed(["alpha note", "beta note", "gamma note", "delta note"])
    index = new_index()
    index.add_many([1, 2, 3, 4], vectors, [NONE] * 4, [
        meta("a", "x", None, "note", "active", 100.0),
        meta("b", "x", "/p", "fact", "active", 200.0),
        meta("a", "y", "/p", "lesson", "active", 300.0),
        meta("a", "x", None, "note", "forgotten", 400.0),
    ])
    q = vectors[0]
    assert set(index.search(q, 10, VectorFilter(agents=["a"]))) == {1, 3}
    assert set(index.search(q, 10, VectorFilter(categories=["x"]))) == {1, 2}
    assert set(index.search(q, 10, VectorFilter(projects=["/p"]))) == {2, 3}
    assert set(index.search(q, 10, VectorFilter(projects=["/p", None]))) == {1, 2, 3}
    assert set(index.search(q, 10, VectorFilter(kinds=["fact", "lesson"]))) == {2, 3}
    assert set(index.search(q, 10, VectorFilter(since=150, until=250))) == {2}
    assert set(index.search(q, 10, VectorFilter(statuses=("forgotten",)))) == {4}
    assert index.search(q, 10, VectorFilter(agents=["nobody"])) == {}
    index.set_status(1, "superseded")
    assert 1 not in index.search(q, 10, VectorFilter())


def test_a_filter_of_many_agents(embedder: Embedder, new_index, tmp_path: Path) -> None:
    """A filter naming more agents than are compared one by one (a machine with dozens of
    subagents) finds exactly theirs, as a filter of one or two does."""
    texts = corpus()[:40]
    index = new_index()
    index.add_many(range(1, 41), embedder.embed(texts), [NONE] * 40,
                   [meta(f"agent-{n}") for n in range(1, 41)])
    q = embedder.embed(["which tools break at the start of the week"])[0]
    many = [f"agent-{n}" for n in range(1, 36)] + ["nobody"]
    assert set(index.search(q, 50, VectorFilter(agents=many))) == set(range(1, 36))
    assert set(index.search(q, 50, VectorFilter(agents=["agent-7", "agent-40"]))) == {7, 40}


def test_changed_columns_and_a_deleted_entry(embedder: Embedder, new_index, tmp_path: Path) -> None:
    """The filter columns follow an entry that moved (category, kind, date) without a new
    vector; a deleted entry leaves the index, so that a new entry given its rowid is not
    answered for by the old one's columns."""
    vectors = embedder.embed(["alpha note", "beta note", "gamma note"])
    index = new_index()
    index.add_many([1, 2, 3], vectors, [NONE] * 3, [meta("a", "x"), meta("a", "x"), meta("a", "y")])
    q = vectors[0]
    index.set_meta(1, meta("a", "y", None, "lesson", "active", 50.0))
    assert set(index.search(q, 10, VectorFilter(categories=["y"]))) == {1, 3}
    assert set(index.search(q, 10, VectorFilter(kinds=["lesson"], until=60))) == {1}
    assert [r for r, _ in index.nearest(q, "a", "y", 2)] == [1, 3]
    assert [r for r, _ in index.nearest(q, "a", "x", 2)] == [2]
    assert index.passing([1, 2, 3, 9], VectorFilter(categories=["y"])) == ({1, 3}, [9])
    index.set_meta(1, meta("a", "x"))  # and back: found once, in its category only
    assert [r for r, _ in index.nearest(q, "a", "x", 5)] == [1, 2]
    assert [r for r, _ in index.nearest(q, "a", "y", 5)] == [3]
    index.set_meta(1, meta("a", "y"))
    index.remove(3)
    assert len(index) == 2 and 3 not in index.search(vectors[2], 10, VectorFilter())
    assert index.passing([1, 3], VectorFilter()) == ({1}, [3])  # the database decides for 3


def test_a_replaced_vector_is_not_found_again(embedder: Embedder, new_index, tmp_path: Path) -> None:
    old, new = embedder.embed(["invoices are due on Fridays", "the cat sleeps on the sofa"])
    index = new_index()
    index.add(1, old, NONE, meta())
    index.add(1, new, NONE, meta())
    assert len(index) == 1
    assert index.search(old, 5, VectorFilter())[1][0] < 0.5  # scored by its new vector


def test_nearest_within_agent_and_category(embedder: Embedder, new_index, tmp_path: Path) -> None:
    vectors = embedder.embed(["deploys never on Fridays", "no deploys on Friday", "use tabs"])
    index = new_index()
    index.add_many([1, 2, 3], vectors, [NONE] * 3,
                   [meta("a", "deploy"), meta("b", "deploy"), meta("a", "style")])
    [(rowid, cosine)] = index.nearest(vectors[1], "a", "deploy", 1)
    assert rowid == 1 and cosine > 0.8
    assert index.nearest(vectors[1], "a", "nothing") == []
    index.set_status(3, "forgotten")  # a group with no active entry left
    assert index.nearest(vectors[2], "a", "style") == []


def test_grows_past_its_capacity_and_memory_is_bits_and_columns(embedder: Embedder,
                                                                new_index, tmp_path: Path) -> None:
    texts = corpus()
    vectors = embedder.embed(texts)
    index = new_index(capacity=4)
    for i, v in enumerate(vectors):
        index.add(i + 1, v, NONE, meta())
    assert len(index) == len(texts)
    assert list(index.search(vectors[17], 1, VectorFilter())) == [18]
    assert index.nbytes < len(texts) * 2 * 100  # no float copy in memory: ~60 bytes a row
    assert index.path.stat().st_size >= len(texts) * 384  # int8 rows; sparse beyond those written


def test_switching_how_sentence_vectors_are_made_makes_them_again(memoryd_home: Path,
                                                                    embedder: Embedder) -> None:
    """``[embed] parts``: a store's sentence vectors are made again, in the background, when
    the setting changes (the entries' own vectors stay, and search by them meanwhile); then
    they are the ones the setting makes, never a mix of the two schemes."""
    text = ("The plotter tears tentacles thinner than 1.5 mm off the sticker sheet. Order the "
            "45 degree blades from the usual supplier before the next batch.")
    alone = embedder.embed_alone(split_parts(text))

    def run(embedder: Embedder | None) -> tuple[str, np.ndarray]:
        """A daemon (None: loading the model as configured) until the backlog is embedded:
        the recorded scheme and the stored part vectors."""
        running = start_daemon(embedder)
        try:
            with Client(running.socket, timeout_s=30) as c:
                if not c.search("tentacles", agent="designer")["hits"]:
                    c.remember("designer", "print", text)
                wait_until(lambda: c.status()["backlog"] == 0
                           and c.status()["lexicon"]["entries_behind"] == 0)
                [hit] = c.search("which blades should we order", agent="designer")["hits"]
                assert "scored_without" not in hit, hit["scored_without"]
        finally:
            running.stop()
        db = apsw.Connection(str(memoryd_home / "memoryd.db"))
        model = json.loads(db.execute("SELECT value FROM meta WHERE key='embedding_model'")
                           .fetchone()[0])
        stored = np.frombuffer(db.execute("SELECT vectors FROM part_vectors").fetchone()[0],
                               dtype=np.float32).reshape(-1, 384)
        db.close()
        return model["parts"], stored

    scheme, stored = run(embedder)
    assert scheme == SENTENCES and (stored * alone).sum(axis=1).min() > 0.98
    (memoryd_home / "config.toml").write_text('[embed]\nparts = "late-chunking"\n')
    scheme, stored = run(None)
    [(_, late)] = Embedder(load_config().embed).embed_entries([text])
    assert scheme == LATE_CHUNKING and (stored * late).sum(axis=1).min() > 0.98
    assert (stored * alone).sum(axis=1).max() < 0.97
    (memoryd_home / "config.toml").unlink()
    scheme, stored = run(embedder)
    assert scheme == SENTENCES and (stored * alone).sum(axis=1).min() > 0.98


def test_a_fill_from_a_snapshot_leaves_what_writes_did_meanwhile(embedder: Embedder,
                                                                  new_index) -> None:
    """The index is filled from a snapshot of the store while writes go on: an entry written
    since keeps its new vector, one deleted since stays out, the rest come from the snapshot."""
    old, new, gone, kept = embedder.embed(["the release train leaves on Mondays",
                                          "invoices are paid within thirty days",
                                          "docker images are signed",
                                          "code review needs two approvals"])
    index = new_index()
    index.start_fill()
    index.add_many([2], new[None, :], [NONE], [meta()])  # a write: re-embedded since
    index.remove(3)  # a write: deleted since
    index.fill([1, 2, 3], np.stack([kept, old, gone]), [NONE] * 3, [meta()] * 3)
    assert index.filling
    index.end_fill()
    assert not index.filling
    scores = index.scores([1, 2, 3], new)
    assert scores[2][0] > 0.99 and 3 not in index.search(gone, 3, VectorFilter())
    assert index.search(kept, 1, VectorFilter()) == {1: pytest.approx((1.0, 1.0), abs=0.02)}


def test_a_daemon_serves_while_its_vector_index_fills(memoryd_home: Path, embedder: Embedder,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """After a start, the vector index is filled off the database thread: searches and writes
    are answered meanwhile (the stored vectors are read instead), and what is written or
    forgotten meanwhile is in the index, as written, once it is full."""
    running = start_daemon(embedder)
    try:
        with Client(running.socket, timeout_s=30) as c:
            for text in corpus()[:40]:
                c.remember("coder", "notes", text)
            doomed = c.remember("coder", "notes", "The staging database is rebuilt every "
                                                  "night at two")["entry"]["id"]
    finally:
        running.stop()

    snapshot, release = threading.Event(), threading.Event()
    real = vectors_work.stored_vectors

    def held(*args, **kwargs):  # type: ignore[no-untyped-def]
        batches = real(*args, **kwargs)
        first = next(batches, None)  # the snapshot is taken: the test writes after it
        snapshot.set()
        assert release.wait(60)
        if first is not None:
            yield first
        yield from batches

    monkeypatch.setattr(vectors_work, "stored_vectors", held)
    running = start_daemon(embedder, wait_for_model=False)
    try:
        with Client(running.socket, timeout_s=30) as c:
            assert snapshot.wait(30)
            assert c.status()["vector_index"]["ready"] is False
            assert "building the vector index" in health_line(c.status())
            written = c.remember("coder", "notes", "Quarterly tax forms go to the accountant "
                                                   "in March")["entry"]["id"]
            c.forget(doomed)
            assert c.search("who receives our fiscal paperwork", agent="coder")["hits"]
            release.set()
            wait_until(lambda: c.status()["vector_index"]["ready"])
            assert "building the vector index" not in health_line(c.status())
            # found by meaning alone: no word in common with the note
            hits = c.search("who receives our fiscal paperwork", agent="coder")["hits"]
            assert hits[0]["id"] == written, hits[:3]
            assert hits[0]["score"]["vector"] > 0.3
            assert doomed not in {h["id"] for h in c.search(
                "staging database rebuilt nightly", agent="coder", limit=50)["hits"]}
    finally:
        release.set()
        running.stop()
    assert not running.errors, running.errors
