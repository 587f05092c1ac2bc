"""A second round of retrieval for questions answered by several chunks, studied offline over
the dump of every candidate (bench/candidates.py) and the built corpora (issue 35 §2).

    python bench/multihop_study.py                  # ~70 variants, tuning halves
    python bench/multihop_study.py --grid GRID2     # the words: which, how many, how rare
    python bench/multihop_study.py --held-out       # the chosen ones (CHOSEN), both halves
    python bench/multihop_study.py --anatomy        # the missing pieces; the match of several
    python bench/multihop_study.py --link-dump      # evidence for bench/match_study.py --tag link

The first round is the shipped model's ranking of the dumped candidates (what the daemon
returns). The second round takes the names and rare words of the first round's top hits that
the question does not hold, asks the full-text index for them (bm25, the question's own
filters: its agents), and merges what it finds into the first round's ranking. A candidate the
second round finds outside the first round's candidates is labelled like the dump's (the first
set: the answer item whose span its text holds; the conversational set: the turns its own
records name, without the passage's: a conservative count).

Variants differ in which words are taken (capitalised words, rare words by the store's document
frequency, both), from how many top hits, how many, and how the rounds are merged; GRID3 lends
a hit's probability to its session's chunks instead, GRID4 asks a second round only of
questions that name someone by a description. Every choice is made on the tuning halves; the
held-out halves are printed for the chosen ones only (docs/retrieval.md, "Questions answered
by several chunks": none held, and search has no second round).
"""

from __future__ import annotations

import argparse
import json
import math
import re
import statistics
import sys
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import apsw
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import candidates  # noqa: E402
import ranking_fit as rf  # noqa: E402

from memoryd.retrieval.ranking import FEATURES  # noqa: E402
from memoryd.retrieval.terms import STOPWORDS, query_terms  # noqa: E402

eval_conv = candidates.eval_conv
first = candidates.first
_WORD = re.compile(r"[^\W\d_][\w'’-]*", re.UNICODE)
_DATE_PREFIX = re.compile(r"^\[[^\]\n]{4,40}\]\s*")
_LABEL = re.compile(r"(?m)^(User|Assistant|System|Tool|Summary): ")


@dataclass
class Entry:
    rowid: int
    uid: str
    agent: str
    session: str | None
    text: str
    records: list[str] | None
    message_id: str | None
    via: str


#: The wanted items or turns a candidate holds (an alias: inside Case, ``set`` is a field).
Labels = set[str]


@dataclass
class Case:
    """One answerable question: its candidates (uids, first-round probabilities, labels)."""

    id: str
    set: str
    type: str
    half: str
    q: str
    agents: list[str]
    wanted: Labels
    uids: list[str]
    p: np.ndarray
    found: list[Labels]
    extra: dict[str, Labels] = field(default_factory=dict)  # uid → labels, outside the pool

    def got(self, uid: str) -> Labels:
        """The wanted items or turns an entry holds (a candidate's as the dump has it)."""
        if uid in self.uids:
            return self.found[self.uids.index(uid)]
        return self.extra.get(uid, set())


