"""The lexicon: every word of the entries (of their texts, and of the titles a memory file's
entry is under), embedded alone, for search's word alignment.

A question asked weeks later rarely uses the stored words ("how skinny can a decal's arm be"
for "thin tentacles tore off the sticker"); the sentence vectors of the small model catch only
part of that. Search therefore also aligns each informative word of the question with its
nearest word in a candidate (``align`` in :mod:`memoryd.retrieval.ranking`), which needs a
vector per word. The lexicon holds them: one row per stem of the full-text index (porter, as
``entries_fts`` stems), the vector of the first word seen with that stem, embedded alone by the
bound model.

Rows are derived data, filled in the background from the entries in rowid order (meta
``lexicon_rowid`` says how far) and dropped with the vectors when the model changes. In RAM each
word is int8 codes and a scale (384 bytes at 384 dims: 100,000 words are 38 MB). Only words
of letters, 3 to 30 of them, are kept (no numbers, hashes or paths).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Container, Iterable, Sequence
from typing import cast

import apsw
import numpy as np

from memoryd.errors import UnavailableError
from memoryd.store.database import LEXICON_CURSOR, Store
from memoryd.store.durable import DISK_ERRORS
from memoryd.store.fetch import integer
from memoryd.store.migrations import KEYWORD_TOKENIZER
from memoryd.store.row_file import quantize
from memoryd.text import keyword_text

CURSOR_KEY = LEXICON_CURSOR
_WORD = re.compile(r"[a-z]{3,30}")
#: What apsw's tokenizer yields with its default flags: (start, end, stem, *colocated stems).
Tokens = Iterable[tuple[int, int, *tuple[str, ...]]]


class Lexicon:
    """Stem → int8 vector, in RAM; loaded from and written to the ``lexicon`` table."""

    def __init__(self, dim: int, filled_to: int = 0) -> None:
        self.dim = dim
        #: the entries up to this rowid have all their words here (the filling's cursor):
        #: a newer entry's may not, and search scores it without the alignment then
        self.filled_to = filled_to
        self.rows: dict[str, int] = {}
        #: the rows' codes and scales, with room to grow: the first ``_used`` are words'
        self._codes = np.zeros((0, dim), dtype=np.int8)
        self._scales = np.zeros(0, dtype=np.float32)
        self._used = 0

    def __len__(self) -> int:
        return len(self.rows)

    def __contains__(self, stem: str) -> bool:
        return stem in self.rows

    def forget(self, stems: Sequence[str]) -> None:
        """Words a purge took out of the table: unknown again, so that an entry that has one
        later gives it back (its row of codes stays unused until the next load)."""
        for stem in stems:
            self.rows.pop(stem, None)

    @property
    def nbytes(self) -> int:
        return len(self.rows) * (self.dim + 4)

    def load(self, store: Store) -> None:
        stems, scales, codes = [], [], []
        for stem, scale, blob in store._db.execute("SELECT stem, scale, vector FROM lexicon"):
            stems.append(stem)
            scales.append(scale)
            codes.append(blob)
        self._append(stems, np.frombuffer(b"".join(codes), dtype=np.int8).reshape(-1, self.dim),
                     np.array(scales, dtype=np.float32))

    def add(self, store: Store, words: dict[str, str], vectors: np.ndarray,
            cursor: int | None = None) -> None:
        """Store the words (stem → word, in the order of ``vectors``' rows) and how far the
        filling got (``cursor``: the entries up to that rowid have all their words), in one
        transaction; then they are searchable."""
        stems = [s for s in words if s not in self.rows]
        keep = [i for i, s in enumerate(words) if s not in self.rows]
        codes, scales = quantize(np.asarray(vectors, dtype=np.float32).reshape(-1, self.dim)[keep])
        db = store._db
        try:
            with db:
                db.executemany("INSERT OR REPLACE INTO lexicon(stem, word, scale, vector) "
                               "VALUES (?, ?, ?, ?)",
                               [(s, words[s], float(scale), code.tobytes())
                                for s, scale, code in zip(stems, scales, codes)])
                if cursor is not None:
                    db.execute("INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO "
                               "UPDATE SET value=excluded.value", (CURSOR_KEY, str(cursor)))
        except DISK_ERRORS as exc:  # derived data: the filling tries again later
            raise UnavailableError(f"cannot store the lexicon's words ({exc})") from exc
        self._append(stems, codes, scales)
        if cursor is not None:
            self.filled_to = cursor

    def advance(self, store: Store, cursor: int) -> None:
        """The filling got to ``cursor`` through entries that brought no new word."""
        self.add(store, {}, np.zeros((0, self.dim), dtype=np.float32), cursor)

    def _append(self, stems: list[str], codes: np.ndarray, scales: np.ndarray) -> None:
        """New words' rows, in room kept for them: the arrays double when full. (They were
        copied whole for every step of the filling, most of them adding no word: a single
        write's, ~0.2 ms at 1,100 words, 38 MB at 100,000.)"""
        if not stems:
            return
        base, end = self._used, self._used + len(stems)
        if end > len(self._scales):
            capacity = max(end, 2 * len(self._scales), 1024)
            grown_codes = np.zeros((capacity, self.dim), dtype=np.int8)  # untouched: not resident
            grown_scales = np.zeros(capacity, dtype=np.float32)
            grown_codes[:base], grown_scales[:base] = self._codes[:base], self._scales[:base]
            self._codes, self._scales = grown_codes, grown_scales
        self._codes[base:end], self._scales[base:end] = codes, scales
        self._used = end
        for offset, stem in enumerate(stems):
            self.rows[stem] = base + offset

    def vectors(self, rows: Sequence[int] | np.ndarray) -> np.ndarray:
        """The words' vectors at these rows (float32, unit length up to the int8 rounding)."""
        index = np.asarray(rows, dtype=np.int64)
        return self._codes[index].astype(np.float32) * self._scales[index, None]


def is_word(token: str) -> bool:
    """Whether the lexicon keeps this stem (letters only, 3 to 30: no numbers, ids or paths)."""
    return _WORD.fullmatch(token) is not None


def cursor(store: Store) -> int:
    row = store._db.execute("SELECT value FROM meta WHERE key=?", (CURSOR_KEY,)).fetchone()
    return int(row[0]) if row else 0


def new_words(store: Store, lexicon: Lexicon, after: int, entries: int, words: int
              ) -> tuple[int, dict[str, str]]:
    """The words (stem → the word as written, lower case) that the lexicon lacks, of the
    entries after rowid ``after``: at most ``entries`` of them, stopping once ``words`` are
    found; and the rowid reached."""
    found: dict[str, str] = {}
    reached = after
    for rowid, text in cast(list[tuple[int, str]], store._db.execute(
            "SELECT id, index_text(text, key) || CASE WHEN heading IS NULL THEN '' "
            "ELSE char(10) || index_text(heading, NULL) END "
            "FROM entries WHERE id > ? ORDER BY id LIMIT ?",
            (after, entries)).fetchall()):
        found |= unknown_words(store, lexicon, [text], found)
        reached = rowid
        if len(found) >= words:
            break
    return reached, found


def unknown_words(store: Store, lexicon: Lexicon, texts: Sequence[str],
                  known: Container[str] = ()) -> dict[str, str]:
    """The words of the texts (stem → the word as written, lower case) that neither the
    lexicon nor ``known`` has."""
    tokenizer = store._db.fts5_tokenizer(*KEYWORD_TOKENIZER)
    found: dict[str, str] = {}
    for text in texts:
        data = keyword_text(text).encode("utf-8", "replace")
        for start, end, *tokens in cast(Tokens, tokenizer(data, apsw.FTS5_TOKENIZE_DOCUMENT,
                                                          None)):
            stem = tokens[0]
            if stem in found or stem in lexicon or stem in known or not is_word(stem):
                continue
            word = data[start:end].decode("utf-8", "replace").lower()
            if _WORD.fullmatch(word):
                found[stem] = word
    return found


def fill(store: Store, words: Lexicon, embed_alone: Callable[[list[str]], np.ndarray],
         entries: int = 256, batch: int = 128) -> int:
    """Give every word of the entries a vector at once (a reindex: the index it builds is
    complete when it is put in place, and a search right after it aligns as before); returns
    the words added. The daemon fills a step at a time instead (Engine.fill_lexicon)."""
    added, at = 0, cursor(store)
    while True:
        reached, found = new_words(store, words, at, entries, batch)
        if reached == at:
            return added
        if found:
            words.add(store, found, embed_alone(list(found.values())), reached)
        else:
            words.advance(store, reached)
        added, at = added + len(found), reached


def entries_after(store: Store, rowid: int) -> int:
    return integer(store._db, "SELECT count(*) FROM entries WHERE id > ?", (rowid,))


def drop_word(store: Store, stem: str) -> None:
    """A word no entry holds any more (a purge took the texts that had it)."""
    store._db.execute("DELETE FROM lexicon WHERE stem=?", (stem,))
