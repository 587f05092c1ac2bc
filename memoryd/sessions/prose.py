"""What of a user's message is their own prose, and its sentences: what the extractors read
(memoryd.sessions.candidates, memoryd.sessions.llm_extractor).

Fenced code blocks (an unclosed fence runs to the end), ``>`` quoted lines, indented code, and
lines that look pasted from a terminal or a log (:data:`PASTED_LINE`) are dropped; a bullet's
marker is taken off. A line splits into sentences at ``.``, ``!``, ``?`` and ``;``, except
after an abbreviation (``e.g.``, ``i.e.``, ``etc.``, ``vs.``, …).
"""

from __future__ import annotations

import re

_FENCE = re.compile(r"\s*(`{3,}|~{3,})")
PASTED_LINE = re.compile(
    r"""^\s*(?:
        Traceback\ \(most\ recent\ call\ last\)
      | File\ "[^"]*",\ line\ \d+
      | at\ [\w$.<>/]+\s*\(.*\)\s*$                       # Java/JS stack frame
      | at\ \S+:\d+(?::\d+)?\)?\s*$
      | \[?\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}                 # timestamped log line
      | \[?\d{2}:\d{2}:\d{2}
      | \[?(?:TRACE|DEBUG|INFO|WARN|WARNING|ERROR|FATAL|CRITICAL)\]?(?:[\s:]|$)
      | (?:[A-Z]\w*)?(?:Error|Exception)(?::|\s*$)
      | E\s{2,}\S                                          # pytest failure detail
      | (?:FAILED|PASSED|ERROR)\s+\S+::
      | [=_]{3,}                                           # pytest separators, rules
      | -{3,}\s*$
      | \$\s                                               # shell prompt
      | (?:>>>|\.\.\.)\s                                   # Python REPL
      | (?:\+\+\+|---|@@)\s                                # diff headers
      | [+-](?![\s+-])\S                                   # diff lines
      | npm\ (?:ERR|WARN)!
    )""",
    re.X,
)
_QUOTED = re.compile(r"\s*>")
_INDENTED_CODE = re.compile(r"(?: {4,}|\t)(?![-*+]\s|\d+[.)]\s)")
_BULLET = re.compile(r"^\s*(?:[-*+•]|\d{1,3}[.)])\s+")
_SYMBOLS = re.compile(r"[^\w\s'\",.!?;:()\u2019-]")


def prose_lines(text: str) -> list[str]:
    """The lines of a message the user wrote as prose: without code, quotes and pasted logs."""
    lines: list[str] = []
    fence: str | None = None
    for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        opener = _FENCE.match(line)
        if fence is not None:
            if opener and opener.group(1)[0] == fence[0] and len(opener.group(1)) >= len(fence):
                fence = None
            continue
        if opener:
            fence = opener.group(1)
            continue
        if not line.strip() or _QUOTED.match(line) or _INDENTED_CODE.match(line):
            continue
        if PASTED_LINE.match(line) or _mostly_symbols(line):
            continue
        lines.append(_BULLET.sub("", line, count=1).strip())
    return lines


def _mostly_symbols(line: str) -> bool:
    stripped = line.strip()
    return len(stripped) >= 20 and len(_SYMBOLS.findall(stripped)) / len(stripped) > 0.25


_SENTENCE_END = re.compile(r"[.!?]+(?=\s|$)|;\s*")
_ABBREVIATIONS = ("e.g", "i.e", "etc", "vs", "cf", "approx", "incl", "esp")


def sentences(line: str) -> list[str]:
    """A line split into sentences, keeping each sentence's final ``?``."""
    out, start = [], 0
    for m in _SENTENCE_END.finditer(line):
        before = line[max(start, m.start() - 8):m.start()].split()
        if m.group().startswith(".") and before and before[-1].lower() in _ABBREVIATIONS:
            continue
        piece = line[start:m.end()].strip()
        if piece.strip(".!?; "):
            out.append(piece)
        start = m.end()
    if line[start:].strip():
        out.append(line[start:].strip())
    return out