class Corpus:
    """A built corpus's database, read-only: texts, document frequencies, bm25."""

    def __init__(self, path: Path) -> None:
        self.db = apsw.Connection(f"file:{path}?mode=ro",
                                  flags=apsw.SQLITE_OPEN_URI | apsw.SQLITE_OPEN_READONLY)
        self.by_uid: dict[str, Entry] = {}
        self.by_rowid: dict[int, Entry] = {}
        for row in self.db.execute("SELECT id, uid, agent, session, text, records, message_id, "
                                   "via FROM entries WHERE status='active'"):
            entry = Entry(row[0], row[1], row[2], row[3], row[4],
                          json.loads(row[5]) if row[5] else None, row[6], row[7])
            self.by_uid[entry.uid] = entry
            self.by_rowid[entry.rowid] = entry
        self.total = len(self.by_uid)
        self.tokenizer = self.db.fts5_tokenizer("porter", ["unicode61", "remove_diacritics",
                                                           "2"])
        self._df: dict[str, int] = {}

    def stems(self, text: str) -> list[str]:
        return list(self.tokenizer(text.encode("utf-8", "replace"), apsw.FTS5_TOKENIZE_DOCUMENT,
                                   None, include_offsets=False, include_colocated=False))

    def df(self, term: str) -> int:
        if term not in self._df:
            self._df[term] = self.db.execute(
                "SELECT count(*) FROM entries_fts WHERE entries_fts MATCH ?",
                ('"' + term.replace('"', '""') + '"',)).fetchone()[0]
        return self._df[term]

    def idf(self, term: str) -> float:
        n = self.df(term)
        return math.log((self.total - n + 0.5) / (n + 0.5) + 1)

    def bm25(self, terms: Sequence[str], agents: Sequence[str], limit: int) -> list[str]:
        if not terms:
            return []
        match = " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
        marks = ", ".join("?" for _ in agents)
        rows = self.db.execute(
            "SELECT e.uid, bm25(entries_fts, 1.0, 0.5, 0.5) AS score FROM entries_fts "
            "CROSS JOIN entries e ON e.id = entries_fts.rowid WHERE entries_fts MATCH ? "
            f"AND e.agent IN ({marks}) AND e.status = 'active' ORDER BY score LIMIT ?",
            [match, *agents, limit]).fetchall()
        return [uid for uid, _ in rows]


def body(text: str) -> str:
    """A chunk's text without its date prefix and its speakers' labels."""
    return _LABEL.sub("", _DATE_PREFIX.sub("", text))


def capitalised(text: str) -> list[str]:
    """Words written with a capital that are not the first word of a sentence: names."""
    out = []
    for sentence in re.split(r"(?<=[.!?:;\n])\s+|\n", body(text)):
        words = _WORD.findall(sentence)
        out += [w for w in words[1:] if w[0].isupper() and w.lower() not in STOPWORDS]
    return out


def informative(text: str) -> list[str]:
    return [w for w in _WORD.findall(body(text)) if w.lower() not in STOPWORDS and len(w) > 2]


# -- the dump, as cases -----------------------------------------------------------------------


def load_cases(today: str) -> tuple[list[Case], dict[str, Corpus]]:
    rows = candidates.load_or_dump({}, today, False)
    model = rf.shipped()
    corpora: dict[str, Corpus] = {}
    first_meta = {}
    conv_data = eval_conv.load()
    coverage = eval_conv.Coverage(conv_data)
    for row in rows:
        if row["corpus"] not in corpora:
            base = first.RESULTS if row["set"] == "first" else eval_conv.RESULTS
            directory = base / "corpus" / row["corpus"]
            corpora[row["corpus"]] = Corpus(directory / "state" / "memoryd.db")
            if row["set"] == "first":
                meta = json.loads((directory / "corpus.json").read_text())
                first_meta = {q["id"]: q for q in meta["queries"]}
                spans = first.relevance(directory / "state", meta["queries"])
    cases = []
    for row in rows:
        if not row["wanted"]:
            continue
        corpus = corpora[row["corpus"]]
        x = np.array([[e[n] for n in FEATURES] for e in row["evidence"]],
                     dtype=np.float64).reshape(-1, len(FEATURES))
        wanted = set(row["wanted"])
        if row["set"] == "first":
            query = first_meta[row["id"]]
            found = [{label} & wanted if label else set() for label in row["labels"]]
            answer_of: dict[str, str] = {}
            for answer in query["answers"]:
                for uid in spans.get(answer["span"], {}):
                    answer_of.setdefault(uid, answer["item"])
            extra = {uid: {answer_of[uid]} & wanted for uid in answer_of}
            q, agents = query["q"], query["agents"]
        else:
            conversation = row["id"].split("/")[0]
            found = [set(turns) & wanted for turns in row["labels"]]
            question = next(qq for c in conv_data.conversations if c.id == conversation
                            for qq in c.questions if qq.key == row["id"])
            q, agents = question.q, [conversation]
            extra = {}
            for uid, entry in corpus.by_uid.items():
                if entry.agent != conversation:
                    continue
                owner, turns = coverage.turns({"records": entry.records, "id": uid,
                                               "message_id": entry.message_id, "via": entry.via,
                                               "text": entry.text})
                if owner == conversation and turns & wanted:
                    extra[uid] = turns & wanted
        cases.append(Case(row["id"], row["set"], row["type"], row["half"], q, agents or [],
                          wanted, row["ids"], model.scores(x) if len(x) else np.zeros(0),
                          found, extra))
    return cases, {c.id: corpora[r["corpus"]] for c, r in
                   zip(cases, [r for r in rows if r["wanted"]])}


