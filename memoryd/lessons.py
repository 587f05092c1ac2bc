"""The words of a lesson: what the session-end extractor counts to tell a rule from a
reaction (memoryd.sessions.candidates), and what :mod:`memoryd.meaning` compares two lessons by.

A text's **content words** are its words lower-cased, with ``don't``/``doesn't``/… read as
``not``, and without the stop words a lesson's wording varies in. Two lessons' overlap is the
Jaccard of their words.
"""

import re
from collections.abc import Set as AbstractSet

#: Words a lesson's wording varies in. Negations (``not``, ``never``, ``no``) are not among
#: them, so "always X" and "never X" stay apart.
LESSON_STOPWORDS = frozenset([
    "a", "an", "and", "are", "as", "at", "be", "been", "but", "by", "can", "could", "do", "does",
    "for", "from", "has", "have", "i", "if", "in", "into", "is", "it", "its", "just", "me", "my",
    "of", "on", "or", "our", "so", "some", "than", "that", "the", "their", "them", "then", "there",
    "these", "they", "this", "to", "us", "was", "we", "were", "what", "when", "where", "which",
    "who", "why", "will", "with", "would", "you", "your", "please", "also"
])
_LESSON_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")


def words(text: str) -> list[str]:
    """Lower-case words; ``don't``, ``dont``, ``doesn't``, … all become ``not``."""
    out = []
    for word in _LESSON_WORD.findall(text.lower().replace("\u2019", "'")):
        out.append("not" if word.endswith("n't") or word == "dont" else word)
    return out


def content_words(text: str) -> frozenset[str]:
    """A text's words without stop words (all its words when it has only stop words)."""
    every = words(text)
    return frozenset(w for w in every if w not in LESSON_STOPWORDS) or frozenset(every)


def jaccard(a: AbstractSet[str], b: AbstractSet[str]) -> float:
    """The overlap of two word sets: shared words over all words (0 for two empty sets)."""
    return len(a & b) / len(a | b) if a or b else 0.0


def text_jaccard(a: str, b: str) -> float:
    """The Jaccard of two texts' content words (0 when either has no word)."""
    set_a, set_b = content_words(a), content_words(b)
    return jaccard(set_a, set_b) if set_a and set_b else 0.0
