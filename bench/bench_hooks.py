"""Hook latency: the whole `memory hook` process, as an agent runs it.

    python bench/bench_hooks.py [--entries 10000] [--runs 40] [--default-paths] [--memory PATH]

Fills a fresh store with N entries (facts with keys, lessons, feedback, notes) through the
client, waits until the daemon's background work on them is done (their sentences' vectors,
the lexicon's words: a write is acknowledged before it), then times, each hook run interleaved with a bare start of the same interpreter that
reads the same payload (one of each per round, two rounds of warm-up not counted, so that load
on the machine hits both alike):
  - SessionStart hook, whole process, daemon up   (budget p50 <= 50 ms)
  - UserPromptSubmit hook, whole process, daemon up
  - SessionStart hook, whole process, daemon down (budget p50 <= 30 ms; the event is spooled)
  - PreToolUse hook, whole process, daemon up: a Bash call a stored lesson forbids
    (`pip install requests` against "Use uv, not pip": the lesson comes back) and one no
    lesson forbids (`uv add requests`: nothing)   (budget p50 <= 30 ms each)
  - `context` build time inside the daemon (round trip of the context method)
and prints a table: p50 wall clock and p50 CPU of the process itself (user + system, which
load disturbs less), each as a ratio to the bare start, how many modules each process
imports (`python -X importtime`), and the machine's load average when the bench started and
ended (on a loaded machine a bare start alone can take longer than a budget: read the ratios). JSON goes to bench/results/hooks.json.

The hooks run without PYTHONDONTWRITEBYTECODE (an installed client has its .pyc files; without
them every start compiled the client again, ~20 ms of CPU), and with another --memory without
this tree on PYTHONPATH (the daemon keeps it).

--default-paths runs as a user's default installation does: no MEMORYD_HOME, the state in
~/.local/share/memoryd and the socket in $XDG_RUNTIME_DIR/memoryd (HOME and XDG_RUNTIME_DIR in
the bench's temporary directory), where finding them is the hook's own work. --memory names the
`memory` script to time (default: the one beside this interpreter); a non-editable install in a
venv of its own is what users run (an editable install makes every start in its venv,
the bare one too, import pathlib and more).
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

from bench_store import planner_statistics, settle
from memoryd_client import Client, DaemonUnreachableError

HERE = Path(__file__).resolve().parent
MEMORY = str(Path(sys.executable).parent / "memory")
TOPICS = ["git", "testing", "deploy", "style", "tooling", "review", "docs", "security", "ci", "db"]
SUBJECTS = ["the payment service", "the CLI", "release notes", "the staging cluster", "commit messages",
            "the test suite", "database migrations", "code review", "the API client", "feature flags"]
RULES = ["must be reviewed by two people", "should stay under 72 characters", "run before every merge",
         "need a changelog entry", "are frozen on Fridays", "use the shared fixtures",
         "are written in the imperative", "must not log secrets", "go through the release train"]


#: Lessons the PreToolUse rows match against (besides the fill's, which forbid nothing).
LESSONS = ["Use uv, not pip", "Never edit files under migrations/ by hand",
           "Prefer rg over grep", "Don't run `git push --force` on main"]


def client_hook(socket: Path, payload: dict) -> dict:
    """The daemon's answer to a hook event, over a connection of the library."""
    with Client(socket, timeout_s=30) as client:
        return client.call("hook", {"harness": "claude-code", "event": payload["hook_event_name"],
                                    "raw": json.dumps(payload)})


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


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


def timed(command: list[str], data: bytes, env: dict) -> tuple[float, float, bytes]:
    """(wall ms, CPU ms of the process itself: user + system, its stdout)."""
    started = time.perf_counter()
    process = subprocess.Popen(command, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL)
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(data)
    process.stdin.close()
    output = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    wall = (time.perf_counter() - started) * 1000
    process.returncode = os.waitstatus_to_exitcode(status)
    assert process.returncode == 0, command
    return wall, (usage.ru_utime + usage.ru_stime) * 1000, output


def time_hook(memory: str, event: str, payload: dict, runs: int,
              env: dict) -> tuple[dict[str, list[float]], str]:
    """The hook and a bare start of its interpreter reading the payload, interleaved; their
    wall and CPU ms."""
    [(times, output)] = time_hooks(memory, event, [payload], runs, env)
    return times, output


