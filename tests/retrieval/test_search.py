"""search: hybrid keyword + vector retrieval with filters and a match threshold."""

from __future__ import annotations

import asyncio
import re
import threading
import time
from collections.abc import Iterator
from datetime import datetime

import pytest
from memoryd_client import BadParamsError, Client

from tests.conftest import RunningDaemon, wait_until

NOTES = [
    ("coder", "tools", "We use ruff for linting and formatting, not flake8 or black."),
    ("coder", "deploy", "Deploys go through the release workflow; never push to production by hand."),
    ("coder", "db", "The service stores everything in PostgreSQL 15 with logical replication."),
    ("designer", "rejected-designs", "Floating speech bubble disconnected from the character body."),
    ("designer", "feedback", "Sticker designs must feature an illustration or visual humour."),
    ("social", "stories", "The SQLite WAL data-loss war story from the March deploy."),
]


def fill(client: Client) -> Client:
    for agent, category, text in NOTES:
        client.remember(agent, category, text, tags=[category])
    return client


@pytest.fixture
def filled(client: Client) -> Client:
    """The notes, in a daemon of the test's own: for the tests that write."""
    return fill(client)


@pytest.fixture(scope="module")
def notes(shared_daemon: RunningDaemon) -> Iterator[Client]:
    """The notes, stored once: for the tests that only search them."""
    with Client(shared_daemon.socket, timeout_s=30) as c:
        yield fill(c)


def test_paraphrase_without_shared_keywords_is_found(notes: Client) -> None:
    # no word of the query occurs in the stored text: only real vectors can find it
    hits = notes.search("kitten cartoon whose talking balloon drifts off", agent="designer")["hits"]
    assert hits[0]["text"].startswith("Floating speech bubble")
    assert hits[0]["score"]["keyword"] is None and hits[0]["score"]["vector"] > 0.3


def test_hits_carry_scores_age_and_provenance(notes: Client) -> None:
    hit = notes.search("ruff linting", agent="coder")["hits"][0]
    assert hit["text"].startswith("We use ruff")
    assert hit["score"]["keyword"] > 0 and hit["score"]["vector"] > 0.3
    assert 0.5 < hit["score"]["relevance"] <= 1 and hit["score"]["coverage"] == 1.0
    assert set(hit["evidence"]) >= {"cos", "part", "kw", "coverage", "margin"}
    assert hit["match"] is True
    assert hit["age_s"] >= 0 and hit["age"].endswith("s")
    assert hit["via"] == "api" and hit["writer"] == "coder" and hit["created"] <= time.time()


def test_own_namespace_by_default_others_when_named(notes: Client) -> None:
    assert not [h for h in notes.search("deploy", agent="social")["hits"] if h["agent"] != "social"]
    both = notes.search("deploy", agents=["social", "coder"])["hits"]
    assert {h["agent"] for h in both} == {"social", "coder"}
    everyone = notes.search("deploy", agents=["*"])["hits"]
    assert {h["agent"] for h in everyone} == {"social", "coder", "designer"}
    with pytest.raises(BadParamsError, match="give agent"):
        notes.search("deploy")


def test_a_refused_search_leaves_the_searches_after_it_whole(notes: Client) -> None:
    """A search whose filters are refused gets its error, and the searches after it still get
    their vector half (a search's question is embedded on the search thread, which then waits
    for the plan: a refused plan must let it go)."""
    for _ in range(3):
        with pytest.raises(BadParamsError, match="kind must be among"):
            notes.search("speech bubble", agent="designer", kind=["sticker"])
        with pytest.raises(BadParamsError, match="is not before --until"):
            notes.search("speech bubble", agent="designer", since="1d", until="7d")
    hit = notes.search("kitten cartoon whose talking balloon drifts off", agent="designer")["hits"][0]
    assert hit["text"].startswith("Floating speech bubble") and hit["score"]["vector"] > 0.3


def test_filters(notes: Client) -> None:
    assert {h["category"] for h in notes.search("database", agent="coder", category="db")["hits"]} == {"db"}
    tagged = notes.search("ruff", agent="coder", tags=["deploy"])["hits"]
    assert tagged and all(h["tags"] == ["deploy"] for h in tagged)
    assert notes.search("ruff", agent="coder", tags=["tools"])["hits"][0]["text"].startswith("We use ruff")
    assert notes.search("ruff", agent="coder", kind="lesson")["hits"] == []
    assert notes.search("ruff", agent="coder", since="1h")["hits"]
    assert notes.search("ruff", agent="coder", until="2000-01-01")["hits"] == []
    assert len(notes.search("anything at all", agents=["*"], limit=2)["hits"]) <= 2


