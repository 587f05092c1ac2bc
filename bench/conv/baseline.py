"""The independent check's baseline on the conversational set: `python bench/conv/baseline.py`.

Fifty lines of retrieval that memoryd is measured against (issue 35): BM25 with the porter
stemmer (SQLite FTS5 through apsw) and dense cosine with memoryd's own embedder (the int8
all-MiniLM-L6-v2), fused by reciprocal rank (k = 60) with weight 1 for keywords and 0.25 for
vectors. Each turn is a document holding the turn before it, itself and the turn after it
(within its session) under the session's date; a hit is credited with the turns of its
document, as memoryd's hits are with the turns of their chunk (``--credit-center``: only the
turn it was made for; a window covers three turns where memoryd's chunk covers two or so).
``--exchanges`` indexes exchanges instead, as memoryd chunks them (a first-speaker turn and
the second speaker's turns after it, credited with all of them). One index per conversation
(``--one-agent``: one for all). Prints the table bench/eval_conv.py prints, without the
match flag: it tells whether this set is as hard as the one the check used (baseline R@5
0.731 with windows, 0.639 with exchanges, where memoryd had 0.635).
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path
from typing import Any

import apsw
import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

from conversations import HALVES, Conversation, ConversationSet, load  # noqa: E402
from measure import TOP, metrics, show  # noqa: E402

from memoryd.embedding.model import Embedder  # noqa: E402
from memoryd.settings import EmbedConfig  # noqa: E402

RRF_K = 60
KEYWORD_WEIGHT = 1.0
VECTOR_WEIGHT = 0.25
_WORD = re.compile(r"\w+")


def documents(conversation: Conversation, exchanges: bool,
              credit_window: bool = True) -> list[tuple[str, list[str]]]:
    """(text, the turn ids a hit on it is credited with) per document."""
    out = []
    first = conversation.speakers[0]
    for session in conversation.sessions:
        date = f"[{session.start:%Y-%m-%d}]"
        turns = session.turns
        if exchanges:
            groups: list[list[Any]] = []
            for turn in turns:
                if not groups or turn.speaker == first:
                    groups.append([])
                groups[-1].append(turn)
            for group in groups:
                out.append((date + " " + "\n".join(f"{t.speaker}: {t.text}" for t in group),
                            [t.id for t in group]))
        else:
            for i, turn in enumerate(turns):
                window = turns[max(0, i - 1):i + 2]
                out.append((date + " " + "\n".join(f"{t.speaker}: {t.text}" for t in window),
                            [t.id for t in window] if credit_window else [turn.id]))
    return out


class Index:
    def __init__(self, docs: list[tuple[str, list[str]]], embedder: Embedder) -> None:
        self.docs = docs
        self.db = apsw.Connection(":memory:")
        self.db.execute("CREATE VIRTUAL TABLE docs USING fts5(text, tokenize='porter unicode61')")
        with self.db:
            for number, (text, _) in enumerate(docs):
                self.db.execute("INSERT INTO docs(rowid, text) VALUES (?, ?)", (number, text))
        self.vectors = embedder.embed([text for text, _ in docs])
        self.embedder = embedder

    def search(self, question: str) -> list[list[str]]:
        words = _WORD.findall(question.lower())
        scores = np.zeros(len(self.docs))
        if words:
            expression = " OR ".join(f'"{w}"' for w in words)
            rows = self.db.execute("SELECT rowid FROM docs WHERE docs MATCH ? ORDER BY bm25(docs)",
                                   (expression,)).fetchall()
            for rank, (rowid,) in enumerate(rows, 1):
                scores[rowid] += KEYWORD_WEIGHT / (RRF_K + rank)
        cosines = self.vectors @ self.embedder.embed([question])[0]
        for rank, number in enumerate(np.argsort(-cosines, kind="stable"), 1):
            scores[number] += VECTOR_WEIGHT / (RRF_K + rank)
        best = np.argsort(-scores, kind="stable")[:TOP]
        return [self.docs[i][1] for i in best]


def run(data: ConversationSet, exchanges: bool, one_agent: bool, halves: tuple[str, ...],
        credit_window: bool = True) -> list[dict[str, Any]]:
    embedder = Embedder(EmbedConfig(model="default", threads=1, batch_size=32,
                                    batch_tokens=4096, max_tokens=256))
    groups = [list(data.conversations)] if one_agent else [[c] for c in data.conversations]
    rows = []
    for group in groups:
        docs: list[tuple[str, list[str]]] = []
        owner: list[str] = []
        for conversation in group:
            made = documents(conversation, exchanges, credit_window)
            docs += made
            owner += [conversation.id] * len(made)
        keyed = [(text, [f"{o}/{t}" for t in turns]) for (text, turns), o in zip(docs, owner)]
        index = Index(keyed, embedder)
        for conversation in group:
            if conversation.half not in halves:
                continue
            for question in conversation.questions:
                started = time.perf_counter()
                hits = index.search(question.q)
                elapsed = time.perf_counter() - started
                mine = f"{conversation.id}/"
                rows.append({"id": question.key, "type": question.type,
                             "half": conversation.half, "q": question.q,
                             "evidence": list(question.evidence),
                             "covered": [[t[len(mine):] for t in turns if t.startswith(mine)]
                                         for turns in hits],
                             "ms": elapsed * 1000})
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--exchanges", action="store_true",
                        help="index exchanges (memoryd's chunks) instead of ±1-turn windows")
    parser.add_argument("--one-agent", action="store_true",
                        help="one index over every conversation")
    parser.add_argument("--credit-center", action="store_true",
                        help="credit a window's hit with its own turn, not its three")
    parser.add_argument("--half", choices=("tuning", "held-out", "both"), default="both")
    args = parser.parse_args()
    data = load()
    if data.problems:
        raise SystemExit("the conversational set has problems; run bench/conv/check.py")
    halves = HALVES if args.half == "both" else (args.half,)
    rows = run(data, args.exchanges, args.one_agent, halves, not args.credit_center)
    sizes = data.sizes()
    unit = "exchanges" if args.exchanges else \
        "±1-turn windows" + (", credited with their own turn" if args.credit_center else "")
    show(f"baseline: BM25 porter + dense, RRF 1/0.25, {unit} ({sizes['conversations']} "
         f"conversations, {sizes['turns']} turns, {len(rows)} questions"
         f"{', one index' if args.one_agent else ''})", metrics(rows), None, latency="search in process")
    return 0


if __name__ == "__main__":
    sys.exit(main())
