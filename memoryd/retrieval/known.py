"""What search knows of an entry between searches, and the vectors of its words.

Search tokenises each candidate and each transcript chunk around one (their words, for
``coverage`` and the word alignment, :mod:`memoryd.retrieval.evidence`); the same entries come
back as candidates of many questions, so what it finds is kept, keyed by the entry's rowid and
its text (:class:`Known`, kept by :class:`KnownEntries`). Copies of one text (another agent's,
a file's, an import's) are told from rivals by their normalised text (``said``), and so is the
transcript chunk a lesson was taken from (:func:`taken_from`).
"""

from __future__ import annotations

import hashlib
import sys
from bisect import bisect_left
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from memoryd.retrieval.terms import STOPWORDS
from memoryd.retrieval.versions import CHANGE, CHANGING, RESTATING
from memoryd.store.database import Store
from memoryd.store.lexicon import Lexicon, is_word
from memoryd.store.records import IndexedText
from memoryd.text import has_segmented, is_segmented, normalise_text, segmented_run

#: Entries whose words (and their lexicon rows) are kept between searches: ~1.1 KB an entry
#: measured over the 73k bench store (its words' tuple, rows and the rest), ~23 MB in all.
ENTRIES_KNOWN = 20_000


@dataclass
class Known:
    """An entry's words as search tokenised them (tokenising the candidates was a tenth of a
    search, and the same entries come back as candidates of many questions): interned, in a
    sorted tuple (~270 bytes an entry; a frozenset took ~2.3 KB), so that a question's word is
    looked up by bisection. ``said``: a digest of its normalised text, which tells copies of
    one text apart from rivals (normalising every candidate's text took 1.5-2.8 ms a search),
    once it is a candidate (a passage's other chunks need none). Its words are its text's and
    the titles' of the headings it is under (a memory file's entry). ``rows``: the lexicon's rows
    of its informative words, looked up when the lexicon had ``rows_of`` words. ``run``: its
    Han, Kana and Hangul characters in order (memoryd.text.segmented_run), for a question's run
    of them, which the keyword index matches as a phrase; None for a text without any."""

    words: tuple[str, ...]
    run: str | None = None
    #: its words that only the titles it is under give (a memory file's entry): words of it for
    #: ``coverage``, but no detail a version of it would change (two bullets of one section
    #: share them)
    titles_only: frozenset[str] = frozenset()
    said: bytes | None = None
    rows: np.ndarray | None = None
    rows_of: int = -1
    unaligned: bool = False  # some of its words are not in the lexicon (yet)
    #: its words but the stop words, once a candidate compared with others for versions
    #: (memoryd.retrieval.versions)
    informative: frozenset[str] | None = None


def holds(entry: Known, key: str) -> bool:
    """Whether the entry holds a question's word (``key``: a stem, a character, a symbol, or a
    run of Han, Kana or Hangul characters, held where they stand together, as the keyword
    index matches their phrase)."""
    if len(key) > 1 and is_segmented(key[0]):
        return entry.run is not None and key in entry.run
    words = entry.words  # sorted: bisection, not a walk through every word
    at = bisect_left(words, key)
    return at < len(words) and words[at] == key


def distinct_members(groups: Sequence[Sequence[Known]]) -> tuple[list[Known], list[list[int]]]:
    """The distinct entries of these groups (a passage's chunks: a chunk is the neighbour of
    another candidate, or a candidate itself), and each group as their indexes."""
    distinct: list[Known] = []
    at: dict[int, int] = {}  # id() of an entry → its index in distinct
    members: list[list[int]] = []
    for group in groups:
        indexes = []
        for entry in group:
            if id(entry) not in at:
                at[id(entry)] = len(distinct)
                distinct.append(entry)
            indexes.append(at[id(entry)])
        members.append(indexes)
    return distinct, members


def says(entry: Known, text: str) -> bytes:
    """What an entry says (its ``text``), as :class:`Known` keeps it."""
    if entry.said is None:
        entry.said = hashlib.blake2b(normalise_text(text).encode("utf-8", "surrogatepass"),
                                     digest_size=16).digest()
    return entry.said


def distinct_ranks(order: Sequence[int], said: Mapping[int, Hashable]) -> dict[int, int]:
    """Each rowid's rank in ``order`` counting only what says something else: copies of one
    text (``said``: its normalised text, or a digest of it) share the rank of the first."""
    ranks: dict[int, int] = {}
    first: dict[Hashable, int] = {}
    for rowid in order:
        text = said.get(rowid, rowid)
        if text not in first:
            first[text] = len(first)
        ranks[rowid] = first[text]
    return ranks