def test_match_separates_related_from_unrelated(notes: Client) -> None:
    # the README's example and the newcomer report's cases: relevant, though the words differ
    related = notes.search("speech bubble on a cat sticker", agent="designer", match=True)["hits"]
    assert [h["text"][:22] for h in related] == ["Floating speech bubble"]
    linter = notes.search("which linter do we use", agent="coder", match=True)["hits"]
    assert [h["category"] for h in linter] == ["tools"]
    assert notes.search("quarterly tax filing deadline", agent="designer", match=True)["hits"] == []
    # min_score is a probability of relevance and overrides the configured precision
    everything = notes.search("speech bubble on a cat sticker", agent="designer", min_score=0.0)
    assert len(everything["hits"]) == 2 and everything["threshold"] == 0.0
    assert notes.search("speech bubble on a cat sticker", agent="designer",
                         min_score=0.9999)["hits"] == []


@pytest.mark.parametrize(("query", "words"), [
    ('"unbalanced quote', False), ("col:thing*", False), ("(", False), ("NEAR(a b", False),
    ("^start", False), ("a -b +c", False), ("\u0000", False), ("🙂 emoji only 🙂", False),
    ("*", False), ("text:ruff", True), ("ruff*", True), ("'; DROP TABLE entries; --", False),
    ("AND OR NOT", None),
])
def test_fts_syntax_in_user_text_never_reaches_the_user(notes: Client, query: str,
                                                        words: bool | None) -> None:
    """The question's words are searched as words: its quotes, operators, columns and
    wildcards are neither an error nor a query of their own (``words``: the coder's notes hold
    one of its words; None: only common words, either way)."""
    hits = notes.search(query, agent="coder")["hits"]  # an FTS5 syntax error would raise
    by_keyword = [h["text"] for h in hits if h["score"]["keyword"] is not None]
    if words is True:
        assert by_keyword and by_keyword[0].startswith("We use ruff")
    elif words is False:
        assert by_keyword == []
    assert notes.search("ruff", agent="coder")["hits"][0]["text"].startswith("We use ruff")


def test_forgotten_and_superseded_are_hidden_unless_asked(filled: Client) -> None:
    hit = filled.search("PostgreSQL", agent="coder")["hits"][0]
    filled.forget(hit["id"])
    assert not any(h["id"] == hit["id"] for h in filled.search("PostgreSQL", agent="coder")["hits"])
    assert filled.search("PostgreSQL", agent="coder", status="any")["hits"][0]["id"] == hit["id"]



def test_the_words_naming_a_time_do_not_count_against_a_match(filled: Client) -> None:
    """Issue 7: "last week" says when, not what: no entry is about the words "last week", and
    counted as words of the question they kept what was decided then from matching."""
    asked = datetime(2026, 11, 25, 12, 0).timestamp()  # a Wednesday: last week is 16-22 Nov
    then = filled.remember("coder", "deploy", "Staging deploys now wait for a manual approval.",
                           created=datetime(2026, 11, 18, 15, 0).timestamp())["entry"]
    result = filled.search("what did we decide about staging deploys last week", agent="coder",
                           now=asked, match=True)
    assert result["window"]["first"] == "2026-11-16" and result["window"]["last"] == "2026-11-22"
    assert [hit["id"] for hit in result["hits"]] == [then["id"]]
    evidence = result["hits"][0]["evidence"]
    assert evidence["in_window"] == 1.0
    timeless = filled.search("what did we decide about staging deploys", agent="coder",
                             now=asked)["hits"][0]["evidence"]
    assert (evidence["coverage"], evidence["align"]) == (timeless["coverage"], timeless["align"])