# -- the second round -------------------------------------------------------------------------


@dataclass(frozen=True)
class Variant:
    name: str
    words: str = "caps"  # caps | rare | both
    hits: int = 2  # top hits the words come from
    terms: int = 4  # words asked for
    with_question: bool = False  # the question's words too in the second query
    fuse: str = "rrf"  # rrf | slots
    weight: float = 0.3  # the second round's weight in RRF
    k: int = 60
    max_df: float = 0.05  # a word in more than this share of the store is not a name
    gate: str = "all"  # all | nomatch | multi
    slots: int = 1  # for fuse=slots: hits of the second round placed in the top 5


def order_of(case: Case) -> list[str]:
    return [case.uids[i] for i in np.argsort(-case.p, kind="stable")]


MULTI = re.compile(r"\b(and|both|before|after|first|then|again|since|who|whose|the person|"
                   r"which .* did)\b", re.IGNORECASE)


def expansion(case: Case, corpus: Corpus, ranked: list[str], v: Variant) -> list[str]:
    asked = set(corpus.stems(" ".join(query_terms(case.q))))
    scored: dict[str, float] = {}
    names: set[str] = set()
    for uid in ranked[:v.hits]:
        entry = corpus.by_uid.get(uid)
        if entry is None:
            continue
        words: list[str] = []
        if v.words in ("caps", "both", "names"):
            words += capitalised(entry.text)
        if v.words == "names":
            names.update(s for w in words for s in corpus.stems(w))
        if v.words in ("rare", "both", "names"):
            words += informative(entry.text)
        for word in words:
            for stem in corpus.stems(word):
                if stem in asked or len(stem) < 3 or stem.isdigit():
                    continue
                df = corpus.df(stem)
                if df == 0 or df > v.max_df * corpus.total:
                    continue
                scored[stem] = max(scored.get(stem, 0.0), corpus.idf(stem))
    return sorted(scored, key=lambda s: (s not in names, -scored[s]))[:v.terms]


def lend_to_sessions(case: Case, corpus: Corpus, v: Variant, ranked: list[str]) -> list[str]:
    """A top hit lends a share of its probability to its session's other candidates that hold
    one of its rare words the question does not."""
    p = dict(zip(case.uids, case.p.tolist()))
    lent = dict(p)
    for uid in ranked[:v.hits]:
        hit = corpus.by_uid.get(uid)
        if hit is None or hit.session is None:
            continue
        words = set(expansion(case, corpus, [uid], v))
        for other in ranked[:50]:
            entry = corpus.by_uid.get(other)
            if other == uid or entry is None or entry.session != hit.session:
                continue
            if words & set(corpus.stems(entry.text)):
                lent[other] = max(lent[other], p[other] + v.weight * p[uid])
    return sorted(lent, key=lambda u: -lent[u])


def second_round(case: Case, corpus: Corpus, v: Variant) -> list[str]:
    ranked = order_of(case)
    if v.gate == "nomatch" and len(case.p) and case.p.max() >= THRESHOLD:
        return ranked
    if v.gate == "multi" and not MULTI.search(case.q):
        return ranked
    if v.gate == "bridge" and not BRIDGE.search(case.q):
        return ranked
    if v.fuse == "session":
        return lend_to_sessions(case, corpus, v, ranked)
    terms = expansion(case, corpus, ranked, v)
    if not terms:
        return ranked
    if v.with_question:
        terms = list(dict.fromkeys([*terms, *corpus.stems(" ".join(query_terms(case.q)))]))
    found = corpus.bm25(terms, case.agents, 50)
    if v.fuse == "rrf":
        score: dict[str, float] = defaultdict(float)
        for rank, uid in enumerate(ranked):
            score[uid] += 1 / (v.k + rank)
        for rank, uid in enumerate(found):
            score[uid] += v.weight / (v.k + rank)
        return sorted(score, key=lambda u: -score[u])
    if v.fuse == "boost":  # the probability, plus a share for the second round's rank
        p = dict(zip(case.uids, case.p.tolist()))
        boosted = {uid: p.get(uid, 0.0) for uid in [*ranked, *found]}
        for rank, uid in enumerate(found):
            boosted[uid] += v.weight / (1 + rank / v.k)
        return sorted(boosted, key=lambda u: -boosted[u])
    # slots: the first round's top (5 - slots), then the second round's best not shown yet
    head = ranked[:5 - v.slots]
    extra = [u for u in found if u not in head and u not in ranked[:v.hits]][:v.slots]
    return list(dict.fromkeys([*head, *extra, *ranked]))

