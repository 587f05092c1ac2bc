"""No automatic step merges two memories that say different things (DESIGN.md principle 7):
the labelled near pairs of bench/near_pairs/pairs.jsonl through the real rule, the real
consolidation pass and the real notebook pass, with the real embedder."""

from __future__ import annotations

import json
import time
from datetime import date, timedelta
from pathlib import Path

import numpy as np
import pytest
from memoryd_client import Client

from memoryd.embedding.model import Embedder
from memoryd.meaning import difference, reading, same_thing
from memoryd.passes.notebook_text import repeated
from tests.conftest import wait_until

PAIRS = [json.loads(line) for line in
         (Path(__file__).resolve().parents[2] / "bench" / "near_pairs" / "pairs.jsonl")
         .read_text().splitlines() if line.strip()]
DISTINCT = [p for p in PAIRS if not p["same"]]
SAME = [p for p in PAIRS if p["same"]]


@pytest.fixture(scope="module")
def cosines(embedder: Embedder) -> dict[int, float]:
    first = embedder.embed_alone([p["a"] for p in PAIRS])
    second = embedder.embed_alone([p["b"] for p in PAIRS])
    return {p["id"]: float(a @ b) for p, a, b in zip(PAIRS, first, second)}


def test_the_labelled_set_is_big_and_of_both_kinds() -> None:
    assert len(PAIRS) >= 100 and len(SAME) >= 40
    assert {p["kind"] for p in PAIRS} == {"lesson", "note", "fact"}
    assert {p["class"] for p in DISTINCT} >= {"negation", "number", "name", "environment",
                                              "quantity", "antonym", "order", "wording"}
    assert sum(p.get("source") == "R3" for p in PAIRS) == 18


def test_no_labelled_pair_that_says_different_things_is_one(cosines) -> None:
    merged = [(p["a"], p["b"]) for p in DISTINCT
              if same_thing(p["a"], p["b"], cosines[p["id"]], 0.92, p["kind"] == "lesson")]
    assert merged == []
    kept_apart = [(p["a"], p["b"]) for p in SAME
                  if not same_thing(p["a"], p["b"], cosines[p["id"]], 0.92,
                                    p["kind"] == "lesson")]
    assert len(kept_apart) <= len(SAME) // 10, kept_apart  # real duplicates still merge


@pytest.mark.parametrize("a, b, what, contradiction", [
    ("Deploys are allowed on Fridays", "Deploys are forbidden on Fridays", "negation", True),
    ("Prefer rebase over merge", "Prefer merge over rebase", "order", True),
    ("Export at two times the size", "Export at three times the size", "number", True),
    ("Ask Alice before merging", "Ask Bob before merging", "name", False),
    ("Test against the staging database", "Test against the production database",
     "environment", False),
    ("Write the changelog before the release", "Write the changelog after the release",
     "antonym", True),
    ("Run the tests before pushing", "Run the slow tests before pushing", "addition", False),
    ("Keep module 3 free of side effects", "Keep module 4 free of side effects", "number",
     False),  # which module, not how much: two rules, neither wrong
    ("Merge the data branch into the model branch",
     "Merge the model branch into the data branch", "order", True),
    ("Run migrations, then deploy", "Deploy, then run migrations", "order", True),
    # numbers that say which of two things trade places: two events, neither wrong (a
    # tester's 300 Session Log notes were all put to a person)
    ("Session 2 of notebook 1: drew the stickers", "Session 1 of notebook 2: drew the stickers",
     "order", False),
    ("Fixed issue 12 in module 3", "Fixed issue 3 in module 12", "order", False),
    # ... but quantities that trade places, or two of one thing in another relation, are one
    ("Retry 3 times, then wait 5 seconds", "Retry 5 times, then wait 3 seconds", "order", True),
    ("Release 2 replaced release 1", "Release 1 replaced release 2", "order", True),
    # "worked" is no unit (its stem is "workers"'): another sprint, not another quantity
    ("Sprint 12: worked on the login page with Alice",
     "Sprint 13: worked on the login page with Alice", "number", False),
    # when it holds, and how strongly a rule binds: two memories, neither a contradiction (a
    # month's tester's "Alice used to own …" was refused as a near duplicate of "Alice owns …")
    ("Alice owns the billing service", "Alice used to own the billing service", "tense", False),
    ("Jenkins is our CI server", "Jenkins was our CI server", "tense", False),
    ("It's our CI server", "It was our CI server", "tense", False),
    ("We will move the docs to the wiki", "We did move the docs to the wiki", "tense", False),
    ("Alice owns the billing service", "Alice will own the billing service", "tense", False),
    ("Tests must pass before merging", "Tests should pass before merging", "mood", False),
    ("Customers can cancel an order", "Customers must cancel an order", "mood", False),
])
def test_what_differs_is_named_and_a_contradiction_is_told_apart(a: str, b: str, what: str,
                                                                 contradiction: bool) -> None:
    found = difference(a, b)
    assert found is not None and found.what == what and found.contradiction is contradiction
    assert found.why()


