"""Text as a model reads it, for the quarantine's rules (memoryd.quarantine).

A model reads through what hides a word from a pattern: an invisible character inside it
(zero-width space, soft hyphen, word joiner, a bidi control, a variation selector, a tag
character), a lookalike letter of another script (Cyrillic ``і``, Greek ``ο``), a fullwidth or
mathematical letter (NFKC), an accent, an HTML entity (``&lt;/system&gt;``), a JSON or URL
escape, letters spelled out one at a time (``I.g.n.o.r.e``, ``i g n o r e``), markdown emphasis
inside a word (``Ig**nore**``) and a markdown link around a word (``[Ignore](https://…) all
…``). :func:`fold` undoes them, and nothing else: what a rule finds in a text as written it
finds in the folded text too (``_`` stays, as in ``tool_call``, which a rule looks for; an
underscore inside a word does not make emphasis in markdown anyway), so the rules read the
folded text only. It is for judging: memoryd stores and injects the text as it was written.

The lookalikes are a small table (:data:`CONFUSABLES`) of the Cyrillic, Greek and Armenian
letters that look like Latin ones, not Unicode's whole confusables list: enough for a word of
Latin letters with a few swapped, which is what an obfuscated instruction is. Text of another
script folds into nonsense, which no rule matches.
"""

from __future__ import annotations

import html
import re
import unicodedata
from urllib.parse import unquote

#: Characters that show nothing (or next to nothing): a word holding one reads as the word.
INVISIBLE = re.compile(
    "[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
    "\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff9-\ufffb\U0001bca0-\U0001bca3"
    "\U0001d173-\U0001d17a\U000e0000-\U000e0fff]")
#: Combining marks (once decomposed): ``ï`` reads as ``i``.
_MARKS = re.compile("[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]")
#: Letters of other scripts that look like Latin ones.
CONFUSABLES = str.maketrans({
    # Cyrillic
    "а": "a", "е": "e", "і": "i", "ј": "j", "к": "k", "о": "o", "р": "p", "с": "c", "у": "y",
    "х": "x", "ѕ": "s", "ԁ": "d", "һ": "h", "ӏ": "l", "ԛ": "q", "ԝ": "w", "ү": "y", "ѵ": "v",
    "А": "A", "В": "B", "Е": "E", "Ѕ": "S", "І": "I", "Ј": "J", "К": "K", "М": "M", "Н": "H",
    "О": "O", "Р": "P", "С": "C", "Т": "T", "У": "Y", "Х": "X", "Ү": "Y", "Ԛ": "Q", "Ԝ": "W",
    "Ӏ": "I",
    # Greek
    "α": "a", "ε": "e", "ι": "i", "κ": "k", "ν": "v", "ο": "o", "ρ": "p", "υ": "u", "χ": "x",
    "ϲ": "c", "ϳ": "j", "Α": "A", "Β": "B", "Ε": "E", "Ζ": "Z", "Η": "H", "Ι": "I", "Κ": "K",
    "Μ": "M", "Ν": "N", "Ο": "O", "Ρ": "P", "Τ": "T", "Υ": "Y", "Χ": "X", "Ϲ": "C",
    # Armenian, and Latin letters that pass for others
    "օ": "o", "ս": "u", "հ": "h", "ı": "i", "ɑ": "a", "ɡ": "g", "ʏ": "y",
})
#: Four or more single letters with a separator between each: ``I.g.n.o.r.e``; found by a
#: cheaper pattern first (a letter between two separators: 7 µs a text, the whole one 23).
_SPELLED = re.compile(r"(?<![^\W_])(?:[^\W\d_][.\-_*·•/ ]){3,}[^\W\d_](?![^\W_])")
_SPELLED_HINT = re.compile(r"[.\-_*·•/ ][^\W\d_][.\-_*·•/ ][^\W\d_][.\-_*·•/ ]")
_SEPARATOR = re.compile(r"[.\-_*·•/ ]")
#: Emphasis or code marks, dropped inside a word (``Ig**nore**``, ``sys`tem``): found by
#: the marks, then their neighbours looked at (a pattern that looked behind every character
#: took 33 µs for a transcript chunk, this 6).
_MARKUP = re.compile(r"[*`~]+")
#: A markdown link or image: its text is what is read.
_LINK = re.compile(r"!?\[([^\]\n]{0,200})\]\([^)\n]{0,500}\)")
_JSON_ESCAPE = re.compile(r"\\u([0-9a-fA-F]{4})")
_URL_ESCAPE = re.compile(r"%[0-9a-fA-F]{2}")


def fold(text: str) -> str:
    """``text`` with what hides a word from a pattern undone (see the module's docstring);
    line breaks are kept."""
    if "&" in text:
        text = html.unescape(text)
    if "\\u" in text:
        text = _JSON_ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), text)
    if "%" in text and _URL_ESCAPE.search(text):
        text = unquote(text)
    if not text.isascii():
        text = unicodedata.normalize("NFKD", text)
        text = _MARKS.sub("", INVISIBLE.sub("", text)).translate(CONFUSABLES)
        text = unicodedata.normalize("NFKC", text)
    if "](" in text:
        text = _LINK.sub(r"\1", text)
    if "*" in text or "`" in text or "~" in text:
        text = _MARKUP.sub(_inside_a_word, text)
    if _SPELLED_HINT.search(text):
        text = _SPELLED.sub(lambda m: _SEPARATOR.sub("", m.group(0)), text)
    return text


def _inside_a_word(match: re.Match[str]) -> str:
    text, start, end = match.string, match.start(), match.end()
    inside = 0 < start and end < len(text) and text[start - 1].isalpha() and text[end].isalpha()
    return "" if inside else match.group(0)


def flatten(text: str) -> str:
    """One line, as the memory block shows an entry (memoryd.sessions.context.one_line)."""
    return " ".join(text.split())