#: A question that names something only by a description ("the person who named the truck",
#: "the woman whose 90th was in March"): a relative pronoun after the question's first word.
BRIDGE = re.compile(r"^\W*\w+\b.*\b(who|whose)\b", re.IGNORECASE)

THRESHOLD = 0.0


def measure(cases: Sequence[Case], orders: dict[str, list[str]]) -> dict[str, float]:
    r5, mrr, r10 = [], [], []
    for case in cases:
        ranked = orders[case.id]
        got = case.got
        for k, out in ((5, r5), (10, r10)):
            have = set().union(*(got(u) for u in ranked[:k])) if ranked else set()
            out.append(len(have & case.wanted) / len(case.wanted))
        first_hit = next((n for n, u in enumerate(ranked[:10]) if got(u)), None)
        mrr.append(1 / (first_hit + 1) if first_hit is not None else 0.0)
    if not cases:
        return {"n": 0}
    return {"n": len(cases), "R@5": statistics.fmean(r5), "R@10": statistics.fmean(r10),
            "MRR": statistics.fmean(mrr)}


def report(name: str, cases: Sequence[Case], orders: dict[str, list[str]], half: str) -> None:
    cells = []
    for s in ("first", "conv"):
        sel = [c for c in cases if c.set == s and c.half == half]
        f = measure(sel, orders)
        multi = measure([c for c in sel if c.type == "multi-hop"], orders)
        cell = f"{s}: R@5 {f['R@5']:.3f} MRR {f['MRR']:.3f} mh {multi['R@5']:.3f}"
        if s == "conv":
            od = measure([c for c in sel if c.type == "open-domain"], orders)
            cell += f" od {od['R@5']:.3f}"
        cells.append(cell)
    print(f"{name:<34} " + "   ".join(cells))


def per_question(case: Case, ranked: list[str]) -> tuple[float, float]:
    """(R@5, reciprocal rank) of one question."""
    got = [case.got(u) for u in ranked[:10]]
    have = set().union(*got[:5]) if got else set()
    first_hit = next((n for n, g in enumerate(got) if g), None)
    return len(have & case.wanted) / len(case.wanted), \
        1 / (first_hit + 1) if first_hit is not None else 0.0


def paired(cases: Sequence[Case], base: dict[str, list[str]], other: dict[str, list[str]],
           rounds: int = 1000) -> dict[str, tuple[float, float]]:
    """The change of R@5 and MRR from ``base`` to ``other``, with its standard error
    (bootstrap over questions, the same questions for both)."""
    rng = np.random.default_rng(7)
    before = np.array([per_question(c, base[c.id]) for c in cases])
    after = np.array([per_question(c, other[c.id]) for c in cases])
    change = after - before
    means = [change[rng.integers(0, len(change), len(change))].mean(axis=0)
             for _ in range(rounds)]
    spread = np.std(means, axis=0)
    return {"R@5": (float(change[:, 0].mean()), float(spread[0])),
            "MRR": (float(change[:, 1].mean()), float(spread[1]))}


def top_flags(cases: Sequence[Case], orders: dict[str, list[str]]) -> tuple[float, float]:
    """The top hit's match flag (its first-round probability against the threshold; one the
    first round did not score is not flagged): precision and recall."""
    flagged = right = both = 0
    for case in cases:
        top = orders[case.id][0] if orders[case.id] else None
        if top is None:
            continue
        p = dict(zip(case.uids, case.p.tolist())).get(top, 0.0)
        ok = bool(case.got(top))
        flagged += p >= THRESHOLD
        right += ok
        both += ok and p >= THRESHOLD
    return both / max(flagged, 1), both / max(right, 1)


