"""A question's words: the informative ones (stop words removed), as an FTS5 expression, and
as the keys an entry's words are looked up by (stemmed as the keyword index stems them), with
their weights. Search (:mod:`memoryd.retrieval.search`) asks with them. A word is a run of
letters and digits in any script, or a symbol (✅: :func:`memoryd.text.is_symbol`); a run of
Han, Kana or Hangul is asked for as a phrase of its characters
(:func:`memoryd.store.query.fts_phrase`)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from memoryd.retrieval.ranking import idf
from memoryd.store.database import Store
from memoryd.store.query import fts_phrase
from memoryd.text import has_segmented, is_segmented, is_symbol, segmented_run

#: A word, or a character outside ASCII that is no letter, digit or space (a symbol or not).
_WORD = re.compile(r"(\w+)|[^\x00-\x7f\w\s]")
#: Words that say nothing about what is asked: function words, question words, fillers.
STOPWORDS = frozenset("""
a about above after again against all also am an and any are aren't as at be because been before
being below between both but by can can't cannot could couldn't did didn't do does doesn't doing
don't down during each few for from further had hadn't has hasn't have haven't having he he'd
he'll he's her here here's hers herself him himself his how how's i i'd i'll i'm i've if in into is
isn't it it's its itself just let's me more most mustn't my myself no nor not of off on once only
or other ought our ours ourselves out over own same shan't she she'd she'll she's should shouldn't
so some such than that that's the their theirs them themselves then there there's these they
they'd they'll they're they've this those through to too under until up very was wasn't we we'd
we'll we're we've were weren't what what's when when's where where's which while who who's whom
why why's will with won't would wouldn't you you'd you'll you're you've your yours yourself
yourselves anything something everything nothing thing things get got gets getting go goes going
went gone make makes made use used using uses tell told say said know knew remind reminder please
hey hi ok okay yes yeah one ones ever still really actually even much many lot lots kind sort way
ways back now
""".split())


def query_terms(query: str) -> list[str]:
    words = [m.group().lower() for m in _WORD.finditer(query)
             if m.group(1) or is_symbol(m.group())]
    meaningful = [w for w in words if w not in STOPWORDS]
    return list(dict.fromkeys(meaningful or words))


def fts_expression(terms: Sequence[str], operator: str) -> str:
    """Each term a phrase (:func:`~memoryd.store.query.fts_phrase`: quoted, so nothing a user
    types is read as FTS5 syntax)."""
    return f" {operator} ".join(fts_phrase(t) for t in terms)


def stems(store: Store, text: str) -> set[str]:
    """The informative words of a text, as search weighs a question's (:func:`term_keys`)."""
    return {key for term in query_terms(text) for key in term_keys(store, term)}


def term_keys(store: Store, term: str) -> list[str]:
    """What a question's word is looked for as in an entry's words (``holds``): its stems
    as the full-text index stems them; a run of Han, Kana or Hangul characters as that
    run (held where they stand together, as the keyword index matches their phrase), not
    each character alone (a word of three characters weighed three times, and held by an
    entry with the three anywhere)."""
    tokens = store.tokens(term)
    run = segmented_run(tokens) if has_segmented(term) else None
    if run is None:
        return list(dict.fromkeys(tokens))
    return list(dict.fromkeys([*(part for part in run.split("\0") if part),
                               *(token for token in tokens
                                 if not (len(token) == 1 and is_segmented(token)))]))


def term_weights(store: Store, terms: list[str]) -> dict[str, float]:
    """Each informative word's keys (:func:`term_keys`) → its inverse document frequency."""
    total = store.count_fts_rows()
    weights: dict[str, float] = {}
    for term in terms:
        for key in term_keys(store, term):
            weights[key] = max(weights.get(key, 0.0),
                               idf(store.term_rows(term), total))
    return weights
