"""Text normalisation, content hashes, and the parts of an entry that get vectors of their own.

Two texts that differ only in case and white space are the same memory: they share a
normalised form and so a content hash. The hash keys exact-duplicate detection and the
embedding cache (identical text is never embedded twice).

A long entry (an exchange of a session, a summary, a paragraph) mixes several things; a question
usually asks about one of them, and one vector for the whole text averages it away. So an entry
of two or more sentences also gets a vector per sentence (``split_parts``), and search scores it
by both (bench/eval: R@5 .802 → .842 for vectors alone).

The words of a lesson are :mod:`memoryd.lessons`; whether two memories say the same thing is
:mod:`memoryd.meaning`.
"""

import hashlib
import re
import unicodedata
from collections.abc import Sequence

_SPACE = re.compile(r"\s+")
_KEBAB_DROP = re.compile(r"['\u2019]")
_KEBAB_SPLIT = re.compile(r"[\W_]+")
#: A mark :func:`memoryd.redact.redact` left, exactly as it writes one (split on: captured).
_MARK = re.compile(r"(\[REDACTED:[a-z0-9-]+\])")
_ANY_CASE_MARK = re.compile(r"\[redacted:([a-z0-9-]+)\]")  # in a lower-cased text
_DATE_PREFIX = re.compile(r"^\[[^\]\n]{4,40}\]\s*")
#: The speaker label before each message of a transcript chunk (memoryd.ingest.transcript),
#: by role: ``[2026-10-14] User: …`` then ``Assistant: …`` after a blank line; with the
#: speaker's name when the transcript gives one: ``User (Caroline): …``.
CHUNK_LABELS = {"user": "User", "assistant": "Assistant", "summary": "Summary"}
#: A speaker's name as a label holds it: no brackets or colons (they end the label), white
#: space collapsed, at most this long.
MAX_SPEAKER_CHARS = 80
_NOT_IN_NAME = re.compile(r"[():\[\]]")
#: A label at the start of a message, as :func:`chunk_label` writes it.
CHUNK_LABEL = re.compile(r"(?:{})(?: \([^()\n:]{{1,{}}}\))?: ".format(
    "|".join(CHUNK_LABELS.values()), MAX_SPEAKER_CHARS))