def time_hooks(memory: str, event: str, payloads: list[dict], runs: int,
               env: dict) -> list[tuple[dict[str, list[float]], str]]:
    """For each payload, the hook and a bare start of its interpreter reading the payload,
    all interleaved (a round runs each once); their wall and CPU ms, and the hook's output."""
    bare = [str(Path(memory).parent / "python"), "-c", "import sys; sys.stdin.buffer.read()"]
    found: list[tuple[dict[str, list[float]], str]] = []
    for _ in payloads:
        found.append(({"wall": [], "cpu": [], "bare_wall": [], "bare_cpu": []}, ""))
    for number in range(runs + 2):
        for at, payload in enumerate(payloads):
            data = json.dumps(payload).encode()
            wall, cpu, output = timed([memory, "hook", "claude-code", event], data, env)
            bare_wall, bare_cpu, _ = timed(bare, data, env)
            times = found[at][0]
            found[at] = (times, output.decode())
            if number >= 2:  # warm-up
                for name, value in (("wall", wall), ("cpu", cpu), ("bare_wall", bare_wall),
                                    ("bare_cpu", bare_cpu)):
                    times[name].append(value)
    return found


def modules(python: str, command: list[str], data: bytes, env: dict) -> int:
    """How many modules a process imports (python -X importtime)."""
    stderr = subprocess.run([python, "-X", "importtime", *command], input=data, env=env,
                            capture_output=True, check=False).stderr.decode()
    return sum(1 for line in stderr.splitlines()
               if line.startswith("import time:") and "self [us]" not in line)