def taken_from(candidates: list[int], texts: dict[int, IndexedText],
               closeness: Callable[[int], float]) -> dict[int, int]:
    """The transcript chunks among the candidates that a statement among them was taken from
    (a lesson extracted from the chunk's message: the same origin), each with that statement
    (of several, the ``closeness``-est to the question): the lesson says what the chunk said,
    so the chunk is not its rival (the ``margin`` of a lesson asked for in its own words was
    its lead over its source, and no match)."""
    statements: dict[tuple[str, str], list[int]] = {}
    chunks: dict[tuple[str, str], int] = {}
    for rowid in candidates:
        text = texts[rowid]
        if text.origin is not None:
            if text.statement:
                statements.setdefault(text.origin, []).append(rowid)
            else:
                chunks.setdefault(text.origin, rowid)
    return {chunk: max(statements[origin], key=closeness) for origin, chunk in chunks.items()
            if origin in statements}


class KnownEntries:
    """What search knows of the entries, kept between searches (:class:`Known`), by the
    store's tokeniser: an entry's words, its informative ones, its words' lexicon rows."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._stop_stems: set[str] | None = None
        #: the stop words and the words that say a statement is said again (versions)
        self._restating: set[str] | None = None
        #: the verbs that say a statement changed, stemmed (versions)
        self._changing: set[str] = set()
        #: (rowid, hash of its text) → what search knows of the entry: an entry's text can
        #: change, and SQLite gives a deleted last rowid to the next entry
        self._known: dict[tuple[int, int], Known] = {}

    def _stops(self) -> set[str]:
        """The stop words, stemmed as the full-text index stems them."""
        if self._stop_stems is None:
            self._stop_stems = self._tokens(" ".join(STOPWORDS))
        return self._stop_stems

    def entry(self, rowid: int, text: str, heading: str | None = None) -> Known:
        """What search knows of an entry: the words of its (index) text and of the titles it
        is under (``heading``: a memory file's entry), as the keyword index reads them."""
        key = (rowid, hash((text, heading)))
        found = self._known.get(key)
        if found is None:
            tokens = self.store.tokens(text)
            words = set(tokens)
            titled = self.store.tokens(heading) if heading else []
            titles_only = frozenset(map(sys.intern, set(titled) - words))
            found = self._known[key] = Known(
                tuple(sorted(map(sys.intern, words | titles_only))),
                segmented_run([*titled, "\0", *tokens] if titled else tokens)
                if has_segmented(text) or has_segmented(heading or "") else None,
                titles_only=titles_only)
            if len(self._known) > ENTRIES_KNOWN:
                self._known.pop(next(iter(self._known)))
        return found

    def _tokens(self, text: str) -> set[str]:
        """The words of a text as the full-text index has them (porter-stemmed)."""
        return self.store.stems(text)

    def informative(self, entry: Known) -> frozenset[str]:
        """An entry's words as versions are told by (memoryd.retrieval.versions): its stems as
        the full-text index has them, the stop words left out, a verb of change marked."""
        if entry.informative is None:
            if self._restating is None:
                self._restating = self._stops() | self._tokens(" ".join(RESTATING))
                self._changing = self._tokens(" ".join(CHANGING))
            stops, changing = self._restating, self._changing
            entry.informative = frozenset(CHANGE + word if word in changing else word
                                          for word in entry.words if word not in stops
                                          and word not in entry.titles_only)
        return entry.informative

    def lexicon_rows(self, entry: Known, lexicon: Lexicon) -> np.ndarray:
        """The lexicon's rows of an entry's informative words, looked up once (again when the
        lexicon has grown: a new word of the entry may be in it now)."""
        if entry.rows is None or entry.rows_of != len(lexicon):
            stops = self._stops()
            entry.rows = np.array([lexicon.rows[w] for w in entry.words
                                   if w in lexicon.rows and w not in stops],
                                  dtype=np.int64)
            entry.rows_of = len(lexicon)
            # words the lexicon's filling has not reached (it has every word of the entries
            # up to its cursor that it keeps at all; a word of a newer entry may be missing)
            entry.unaligned = any(w not in lexicon.rows and w not in stops
                                  and is_word(w) for w in entry.words)
        return entry.rows