_PART_BREAK = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9`])|\n\s*\n"
                         r"|\n(?=\s*(?:[-*+]|\d+[.)])\s)")
#: Sentences shorter than this join the next one; more than MAX_PARTS are merged in runs.
MIN_PART_CHARS = 20
MAX_PARTS = 8


_SURROGATE = re.compile("[\ud800-\udfff]")


def scrub_surrogates(value: object) -> object:
    """``value`` (parsed JSON) with every lone surrogate (``"\\ud800"`` in JSON text, which
    no UTF-8 file or database can hold, or a file's bytes that are not UTF-8, kept as surrogate
    escapes) replaced by U+FFFD; maps, lists and tuples walked through."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, (list, tuple)):
        return [scrub_surrogates(item) for item in value]
    if isinstance(value, dict):
        return {scrub_surrogates(k): scrub_surrogates(v) for k, v in value.items()}
    return value


def utf8_name(path: str) -> bool:
    """Whether a file's name (as the OS gave it: bytes that are not UTF-8 as lone surrogates)
    is UTF-8, so that it can be stored and sent as text."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def normalise_text(text: str) -> str:
    """Unicode NFKC, lower case, white space collapsed, trimmed. (``str.split`` splits at the
    characters the regular expression ``\\s`` matches, every one of them: the same text as
    collapsing runs of them with a regular expression and trimming, at a third of the cost,
    which search pays for each of its candidates.)"""
    return " ".join(unicodedata.normalize("NFKC", text).split()).lower()


#: A redaction marker (``memoryd.redact``): what replaced a secret, not words of the entry.
_REDACTION = re.compile(r"\[REDACTED:[^\]\s]*\]")
_KEY_BREAK = re.compile(r"[^0-9A-Za-z]+")


def index_text(text: str, key: str | None = None) -> str:
    """What the indexes hold of an entry (its keyword index, its vectors, the words search
    weighs): its text without redaction markers, which are no words of it (a search for
    "github" found "the token is [REDACTED:github-token]"), and a fact's key in words before
    it, which is what the value is about ("pref editor: emacs" for ``--key pref.editor``).
    Deterministic, and the text itself when it has neither: an ordinary entry is indexed as
    it was."""
    body = text
    if "[REDACTED:" in body:
        body = _REDACTION.sub("", body)
        body = re.sub(r"[ \t]{2,}", " ", body).strip()
    if key:
        words = " ".join(w for w in _KEY_BREAK.split(key) if w)
        if words:
            body = f"{words}: {body}"
    return body


#: The scripts written without spaces between words (Han, Kana) or with particles joined to
#: their words (Hangul): the full-text tokenizer made one word of a whole run ("東京オフィスの",
#: "프린터는"), which a question names only in part. Each of their characters is a word of the
#: keyword index; a run of them is asked for as a phrase (:func:`keyword_text`).
_SEGMENTED = ("\u1100-\u11ff\u3005-\u3007\u3040-\u30ff\u3100-\u318f\u31f0-\u31ff"
              "\u3400-\u4dbf\u4e00-\u9fff\ua960-\ua97f\uac00-\ud7ff\uf900-\ufaff\uff66-\uffdc"
              "\U00020000-\U0003134f")
_SEGMENTED_CHAR = re.compile(f"[{_SEGMENTED}]")
#: What :func:`keyword_text` spaces out: a character of those scripts, or one outside ASCII
#: that is no letter, digit or space (a symbol, if :func:`is_symbol`, or punctuation).
_SPACED = re.compile(f"([{_SEGMENTED}])|([^\\x00-\\x7f\\w\\s])")


def is_symbol(char: str) -> bool:
    """Whether a character is a word of its own: Unicode's "other symbol" (✅, ❌, 🟢, ★, ©),
    as :mod:`memoryd.meaning` reads them, but for the lines and blocks text is drawn with
    (box drawing, block elements, Braille patterns: a tree listing, a spinner)."""
    return unicodedata.category(char) == "So" and not (
        "\u2500" <= char <= "\u259f" or "\u2800" <= char <= "\u28ff")


def is_segmented(char: str) -> bool:
    """Whether a character is of a script the keyword index reads a character at a time."""
    return _SEGMENTED_CHAR.fullmatch(char) is not None


def keyword_text(text: str) -> str:
    """A text as the keyword index reads it (``entries_fts``, and every word search weighs):
    each Han, Kana and Hangul character and each symbol (:func:`is_symbol`) spaced out, a word
    of its own; the rest as it is. A question's run of those characters is asked for as a
    phrase (adjacent characters, memoryd.store.query.fts_phrase): "東京" finds
    "東京オフィスの…", "프린터" finds "프린터는". Deterministic: the index's triggers delete
    an entry's words by reading them again, so a change here needs the index rebuilt (a
    migration)."""
    if text.isascii():
        return text
    return _SPACED.sub(_spaced, text)


def _spaced(match: re.Match[str]) -> str:
    char = match.group()
    return f" {char} " if match.group(1) or is_symbol(char) else char


def has_segmented(text: str) -> bool:
    """Whether a text has a character of those scripts (a scan in C: an entry's tokens are
    walked in Python only then)."""
    return not text.isascii() and _SEGMENTED_CHAR.search(text) is not None


def segmented_run(tokens: Sequence[str]) -> str | None:
    """The characters of those scripts among a text's tokens (in their order), as phrases of
    them are matched: adjacent tokens adjacent, any other token a break ("\\0"); None when
    there are none. Walks every token: ask :func:`has_segmented` of the text first."""
    if not any(len(token) == 1 and is_segmented(token) for token in tokens):
        return None
    return "".join(token if len(token) == 1 and is_segmented(token) else "\0"
                   for token in tokens)


def speaker_name(name: str) -> str | None:
    """A transcript's name for a speaker as a chunk label holds it (see CHUNK_LABEL); None
    when nothing of it is left."""
    cleaned = " ".join(_NOT_IN_NAME.sub(" ", name).split())[:MAX_SPEAKER_CHARS].strip()
    return cleaned or None


def chunk_label(role: str, speaker: str | None = None) -> str:
    """What a transcript chunk writes before a message: ``User: ``, ``User (Caroline): ``."""
    label = CHUNK_LABELS.get(role, "Assistant")
    return f"{label} ({speaker}): " if speaker else f"{label}: "


def content_hash(text: str) -> str:
    """sha256 hex digest of the normalised text."""
    return hashlib.sha256(normalise_text(text).encode("utf-8")).hexdigest()


def kebab(heading: str) -> str:
    """Lower-case kebab form: ``Tool Quirks & Gotchas`` -> ``tool-quirks-gotchas``. A
    redaction mark is kept as it is (a text is redacted before it is put in this form: a
    secret lower-cased and cut at its "_" is no longer one the redactor knows):
    ``Deploy with [REDACTED:github-token]`` -> ``deploy-with-[REDACTED:github-token]``."""
    parts = _MARK.split(heading)
    words = [part if number % 2 else _kebab_words(part) for number, part in enumerate(parts)]
    return "-".join(word for word in words if word)


def fold_category(name: str) -> str:
    """A category as a filter compares it: in the form a heading's category is made
    (:func:`kebab`), so that "Mistakes", "mistakes" and "Tool Quirks" / "tool-quirks" are one
    (a category written through the API is kept as written)."""
    return kebab(name.strip())


def _kebab_words(text: str) -> str:
    words = _KEBAB_DROP.sub("", text.lower())
    return _KEBAB_SPLIT.sub("-", words).strip("-")


def lower_keeping_marks(text: str) -> str:
    """``text`` in lower case but for its redaction marks, written as the redactor writes
    them (tags are stored, and looked for, in lower case: ``[redacted:stripe-key]`` would be
    no mark, and ``--tags '[redacted:stripe-key]'`` finds ``[REDACTED:stripe-key]``)."""
    return _ANY_CASE_MARK.sub(lambda m: f"[REDACTED:{m[1]}]", text.lower())


def without_date_prefix(text: str) -> str:
    """The text without the date in brackets that leads it (a transcript chunk's
    ``[2026-10-14]``): what the entry itself says."""
    return _DATE_PREFIX.sub("", text.strip())


def split_parts(text: str) -> list[str]:
    """The sentences (or bullets, or paragraphs) of an entry that get vectors of their own;
    [] for a text of one sentence. At most MAX_PARTS: more are merged into even runs."""
    return [_SPACE.sub(" ", text[start:end]) for start, end in part_spans(text)]


def part_spans(text: str) -> list[tuple[int, int]]:
    """Where each of ``split_parts(text)`` is in ``text``: (start, end) character offsets,
    so that the embedder can pool a part's tokens out of the run over the whole text."""
    stripped = text.lstrip()
    offset = len(text) - len(stripped)
    prefix = _DATE_PREFIX.match(stripped.rstrip())
    if prefix:
        offset += prefix.end()
    body = text[offset:len(text.rstrip())]
    spans: list[tuple[int, int]] = []
    carry: int | None = None  # where the short pieces being carried into the next one begin
    start = 0
    for cut in [*_PART_BREAK.finditer(body), None]:
        end = cut.start() if cut else len(body)
        piece = body[start:end]
        if piece.strip():
            first = start + len(piece) - len(piece.lstrip())
            last = start + len(piece.rstrip())
            begin = first if carry is None else carry
            if len(_SPACE.sub(" ", body[begin:last])) < MIN_PART_CHARS:
                carry = begin
            else:
                carry = None
                spans.append((begin, last))
        if cut:
            start = cut.end()
    if carry is not None:
        last = len(body.rstrip())
        if spans:
            spans[-1] = (spans[-1][0], last)
        else:
            spans.append((carry, last))
    if len(spans) < 2:
        return []
    if len(spans) > MAX_PARTS:
        size = -(-len(spans) // MAX_PARTS)
        spans = [(spans[i][0], spans[min(i + size, len(spans)) - 1][1])
                 for i in range(0, len(spans), size)]
    return [(offset + begin, offset + end) for begin, end in spans]