def hook_rows(name: str, times: dict[str, list[float]], budget_ms: float | None,
              count: int) -> list[tuple[str, str, str, bool | None]]:
    wall, cpu = percentile(times["wall"], 0.5), percentile(times["cpu"], 0.5)
    bare_wall, bare_cpu = percentile(times["bare_wall"], 0.5), percentile(times["bare_cpu"], 0.5)
    return [
        (f"{name}, p50", f"{wall:.1f} ms ({wall / bare_wall:.2f}x bare {bare_wall:.1f})",
         f"<= {budget_ms:g} ms" if budget_ms else "", wall <= budget_ms if budget_ms else None),
        (f"{name}, p95", f"{percentile(times['wall'], 0.95):.1f} ms", "", None),
        (f"{name}, CPU p50", f"{cpu:.1f} ms ({cpu / bare_cpu:.2f}x bare {bare_cpu:.1f})", "",
         None),
        (f"{name}, modules imported", f"{count}", "", None),
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--default-paths", action="store_true",
                        help="no MEMORYD_HOME: the user's default state dir and runtime dir")
    parser.add_argument("--memory", default=MEMORY, help="the `memory` script to time")
    args = parser.parse_args()
    memory = args.memory
    python = str(Path(memory).parent / "python")
    load_before = os.getloadavg()

    home = Path(tempfile.mkdtemp(prefix="mdh-", dir="/tmp"))
    (home / "user").mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORYD_", "XDG_"))}
    env["HOME"] = str(home / "user")
    if args.default_paths:
        (home / "run").mkdir(mode=0o700)
        env["XDG_RUNTIME_DIR"] = str(home / "run")
        socket = home / "run" / "memoryd" / "memoryd.sock"
    else:
        env["MEMORYD_HOME"] = str(home)
        socket = home / "memoryd.sock"
    log = (home / "daemon.log").open("w")
    daemon = subprocess.Popen([sys.executable, "-m", "memoryd", "serve"], env=env, stderr=log)
    # the hooks run as installed: with their .pyc files (PYTHONDONTWRITEBYTECODE made every
    # start compile the client again, ~20 ms of CPU), and another --memory with its own
    # modules, not this tree's on PYTHONPATH
    skipped = ("PYTHONDONTWRITEBYTECODE",) + (("PYTHONPATH",) if memory != MEMORY else ())
    hook_env = {k: v for k, v in env.items() if k not in skipped}
    os.environ.clear()
    os.environ.update(env)
    rows = []
    try:
        # the terminal channel: the feedback entries stand in for what a person typed
        with Client(socket, timeout_s=300, channel="terminal") as client:
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
            for text in LESSONS:  # what the PreToolUse hook matches calls against
                client.remember("claude-code", "tooling", text, kind="lesson", is_global=True)
            rows.append(("fill", f"{args.entries} entries in {time.perf_counter() - started:.1f} s", "", None))
            # the writes are acknowledged before their sentences and words are embedded: the
            # hooks are timed once that is done, not beside it (at 10,000 entries it doubled
            # the SessionStart hook's time)
            settle(client)
            planner_statistics(client)
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
        data = json.dumps(payload).encode()
        up_modules = modules(python, ["-m", "memoryd_client", "hook", "claude-code",
                                      "SessionStart"], data, hook_env)
        up, out = time_hook(memory, "SessionStart", payload, args.runs, hook_env)
        assert json.loads(out)["hookSpecificOutput"]["additionalContext"]
        rows += hook_rows("SessionStart hook, daemon up", up, 50, up_modules)
        prompt = {**payload, "hook_event_name": "UserPromptSubmit",
                  "prompt": "how do we handle database migrations on the staging cluster?"}
        ups, _ = time_hook(memory, "UserPromptSubmit", prompt, args.runs, hook_env)
        rows += hook_rows("UserPromptSubmit hook, daemon up", ups, None, up_modules)[:3]
        tool = {**payload, "hook_event_name": "PreToolUse", "tool_name": "Bash",
                "tool_use_id": "toolu_01"}
        (hit, hit_out), (miss, miss_out) = time_hooks(memory, "PreToolUse", [
            {**tool, "tool_input": {"command": "pip install requests"}},
            {**tool, "tool_input": {"command": "uv add requests"}}], args.runs, hook_env)
        assert "Use uv, not pip" in json.loads(hit_out)["hookSpecificOutput"]["additionalContext"]
        assert miss_out == ""
        rows += hook_rows("PreToolUse hook, a lesson matches, daemon up", hit, 30, up_modules)[:3]
        rows += hook_rows("PreToolUse hook, no lesson matches, daemon up", miss, 30,
                          up_modules)[:3]
        tool_ms = []
        for _ in range(args.runs):
            t = time.perf_counter()
            client_reply = client_hook(socket, {**tool,
                                                "tool_input": {"command": "pip install requests"}})
            tool_ms.append((time.perf_counter() - t) * 1000)
        assert client_reply["context"]
        rows.append(("PreToolUse inside the daemon (round trip), p50",
                     f"{percentile(tool_ms, 0.5):.2f} ms", "", None))
        # an agent's pasted blob (a long word is read as its beginning: memoryd.sessions.shell)
        blob = {**tool, "tool_input": {"command": "echo '" + "QUJD" * 750_000
                                       + "' | base64 -d > out.bin && pip install requests"}}
        blob_ms = []
        for _ in range(max(3, args.runs // 5)):
            t = time.perf_counter()
            client_reply = client_hook(socket, blob)
            blob_ms.append((time.perf_counter() - t) * 1000)
        assert client_reply["context"]
        rows.append(("PreToolUse inside the daemon, a 3 MB command (round trip), p50",
                     f"{percentile(blob_ms, 0.5):.2f} ms", "", None))
    finally:
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(timeout=60)
        log.close()
    down_modules = modules(python, ["-m", "memoryd_client", "hook", "claude-code",
                                    "SessionStart"], json.dumps(payload).encode(), hook_env)
    down, out = time_hook(memory, "SessionStart", payload, args.runs, hook_env)
    assert out == ""
    rows += hook_rows("SessionStart hook, daemon down", down, 30, down_modules)
    # wall times on a loaded machine say more of the load than of the hook: the ratios to
    # the bare start, and the CPU rows, are what to read then
    rows.append((f"load average (1 min; {os.cpu_count()} CPUs), start / end",
                 f"{load_before[0]:.2f} / {os.getloadavg()[0]:.2f}", "", None))

    width = max(len(r[0]) for r in rows)
    print(f"{'metric':<{width}}  {'value':>28}  {'budget':>10}  ok")
    for name, value, budget, ok in rows:
        mark = "" if ok is None else ("ok" if ok else "OVER")
        print(f"{name:<{width}}  {value:>28}  {budget:>10}  {mark}")
    out_dir = HERE / "results"
    out_dir.mkdir(exist_ok=True)
    (out_dir / "hooks.json").write_text(json.dumps(
        {"entries": args.entries, "runs": args.runs, "default_paths": args.default_paths,
         "memory": memory,
         "rows": [{"metric": r[0], "value": r[1], "budget": r[2], "ok": r[3]} for r in rows],
         "raw_ms": {"up": up, "prompt": ups, "down": down, "context": context_ms,
                    "pre_tool_hit": hit, "pre_tool_miss": miss, "pre_tool_daemon": tool_ms,
                    "pre_tool_blob": blob_ms}},
        indent=2))
    shutil.rmtree(home, ignore_errors=True)
    return 0 if all(r[3] in (None, True) for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