def held_out(cases: Sequence[Case], corpus_of: dict[str, Corpus]) -> None:
    """The variants chosen on the tuning halves, on both halves, with the standard errors of
    their changes."""
    base = {c.id: order_of(c) for c in cases}
    for v in CHOSEN:
        orders = {c.id: second_round(c, corpus_of[c.id], v) for c in cases}
        print(f"\n== {v.name} ({v})")
        for s in ("first", "conv"):
            for half in ("tuning", "held-out"):
                for kind in ("all", "multi-hop", "open-domain"):
                    sel = [c for c in cases if c.set == s and c.half == half
                           and kind in ("all", c.type)]
                    if not sel:
                        continue
                    f0, f1 = measure(sel, base), measure(sel, orders)
                    d = paired(sel, base, orders)
                    m0, m1 = top_flags(sel, base), top_flags(sel, orders)
                    print(f"{s:<5} {half:<8} {kind:<11} n {len(sel):>3}  R@5 {f0['R@5']:.3f} → "
                          f"{f1['R@5']:.3f} ({d['R@5'][0]:+.3f} ± {d['R@5'][1]:.3f})  MRR "
                          f"{f0['MRR']:.3f} → {f1['MRR']:.3f} ({d['MRR'][0]:+.3f} ± "
                          f"{d['MRR'][1]:.3f})  match {m0[0]:.3f} / {m0[1]:.3f} → "
                          f"{m1[0]:.3f} / {m1[1]:.3f}")


def _missing_pieces(cases: Sequence[Case], corpus_of: dict[str, Corpus]) -> None:
    """Where the pieces missing from the top 5 are, and whether words link them to the top
    hits (tuning halves)."""
    print("\n== the pieces missing from the top 5 (tuning halves)")
    eight = Variant("eight rarest", "rare", 1, 8)
    for s in ("first", "conv"):
        for kind in ("multi-hop", "open-domain"):
            sel = [c for c in cases if c.set == s and c.half == "tuning" and c.type == kind]
            if not sel:
                continue
            where: dict[str, int] = defaultdict(int)
            pieces = shares_question = linked = linked_right = 0
            for case in sel:
                corpus = corpus_of[case.id]
                ranked = order_of(case)
                got = case.got
                asked = set(corpus.stems(" ".join(query_terms(case.q))))
                for piece in case.wanted - set().union(*(got(u) for u in ranked[:5])):
                    pieces += 1
                    rank = next((n for n, u in enumerate(ranked) if piece in got(u)), None)
                    where["6-10" if rank is not None and rank < 10 else
                          "11-20" if rank is not None and rank < 20 else
                          "21+" if rank is not None else "not a candidate"] += 1
                    holders = [u for u, found in case.extra.items() if piece in found]
                    words = set().union(*(set(corpus.stems(corpus.by_uid[u].text))
                                          for u in holders if u in corpus.by_uid))
                    shares_question += bool(words & asked)
                    links = [u for u in ranked[:5]
                             if set(expansion(case, corpus, [u], eight)) & words]
                    linked += bool(links)
                    linked_right += any(got(u) for u in links)
            print(f"{s} {kind}: {len(sel)} questions, {pieces} pieces missing from the top 5, "
                  f"first-round rank {dict(where)}; holding a word of the question {shares_question};"
                  f" holding one of the 8 rarest new words of a top-5 hit {linked} (of a right "
                  f"one {linked_right})")