@pytest.mark.parametrize("a, b", [
    ("Use conventional commits", "Always use conventional commits"),  # seed 003
    ("The outage was caused by the DNS provider", "The DNS provider caused the outage"),
    ("The deploy freeze starts on the first of December",
     "The deploy freeze starts on December 1st"),
    ("Never force-push to main", "Don't force push to the main branch"),
    # said again: a sighting of the same thing
    ("Used threshold-based black removal; it ate the dark hair.",
     "Used threshold-based black removal again; it ate the dark hair."),
    ("The nightly build failed on the upload test",
     "The nightly build failed on the upload test once more"),
    ("Jenkins is our CI server", "Jenkins is still our CI server"),
    # one tense said two ways, a bare verb's tense unread, one force said two ways
    ("Jenkins was our CI server", "Jenkins used to be our CI server"),
    ("The survey had 240 respondents", "There were 240 respondents to the survey"),
    ("The script is used to build the app", "The script builds the app"),
    ("Tests must pass before merging", "Tests have to pass before merging"),
    ("Outline fonts before exporting", "Fonts must be outlined before export"),
])
def test_the_same_thing_said_otherwise_has_no_difference(a: str, b: str) -> None:
    assert difference(a, b) is None


def test_a_big_section_finds_the_repeats_that_comparing_every_pair_finds(
        embedder: Embedder) -> None:
    """The notebook pass compares a bullet only with the earlier ones of the same words
    (R5): it finds the copies that comparing it with every earlier one finds."""
    texts = [text for p in PAIRS for text in (p["a"], p["b"])]
    vectors: list[np.ndarray | None] = list(embedder.embed_alone(texts))
    vectors[3] = vectors[40] = None  # not in the index yet: their words decide
    readings = [reading(t) for t in texts]
    every: list[tuple[int, int]] = []
    kept: list[int] = []
    for b in range(len(texts)):
        same = next((a for a in kept if same_thing(
            readings[a], readings[b], float(vectors[a] @ vectors[b])
            if vectors[a] is not None and vectors[b] is not None else 0.0, 0.92, lesson=True)),
            None)
        if same is None:
            kept.append(b)
        else:
            every.append((same, b))
    assert repeated(texts, vectors, 0.92) == every and len(every) >= len(SAME) * 0.9
    # no two texts that say the same thing have another key
    assert all(readings[a].key == readings[b].key for a, b in every)


def _statuses(client: Client, ids: dict[int, tuple[str, str]]) -> dict[int, tuple[str, str]]:
    return {n: (client.get(a)["status"], client.get(b)["status"]) for n, (a, b) in ids.items()}


def test_consolidation_merges_no_two_memories_that_say_different_things(client: Client) -> None:
    """R3: the labelled pairs, each in a category of its own, then a whole consolidation."""
    entries = []
    for p in PAIRS:  # the second less sure: the write path leaves a contradiction disputed
        for text, confidence in ((p["a"], 0.9), (p["b"], 0.8)):
            entries.append({"agent": "pairs", "category": f"pair-{p['id']}", "text": text,
                            "kind": p["kind"], "confidence": confidence, "force": True})
    results = client.remember_many(entries)["results"]
    assert all(r["stored"] for r in results)
    ids = {p["id"]: (results[2 * n]["id"], results[2 * n + 1]["id"])
           for n, p in enumerate(PAIRS)}
    wait_until(lambda: not client.status().get("backlog"))
    done = client.pass_run("consolidate", full=True)
    after = _statuses(client, ids)
    merged_distinct = [(p["a"], p["b"]) for p in DISTINCT if after[p["id"]] != ("active", "active")]
    assert merged_distinct == []
    merged = [p for p in SAME if after[p["id"]] == ("active", "superseded")]
    assert len(merged) >= len(SAME) * 0.8 and done["counts"]["merged"] == len(merged)
    # the contradictions among them are put to a person, not merged
    disputed = {frozenset(c["ids"]) for c in client.status()["contradictions"]}
    by_text = {p["a"]: p["id"] for p in DISTINCT}
    for text in ("Deploys are allowed on Fridays", "Prefer rebase over merge when updating a "
                 "feature branch", "Always squash commits before merging",
                 "Write the changelog entry before opening the pull request"):
        assert frozenset(ids[by_text[text]]) in disputed, text


def test_the_notebook_pass_archives_no_bullet_that_says_something_else(
        memoryd_home: Path, client: Client) -> None:
    """R3: each pair as the two dated Learnings bullets of a notebook of its own."""
    memory = memoryd_home / "user" / ".mastersof-ai" / "agents" / "designer" / "memory"
    memory.mkdir(parents=True)
    for p in PAIRS:
        (memory / f"pair-{p['id']}.md").write_text(
            f"## Learnings\n- [2026-03-02] {p['b']}\n- [2026-03-01] {p['a']}\n")
    wait_until(lambda: client.status()["entries"].get("active", 0) >= 2 * len(PAIRS),
               timeout_s=60)
    wait_until(lambda: not client.status().get("backlog"), timeout_s=60)
    done = client.pass_run("notebooks")
    time.sleep(0.2)
    archived = {p["id"] for p in PAIRS
                if f"] {p['a']}\n" not in (memory / f"pair-{p['id']}.md").read_text()}
    assert [p["a"] for p in DISTINCT if p["id"] in archived] == []
    assert all(p["b"] in (memory / f"pair-{p['id']}.md").read_text() for p in PAIRS)
    assert len(archived) >= len(SAME) * 0.8 and done["counts"].get("repeats") == len(archived)


