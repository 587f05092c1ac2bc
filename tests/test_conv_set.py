"""The conversational evaluation set (bench/conv) is well-formed, and its harness credits each
entry memoryd makes of a conversation with the turns the entry really holds."""

from __future__ import annotations

import importlib.util
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench" / "conv"))

from conversations import HALVES, TYPES, ConversationSet, check_sizes, load  # noqa: E402


def _harness() -> Any:
    spec = importlib.util.spec_from_file_location("eval_conv", ROOT / "bench" / "eval_conv.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_the_conversational_set_is_well_formed() -> None:
    data = load()
    assert data.problems == ()
    assert len(data.conversations) >= 5
    assert [line for c in data.conversations for line in check_sizes(c)] == []
    assert {c.half for c in data.conversations} == set(HALVES)
    sizes = data.sizes()
    assert all(sizes["by_type"][kind] for kind in TYPES)
    for conversation in data.conversations:  # evidence names turns that exist
        turns = conversation.turns()
        assert all(e in turns for q in conversation.questions for e in q.evidence)


def test_each_chunk_of_a_conversation_is_credited_with_the_turns_it_holds(
        daemon, client, memoryd_home: Path) -> None:
    """The harness maps a hit to turns by its message_id and memoryd's exchange chunking (a
    first-speaker turn and the second speaker's turns after it); if the chunking changed, R@k
    would be credited to the wrong turns without a sound."""
    harness = _harness()
    whole = load(only={"c01"})
    conversation = replace(whole.conversations[0], sessions=whole.conversations[0].sessions[:4])
    data = ConversationSet((conversation,), ())
    home = memoryd_home / "user"
    harness.write_transcripts(data, home)
    client.sources("add", name="chats", path=str(home / "chats" / "{agent}" / "*.jsonl"),
                   kind="transcript", format="generic")
    coverage = harness.Coverage(data)
    first = conversation.speakers[0]
    chunks = sum(1 for s in conversation.sessions for i, t in enumerate(s.turns)
                 if i == 0 or t.speaker == first)
    deadline = time.monotonic() + 30
    entries: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        entries = client.list_entries(agents=["c01"], limit=1000)["entries"]
        if len(entries) >= chunks:
            break
        time.sleep(0.1)
    assert len(entries) == chunks
    assert harness.coverage_problems(entries, data, coverage) == []
    # and a search hit is credited through the same path
    question = conversation.questions[0]
    hits = client.search(question.q, agents=["c01"], limit=10)["hits"]
    assert any(coverage.turns(h)[1] for h in hits)