def test_searches_beside_writes_see_each_acknowledged_write(daemon, filled: Client) -> None:
    """A search's vector half reads the index on a thread of its own while writes change it:
    each search answers, finds every note written before it started (unless it was being
    forgotten meanwhile), and never a note forgotten before it started."""
    written: list[str] = []
    forgetting: list[str] = []  # asked to forget (maybe not yet done)
    forgotten: list[str] = []  # acknowledged
    stop = threading.Event()
    failures: list[BaseException] = []

    def write() -> None:
        try:
            with Client(daemon.socket, timeout_s=30) as writer:
                for n in range(40):
                    uid = writer.remember("coder", "churn", f"Churn note {n}: the staging cache "
                                          f"warms in {n + 3} minutes after a deploy.")["entry"]["id"]
                    written.append(uid)
                    if n % 3 == 0:
                        forgetting.append(uid)
                        writer.forget(uid)
                        forgotten.append(uid)
        except BaseException as exc:
            failures.append(exc)
        finally:
            stop.set()

    thread = threading.Thread(target=write)
    thread.start()
    searches = 0
    while not stop.is_set() or searches < 5:
        before, gone = set(written), set(forgotten)
        hits = filled.search("how long does the staging cache take to warm after a deploy",
                             agent="coder", limit=100)["hits"]
        ids = {h["id"] for h in hits}
        assert before - set(forgetting) <= ids, "a note written before the search was not found"
        assert not ids & gone, "a note forgotten before the search was found"
        searches += 1
    thread.join()
    assert not failures and len(written) == 40 and searches >= 5


def test_a_copy_in_another_namespace_does_not_lower_a_hits_relevance(client: Client) -> None:
    """L-h (newcomer report, 2026-11-28): the same text in two agents scored 1.00 searched in
    one and 0.47 searched in both: each copy's lead over the next candidate, and its rank,
    counted the other copy as a rival."""
    text = "The staging database is Postgres 16, not MySQL"
    for agent in ("coder", "claude-code"):
        client.remember(agent, "infra", text)
    for other in ("Deploys go through fly.io from the main branch",
                  "We lint with ruff, not flake8", "Tests run with pytest -x",
                  "The cache is Redis 7 on the staging box", "Production runs Postgres 15 on RDS"):
        client.remember("coder", "infra", other)
    question = "which database does staging run"
    [alone] = [h for h in client.search(question, agent="coder")["hits"] if h["text"] == text]
    both = [h for h in client.search(question, agents=["*"])["hits"] if h["text"] == text]
    assert len(both) == 2 and all(h["match"] for h in both)
    for hit in both:
        assert abs(hit["score"]["relevance"] - alone["score"]["relevance"]) < 0.05, \
            (hit["score"], alone["score"])


def test_a_store_that_filled_since_its_first_search_weighs_the_questions_words(
        client: Client) -> None:
    """A question's words are weighed by how rare they are in the store (the hits' coverage of
    them). The count of entries behind that was kept for a minute: a first search on an empty
    store (a new daemon, a status check at start) left it at 0 while the store filled, and
    every word weighed nothing: each hit's coverage was 0, the entry holding all the words
    included, and so was every hit of a search in that minute."""
    assert client.search("anything at all", agent="coder")["hits"] == []
    for text in ("Use vitest fake timers instead of sleeping in tests", *INFRA):
        client.remember("coder", "testing", text)
    hits = client.search("vitest fake timers", agent="coder")["hits"]
    assert hits[0]["text"].startswith("Use vitest fake timers") and hits[0]["match"]
    assert hits[0]["score"]["coverage"] == 1.0
    half = client.search("vitest github actions", agent="coder", match=False)["hits"]
    assert {h["text"][:10]: h["score"]["coverage"] for h in half if h["score"]["coverage"]} \
        .keys() == {"Use vitest", "CI runs on"}


INFRA = ["CI runs on GitHub Actions for every push to main",
         "We lint with ruff, not flake8", "Deploys go through fly.io from the main branch",
         "Tests run with pytest -x"]


def test_a_redaction_marker_is_no_word_of_the_entry(client: Client) -> None:
    """L-f (newcomer report, 2026-11-28): `[REDACTED:github-token]` made "do we use github
    actions" flag the entry holding the token above the one about Actions, and a search for
    "redacted" found it."""
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    stored = client.remember("coder", "infra", f"the deploy token is {token} for CI")
    assert "[REDACTED:github-token]" in stored["entry"]["text"]  # kept as the user sees it
    for text in INFRA:
        client.remember("coder", "infra", text)
    hits = client.search("do we use github actions", agent="coder")["hits"]
    assert hits[0]["text"] == INFRA[0] and hits[0]["match"]
    assert not any("REDACTED" in h["text"] and h["match"] for h in hits)
    assert not any(h["match"] for h in client.search("redacted", agent="coder")["hits"])


