"""Hook latency: the whole `memory hook` process, as an agent runs it.

    python bench/bench_hooks.py [--entries 10000] [--runs 40]

Fills a fresh store with N entries (facts with keys, lessons, feedback, notes) through the
client, then times:
  - SessionStart hook, whole process, daemon up   (budget p50 <= 50 ms)
  - UserPromptSubmit hook, whole process, daemon up
  - SessionStart hook, whole process, daemon down (budget p50 <= 30 ms; the event is spooled)
  - `context` build time inside the daemon (round trip of the context method)
and prints a table; JSON goes to bench/results/hooks.json.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from memoryd_client import Client, DaemonUnreachableError

HERE = Path(__file__).resolve().parent
MEMORY = str(Path(sys.executable).parent / "memory")
TOPICS = ["git", "testing", "deploy", "style", "tooling", "review", "docs", "security", "ci", "db"]
SUBJECTS = ["the payment service", "the CLI", "release notes", "the staging cluster", "commit messages",
            "the test suite", "database migrations", "code review", "the API client", "feature flags"]
RULES = ["must be reviewed by two people", "should stay under 72 characters", "run before every merge",
         "need a changelog entry", "are frozen on Fridays", "use the shared fixtures",
         "are written in the imperative", "must not log secrets", "go through the release train"]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def fill(client: Client, n: int, seed: int = 3) -> None:
    rng = random.Random(seed)
    batch = []
    for i in range(n):
        topic = rng.choice(TOPICS)
        text = f"{rng.choice(SUBJECTS)} {rng.choice(RULES)} (note {i}, {topic})"
        kind = rng.choice(["note", "note", "fact", "lesson", "feedback"])
        item = {"agent": "claude-code", "category": topic, "text": text, "kind": kind, "force": True}
        if kind == "fact":
            item["key"] = f"{rng.choice(['pref', 'project', 'tool', 'user'])}.{topic}_{i}"
        if kind == "lesson":
            item["polarity"] = rng.choice(["negative", "positive"])
        batch.append(item)
        if len(batch) == 500:
            client.remember_many(batch)
            batch = []
    if batch:
        client.remember_many(batch)


def time_hook(event: str, payload: dict, runs: int, env: dict) -> tuple[list[float], str]:
    data = json.dumps(payload)
    times, output = [], ""
    for _ in range(runs):
        started = time.perf_counter()
        result = subprocess.run([MEMORY, "hook", "claude-code", event], input=data,
                                capture_output=True, text=True, env=env)
        times.append((time.perf_counter() - started) * 1000)
        assert result.returncode == 0, result.stderr
        output = result.stdout
    return times, output


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=40)
    args = parser.parse_args()

    home = Path(tempfile.mkdtemp(prefix="mdh-", dir="/tmp"))
    env = {**os.environ, "MEMORYD_HOME": str(home), "HOME": str(home / "user")}
    (home / "user").mkdir()
    log = (home / "daemon.log").open("w")
    daemon = subprocess.Popen([sys.executable, "-m", "memoryd", "serve"], env=env, stderr=log)
    os.environ.update(MEMORYD_HOME=str(home), HOME=str(home / "user"))
    rows = []
    try:
        # the terminal channel: the feedback entries stand in for what a person typed
        with Client(home / "memoryd.sock", timeout_s=300, channel="terminal") as client:
            deadline = time.monotonic() + 120
            while True:
                try:
                    status = client.status()
                    if status["model"] and status["vector_index"]["ready"]:
                        break
                except DaemonUnreachableError:
                    client.close()
                if time.monotonic() > deadline:
                    raise SystemExit("daemon did not start")
                time.sleep(0.1)
            started = time.perf_counter()
            fill(client, args.entries)
            rows.append(("fill", f"{args.entries} entries in {time.perf_counter() - started:.1f} s", "", None))
            cwd = str(home / "user")
            payload = {"session_id": "bench-session", "transcript_path": "/tmp/none.jsonl",
                       "cwd": cwd, "hook_event_name": "SessionStart", "source": "startup"}
            context_ms = []
            for _ in range(args.runs):
                t = time.perf_counter()
                block = client.context("claude-code", cwd=cwd)
                context_ms.append((time.perf_counter() - t) * 1000)
            rows.append(("context build (round trip), p50", f"{percentile(context_ms, 0.5):.1f} ms",
                         "", None))
            rows.append(("context block size", f"{block['chars']} chars", "<= 8000", block["chars"] <= 8000))
        up, out = time_hook("SessionStart", payload, args.runs, env)
        assert json.loads(out)["hookSpecificOutput"]["additionalContext"]
        rows.append(("SessionStart hook, daemon up, p50", f"{percentile(up, 0.5):.1f} ms", "<= 50 ms",
                     percentile(up, 0.5) <= 50))
        rows.append(("SessionStart hook, daemon up, p95", f"{percentile(up, 0.95):.1f} ms", "", None))
        prompt = {**payload, "hook_event_name": "UserPromptSubmit",
                  "prompt": "how do we handle database migrations on the staging cluster?"}
        ups, _ = time_hook("UserPromptSubmit", prompt, args.runs, env)
        rows.append(("UserPromptSubmit hook, daemon up, p50", f"{percentile(ups, 0.5):.1f} ms", "", None))
    finally:
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(timeout=60)
        log.close()
    down, out = time_hook("SessionStart", payload, args.runs, env)
    assert out == ""
    rows.append(("SessionStart hook, daemon down, p50", f"{percentile(down, 0.5):.1f} ms", "<= 30 ms",
                 percentile(down, 0.5) <= 30))
    bare = []
    for _ in range(args.runs):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], env=env)
        bare.append((time.perf_counter() - t) * 1000)
    rows.append(("bare `python -c pass`, p50 (for scale)", f"{percentile(bare, 0.5):.1f} ms", "", None))

    width = max(len(r[0]) for r in rows)
    print(f"{'metric':<{width}}  {'value':>28}  {'budget':>10}  ok")
    for name, value, budget, ok in rows:
        mark = "" if ok is None else ("ok" if ok else "OVER")
        print(f"{name:<{width}}  {value:>28}  {budget:>10}  {mark}")
    out_dir = HERE / "results"
    out_dir.mkdir(exist_ok=True)
    (out_dir / "hooks.json").write_text(json.dumps(
        {"entries": args.entries, "runs": args.runs,
         "rows": [{"metric": r[0], "value": r[1], "budget": r[2], "ok": r[3]} for r in rows],
         "raw_ms": {"up": up, "prompt": ups, "down": down, "context": context_ms}}, indent=2))
    shutil.rmtree(home, ignore_errors=True)
    return 0 if all(r[3] in (None, True) for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
