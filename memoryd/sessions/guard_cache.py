"""The PreToolUse guard's terms of every lesson text, kept across starts.

At 100k entries the guard parsed 47k lesson texts at every start: 11 s of CPU, and every
search beside it waited for the GIL (~190 ms a search instead of ~30). The terms are derived
data: a file in the state directory, keyed by each text's digest, made by the rules of the
:mod:`memoryd.sessions.outcome_rules` it was written with. A file that is missing, unreadable,
or written by other rules is ignored, and the texts are parsed again.
"""

from __future__ import annotations

import functools
import hashlib
import logging
from pathlib import Path
from typing import Any

import msgpack

from memoryd.sessions import outcome_rules
from memoryd.sessions.outcome_rules import Term
from memoryd.store.durable import replace_file

log = logging.getLogger(__name__)

TERMS_FILE = "guard-terms.msgpack"


@functools.cache
def rules_version() -> str:
    """A digest of the rules' source: terms made by other rules are parsed again."""
    return hashlib.blake2b(Path(outcome_rules.__file__).read_bytes(), digest_size=16).hexdigest()


def load_terms(path: Path) -> dict[bytes, tuple[Term, ...]]:
    """The terms kept in ``path`` by text digest; none when it is missing, unreadable or made
    by other rules."""
    try:
        data = msgpack.unpackb(path.read_bytes(), raw=False, strict_map_key=False)
        if not isinstance(data, dict) or data.get("rules") != rules_version():
            return {}
        return {bytes(digest): tuple(_term(fields) for fields in terms)
                for digest, terms in data["terms"].items()}
    except FileNotFoundError:
        return {}
    except (OSError, ValueError, TypeError, KeyError, AttributeError,
            msgpack.UnpackException) as exc:
        log.info("The guard's kept terms in %s are not used (%s): the lessons are read "
                 "again.", path, exc)
        return {}


def save_terms(path: Path, terms: dict[bytes, tuple[Term, ...]]) -> None:
    """Keep the terms (replacing the file whole); a disk that refuses loses only time at the
    next start."""
    try:
        replace_file(path, msgpack.packb({"rules": rules_version(), "terms": {
            digest: [_fields(term) for term in found] for digest, found in terms.items()}}))
    except OSError as exc:
        log.info("The guard's terms could not be kept in %s (%s).", path, exc)


def _fields(term: Term) -> list[Any]:
    return [term.kind, term.said, term.alternatives, term.flags, term.qualifiers, term.value,
            term.implied, term.args]


def _term(fields: list[Any]) -> Term:
    kind, said, alternatives, flags, qualifiers, value, implied, args = fields
    if not (isinstance(kind, str) and isinstance(said, str) and isinstance(value, str)
            and isinstance(implied, bool)):
        raise ValueError(f"not a term: {fields!r}"[:200])
    return Term(kind, said, tuple(tuple(str(w) for w in words) for words in alternatives),
                tuple(tuple(str(f) for f in group) for group in flags),
                tuple(str(q) for q in qualifiers), value, implied, tuple(str(a) for a in args))
