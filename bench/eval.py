"""Retrieval evaluation: `python bench/eval.py` (see bench/eval/README.md for the set).

Builds the corpus under a fake $HOME (bench/results/eval/<key>/, reused while the data, the
builder and the index settings are unchanged), runs the real daemon on it as a subprocess,
imports the API entries, waits until everything is indexed and embedded, then asks every query
through the client and prints, per query type: R@1, R@5, R@10, MRR, nDCG@10; the match flag's
precision and recall (per hit in the top 10) and the exit-code view (answerable queries that
matched, no-answer queries that did not); search latency through the client. The figures go
to bench/results/eval/last.json, and the previous last.json is printed beside them.

    python bench/eval.py                          # the configured defaults
    python bench/eval.py --set search.keyword_weight=2 --set search.vector_weight=1
    python bench/eval.py --variant kw=search.vector_weight=0 --variant vec=search.keyword_weight=0
    python bench/eval.py --index embed.max_tokens=128    # index settings: a separate build
    python bench/eval.py --filler joined          # filler as long as the items: bench/eval/README.md
    python bench/eval.py --half held-out          # only the held-out half (README.md, "Halves")

Every table shows both halves apart: tuning (what the ranking model is fitted on, by
bench/ranking_fit.py over both evaluation sets, and what anyone tuning search may look at) and
held-out (what a change is judged on).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from datetime import date, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
EVAL = ROOT / "bench" / "eval"
RESULTS = ROOT / "bench" / "results" / "eval"
sys.path.insert(0, str(EVAL))
sys.path.insert(0, str(ROOT / "client"))

from build import FILLER_VARIANTS, Sizes, build  # noqa: E402
from dataset import load  # noqa: E402
from memoryd_client import Client  # noqa: E402

TOP = 10
BUILD_VERSION = 4  # bump when build.py changes what it writes
TYPES = ("lexical", "paraphrase", "temporal", "multi-hop")


# -- the corpus and the daemon ----------------------------------------------------------------


def corpus_key(today: date, seed: int, index_settings: dict[str, str],
               filler: str = "as-written") -> str:
    digest = hashlib.sha256()
    for path in sorted(EVAL.glob("*/*.toml")) + [EVAL / "build.py", EVAL / "dataset.py"]:
        digest.update(path.name.encode() + path.read_bytes())
    model = ROOT / "memoryd" / "data" / "model.onnx"  # vectors depend on the model
    if filler != "as-written":  # the set as written keeps the key it had without the option
        digest.update(filler.encode())
    digest.update(json.dumps([BUILD_VERSION, today.isoformat(), seed, index_settings,
                              model.stat().st_size if model.exists() else None],
                             sort_keys=True).encode())
    return digest.hexdigest()[:16]


def toml_value(raw: str) -> str:
    """A --set value as TOML: numbers and booleans as they are, anything else quoted."""
    try:
        float(raw)
        return raw
    except ValueError:
        return raw if raw in ("true", "false") else json.dumps(raw)


def write_config(state: Path, home: Path, settings: dict[str, str]) -> None:
    sections: dict[str, list[str]] = defaultdict(list)
    roots = ", ".join(json.dumps(str(home / "src" / p)) for p in ("shop", "atlas", "infra"))
    sections["watch"].append(f"project_roots = [{roots}]")
    for name, value in settings.items():
        section, key = name.split(".", 1)
        sections[section].append(f"{key} = {toml_value(value)}")
    lines = []
    for section, values in sections.items():
        lines += [f"[{section}]", *values, ""]
    lines += ["[[sources]]", 'name = "assistant-chats"', 'path = "~/chats/assistant/*.jsonl"',
              'kind = "transcript"', 'format = "generic"', 'agent = "assistant"', ""]
    (state / "config.toml").write_text("\n".join(lines), "utf-8")


class Daemon:
    def __init__(self, state: Path, home: Path) -> None:
        self.state, self.home = state, home
        env = {**os.environ, "MEMORYD_HOME": str(state), "HOME": str(home)}
        env.pop("MEMORYD_SOCKET", None)
        self.log = (state / "daemon.log").open("ab")
        self.process = subprocess.Popen([sys.executable, "-m", "memoryd", "serve"], cwd=ROOT,
                                        env=env, stdout=self.log, stderr=subprocess.STDOUT)
        socket = state / "memoryd.sock"
        deadline = time.monotonic() + 120
        while not socket.exists():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"the daemon did not start; see {state / 'daemon.log'}")
            time.sleep(0.05)
        self.client = Client(socket, timeout_s=600)

    def wait_indexed(self) -> dict[str, Any]:
        """Until the scan queue is empty, every entry has its vector (a long one's refined:
        the run over its text, not its sentences' mean) and the count is stable."""
        last, stable, started = None, 0, time.monotonic()
        while True:
            status = self.client.status()
            ingest = status["ingest"]
            total = sum(status["entries"].values())
            busy = ingest["queue"] or ingest["scanning"] or status["model"] is None \
                or status["backlog"] or status["lexicon"]["entries_behind"] \
                or status.get("refining")
            stable = stable + 1 if not busy and total == last else 0
            if stable >= 3:
                return status
            if time.monotonic() - started > 5:
                print(f"\r  indexing: {total} entries, backlog {status['backlog']}, "
                      f"queue {ingest['queue']}   ", end="", file=sys.stderr, flush=True)
            last = total
            time.sleep(1)

    def stop(self) -> None:
        self.client.close()
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(timeout=120)
        self.log.close()


def prepare(args: argparse.Namespace, index_settings: dict[str, str]) -> tuple[Path, list[dict[str, Any]]]:
    """The built corpus directory (reused when its key matches) and its queries."""
    data = load()
    if data.problems:
        raise SystemExit("the evaluation set has problems; run bench/eval/check.py")
    today = date.fromisoformat(args.today) if args.today else date.today()
    key = corpus_key(today, args.seed, index_settings, args.filler)
    directory = RESULTS / "corpus" / key
    if args.rebuild and directory.exists():
        shutil.rmtree(directory)
    meta = directory / "corpus.json"
    if not meta.exists():
        if directory.exists():
            shutil.rmtree(directory)
        started = time.monotonic()
        corpus = build(data, directory, today, args.seed, Sizes(filler=args.filler))
        state = directory / "state"
        state.mkdir(parents=True)
        write_config(state, corpus.home, index_settings)
        daemon = Daemon(state, corpus.home)
        try:
            for start in range(0, len(corpus.imports), 500):
                daemon.client.remember_many([{**p, "force": True}
                                             for p in corpus.imports[start:start + 500]])
            status = daemon.wait_indexed()
        finally:
            daemon.stop()
        print(f"\rbuilt {directory.name}: {sum(status['entries'].values())} entries "
              f"in {time.monotonic() - started:.0f} s", file=sys.stderr)
        meta.write_text(json.dumps({"today": today.isoformat(), "queries": corpus.queries,
                                    "index_settings": index_settings}), "utf-8")
    return directory, json.loads(meta.read_text("utf-8"))["queries"]


def relevance(state: Path, queries: list[dict[str, Any]]) -> dict[str, dict[str, str]]:
    """span → {uid: grade} from the index itself (read-only)."""
    import apsw

    db = apsw.Connection(f"file:{state / 'memoryd.db'}?mode=ro", flags=apsw.SQLITE_OPEN_URI
                         | apsw.SQLITE_OPEN_READONLY)
    spans = {a["span"] for q in queries for a in q["answers"]}
    found: dict[str, dict[str, str]] = {}
    for span in spans:
        rows = db.execute("SELECT uid FROM entries WHERE instr(text, ?) > 0 AND status='active'",
                          (span,)).fetchall()
        found[span] = {uid: span for (uid,) in rows}
    db.close()
    return found


# -- measuring --------------------------------------------------------------------------------


HALVES = ("tuning", "held-out")


def half(query: dict[str, Any]) -> str:
    """The tuning or the held-out half, by a hash of the answer item's id (all queries of one
    item in one half; a no-answer query by its text): fixed, README.md "Halves"."""
    key = query["answers"][0]["item"] if query["answers"] else query["q"]
    return "tuning" if int(hashlib.sha256(key.encode()).hexdigest(), 16) % 2 == 0 else "held-out"


def run_queries(client: Client, queries: list[dict[str, Any]], span_uids: dict[str, dict[str, str]],
                now: float, limit: int = TOP) -> list[dict[str, Any]]:
    out = []
    for query in queries:
        started = time.perf_counter()
        result = client.search(query["q"], agents=query["agents"], limit=limit, now=now)
        elapsed = time.perf_counter() - started
        hits = result["hits"]
        answer_of = {}  # uid → answer item id
        for answer in query["answers"]:
            for uid in span_uids.get(answer["span"], {}):
                answer_of.setdefault(uid, answer["item"])
        out.append({
            "id": query["id"], "type": query["type"], "q": query["q"], "half": half(query),
            "answers": [a["item"] for a in query["answers"]],
            "ranked": [answer_of.get(h["id"]) for h in hits],
            "match": [bool(h["match"]) for h in hits],
            "relevance": [h["score"]["relevance"] for h in hits],
            "evidence": [h["evidence"] for h in hits] if limit > TOP else None,
            "chars": [len(h["text"]) for h in hits],
            "ids": [h["id"] for h in hits],
            "kinds": [h["kind"] + ("/chunk" if h["via"] == "watch" and h["id"].startswith("t")
                                   else "") for h in hits],
            "background": result.get("background"),
            "ms": elapsed * 1000,
        })
    return out


def metrics(rows: list[dict[str, Any]]) -> dict[str, Any]:
    def for_rows(selected: list[dict[str, Any]]) -> dict[str, float]:
        if not selected:
            return {}
        figures: dict[str, list[float]] = defaultdict(list)
        for row in selected:
            wanted = set(row["answers"])
            for k in (1, 5, 10):
                found = {a for a in row["ranked"][:k] if a}
                figures[f"R@{k}"].append(len(found & wanted) / len(wanted))
            first = next((i for i, a in enumerate(row["ranked"][:TOP]) if a), None)
            figures["MRR"].append(1 / (first + 1) if first is not None else 0.0)
            seen: set[str] = set()
            dcg = 0.0
            for rank, answer in enumerate(row["ranked"][:TOP]):
                if answer and answer not in seen:
                    seen.add(answer)
                    dcg += 3 / math.log2(rank + 2)
            ideal = sum(3 / math.log2(r + 2) for r in range(min(len(wanted), TOP)))
            figures["nDCG@10"].append(dcg / ideal)
        return {name: statistics.fmean(values) for name, values in figures.items()} | \
            {"n": len(selected)}

    answerable = [r for r in rows if r["answers"]]
    result: dict[str, Any] = {"overall": for_rows(answerable)}
    for kind in TYPES:
        result[kind] = for_rows([r for r in answerable if r["type"] == kind])
    for name in HALVES:
        result[name] = for_rows([r for r in answerable if r["half"] == name])
        for kind in TYPES:
            result[f"{name}/{kind}"] = for_rows([r for r in answerable
                                                 if r["half"] == name and r["type"] == kind])
    result["match"] = match_figures(rows)
    for name, key in (("tuning", "match_tuning"), ("held-out", "match_held_out")):
        if any(r["half"] == name for r in rows):
            result[key] = match_figures([r for r in rows if r["half"] == name])
    latencies = sorted(r["ms"] for r in rows)
    result["latency_ms"] = {"p50": latencies[len(latencies) // 2],
                            "p99": latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]}
    return result


def match_figures(rows: list[dict[str, Any]]) -> dict[str, float]:
    """The top hit's match flag against its correctness; per-hit precision; exit codes."""
    flagged = correct = both = hit_flags = hit_right = 0
    no_answer = [r for r in rows if not r["answers"]]
    answerable = [r for r in rows if r["answers"]]
    for row in rows:
        if not row["ranked"]:
            continue
        top_flag, top_right = row["match"][0], bool(row["ranked"][0])
        flagged += top_flag
        correct += top_right
        both += top_flag and top_right
        for answer, flag in zip(row["ranked"][:TOP], row["match"][:TOP]):
            hit_flags += flag
            hit_right += bool(flag and answer)
    return {
        "precision": both / flagged if flagged else 0.0,
        "recall": both / correct if correct else 0.0,
        "hit_precision": hit_right / hit_flags if hit_flags else 0.0,
        "answerable_exit0": sum(1 for r in answerable if any(r["match"][:TOP])) / len(answerable)
        if answerable else 0.0,
        "no_answer_exit1": sum(1 for r in no_answer if not any(r["match"][:TOP])) / len(no_answer)
        if no_answer else 0.0,
        "no_answer_n": len(no_answer),
    }


def show(name: str, figures: dict[str, Any], previous: dict[str, Any] | None) -> None:
    def delta(path: list[str], value: float) -> str:
        old: Any = previous
        for part in path:
            old = old.get(part) if isinstance(old, dict) else None
        if not isinstance(old, (int, float)) or old == value:
            return ""
        return f" ({value - old:+.3f})"

    print(f"\n== {name}")
    print(f"{'type':<20} {'n':>4} " + " ".join(f"{m:>14}" for m in ("R@1", "R@5", "R@10", "MRR",
                                                                    "nDCG@10")))
    for kind in ("overall", *TYPES, *HALVES, *(f"{h}/{t}" for h in HALVES for t in TYPES)):
        row = figures.get(kind) or {}
        if not row:
            continue
        cells = " ".join(f"{row[m]:>6.3f}{delta([kind, m], row[m]):>8}" for m in
                         ("R@1", "R@5", "R@10", "MRR", "nDCG@10"))
        print(f"{kind:<20} {row['n']:>4} {cells}")
    for label, key in (("match", "match"), ("tuning", "match_tuning"),
                       ("held-out", "match_held_out")):
        m = figures.get(key)
        if not m:
            continue
        print(f"{label}: top hit flagged → correct (precision) {m['precision']:.3f}"
              f"{delta([key, 'precision'], m['precision'])}, correct → flagged (recall) "
              f"{m['recall']:.3f}{delta([key, 'recall'], m['recall'])}; every flagged hit "
              f"{m['hit_precision']:.3f}; answerable → exit 0 {m['answerable_exit0']:.3f}; "
              f"no-answer → exit 1 {m['no_answer_exit1']:.3f} of {m['no_answer_n']}")
    latency = figures["latency_ms"]
    print(f"search through the client: p50 {latency['p50']:.1f} ms, p99 {latency['p99']:.1f} ms")


def parse_settings(pairs: list[str]) -> dict[str, str]:
    settings = {}
    for pair in pairs:
        name, _, value = pair.partition("=")
        if "." not in name or not value:
            raise SystemExit(f"--set/--index/--variant need section.key=value, got {pair!r}")
        settings[name] = value
    return settings


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--today", help="the corpus's today, YYYY-MM-DD (default: today)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                        help="a search setting for this run (config.toml, applied by reload)")
    parser.add_argument("--variant", action="append", default=[], metavar="NAME=S.K=V[,S.K=V]",
                        help="also run a named variant of the search settings")
    parser.add_argument("--index", action="append", default=[], metavar="SECTION.KEY=VALUE",
                        help="an indexing setting (chunking, …): builds a separate corpus")
    parser.add_argument("--rebuild", action="store_true", help="rebuild the corpus")
    parser.add_argument("--filler", choices=FILLER_VARIANTS, default="as-written",
                        help="the filler as written; joined two by two (as long as the items); "
                             "or half of it (the control for joined): bench/eval/README.md")
    parser.add_argument("--dump", metavar="FILE", help="write every query's ranked hits here")
    parser.add_argument("--half", choices=("tuning", "held-out", "both"), default="both",
                        help="which half's queries to ask (default both, printed apart)")
    args = parser.parse_args()

    index_settings = parse_settings(args.index)
    directory, queries = prepare(args, index_settings)
    state, home = directory / "state", directory / "home"
    today = date.fromisoformat(json.loads((directory / "corpus.json").read_text())["today"])
    now = datetime.combine(today, datetime.min.time()).timestamp() + 12 * 3600
    span_uids = relevance(state, queries)
    missing = sorted({a["item"] for q in queries for a in q["answers"] if not span_uids[a["span"]]})
    if missing:
        print(f"warning: {len(missing)} items not found in the index: {', '.join(missing[:10])}",
              file=sys.stderr)
    asked = queries if args.half == "both" else [q for q in queries if half(q) == args.half]
    variants = [("default", parse_settings(args.set))]
    for spec in args.variant:
        name, _, rest = spec.partition("=")
        variants.append((name, {**parse_settings(args.set), **parse_settings(rest.split(","))}))
    previous_path = RESULTS / "last.json"
    previous = json.loads(previous_path.read_text()) if previous_path.exists() else {}
    daemon = Daemon(state, home)
    results: dict[str, Any] = {"when": time.strftime("%Y-%m-%d %H:%M"), "corpus": directory.name,
                               "index_settings": index_settings, "half": args.half,
                               "variants": {}}
    dumps = {}
    try:
        status = daemon.wait_indexed()
        results["entries"] = sum(status["entries"].values())
        for name, settings in variants:
            write_config(state, home, {**index_settings, **settings})
            daemon.client.reload()
            rows = run_queries(daemon.client, asked, span_uids, now)
            figures = metrics(rows)
            figures["settings"] = settings
            results["variants"][name] = figures
            dumps[name] = rows
            show(f"{name} {settings or ''} ({results['entries']} entries, {len(asked)} queries"
                 f"{'' if args.half == 'both' else ', ' + args.half + ' half'})",
                 figures, previous.get("variants", {}).get(name)
                 if previous.get("half", "both") == args.half else None)
    finally:
        write_config(state, home, index_settings)
        daemon.stop()
    RESULTS.mkdir(parents=True, exist_ok=True)
    previous_path.write_text(json.dumps(results, indent=1))
    (RESULTS / f"eval-{time.strftime('%Y%m%d-%H%M%S')}.json").write_text(json.dumps(results, indent=1))
    if args.dump:
        Path(args.dump).write_text(json.dumps(dumps, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
