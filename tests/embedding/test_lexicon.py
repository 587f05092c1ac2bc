"""The lexicon: each word of the entries embedded alone, so that search can pair a question's
words with an entry's nearest words ("skinny" with "thin") — the ``align`` evidence."""

from __future__ import annotations

from typing import Any

from memoryd_client import Client

from memoryd.embedding.model import Embedder
from memoryd.store import lexicon
from memoryd.store.database import ModelInfo, Store
from tests.conftest import start_daemon, wait_until


def caught_up(client: Client) -> dict[str, Any]:
    status: dict[str, Any] = {}

    def done() -> bool:
        status.update(client.status()["lexicon"])
        return status["entries_behind"] == 0 and status["words"] > 0

    wait_until(done)
    return status


def evidence(client: Client, query: str) -> dict[str, dict[str, float]]:
    hits = client.search(query, agent="designer", limit=10)["hits"]
    return {hit["text"].split()[0]: hit["evidence"] for hit in hits}


def test_question_words_pair_with_their_nearest_words_in_each_entry(client: Client) -> None:
    client.remember("designer", "print", "Tentacles thinner than 1.5 mm tear off on the plotter.")
    client.remember("designer", "ops", "Invoices are exported to the accountant every Monday.")
    client.remember("designer", "cafe", "The team orders skinny lattes before the review.")
    status = caught_up(client)
    assert status["bytes"] > 0
    found = evidence(client, "how skinny can it be")
    # "skinny" (in the lexicon from the latte note) is nearer to "thinner" than to anything
    # in the invoice note; the latte note has the word itself
    assert found["Tentacles"]["align"] > found["Invoices"]["align"] + 0.1
    assert found["The"]["align"] > 0.99
    # a word no entry uses is embedded with the question
    found = evidence(client, "how slender can it be")
    assert found["Tentacles"]["align"] > found["Invoices"]["align"] + 0.1
    assert max(hit["align"] for hit in found.values()) < 0.99


def test_a_new_entry_gets_its_words_and_a_restart_keeps_them(embedder: Embedder) -> None:
    running = start_daemon(embedder)
    try:
        with Client(running.socket, timeout_s=30) as client:
            client.remember("designer", "print", "Magenta backgrounds make green characters pop.")
            before = caught_up(client)
            assert evidence(client, "magenta")["Magenta"]["align"] > 0.99
    finally:
        running.stop()
    running = start_daemon(embedder)
    try:
        with Client(running.socket, timeout_s=30) as client:
            after = client.status()["lexicon"]  # loaded from the database, nothing to refill
            assert after["words"] == before["words"] and after["entries_behind"] == 0
    finally:
        running.stop()


def test_another_model_drops_the_words_and_they_fill_again(tmp_path: Any) -> None:
    store = Store(tmp_path / "db")
    store.bind_model(ModelInfo("m1", "h1", 4))
    words = lexicon.Lexicon(4)
    words.add(store, {"thin": "thin"}, [[1.0, 0.0, 0.0, 0.0]], cursor=7)
    assert lexicon.cursor(store) == 7
    store.bind_model(ModelInfo("m2", "h2", 4))
    reloaded = lexicon.Lexicon(4)
    reloaded.load(store)
    assert len(reloaded) == 0 and lexicon.cursor(store) == 0