def anatomy(cases: Sequence[Case], corpus_of: dict[str, Corpus]) -> None:
    """Tuning halves: where the pieces a multi-hop or open-domain question misses in the top 5
    are, and whether words link them to the top hits; then what the match flags of a
    question answered by several chunks."""
    _missing_pieces(cases, corpus_of)

    print("\n== the match flag of a question answered by several chunks (top 5, shipped model)")
    for s in ("first", "conv"):
        for half in ("tuning", "held-out"):
            sel = [c for c in cases if c.set == s and c.half == half and c.type == "multi-hop"]
            shown = flagged = several = all_flagged = top_right = top_flagged = 0
            for case in sel:
                order = np.argsort(-case.p, kind="stable")[:5]
                flags = [case.p[i] >= THRESHOLD for i in order]
                got = [case.found[i] for i in order]
                top_right += bool(got[0])
                top_flagged += bool(got[0]) and flags[0]
                seen = set().union(*got) & case.wanted
                marked = set().union(*(g for g, f in zip(got, flags) if f)) & case.wanted
                shown += len(seen)
                flagged += len(marked)
                if len(seen) > 1:
                    several += 1
                    all_flagged += marked == seen
            print(f"{s} {half}: {len(sel)} multi-hop questions; top hit holds a piece {top_right}"
                  f" (flagged {top_flagged}); pieces in the top 5 {shown}, in a match {flagged}; "
                  f"questions with two or more pieces in the top 5 {several}, all of them in "
                  f"matches {all_flagged}")

    print("\n== a flag by link: unflagged top-5 hits holding a rare word of a flagged top hit "
          "(tuning halves)")
    for terms in (2, 4, 8):
        for s in ("first", "conv"):
            linked = right = 0
            for case in [c for c in cases if c.set == s and c.half == "tuning"]:
                order = list(np.argsort(-case.p, kind="stable")[:5])
                if case.p[order[0]] < THRESHOLD:
                    continue
                corpus = corpus_of[case.id]
                words = set(expansion(case, corpus, [case.uids[order[0]]],
                                      Variant("link", "rare", 1, terms)))
                for i in order[1:]:
                    entry = corpus.by_uid.get(case.uids[i])
                    if case.p[i] < THRESHOLD and entry and words & set(corpus.stems(entry.text)):
                        linked += 1
                        right += bool(case.found[i] - case.found[order[0]])
            print(f"{terms} words, {s}: {linked} linked hits, {right} hold another piece "
                  f"({right / max(linked, 1):.2f})")


def link_dump(today: str, cases: Sequence[Case], corpus_of: dict[str, Corpus]) -> Path:
    """The dump with two more pieces of evidence per candidate, tagged ``link`` for
    bench/match_study.py: ``link_rr``, the candidate's reciprocal rank in the second round
    (the four rarest new words of the first round's top hit), and ``link_share``, the share
    of those words (by rarity) it holds; 0 for the top hit itself."""
    rows = candidates.load_or_dump({}, today, False)
    by_id = {c.id: c for c in cases}
    chosen = Variant("link", "rare", 1, 4)
    for row in rows:
        case = by_id.get(row["id"])
        if case is None:  # a no-answer query: not in the figures this evidence is judged by
            for e in row["evidence"]:
                e["link_rr"] = e["link_share"] = 0.0
            continue
        corpus = corpus_of[case.id]
        ranked = order_of(case)
        terms = expansion(case, corpus, ranked, chosen)
        rank = {u: n for n, u in enumerate(corpus.bm25(terms, case.agents, 50))}
        weights = {t: corpus.idf(t) for t in terms}
        total = sum(weights.values()) or 1.0
        for uid, e in zip(row["ids"], row["evidence"]):
            entry = corpus.by_uid.get(uid)
            held = set(corpus.stems(entry.text)) if entry else set()
            top = uid == ranked[0]
            e["link_rr"] = 0.0 if top or uid not in rank else 1 / (1 + rank[uid])
            e["link_share"] = 0.0 if top else \
                sum(w for t, w in weights.items() if t in held) / total
    corpora = sorted({r["corpus"] for r in rows}, key=lambda n: [r["corpus"] for r in rows
                                                                 ].index(n))
    target = candidates.RESULTS / f"{'-'.join(corpora)}-link.json"
    target.write_text(json.dumps(rows))
    index_file = candidates.RESULTS / "index.json"
    index = json.loads(index_file.read_text())
    index[f"{today} {json.dumps({})} link"] = target.name
    index_file.write_text(json.dumps(index, indent=1))
    return target


