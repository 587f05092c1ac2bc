"""`memory explain`: what was injected, as the agent read it, and why, in words.

The injection log (``Registry.log_injection``) keeps each item's section, entry id or file,
size, the probability search gave it and its evidence, and the line as it was injected (records
written before the line was kept have none). An explanation adds to each item its ``text`` (for
older records, the entry's text now) and a ``reason``: a sentence a person can check ("matched
the prompt: close in meaning (cosine 0.81), holds most of its words"), where the evidence is a
vector of numbers; the vector stays in the item for ``--json``. For an entry the agent got, it
adds what became of it in the session (memoryd.sessions.outcomes): followed, broken or no
occasion, why, and the transcript steps that show it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from memoryd.sessions.context import FACT_PREFIXES, one_line, render
from memoryd.sessions.outcome_rules import rule_of
from memoryd.store.records import StoredEntry

#: An item's text in an explanation: enough to recognise it.
TEXT_CHARS = 160
#: The outcome of an entry injected into a session that was not judged (yet).
NOT_JUDGED = "not judged yet"


def _scope(entry: StoredEntry | None) -> str:
    if entry is None:
        return ""
    return " of this project" if entry.project else " (global)"


#: A quoted sentence in a reason: enough to recognise it.
SENTENCE_CHARS = 60


def quoted(text: str, limit: int = SENTENCE_CHARS) -> str:
    """A sentence in quotes, cut at a word with " …" when longer than ``limit``."""
    text = " ".join(text.split())
    if len(text) > limit:
        text = text[:limit].rsplit(" ", 1)[0].rstrip(",;:") + " …"
    return f"'{text}'"


def _words_said(words: list[str], held: list[str], asked: str) -> str | None:
    """Which of the question's words the entry holds: "shares 3 of the query's 4 words:
    speech, bubble, rejected (not floating)"."""
    if not held:
        return None
    names = ", ".join(held)
    if len(held) == len(words):
        return (f"holds the {asked}'s word: {names}" if len(words) == 1
                else f"shares all {len(words)} of the {asked}'s words: {names}")
    missing = ", ".join(w for w in words if w not in held)
    return f"shares {len(held)} of the {asked}'s {len(words)} words: {names} (not {missing})"


def evidence_words(evidence: Mapping[str, float], asked: str = "prompt",
                   found: Mapping[str, Any] | None = None) -> list[str]:
    """The evidence that made a search hit, as people say it (``asked``: what the words
    were, the prompt of a hook or the query of a search). ``found``: what a search with
    ``explain`` adds to a hit (memoryd.retrieval.explain: the question's words it holds, its
    sentence closest in meaning), named in place of the numbers that sum them up; the
    injection log keeps the numbers only, so `memory explain` says less."""
    said = []
    mix, cos, part = evidence.get("mix", 0.0), evidence.get("cos", 0.0), evidence.get("part", 0.0)
    sentence = (found or {}).get("sentence")
    near = "close" if mix >= 0.5 else "near" if mix >= 0.3 else None
    if near and sentence and sentence["cosine"] >= cos:  # a sentence is what is close
        said.append(f"its sentence {quoted(sentence['text'])} is {near} in meaning "
                    f"(cosine {sentence['cosine']:.2f})")
    else:
        if near:
            said.append(f"{near} in meaning (cosine {max(cos, part):.2f})")
        if part > cos + 0.05:
            said.append("one of its sentences especially")
    coverage, align = evidence.get("coverage", 0.0), evidence.get("align", 0.0)
    words = (found or {}).get("words")
    shared = _words_said(words, (found or {}).get("held") or [], asked) if words else None
    if shared:
        said.append(shared)
    elif words is None and coverage >= 0.75:
        said.append(f"holds the {asked}'s telling words")
    elif words is None and coverage >= 0.4:
        said.append(f"holds some of the {asked}'s telling words")
    elif align >= 0.6:
        said.append(f"words close to the {asked}'s")
    if evidence.get("kw_rr", 0.0) >= 1.0:
        said.append("the best keyword match")
    elif evidence.get("kw", 0.0) > 0:
        said.append("a keyword match")
    if evidence.get("in_window"):
        said.append(f"written in the time the {asked} names")
    if evidence.get("vec_rr", 0.0) >= 1.0 and evidence.get("margin", 0.0) >= 0.05:
        said.append("well ahead of the other candidates")
    if evidence.get("lacks"):
        said.append(f"though it lacks the kind of detail the {asked} asks for")
    return said


