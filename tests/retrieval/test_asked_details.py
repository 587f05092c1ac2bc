"""A question that asks for a detail (a number, a time, a weekday, a version, a year): an entry
holding none of it is not taken for the answer."""

from __future__ import annotations

import pytest
from memoryd_client import Client

from memoryd.retrieval.asked_details import asked_details, lacks


@pytest.mark.parametrize(("question", "holds", "holds_not"), [
    ("how many keycap packs sold in the first week", "We sold 40 packs.", "Keycap pack proofs sent."),
    ("how much was the deposit", "The deposit was two months' rent.", "The flat is in Kreuzberg."),
    ("what time does Leonie pick Biscuit up", "Leonie comes at 12:30.", "Leonie walks him Tuesdays."),
    ("which weekday is the on-call handoff", "Handoff is on Mondays.", "Pages escalate to Sam."),
    ("which Stripe API version are we pinned to", "api_version = '2024-06-20'", "We are pinned now."),
    ("which release of pnpm is required", "pnpm 9.12 via corepack", "Never run npm install."),
    ("what year did we move to Berlin", "We moved in 2019.", "We love Berlin."),
])
def test_a_detail_asked_for_is_looked_for(question: str, holds: str, holds_not: str) -> None:
    details = asked_details(question)
    assert details
    assert lacks(details, holds) == 0.0 and lacks(details, holds_not) == 1.0


def test_questions_asking_for_no_such_detail_find_nothing_lacking() -> None:
    for question in ("which linter do we use", "how do I ship a new version to production",
                     "why did we drop Poetry", "when did we switch to uv"):
        assert asked_details(question) == ()
        assert lacks(asked_details(question), "We lint with ruff.") == 0.0
    # the date memoryd writes before a transcript chunk is not a number the entry says
    assert lacks(asked_details("how many orders came in"), "[2026-10-14] User: lots of orders") == 1.0


LIFE = ["Biscuit is a beagle; he is three and pulls on the lead.",
        "Biscuit's vet is Dr. Brandt in Neukölln; vaccinations are due in March.",
        "Alex is vegetarian and thinks coriander tastes like soap.",
        "Nora lives in Lisbon and is into film photography.",
        "Booked a Saturday dinner at Lucky Leek for Alex's birthday.",
        "Sam runs the Thursday group run with the Kreuzberg Harriers.",
        ("Biscuit has a new dog walker: Leonie, on Tuesdays and Thursdays, and she takes him "
         "to Hasenheide.")]


def test_an_entry_without_the_detail_asked_is_not_a_match(client: Client) -> None:
    for text in LIFE:
        client.remember("assistant", "life", text)
    asked = client.search("what time does Leonie pick Biscuit up", agent="assistant")["hits"][0]
    assert asked["text"].startswith("Biscuit has a new dog walker")
    assert asked["evidence"]["lacks"] == 1.0 and not asked["match"]
    # what the entry does say is a match
    said = client.search("which days does Leonie walk Biscuit", agent="assistant")["hits"][0]
    assert said["text"].startswith("Biscuit has a new dog walker")
    assert said["evidence"]["lacks"] == 0.0 and said["match"]
    # and once memory holds the time, the question finds it
    client.remember("assistant", "life", "Leonie picks Biscuit up at 12:30.")
    found = client.search("what time does Leonie pick Biscuit up", agent="assistant")["hits"][0]
    assert found["text"] == "Leonie picks Biscuit up at 12:30." and found["match"]