def main() -> int:
    global THRESHOLD
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--today", default="2026-11-28")
    parser.add_argument("--grid", default="VARIANTS", choices=GRIDS,
                        help="the variants to run on the tuning halves (default VARIANTS)")
    parser.add_argument("--only", default="", help="variant names to run, comma-separated")
    parser.add_argument("--held-out", action="store_true",
                        help="the chosen variants (CHOSEN) on both halves, with standard errors")
    parser.add_argument("--anatomy", action="store_true",
                        help="the missing pieces, the match of several chunks, a flag by link")
    parser.add_argument("--link-dump", action="store_true",
                        help="write the dump tagged 'link' for bench/match_study.py --tag link")
    args = parser.parse_args()
    cases, corpus_of = load_cases(args.today)
    THRESHOLD = rf.shipped().thresholds["0.90"]
    if args.link_dump:
        print(f"wrote {link_dump(args.today, cases, corpus_of)}")
        return 0
    if args.anatomy:
        anatomy(cases, corpus_of)
        return 0
    if args.held_out:
        held_out(cases, corpus_of)
        return 0
    base = {c.id: order_of(c) for c in cases}
    report("first round (shipped)", cases, base, "tuning")
    for v in GRIDS[args.grid]:
        if not args.only or v.name in args.only.split(","):
            orders = {c.id: second_round(c, corpus_of[c.id], v) for c in cases}
            report(v.name, cases, orders, "tuning")
    return 0


VARIANTS: list[Variant] = []
for words in ("caps", "rare", "both"):
    for hits in (1, 2, 3):
        for k, weight in ((60, 0.2), (10, 0.2), (10, 0.5), (3, 0.3)):
            VARIANTS.append(Variant(f"{words} h{hits} rrf k{k} w{weight}", words, hits, 4,
                                    weight=weight, k=k))
        for weight in (0.05, 0.1, 0.2):
            for k in (1, 5):
                VARIANTS.append(Variant(f"{words} h{hits} boost k{k} w{weight}", words, hits, 4,
                                        fuse="boost", weight=weight, k=k))
        VARIANTS.append(Variant(f"{words} h{hits} slots1", words, hits, 4, fuse="slots", slots=1))
for gate in ("nomatch", "multi"):
    VARIANTS.append(Variant(f"caps h2 slots1 gate {gate}", "caps", 2, 4, fuse="slots", slots=1,
                            gate=gate))
    VARIANTS.append(Variant(f"both h2 boost k5 w0.1 gate {gate}", "both", 2, 4, fuse="boost",
                            weight=0.1, k=5, gate=gate))

GRID2: list[Variant] = []
for words in ("rare", "names"):
    for terms in (2, 4, 6):
        for max_df in (0.02, 0.05, 0.1):
            for k, weight in ((3, 0.2), (3, 0.3), (3, 0.5)):
                GRID2.append(Variant(f"{words} t{terms} df{max_df} k{k} w{weight}", words, 1,
                                     terms, k=k, weight=weight, max_df=max_df))

GRID3: list[Variant] = []
for hits in (1, 2, 3):
    for terms in (4, 8):
        for weight in (0.1, 0.3, 0.5):
            GRID3.append(Variant(f"session h{hits} t{terms} w{weight}", "rare", hits, terms,
                                 fuse="session", weight=weight))

GRID4: list[Variant] = []
for weight in (0.3, 0.5, 1.0):
    GRID4.append(Variant(f"bridge rare t4 k3 w{weight}", "rare", 1, 4, k=3, weight=weight,
                         gate="bridge"))
    GRID4.append(Variant(f"bridge names t4 k3 w{weight}", "names", 1, 4, k=3, weight=weight,
                         gate="bridge"))
for slots in (1, 2):
    GRID4.append(Variant(f"bridge rare t4 slots{slots}", "rare", 1, 4, fuse="slots", slots=slots,
                         gate="bridge"))

#: The best of each kind on the tuning halves (conversational R@5 up, the first set not down;
#: the best conversational MRR without a loss of R@5; the best gated one).
CHOSEN = [Variant("rare t4 df0.05 k3 w0.3", "rare", 1, 4, k=3, weight=0.3),
          Variant("rare h3 boost k1 w0.05", "rare", 3, 4, fuse="boost", weight=0.05, k=1),
          Variant("bridge rare t4 k3 w1.0", "rare", 1, 4, k=3, weight=1.0, gate="bridge")]
GRIDS = {"VARIANTS": VARIANTS, "GRID2": GRID2, "GRID3": GRID3, "GRID4": GRID4}


if __name__ == "__main__":
    sys.exit(main())
