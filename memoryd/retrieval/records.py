"""The records of a search below the wire: what is asked (parsed from a request at the server,
:mod:`memoryd.server.requests`, or made by memoryd itself: the memory block's search) and what
is found, the hits with their scores and evidence. The server words them for the wire
(:mod:`memoryd.server.replies`); nothing here knows a request's params or a reply's map.
"""

from __future__ import annotations

from dataclasses import dataclass

from memoryd.retrieval.dates import Window
from memoryd.store.records import StoredEntry


@dataclass(frozen=True)
class FilterRequest:
    """Which entries a search, list or timeline asks for, validated. ``agents``: None for
    every agent (a harness agent's subagents are added by :mod:`memoryd.retrieval.filters`);
    ``project``: a directory, for its project's entries; ``in_project``: a directory, for its
    project's entries and the global ones (`memory search --here`, the memory block);
    ``tags``: lower-cased (a redaction mark kept), every one of them; ``teams``: with the
    agents named, the teams' namespaces the daemon follows (``team.NAME``: what every agent's
    block shows)."""

    agents: tuple[str, ...] | None = None
    category: str | None = None
    kinds: tuple[str, ...] | None = None
    project: str | None = None
    in_project: str | None = None
    statuses: tuple[str, ...] = ("active",)
    since: float | None = None
    until: float | None = None
    tags: tuple[str, ...] = ()
    teams: bool = False


#: A search's question is this many characters at most, and it asks for this many hits at most.
MAX_QUERY_CHARS = 10_000
MAX_HITS = 1000


@dataclass(frozen=True)
class SearchRequest:
    """A search: the question, its filters, how many hits at most, and the options.
    ``min_score``: a match is a hit this relevant (instead of the configured precision's
    threshold); ``match``: the matches only (True), or every ranked hit, each marked a match
    or not (False); unsaid (None), the matches only with a ``min_score``, every ranked hit
    without one (`memory search --min-score P --all` says False); ``now``: when the
    question is asked (what "last week" counts back from); ``explain``: each hit names the
    question's words it holds and its closest sentence (the viewer)."""

    query: str
    filter: FilterRequest
    limit: int
    min_score: float | None = None
    match: bool | None = None
    now: float | None = None
    explain: bool = False


@dataclass(frozen=True)
class Score:
    """A hit's relevance (the ranking model's probability) and the figures people read
    beside it, rounded as replies give them: its bm25 (None: not a keyword candidate), the
    cosines of the whole entry and of its closest part (None: no vector for the question),
    and the share of the question's informative words it holds."""

    relevance: float
    keyword: float | None
    vector: float | None
    part: float | None
    coverage: float


@dataclass(frozen=True)
class Passage:
    """A transcript hit shown with the turns around it (:mod:`memoryd.retrieval.passage`):
    its text with them, the turns before and after, and the record ids of every turn it shows
    (None: the entry has none)."""

    text: str
    before: tuple[str, ...]
    after: tuple[str, ...]
    records: tuple[str, ...] | None


@dataclass(frozen=True)
class Sentence:
    """The sentence (part) of an entry closest in meaning to the question: its text, the
    cosine of its vector with the question's, and its place among the entry's parts."""

    text: str
    cosine: float
    number: int  # from 1
    of: int


@dataclass(frozen=True)
class Explanation:
    """What a hit holds of the question (:mod:`memoryd.retrieval.explain`): the question's
    informative words, those the hit holds, and its sentence closest in meaning (None: an
    entry of one sentence, or no vector for the question)."""

    words: tuple[str, ...]
    held: tuple[str, ...]
    sentence: Sentence | None


@dataclass(frozen=True)
class Hit:
    """An entry a search found: the entry as the store reads it, its score, its evidence
    (the ranking model's features, rounded), whether it is a match, the evidence it was
    scored without (derived data not there yet), and, when there is one, its passage, its
    explanation and its newer version."""

    entry: StoredEntry
    score: Score
    evidence: dict[str, float]
    match: bool
    scored_without: tuple[str, ...] | None = None
    passage: Passage | None = None
    explanation: Explanation | None = None
    #: the newest of its own versions among the best candidates (its id), when that is newer
    #: than it and says it otherwise, ranked before it or after (memoryd.retrieval.versions)
    newer: str | None = None

    @property
    def records(self) -> list[str]:
        """The record ids of the turns the hit shows (its passage's, when it has one)."""
        if self.passage is not None and self.passage.records is not None:
            return list(self.passage.records)
        return list(self.entry.records or ())


@dataclass(frozen=True)
class Background:
    """The vector candidates' mix: its mean and spread over ``candidates`` of them."""

    mean: float
    spread: float
    candidates: int


@dataclass(frozen=True)
class SearchResult:
    """The hits, best first; the threshold a match passes; why the hits are less sure than
    usual (None: they are not); the agents named that have no entry at all; the vector
    candidates' background; a time the question named; and the category named, if no entry
    has it."""

    hits: tuple[Hit, ...]
    threshold: float
    degraded_reason: str | None = None
    unknown_agents: tuple[str, ...] = ()
    background: Background | None = None
    window: Window | None = None
    #: the category named, when no entry has it in any form (a misspelt one finds nothing)
    unknown_category: str | None = None

    @property
    def degraded(self) -> bool:
        return self.degraded_reason is not None
