"""The PreToolUse guard's terms kept across starts: read back as made, ignored when damaged or
made by other rules."""

from __future__ import annotations

from pathlib import Path

import msgpack
import pytest

from memoryd.sessions import guard_cache
from memoryd.sessions.guard_cache import load_terms, save_terms
from memoryd.sessions.outcome_rules import rule_of

LESSONS = [("lesson", "Use uv, not pip", "positive", None),
           ("lesson", "Never run `git push --force` on main", "negative", None),
           ("lesson", "Don't edit generated/schema.py; change the schema and run `make gen`",
            "negative", None),
           ("lesson", "Commit messages use the imperative mood", None, None)]


def _terms() -> dict[bytes, tuple]:
    return {str(number).encode() * 4: rule_of(*lesson).dont
            for number, lesson in enumerate(LESSONS)}


def test_kept_terms_are_read_back_as_they_were_made(tmp_path: Path) -> None:
    terms = _terms()
    assert any(terms.values()) and not all(terms.values())  # some forbid, some do not
    save_terms(tmp_path / "terms", terms)
    assert load_terms(tmp_path / "terms") == terms
    assert load_terms(tmp_path / "missing") == {}


def test_terms_made_by_other_rules_are_not_used(tmp_path: Path) -> None:
    path = tmp_path / "terms"
    save_terms(path, _terms())
    kept = msgpack.unpackb(path.read_bytes(), strict_map_key=False)
    path.write_bytes(msgpack.packb({**kept, "rules": "the rules of another release"}))
    assert load_terms(path) == {}


@pytest.mark.parametrize("damage", [
    lambda data: data[: len(data) // 2],  # cut short
    lambda data: b"\xc1" + data,  # not msgpack
    lambda data: msgpack.packb([1, 2, 3]),  # not a map
    lambda data: msgpack.packb({"rules": guard_cache.rules_version(),
                                "terms": {b"d": [["command", 5, [], [], [], "", False]]}}),
    lambda data: msgpack.packb({"rules": guard_cache.rules_version(), "terms": {b"d": [[1]]}}),
])
def test_a_damaged_file_is_not_used(tmp_path: Path, damage) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "terms"
    save_terms(path, _terms())
    path.write_bytes(damage(path.read_bytes()))
    assert load_terms(path) == {}
