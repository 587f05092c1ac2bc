"""Quarantine: text that looks like an instruction to the model, not a memory.

Memory is injected into agents' context, so a planted "ignore previous instructions" would be
obeyed in every later session. An entry whose text :func:`reason_for_entry` flags is stored all
the same (nothing is lost) but marked ``quarantined``: the memory block never injects it (nor a
pinned file holding it), search shows it with a warning, and a person releases it with
``memory release ID`` (a ``release`` ledger record, kept as a mark on the agent and content
hash so that it outlives a reindex). Text that is no entry but enters the block all the same
— a pinned file's headings and frontmatter, a memory file's name and ``description`` — is
judged when the block is built (memoryd.sessions.context).

A text is judged as a model reads it: folded (:func:`memoryd.fold.fold`: invisible
characters, lookalike letters, fullwidth letters, accents, entities and escapes, spelled-out
words, markdown links undone; nothing a rule finds in the text as written is lost) and, but for
the rules that read line starts, on one line, as the block shows an entry (a line break inside
the phrase hides it from a pattern, not from the model, and the block joins the lines back).

Flagged (case-insensitive), each with the reason shown:

- ``ignore-previous``: "ignore / disregard / forget / override … previous / prior / above / all
  / your / system … instructions / prompt / directives / guardrails", "forget everything you
  were told", and the same in German, French and Spanish;
- ``role-tag``: ``<system>``, ``</system>``, ``<|im_start|>`` and any ``<|…|>`` special token
  (Llama 3's ``<|start_header_id|>``), ``<start_of_turn>``, ``[INST]``, ``<<SYS>>``,
  ``<system-reminder>``, a line (or heading) starting ``Assistant:`` or ``Human:`` (in a
  transcript chunk, not the speaker labels memoryd writes before each message), and a comment
  addressed to the model, hidden when the markdown is rendered (``<!-- SYSTEM: … -->``,
  ``[//]: # (system: …)``);
- ``memoryd-marker``: memoryd's own block marker (``<!-- memoryd:``) and the block's own
  headings (``## Feedback (the user's words)``, ``## Other memory files …``);
- ``tool-call``: tool-call markup (``<function_calls>``, ``<invoke …>``, ``<tool_use>``,
  ``<tool_call>``, ``"tool_calls":``, ``"function_call":``);
- ``role-override``: "you are now a/an …", "new instructions:", "your real instructions
  are", "don't tell the user".

A rule of thumb, not a proof: prose about prompt injection is flagged too (and released by a
person); an instruction phrased as a preference ("from now on answer in French") is not, and
is what memory is for. What the rules let through is shown by the block as data, with who
wrote it (memoryd.sessions.context: an agent's own words are quoted).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memoryd.fold import flatten, fold
from memoryd.text import CHUNK_LABEL, without_date_prefix

#: Raised whenever the rules change: the store judges every entry again when it opens a
#: database judged by other rules (Store._judge_again).
RULES_VERSION = 2
#: The roles a hidden comment may address.
_ROLES = r"(?:system|assistant|developer|human|user|admin|ai|model|llm|instructions?|prompt)"


@dataclass(frozen=True)
class Rule:
    """One rule: its name, its pattern (case-insensitive), words one of which a text must hold
    (case-folded) for the pattern to match at all — a text without any of them is not searched
    (the patterns cost ~220 µs for a transcript chunk of ~870 characters, the words ~10) — and
    whether it reads line starts (``^``): such a rule reads the folded text line by line, the
    others read it on one line, as the block shows an entry."""

    name: str
    pattern: re.Pattern[str]
    needles: tuple[str, ...]
    by_line: bool = False


def _rule(name: str, pattern: str, needles: tuple[str, ...], by_line: bool = False) -> Rule:
    return Rule(name, re.compile(pattern, re.IGNORECASE | re.MULTILINE), needles, by_line)


RULES: tuple[Rule, ...] = (
    _rule("ignore-previous",
          r"\b(?:ignore|disregard|forget|override|bypass|discard)\b[^.\n]{0,20}?"
          r"\b(?:previous|prior|above|earlier|preceding|all|your|system)\b[^.\n]{0,20}?"
          r"\b(?:instructions?|prompts?|directions|directives|guardrails)\b",
          ("ignore", "disregard", "forget", "override", "bypass", "discard")),
    _rule("ignore-previous",
          r"\b(?:ignore|disregard|forget)\b[^.\n]{0,15}?\b(?:everything|anything|whatever)\b"
          r"[^.\n]{0,30}?\b(?:told|instructed|taught|programmed|said)\b",
          ("everything", "anything", "whatever")),
    # German, French, Spanish (folded: without accents)
    _rule("ignore-previous",
          r"\b(?:ignorier\w*|vergiss|vergessen|missachte\w*|ubergeh\w*)\b[^.\n]{0,30}?"
          r"\b(?:vorherig\w*|bisherig\w*|vorig\w*|obig\w*|alle\w*|fruher\w*|system\w*|dein\w*)"
          r"\b[^.\n]{0,30}?\b(?:anweisung\w*|instruktion\w*|befehl\w*|vorgaben|anordnung\w*)"
          r"|\bvergiss\b[^.\n]{0,10}?\balles\b",
          ("ignorier", "vergiss", "vergessen", "missacht", "ubergeh")),
    _rule("ignore-previous",
          r"\b(?:ignore[rz]?|oublie[rz]?|neglige[rz]?)\b[^.\n]{0,30}?"
          r"\b(?:precedent\w*|anterieur\w*|toutes|tous|tes|vos)\b[^.\n]{0,30}?"
          r"\b(?:instructions?|consignes?|directives?)\b"
          r"|\b(?:ignore[rz]?|oublie[rz]?|neglige[rz]?)\b[^.\n]{0,20}?"
          r"\b(?:instructions?|consignes?|directives?)[\s-]+(?:\w+[\s-]+)?"
          r"(?:precedent\w*|anterieur\w*|ci-dessus|d'avant)",
          ("ignor", "oubli", "neglig")),
    _rule("ignore-previous",
          r"\b(?:ignora\w*|olvida\w*|omite|descarta\w*)\b[^.\n]{0,30}?"
          r"\b(?:anterior\w*|previa\w*|todas?|todos|tus|sus)\b[^.\n]{0,30}?"
          r"\b(?:instrucciones|indicaciones|directrices)\b"
          r"|\b(?:ignora\w*|olvida\w*|omite|descarta\w*)\b[^.\n]{0,20}?"
          r"\b(?:instrucciones|indicaciones|directrices)[\s-]+(?:\w+[\s-]+)?"
          r"(?:anterior\w*|previa\w*|de[\s-]+arriba)",
          ("ignora", "olvida", "omite", "descarta")),
    _rule("role-tag",
          r"<\s*/?\s*(?:system|assistant|human|developer|system[-_]reminder|im_start|im_end)\b"
          r"[^>\n]{0,80}>"
          r"|<\|[a-z_]{2,32}\|>|<(?:start|end)_of_turn>|\[/?INST\]|<<\s*/?SYS\s*>>"
          rf"|<!--[\s*#>-]*{_ROLES}\b",  # a comment to the model, hidden once rendered
          ("<", "inst]")),
    _rule("role-tag",
          r"^[ \t>*#-]*(?:assistant|human)[ \t]*:"  # a heading "## Human:" too
          # a markdown comment to the model: [//]: # (system: …)
          rf"|^[ \t]*\[[^\]\n]*\]:[ \t]*(?:#|<>)[ \t]*[(\"'][ \t]*{_ROLES}\b",
          ("assistant", "human", "]:"), by_line=True),
    _rule("memoryd-marker", r"<!--\s*memoryd:", ("memoryd:",)),
    _rule("memoryd-marker",
          r"^[ \t>]*#{1,6}[ \t]*(?:Feedback \(the user's words\)"
          r"|Other memory files \(read them when relevant\))",
          ("feedback (the user's words)", "other memory files (read them when relevant)"),
          by_line=True),
    _rule("tool-call",
          r"<\s*/?\s*(?:[a-z]+:)?(?:function_calls|invoke|tool_use|tool_call|tool_result"
          r"|function_results)\b|\"(?:tool_calls|function_call)\"\s*:",
          ("function_call", "invoke", "tool_use", "tool_call", "tool_result", "function_result")),
    _rule("role-override",
          r"\byou are now (?:a|an|the|my|in)\b|\bnew (?:system )?instructions?\s*:"
          r"|\b(?:your|the) (?:real|true|actual|updated) (?:instructions?|orders|directives?)"
          r" (?:are|is)\b"
          r"|\b(?:do not|don't|never) (?:tell|inform|alert|mention (?:this |it )?to) the user\b",
          ("you are now", "instruction", "the user", "orders", "directive")),
)


TRANSCRIPT_KINDS = ("turn", "summary")
#: What memoryd writes before each message of a transcript chunk ("Assistant: " opens a line,
#: as a role-tag does), after the blank line between two messages.
_LATER_LABEL = re.compile(rf"\n\n{CHUNK_LABEL.pattern}")


def messages(chunk: str) -> str:
    """A transcript chunk's messages without what memoryd wrote around them: the date before
    the first, a speaker label before each."""
    text = without_date_prefix(chunk)
    first = CHUNK_LABEL.match(text)
    if first:
        text = text[first.end():]
    return _LATER_LABEL.sub("\n\n", text)


def reason(text: str, kind: str | None = None) -> str | None:
    """Why ``text`` looks like an instruction to the model (the rule's name), or None. A
    transcript chunk (``kind`` turn or summary) is judged by its messages (every exchange with
    an answer was flagged as a role-tag by memoryd's own label).

    Each rule reads the text folded (memoryd.fold: what folding undoes never makes a match
    go away), on one line unless it reads line starts."""
    if kind in TRANSCRIPT_KINDS:
        text = messages(text)
    lines = fold(text)
    flat = flatten(lines) if "\n" in lines else lines
    lines_folded, flat_folded = lines.casefold(), None
    for rule in RULES:
        if rule.by_line:
            view, folded = lines, lines_folded
        else:
            if flat_folded is None:
                flat_folded = flat.casefold() if flat is not lines else lines_folded
            view, folded = flat, flat_folded
        # map() over a bound method: a generator here cost more than the rules themselves
        if any(map(folded.__contains__, rule.needles)) and rule.pattern.search(view):
            return rule.name
    return None


def shown_text(text: str, category: str | None = None, key: str | None = None) -> str:
    """An entry's text with what the block shows on its line besides it: its category (a
    notebook entry's heading, kebab-cased) and its key, as words."""
    extra = [part.replace("-", " ") for part in (category,) if part]
    extra += [re.sub(r"[._]", " ", part) for part in (key,) if part]
    return " ".join([text, *extra]) if extra else text


def reason_for_entry(text: str, kind: str | None, category: str | None = None,
                     key: str | None = None) -> str | None:
    """:func:`reason` for an entry: its text with what the block shows with it (a category
    or key may hold words too: a heading of a memory file becomes its entries' category)."""
    if kind in TRANSCRIPT_KINDS:
        text = messages(text)
        kind = None
    return reason(shown_text(text, category, key), kind)


def release_target(hash_: str) -> str:
    """The mark (Store.marks) that a released text keeps: by agent and content hash."""
    return "release:" + hash_
