"""What search knows of an entry between searches, and the vectors of its words.

Search tokenises each candidate and each transcript chunk around one (their words, for
``coverage`` and the word alignment, :mod:`memoryd.retrieval.search`); the same entries come
back as candidates of many questions, so what it finds is kept, keyed by the entry's rowid and
its text (:class:`Known`). Copies of one text (another agent's, a file's, an import's) are told
from rivals by their normalised text (``said``), and so is the transcript chunk a lesson was
taken from (:func:`taken_from`).
"""

from __future__ import annotations

import hashlib
from bisect import bisect_left
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from memoryd.store.records import IndexedText
from memoryd.text import is_segmented, normalise_text


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