#: What selection by use (memoryd.store.usage.Disuse) did with an item, after its reason.
USE_WORDS = {"in use": "; followed or broken lately: ahead of the others",
             "unused": "; unused for long: last, and the first dropped"}


def reason(item: dict[str, Any], event: str, entry: StoredEntry | None) -> str:
    """Why one item was in a block, in one sentence."""
    section = item.get("section")
    if event.startswith("MCP "):  # memoryd.sessions.mcp_reads
        return f"the agent read it through its MCP tool {event[4:]}"
    if item.get("score") is not None:
        words = evidence_words(item.get("evidence") or {})
        return (f"matched the prompt (probability {item['score']:.2f} that it is relevant)"
                + (": " + ", ".join(words) if words else ""))
    if event in ("PreToolUse", "PostToolUse"):  # memoryd.sessions.tool_guard
        said = [t.said for t in rule_of(entry.kind, entry.text, entry.polarity,
                                        entry.key).dont] if entry is not None else []
        what = f" (it forbids {', '.join(f'`{w}`' for w in said)})" if said else ""
        call = "the tool call just made" if event == "PostToolUse" else \
            "the tool call about to be made"
        return f"a lesson{_scope(entry)} that {call} went against{what}"
    if event == "UserPromptSubmit" and section == "lessons":
        category = (entry.category if entry is not None else "") or "its category"
        return f"a lesson filed under [{category}], a topic the prompt names"
    if section == "pinned":
        return "a pinned file (CONTEXT.md, system/): every session gets it whole"
    if section == "files":
        return "another memory file of the agent, listed so that it reads it when relevant"
    if section == "feedback":
        return f"the user's own words{_scope(entry)}: every session starts with them"
    if section == "lessons":
        return f"a lesson{_scope(entry)}: every session gets the lessons, newest first"
    if section == "facts":
        key = (entry.key if entry is not None else None) or ""
        if key.startswith(FACT_PREFIXES):
            return f"a {key.split('.')[0]}. fact{_scope(entry)}: the top ones go in every session"
        return f"a fact{_scope(entry)}: the project's keyed facts go in every session"
    if section == "notes":
        return f"a note written on purpose{_scope(entry)}: the newest go in every session"
    return f"in the {section} section"


def describe(injection: dict[str, Any], entries: dict[str, StoredEntry],
             outcomes: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """An injection with each item's text and reason (``entries``: the items' entries by id,
    for older records and for what the reason says of them), and, for an entry the agent got,
    what became of it in the session (``outcomes``: memoryd.store.usage's rows by entry):
    ``outcome`` (followed, broken, no occasion, or "not judged yet"), ``outcome_why`` and
    ``outcome_evidence``."""
    items = []
    for item in injection.get("items") or []:
        entry = entries.get(item.get("id") or "")
        text = item.get("text")
        if text is None:
            text = f"- {render(entry)}" if entry is not None else (item.get("path") or "")
        why = reason(item, injection.get("event") or "", entry) + USE_WORDS.get(
            item.get("use") or "", "")
        if not item.get("included", True):
            why += "; dropped: over the budget"
        judged = (outcomes or {}).get(item.get("id") or "")
        if judged is not None and item.get("included", True):
            item = {**item, "outcome": judged["outcome"] or NOT_JUDGED,
                    "outcome_why": judged["why"], "outcome_evidence": judged["evidence"]}
        items.append({**item, "text": one_line(text, TEXT_CHARS), "reason": why})
    return {**injection, "items": items}
