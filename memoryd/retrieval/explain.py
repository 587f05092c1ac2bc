"""What a search hit holds of the question, for a search with ``explain`` (the viewer).

The evidence of a hit (:mod:`memoryd.retrieval.ranking`) is numbers: ``coverage`` is the share
of the question's informative words the entry holds, weighed by rarity; ``part`` is the
cosine of its closest sentence. A person checks a reason only when it names things: which of
the question's words the entry holds, and which sentence was close. Search finds them from
what it already has (the question's words as it tokenised them for ``coverage``; the entry's
part vectors, split from its index text as they were made), only when asked: the hit's
explanation (a reply's ``explain`` field). :func:`memoryd.sessions.explain.evidence_words`
says it in words.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence

import numpy as np

from memoryd.retrieval.known import Known, holds
from memoryd.retrieval.records import Explanation, Sentence
from memoryd.store.database import Store
from memoryd.store.records import IndexedText
from memoryd.text import split_parts


def words_held(terms: Sequence[str], keys: Callable[[str], Collection[str]],
               entry: Known) -> list[str]:
    """The question's informative words (``terms``, as search asked with them) the entry
    holds: a word counts when the entry holds each of its ``keys`` (its stems as the full-text
    index stems; a run of Han characters as that run) — the same test as ``coverage``'s."""
    held = []
    for term in terms:
        looked_for = keys(term)
        if looked_for and all(holds(entry, key) for key in looked_for):
            held.append(term)
    return held


def closest_sentence(text: str, parts: np.ndarray, query: np.ndarray) -> Sentence | None:
    """The entry's sentence whose vector is closest to the question's (``text``: the index
    text its part vectors were made from, :func:`memoryd.text.split_parts`); None for an entry
    of one sentence, or whose parts do not match its text (re-embedding pending)."""
    sentences = split_parts(text)
    if not len(parts) or len(sentences) != len(parts):
        return None
    cosines = np.asarray(parts, dtype=np.float32) @ np.asarray(query, dtype=np.float32)
    best = int(np.argmax(cosines))
    return Sentence(sentences[best], float(cosines[best]), best + 1, len(sentences))


def explanations(store: Store, rowids: Sequence[int], texts: dict[int, IndexedText],
                 terms: Sequence[str], known: Callable[[int, str], Known],
                 keys: Callable[[str], Collection[str]], query: np.ndarray | None
                 ) -> list[Explanation]:
    """Each hit's explanation (``rowids``: the hits' entries; ``texts``: their index texts;
    ``terms``: the question's informative words; ``known``: an entry's words as search
    tokenised them; ``keys``: what a question's word is looked for as). The part vectors are
    read for the hits alone."""
    parts = store.part_vectors_by_rowids(list(rowids)) if query is not None else {}
    found = []
    for rowid in rowids:
        text = texts[rowid].text
        sentence = closest_sentence(text, parts[rowid], query) \
            if query is not None and rowid in parts else None
        held = words_held(terms, keys, known(rowid, text))
        found.append(Explanation(tuple(terms), tuple(held), sentence))
    return found