def test_a_big_notebook_goes_through_the_pass_whole(memoryd_home: Path, client: Client) -> None:
    """R5: a notebook of 64,000 characters or more is read, ordered, pruned and written out off
    the database thread, its entries read a page a step: its copies still leave it for the
    archive under their own ids, and every other bullet stays."""
    memory = memoryd_home / "user" / ".mastersof-ai" / "agents" / "designer" / "memory"
    memory.mkdir(parents=True)
    lines, copies = [], []
    for n in range(600):
        day = (date(2025, 1, 1) + timedelta(days=n)).isoformat()
        text = (f"Sticker batch {n} needs the matte laminate and a bleed margin of {n} "
                f"millimetres before it goes to the print shop in Leipzig")
        if n % 50 == 49:  # an older bullet written again, later, with filler
            text = "Always " + lines[-40].split("] ", 1)[1].lower()
            copies.append(lines[-40])
        lines.append(f"- [{day}] {text}")
    path = memory / "notebook.md"
    path.write_text("## Learnings\n" + "\n".join(reversed(lines)) + "\n")
    assert path.stat().st_size >= 64_000
    wait_until(lambda: client.status()["entries"].get("active", 0) >= 600, timeout_s=60)
    old = {e["text"]: e["id"] for e in client.list_entries(agent="designer",
                                                           limit=1000)["entries"]}
    done = client.pass_run("notebooks")
    assert done["counts"]["repeats"] == len(copies) == 12
    text, archive = path.read_text(), (memory / "archive" / "notebook.md").read_text()
    assert all(line not in text and line in archive for line in copies)
    assert sum(line in text for line in lines) == 600 - len(copies)
    time.sleep(0.3)
    moved = client.get(old[copies[0].split("] ", 1)[1]])
    assert moved["status"] == "active" and moved["source"].endswith("archive/notebook.md")


def test_consolidation_keeps_another_tense_or_mood_apart(client: Client) -> None:
    """A month's tester imported "Jenkins is our CI server" (11-02, 0.95) and "Jenkins was our
    CI server" (11-25, 0.8): consolidation superseded the newer, past-tense statement and made
    the stale one surer (0.95 → 0.97); asked "is Jenkins still our CI server", search found the
    stale one alone. Both stay, and the newer comes first."""
    pairs = [("Jenkins is our CI server", "Jenkins was our CI server"),
             ("Tests must pass before merging", "Tests should pass before merging")]
    entries = [{"agent": "qa3", "category": "team", "text": text, "confidence": confidence,
                "created": created, "force": True}  # as `memory import` keeps near duplicates
               for before, after in pairs
               for text, confidence, created in ((before, 0.95, "2026-11-02T10:00:00Z"),
                                                 (after, 0.8, "2026-11-25T10:00:00Z"))]
    results = client.remember_many(entries)["results"]
    assert all(r["stored"] for r in results)
    wait_until(lambda: not client.status().get("backlog"))
    done = client.pass_run("consolidate", full=True)
    assert "merged" not in done["counts"], done
    for result, entry in zip(results, entries):
        stored = client.get(result["id"])
        assert (stored["status"], stored["confidence"]) == ("active", entry["confidence"])
    hits = client.search("is Jenkins still our CI server", agent="qa3")["hits"]
    assert [h["text"] for h in hits[:2]] == ["Jenkins was our CI server",
                                             "Jenkins is our CI server"]


def test_a_mistake_written_again_is_one_more_sighting(memoryd_home: Path, client: Client) -> None:
    """A month's tester's notebook: "Used threshold-based black removal; it ate the dark hair."
    on 11-08 and 11-25, "… again; …" on 11-18. The "again" made it another lesson: promotion
    counted two sightings and proposed nothing, and the memory block marked the "again" bullet
    "said earlier; a newer memory here says it otherwise" — it says the same."""
    memory = memoryd_home / "user" / ".mastersof-ai" / "agents" / "designer" / "memory"
    memory.mkdir(parents=True)
    (memory / "notebook.md").write_text(
        "## Mistakes\n"
        "- [2026-11-25] Used threshold-based black removal; it ate the dark hair.\n"
        "- [2026-11-18] Used threshold-based black removal again; it ate the dark hair.\n"
        "- [2026-11-08] Used threshold-based black removal; it ate the dark hair.\n")
    wait_until(lambda: client.status()["entries"].get("active", 0) >= 3, timeout_s=60)
    wait_until(lambda: not client.status().get("backlog"), timeout_s=60)
    block = client.context("designer", cwd="/")["text"]
    assert "black removal again" in block and "says it otherwise" not in block, block
    assert client.pass_run("promote")["counts"] == {"proposed": 1}
