"""A search's plan: what its steps (:mod:`memoryd.retrieval.search`) find and hand on to the
next. The plan step makes it (the question's words, filters and named time); the keyword half
adds the keyword candidates and what it reads ahead of the vector (texts, words, weights, the
chunks around); the vector half's candidates come beside it (:data:`VectorFound`); finishing
reads the rest (:mod:`memoryd.retrieval.evidence`) and ranks.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from memoryd.retrieval.dates import Window
from memoryd.retrieval.filters import Filter
from memoryd.retrieval.known import Known
from memoryd.retrieval.records import Background
from memoryd.store.records import IndexedText


@dataclass
class SearchPlan:
    query: str
    terms: list[str]
    limit: int
    only_matches: bool
    threshold: float
    min_score: float | None
    filter: Filter
    window: Window | None
    #: each hit says which of the question's words it holds and its closest sentence
    #: (memoryd.retrieval.explain): the viewer's reasons, only when asked
    explain: bool = False
    #: its words are symbols alone (✅), which the embedding model does not read
    #: (:meth:`~memoryd.retrieval.search.Searcher.finish_search`)
    symbols_only: bool = False
    keyword: dict[int, tuple[int, float]] = field(default_factory=dict)  # rowid → (rank, bm25)
    window_keyword: list[int] = field(default_factory=list)
    #: the vector candidates' mix
    background: Background | None = None
    # read while the question is embedded: the keyword candidates' texts and words, the
    # query words' weights (the vector half then reads only what the vectors add)
    texts: dict[int, IndexedText] = field(default_factory=dict)
    known: dict[int, Known] = field(default_factory=dict)
    weights: dict[str, float] = field(default_factory=dict)
    unknown: dict[str, str] = field(default_factory=dict)  # question words not in the lexicon
    # the chunks just before and after each candidate in its session (a passage's,
    # Evidence._passages), the keyword candidates' read ahead too: rowid → (before, after) of
    # the rowids asked about (``around_of``), and those chunks' texts
    around: dict[int, tuple[int | None, int | None]] = field(default_factory=dict)
    around_of: set[int] = field(default_factory=set)
    chunks: dict[int, IndexedText] = field(default_factory=dict)
    #: the best candidates' versions of one statement (memoryd.retrieval.versions): rowid →
    #: its own versions among them (not a version's version)
    versions: dict[int, set[int]] = field(default_factory=dict)
    #: their informative words (memoryd.retrieval.known), which tell the versions apart
    version_words: dict[int, frozenset[str]] = field(default_factory=dict)


#: The vector index's candidates for each of a plan's filters: rowid → (cosine, best part's).
VectorFound = list[dict[int, tuple[float, float]]]
