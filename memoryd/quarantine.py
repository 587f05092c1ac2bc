"""Quarantine: text that looks like an instruction to the model, not a memory (D4).

Memory is injected into agents' context, so a planted "ignore previous instructions" would be
obeyed in every later session. An entry whose text :func:`reason` flags is stored all the
same (nothing is lost) but marked ``quarantined``: the memory block never injects it (nor a
pinned file holding it), search shows it with a warning, and a person releases it with
``memory release ID`` (a ``release`` ledger record, kept as a mark on the agent and content
hash so that it outlives a reindex).

Flagged (case-insensitive), each with the reason shown:

- ``ignore-previous``: "ignore / disregard / forget / override … previous / prior / above / all
  / your / system … instructions / prompt / directives / guardrails";
- ``role-tag``: ``<system>``, ``</system>``, ``<|im_start|>``, ``[INST]``, ``<<SYS>>``,
  ``<system-reminder>``, a line starting ``Assistant:`` or ``Human:`` (in a transcript chunk,
  not the speaker labels memoryd writes before each message);
- ``memoryd-marker``: memoryd's own block marker (``<!-- memoryd:``) and the block's own
  headings (``## Feedback (the user's words)``, ``## Other memory files …``);
- ``tool-call``: tool-call markup (``<function_calls>``, ``<invoke …>``, ``<tool_use>``,
  ``<tool_call>``, ``"tool_calls":``, ``"function_call":``);
- ``role-override``: "you are now a/an …", "new instructions:", "don't tell the user".

A rule of thumb, not a proof: prose about prompt injection is flagged too (and released by a
person); an instruction phrased as a preference ("from now on answer in French") is not, and
is what memory is for.
"""

from __future__ import annotations

import re

from memoryd.text import CHUNK_LABELS, without_date_prefix

#: Each rule: its name, its pattern (case-insensitive), and words one of which a text must hold
#: (case-folded) for the pattern to match at all: a text without any of them is not searched
#: (the patterns cost ~220 µs for a transcript chunk of ~870 characters, the words ~10).
RULES: tuple[tuple[str, re.Pattern[str], tuple[str, ...]], ...] = tuple(
    (name, re.compile(pattern, re.I | re.M), needles) for name, pattern, needles in (
        ("ignore-previous",
         r"\b(?:ignore|disregard|forget|override|bypass)\b[^.\n]{0,20}?"
         r"\b(?:previous|prior|above|earlier|preceding|all|your|system)\b[^.\n]{0,20}?"
         r"\b(?:instructions?|prompts?|directions|directives|guardrails)\b",
         ("ignore", "disregard", "forget", "override", "bypass")),
        ("role-tag",
         r"<\s*/?\s*(?:system|assistant|human|developer|system[-_]reminder|im_start|im_end)\b"
         r"[^>\n]{0,80}>"
         r"|<\|(?:im_start|im_end|system|user|assistant|endoftext)\|>|\[/?INST\]|<<\s*/?SYS\s*>>"
         r"|^[ \t>*-]*(?:assistant|human)[ \t]*:",
         ("<", "inst]", "assistant", "human")),
        ("memoryd-marker",
         r"<!--\s*memoryd:|^[ \t>]*#{1,6}[ \t]*(?:Feedback \(the user's words\)"
         r"|Other memory files \(read them when relevant\))",
         ("memoryd:", "feedback (the user's words)",
          "other memory files (read them when relevant)")),
        ("tool-call",
         r"<\s*/?\s*(?:[a-z]+:)?(?:function_calls|invoke|tool_use|tool_call|tool_result"
         r"|function_results)\b|\"(?:tool_calls|function_call)\"\s*:",
         ("function_call", "invoke", "tool_use", "tool_call", "tool_result", "function_result")),
        ("role-override",
         r"\byou are now (?:a|an|the|my|in)\b|\bnew (?:system )?instructions?\s*:"
         r"|\b(?:do not|don't|never) (?:tell|inform|alert|mention (?:this |it )?to) the user\b",
         ("you are now", "instruction", "the user")),
    ))


TRANSCRIPT_KINDS = ("turn", "summary")
#: What memoryd writes before each message of a transcript chunk ("Assistant: " opens a line,
#: as a role-tag does).
_LABELS = tuple(f"{label}: " for label in CHUNK_LABELS.values())


def messages(chunk: str) -> str:
    """A transcript chunk's messages without what memoryd wrote around them: the date before
    the first, a speaker label before each."""
    text = without_date_prefix(chunk)
    for label in _LABELS:
        if text.startswith(label):
            text = text[len(label):]
            break
    for label in _LABELS:
        text = text.replace("\n\n" + label, "\n\n")
    return text


def reason(text: str, kind: str | None = None) -> str | None:
    """Why ``text`` looks like an instruction to the model (the rule's name), or None. A
    transcript chunk (``kind`` turn or summary) is judged by its messages (every exchange with
    an answer was flagged as a role-tag by memoryd's own label)."""
    if kind in TRANSCRIPT_KINDS:
        text = messages(text)
    folded = text.casefold()
    for name, pattern, needles in RULES:
        if any(needle in folded for needle in needles) and pattern.search(text):
            return name
    return None


def release_target(hash_: str) -> str:
    """The mark (Store.marks) that a released text keeps: by agent and content hash."""
    return "release:" + hash_
