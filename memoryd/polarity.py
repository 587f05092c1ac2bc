"""A lesson's polarity in words: what a bare statement is prefixed with to read as a rule.

A lesson has a polarity when it says what to avoid (``negative``: a notebook's Mistakes, "don't
X") or what to do (``positive``: Learnings). Its text is often a bare statement of what
happened ("Used threshold-based black removal; it ate the dark hair."), which read alone says
the opposite of the lesson. Wherever a lesson is shown as a rule — the memory block
(memoryd.sessions.context) and a promoted rule in a governance file (memoryd.passes.promote) —
it gets the same prefix, ``Don't:`` or ``Do:``; a text that starts as a rule already ("Never
…", "Always …", "Run …") is left as written, and so is one without a polarity.
"""

from __future__ import annotations

import re

#: A lesson that starts with one of these is a rule already: it needs no "Do:"/"Don't:".
_RULE_START = re.compile(r"^(?:don't|do not|never|avoid|stop|always|prefer|use|keep|make sure|"
                         r"run|write|put|add|check|ask|answer|commit|test|call)\b",
                         re.IGNORECASE)
_PREFIXES = {"negative": "Don't", "positive": "Do"}


def rule_prefix(text: str, polarity: str | None) -> str | None:
    """The prefix ("Don't" or "Do") a lesson's ``text`` takes to read as a rule, or None: it
    has no polarity, or it starts as a rule already."""
    prefix = _PREFIXES.get(polarity or "")
    if prefix is None or _RULE_START.match(text.lstrip()):
        return None
    return prefix


def as_rule(text: str, polarity: str | None) -> str:
    """The lesson's ``text`` as a rule: ``Don't: …`` / ``Do: …`` (see :func:`rule_prefix`)."""
    prefix = rule_prefix(text, polarity)
    return f"{prefix}: {text}" if prefix else text
