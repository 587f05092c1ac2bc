"""The kind of detail a question asks for, and whether an entry holds one.

"how many keycap packs sold in the first week" asks for a number; an entry about the keycap
pack that holds none cannot answer it, however well its words match. A question asks for:

    a number       how many / much / long / far / often / old / big …: a digit or a number word
    a time of day  what / which time: 14:30, 7pm, noon, morning …
    a weekday      which (week)day, weekday: Monday … Sunday, daily, weekend
    a version      which / what … version (release): 3.12, v2, 2024-06-20
    a year         which / what year: 2019

``lacks`` is the ranking's evidence (:mod:`memoryd.retrieval.ranking`): 1 when the question asks
for such details and the entry holds none of one of them. A question that asks for none of
them gets 0 for every entry. The date memoryd puts before a transcript chunk ("[2026-10-14]")
is not part of what the entry says.
"""

from __future__ import annotations

import re

from memoryd.retrieval.dates import WEEKDAYS
from memoryd.text import without_date_prefix

_NUMBER_WORDS = ("one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|"
                 "thirty|forty|fifty|hundred|thousand|million|dozen|half|once|twice|none|free")
#: (what the question says when it asks for the detail, what an entry holding one says)
DETAILS = (
    (re.compile(r"\bhow (many|much|long|far|often|old|big|fast|high|tall|heavy|large|small)\b"),
     re.compile(rf"\d|\b({_NUMBER_WORDS})\b")),
    (re.compile(r"\b(what|which) time\b"),
     re.compile(r"\b\d{1,2}[:.h]\d{2}\b|\b\d{1,2} ?[ap]\.?m\b|\b(noon|midnight|morning|afternoon|"
                r"evening|night)s?\b")),
    (re.compile(r"\b(what|which) (week)?day\b|\bweekdays?\b"),
     re.compile(rf"\b({'|'.join(WEEKDAYS)})s?\b|\b(daily|weekends?|every day)\b")),
    (re.compile(r"\b(what|which)\b[^.?!]{0,60}\b(version|release)\b"),
     re.compile(r"\d+(\.\d+)+|\bv\d|\b\d{4}-\d\d(-\d\d)?\b")),
    (re.compile(r"\b(what|which) year\b"),
     re.compile(r"\b(1[89]|20)\d\d\b")),
)


def asked_details(question: str) -> tuple[re.Pattern[str], ...]:
    """What an answer to the question must hold (one pattern per kind of detail asked)."""
    lowered = question.lower()
    return tuple(holds for asks, holds in DETAILS if asks.search(lowered))


def lacks(details: tuple[re.Pattern[str], ...], text: str) -> float:
    """1.0 when the text holds none of one of the details asked, else 0.0."""
    if not details:
        return 0.0
    said = without_date_prefix(text).lower()
    return 0.0 if all(holds.search(said) for holds in details) else 1.0
