"""What search reads as a word: a word of Han, Kana or Hangul found by any run of its
characters, a symbol searched alone, the titles of the headings a file's entry is under."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from memoryd_client import Client

from memoryd.embedding.model import Embedder
from memoryd.store.database import Store
from tests.conftest import RunningDaemon, start_daemon, wait_until
from tests.store.test_store import as_schema_26

NOTES = {
    "tokyo": "東京オフィスのWi-Fiパスワードは金庫にあります",
    "shanghai": "上海办公室的打印机在三楼",
    "seoul": "서울 사무실 프린터는 2층에 있습니다",
    "checked": "Deploy checklist ✅ passed on staging",
    "failed": "Build status: ❌ on main since Tuesday",
    "english": "Rotate the staging database credentials every quarter",
}


@pytest.fixture(scope="module")
def notes(shared_daemon: RunningDaemon) -> Iterator[dict[str, str]]:
    """The notes, stored once (their ids by name)."""
    with Client(shared_daemon.socket, timeout_s=30) as c:
        yield {name: c.remember("ops", "office", text)["entry"]["id"]
               for name, text in NOTES.items()}


@pytest.fixture
def search(shared_daemon: RunningDaemon) -> Iterator[Client]:
    with Client(shared_daemon.socket, timeout_s=30) as c:
        yield c


@pytest.mark.parametrize(("query", "name"), [
    ("東京", "tokyo"), ("金庫", "tokyo"), ("パスワード", "tokyo"),  # Han, Katakana
    ("打印机", "shanghai"), ("三楼", "shanghai"),
    ("프린터", "seoul"),  # a word with its particle (프린터는) found without it
])
def test_a_run_of_han_kana_or_hangul_is_found_by_any_part_of_it(
        notes: dict[str, str], search: Client, query: str, name: str) -> None:
    """Before, each unspaced run was one word ("東京オフィスのwi"): no question found it."""
    hits = search.search(query, agent="ops")["hits"]
    assert hits[0]["id"] == notes[name] and hits[0]["match"] is True
    assert hits[0]["score"]["keyword"] is not None and hits[0]["score"]["coverage"] == 1.0
    assert [h for h in hits if h["match"]] == hits[:1]


def test_characters_apart_are_not_the_word_they_would_make_together(
        notes: dict[str, str], search: Client) -> None:
    """"机打" has both characters of 打印机, neither beside the other: no keyword match, and no
    share of the question's words either (coverage agrees with the keyword index)."""
    hits = search.search("机打", agent="ops")["hits"]
    shanghai = next(h for h in hits if h["id"] == notes["shanghai"])
    assert shanghai["score"]["keyword"] is None and shanghai["score"]["coverage"] == 0.0
    assert not any(h["match"] for h in hits)


def test_a_word_of_han_characters_is_named_as_held(notes: dict[str, str],
                                                   search: Client) -> None:
    hit = search.search("東京 金庫", agent="ops", explain=True)["hits"][0]
    assert hit["id"] == notes["tokyo"]
    assert hit["explain"]["held"] == ["東京", "金庫"]


@pytest.mark.parametrize(("query", "name"), [("✅", "checked"), ("❌", "failed")])
def test_a_symbol_searched_alone_finds_the_note_that_holds_it(
        notes: dict[str, str], search: Client, query: str, name: str) -> None:
    """The model reads a symbol as its unknown token: the question's vector was as close to
    the Korean note as to the one holding the symbol, and the note was no match (0.60)."""
    result = search.search(query, agent="ops")
    assert [h["id"] for h in result["hits"] if h["match"]] == [notes[name]]
    assert result["degraded"] is False


def test_a_symbol_beside_words_is_one_of_them(notes: dict[str, str], search: Client) -> None:
    hits = search.search("✅ staging", agent="ops")["hits"]
    assert hits[0]["id"] == notes["checked"] and hits[0]["score"]["coverage"] == 1.0
    english = next(h for h in hits if h["id"] == notes["english"])
    assert english["score"]["coverage"] < 1.0


RULES = """\
# Team rules

## Kestrelwood migration
- Move the old orders table in three batches of 10k rows.

## Hosting providers
- Staging runs on Hetzner.
- Production runs on AWS.
"""


def write_rules(memoryd_home: Path, client: Client) -> None:
    """The user's CLAUDE.md, once its entries are indexed."""
    rules = memoryd_home / "user" / ".claude" / "CLAUDE.md"
    rules.parent.mkdir(parents=True, exist_ok=True)
    rules.write_text(RULES)
    wait_until(lambda: client.list_entries(agent="claude-code")["total"] == 3)


def test_a_word_only_in_a_heading_finds_the_entries_under_it(
        memoryd_home: Path, daemon: RunningDaemon, client: Client) -> None:
    """"kestrelwood" was only the category kestrelwood-migration: two unrelated hits at
    0.13/0.11, the bullet under it no match (coverage 0)."""
    write_rules(memoryd_home, client)
    hits = client.search("kestrelwood", agent="claude-code")["hits"]
    assert hits[0]["text"].startswith("Move the old orders table") and hits[0]["match"]
    assert hits[0]["heading"] == "Team rules › Kestrelwood migration"
    assert hits[0]["score"]["coverage"] == 1.0
    assert [h for h in hits if h["match"]] == hits[:1]


def test_bullets_of_one_section_are_no_versions_of_each_other_by_its_title(
        memoryd_home: Path, daemon: RunningDaemon, client: Client) -> None:
    """Two bullets of a section share its title's words: they are not one statement said
    again (the older marked as having a newer version) for it."""
    write_rules(memoryd_home, client)
    hits = client.search("hosting providers", agent="claude-code")["hits"]
    assert {h["text"] for h in hits[:2]} == {"Staging runs on Hetzner.",
                                            "Production runs on AWS."}
    assert not [h for h in hits if "newer" in h]


def test_an_upgraded_store_finds_an_entry_by_its_heading(memoryd_home: Path,
                                                         embedder: Embedder) -> None:
    """A store of schema 26 (no titles kept) finds the bullet by its heading once the daemon
    has started again: its memory files are read again, nothing to do."""
    running = start_daemon(embedder)
    try:
        with Client(running.socket, timeout_s=30) as client:
            write_rules(memoryd_home, client)
    finally:
        running.stop()
    store = Store(memoryd_home / "memoryd.db")
    as_schema_26(store)
    store.close()
    running = start_daemon(embedder)
    try:
        with Client(running.socket, timeout_s=30) as client:
            wait_until(lambda: client.search("kestrelwood", agent="claude-code")["hits"][0]
                       ["match"])
    finally:
        running.stop()
    assert not running.errors
