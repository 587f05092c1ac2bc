"""Whatever a transcript line holds, every format's parser and the outcome judge's reader take it
without an error of their own: a line they cannot use is counted as skipped (by its reason),
never as ``internal_error`` (an exception the parser did not expect), and never raised."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from memoryd.ingest.transcript import make_parser
from memoryd.ingest.transcript.actions import StepReader
from memoryd.sources import TRANSCRIPT_FORMATS

#: The field names and values the formats read, so that generated records reach their
#: branches rather than stopping at the first missing key.
KEYS = ["type", "role", "content", "data", "message", "payload", "id", "uuid", "timestamp",
        "sessionId", "session_id", "text", "name", "speaker", "toolName", "arguments",
        "toolCallId", "context", "cwd", "messageId", "toolCalls", "args", "summary", "parts"]
TYPES = ["session.start", "user.message", "assistant.message", "tool.execution_start",
         "user", "assistant", "gemini", "message", "response_item", "event_msg",
         "session_meta", "compacted", "summary", "system", "tool", "text", "session"]
scalars = st.one_of(st.none(), st.booleans(), st.integers(-2**63, 2**63), st.floats(),
                    st.sampled_from(TYPES), st.text(max_size=30))
values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(st.sampled_from(KEYS), inner, max_size=5)),
    max_leaves=10)
ROLES = ["user", "assistant", "system", "tool", "human", "Caroline", "summary"]


@st.composite
def nested(draw: st.DrawFn) -> dict[str, Any]:
    """An object whose every field is there half of the time (a dictionary of random keys
    holds the one a branch needs too rarely)."""
    return {key: draw(values) for key in KEYS if draw(st.booleans())}


@st.composite
def records(draw: st.DrawFn) -> dict[str, Any]:
    """A record: a type the formats know, with any of the fields they read."""
    record: dict[str, Any] = {"type": draw(st.one_of(st.sampled_from(TYPES), values))}
    fields = {"id": st.one_of(st.text(min_size=1, max_size=20), scalars),
              "role": st.one_of(st.sampled_from(ROLES), scalars), "content": values,
              "data": nested(), "message": nested(), "payload": nested(), "timestamp": scalars,
              "sessionId": scalars, "session_id": scalars, "name": scalars, "uuid": scalars,
              "toolCalls": values, "text": values, "isSidechain": values}
    for key, strategy in fields.items():
        if draw(st.booleans()):
            record[key] = draw(strategy)
    return record


def _line(record: dict[str, Any]) -> str:
    return json.dumps(record, allow_nan=True)


@settings(max_examples=30, deadline=None)
@given(st.lists(records(), min_size=1, max_size=6))
@example([{"role": "user", "content": {"type": ["text"], "text": "a block typed by a list"}}])
def test_no_record_makes_a_parser_fail(lines: list[dict[str, Any]]) -> None:
    for fmt in TRANSCRIPT_FORMATS:
        parser = make_parser(fmt, cwd="/home/ana/src/shop")
        reader = StepReader(fmt, "/home/ana/src/shop")
        for record in lines:
            parser.feed(_line(record))
            reader.feed(_line(record))
        parser.flush()
        reader.flush()
        assert "internal_error" not in parser.skipped, (fmt, parser.skipped, lines)