def test_a_facts_key_is_searchable(client: Client) -> None:
    """L-g (newcomer report, 2026-11-28): after storing "emacs" under the key pref.editor,
    "what editor do I like" found no match and a search for the key found nothing."""
    client.remember("coder", "prefs", "emacs", key="pref.editor")
    for text in INFRA:
        client.remember("coder", "infra", text)
    [hit] = client.search("pref.editor", agent="coder")["hits"][:1]
    assert hit["text"] == "emacs"
    hits = client.search("what editor do I like", agent="coder")["hits"]
    assert hits[0]["text"] == "emacs" and hits[0]["match"], hits[:2]


STICKERS = ("We print every sticker on matte vinyl from the Leipzig shop. The floating speech "
            "bubble on the cat sticker was rejected: it hides the cat's face. Exports go out "
            "at twice the size for the web store.")


def test_explain_names_the_words_a_hit_shares_and_its_closest_sentence(client: Client) -> None:
    """Issue 39 (the viewer's Search page): each hit's evidence in words a person can check —
    which of the query's words it holds, and which of its sentences is close in meaning —
    not "holds the query's telling words" and a cosine."""
    client.remember("designer", "rejected-designs", STICKERS)
    for agent, category, text in NOTES:
        client.remember(agent, category, text)
    wait_until(lambda: not client.status().get("backlog"))
    question = "why was the floating speech bubble rejected on the mug"
    hits = client.search(question, agent="designer", explain=True)["hits"]
    hit = next(h for h in hits if h["text"] == STICKERS)
    assert hit["explain"]["words"] == ["floating", "speech", "bubble", "rejected", "mug"]
    assert hit["explain"]["held"] == ["floating", "speech", "bubble", "rejected"]
    sentence = hit["explain"]["sentence"]
    assert sentence["text"] == ("The floating speech bubble on the cat sticker was rejected: "
                                "it hides the cat's face.")
    assert (sentence["number"], sentence["of"]) == (2, 3)
    assert abs(sentence["cosine"] - hit["evidence"]["part"]) < 0.01  # the part search scored
    assert "shares 4 of the query's 5 words: floating, speech, bubble, rejected (not mug)" \
        in hit["why"]
    assert re.fullmatch(r"its sentence 'The floating speech bubble on the cat sticker was "
                        r"rejected …' is (close|near) in meaning \(cosine 0\.\d\d\)",
                        hit["why"][0]), hit["why"]
    # an entry of one sentence has none to name; a plain search reads none of it
    single = client.search("floating speech bubble disconnected", agent="designer",
                           explain=True)["hits"]
    one = next(h for h in single if h["text"].startswith("Floating speech bubble"))
    assert one["explain"]["sentence"] is None
    assert one["explain"]["held"] == ["floating", "speech", "bubble", "disconnected"]
    assert "shares all 4 of the query's words: floating, speech, bubble, disconnected" \
        in one["why"]
    plain = client.search(question, agent="designer")["hits"]
    assert plain and not any("explain" in h or "why" in h for h in plain)


def test_a_vector_candidate_whose_entry_is_gone_leaves_the_search_whole(
        daemon: RunningDaemon, filled: Client) -> None:
    """The RAM vector index lets go of a deleted entry a moment after its row is gone (a note
    taken out of a CLAUDE.md, the file indexed again): a search in between found its vector
    without its text and failed (an internal error to the client)."""
    gone = filled.search("speech bubble", agent="designer")["hits"][0]
    assert daemon.daemon.parts is not None
    store = daemon.daemon.parts.store

    def delete_the_row() -> None:  # its vector stays in the RAM index
        entry = store.entry_by_uid(gone["id"])
        assert entry is not None
        store.delete_entries([entry.rowid])

    asyncio.run_coroutine_threadsafe(daemon.daemon.db(delete_the_row), daemon.loop).result(10)
    hits = filled.search("kitten cartoon whose talking balloon drifts off",
                         agent="designer")["hits"]
    assert gone["id"] not in [hit["id"] for hit in hits]
