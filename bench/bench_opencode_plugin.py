"""What memoryd's OpenCode plugin costs each tool call, as OpenCode runs it.

    python bench/bench_opencode_plugin.py [--calls 40] [--hard-rules] [--no-lessons]
                                          [--plugin FILE …] [--passes 2]

Starts a daemon in a fresh state dir, remembers a few lessons that forbid something (unless
--no-lessons), installs the plugin (`memory hook install opencode`), and runs it with node
(tests/opencode_driver.mjs, which calls the plugin's hooks as OpenCode does): a session
start, then --calls rounds of four tool calls, each its `tool.execute.before` and
`tool.execute.after`:
  - bash `pip install requests`, which a lesson forbids (the lesson comes after it);
  - bash `ls -la`, which no lesson forbids;
  - an edit under migrations/, which a lesson forbids;
  - a read, which memoryd's lessons are not about.
It prints, per kind of call, the p50 and p95 of the two hooks' time together (what the plugin
adds to the call) and how many `memory` processes such a call starts (counted by a wrapper
script around the command, in runs of their own, so that counting costs the timed runs
nothing; a process started for the session is not counted). --hard-rules turns
`context.hard_rules` on and makes one lesson a person's hard rule. The first two rounds are
warm-up. node must be installed. JSON goes to bench/results/opencode_plugin.json.

--plugin FILE (repeatable) times that plugin file instead of the installed one, with the
installed one's command and environment (e.g. an older version, `git show
OLD:client/memoryd_client/opencode_plugin.js > /tmp/old.js`); with several, they take turns,
--passes times each, against the same daemon, so that load on the machine hits them alike.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from memoryd_client import Client, DaemonUnreachableError

HERE = Path(__file__).resolve().parent
DRIVER = HERE.parent / "tests" / "opencode_driver.mjs"
SESSION = "ses_3f1c9a2e77b0ffe1Q2w3E4r5T6"
LESSONS = ["Use uv, not pip", "Never edit files under migrations/ by hand",
           "Prefer rg over grep"]
HARD_RULE = "Never run `git push --force` on main"
WARM_UP = 2


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def calls(repo: Path, n: int) -> list[tuple[str, str, dict[str, Any]]]:
    """(kind, tool, arguments) of one round."""
    return [
        ("bash a lesson forbids", "bash", {"command": "pip install requests",
                                           "description": "Installs requests"}),
        ("bash no lesson forbids", "bash", {"command": "ls -la", "description": "Lists"}),
        ("edit a lesson forbids", "edit", {
            "filePath": str(repo / "app" / "migrations" / f"000{n % 10}_refunds.py"),
            "oldString": "x = 1", "newString": "x = 2"}),
        ("read", "read", {"filePath": str(repo / "README.md")}),
    ]


def steps(repo: Path, rounds: int) -> tuple[list[dict[str, Any]], list[str]]:
    """The driver's steps, and the kind of call each pair of them is."""
    out: list[dict[str, Any]] = [{"hook": "event", "input": {"event": {
        "type": "session.created", "properties": {"info": {"id": SESSION,
                                                           "directory": str(repo)}}}}}]
    kinds = []
    for n in range(rounds):
        for kind, tool, args in calls(repo, n):
            out += _pair(tool, args, f"call_{len(kinds)}")
            kinds.append(kind)
    return out, kinds


def drive(plugin: Path, repo: Path, script: list[dict[str, Any]],
          env: dict[str, str]) -> list[dict[str, Any]]:
    done = subprocess.run(["node", str(DRIVER), str(plugin), str(repo)],
                          input=json.dumps(script), capture_output=True, text=True,
                          timeout=1800, env=env, check=True)
    results: list[dict[str, Any]] = json.loads(done.stdout)["results"]
    return results


def counting(plugin: Path, log: Path, to: Path) -> Path:
    """The plugin with its command wrapped: each `memory` it starts adds a line to ``log``."""
    text = plugin.read_text()
    line = next(x for x in text.splitlines() if x.endswith("// memoryd:command"))
    command = json.loads(line.split("const COMMAND = ", 1)[1].split(" // memoryd:command")[0])
    wrapper = to.with_suffix(".sh")
    wrapper.write_text(f'#!/bin/sh\necho "$*" >> {log}\nexec {" ".join(command)} "$@"\n')
    wrapper.chmod(0o755)
    to.write_text(text.replace(line, f"const COMMAND = {json.dumps([str(wrapper)])} "
                                     "// memoryd:command"))
    return to


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=40, help="rounds of the four calls")
    parser.add_argument("--hard-rules", action="store_true")
    parser.add_argument("--no-lessons", action="store_true")
    parser.add_argument("--plugin", action="append", type=Path, default=[],
                        help="a plugin file to time instead of the installed one")
    parser.add_argument("--passes", type=int, default=1)
    args = parser.parse_args()
    if shutil.which("node") is None:
        print("node is not installed", file=sys.stderr)
        return 2
    home = Path(tempfile.mkdtemp(prefix="mdo-", dir="/tmp"))
    (home / "user").mkdir()
    repo = home / "shop"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORYD_", "XDG_"))}
    env.update(HOME=str(home / "user"), MEMORYD_HOME=str(home))
    if args.hard_rules:
        env["MEMORYD_CONTEXT_HARD_RULES"] = "1"
    log = (home / "daemon.log").open("w")
    daemon = subprocess.Popen([sys.executable, "-m", "memoryd", "serve"], env=env, stderr=log)
    load_before = os.getloadavg()
    try:
        ready(home / "memoryd.sock", daemon)
        if not args.no_lessons:
            remember_lessons(home / "memoryd.sock", repo, args.hard_rules)
        installed = subprocess.run([sys.executable, "-m", "memoryd_client", "hook", "install",
                                    "opencode"], env=env, capture_output=True, text=True,
                                   check=True)
        plugin = home / "user" / ".config" / "opencode" / "plugins" / "memoryd.js"
        assert plugin.is_file(), installed.stdout
        plugins = [rendered(file, plugin, home / f"plugin{n}.js")
                   for n, file in enumerate(args.plugin)] or [plugin]
        names = [str(file) for file in args.plugin] or ["installed"]
        script, kinds = steps(repo, args.calls + WARM_UP)
        results: dict[Path, list[list[dict[str, Any]]]] = {p: [] for p in plugins}
        for _ in range(args.passes):
            for each in plugins:
                results[each].append(drive(each, repo, script, env))
        runs = {each: memory_runs(each, repo, script[:1], env, home) for each in plugins}
    finally:
        daemon.terminate()
        daemon.wait(timeout=60)
        log.close()
    report = [{"plugin": name, "rows": rows(results[each], kinds, runs[each])}
              for name, each in zip(names, plugins)]
    for item in report:
        print(f"OpenCode plugin ({item['plugin']}), {args.calls} rounds of 4 calls x "
              f"{args.passes}{', hard rules on' if args.hard_rules else ''}"
              f"{', no lessons' if args.no_lessons else ''}")
        print(f"{'call':<26} {'p50 ms':>8} {'p95 ms':>8} {'memory runs':>12} {'lesson':>7}")
        for row in item["rows"]:
            print(f"{row['call']:<26} {row['p50_ms']:>8.1f} {row['p95_ms']:>8.1f} "
                  f"{row['memory_runs']:>12} {'yes' if row['lesson_shown'] else 'no':>7}")
    print(f"load average {load_before[0]:.1f} -> {os.getloadavg()[0]:.1f}")
    out = HERE / "results"
    out.mkdir(exist_ok=True)
    (out / "opencode_plugin.json").write_text(json.dumps(
        {"calls": args.calls, "passes": args.passes, "hard_rules": args.hard_rules,
         "lessons": not args.no_lessons, "load": [load_before[0], os.getloadavg()[0]],
         "plugins": report}, indent=2))
    shutil.rmtree(home, ignore_errors=True)
    return 0


def ready(socket: Path, daemon: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 120
    while True:
        try:
            with Client(socket, timeout_s=30) as client:
                if client.status()["vector_index"]["ready"]:
                    return
        except DaemonUnreachableError:
            pass
        if time.monotonic() > deadline or daemon.poll() is not None:
            raise SystemExit("the daemon did not start")
        time.sleep(0.1)


def remember_lessons(socket: Path, repo: Path, hard_rules: bool) -> None:
    with Client(socket, timeout_s=60) as agent:
        for text in LESSONS:
            agent.remember("opencode", "tooling", text, kind="lesson", cwd=str(repo))
    with Client(socket, timeout_s=60, channel="terminal") as person:
        person.remember("opencode", "git", HARD_RULE, kind="lesson",
                        tags=["hard-rule"] if hard_rules else [])


def memory_runs(plugin: Path, repo: Path, start: list[dict[str, Any]], env: dict[str, str],
                home: Path) -> dict[str, int]:
    """How many `memory` processes each kind of call starts, alone after a session start
    (a process that serves them all was started for the session, and is not counted)."""
    spawned = home / "spawned.log"
    wrapped = counting(plugin, spawned, home / "counting.js")
    found = {}
    for kind, tool, call_args in calls(repo, 0):
        spawned.write_text("")
        assert not any("threw" in r for r in drive(wrapped, repo,
                                                   start + _pair(tool, call_args), env))
        found[kind] = sum(1 for line in spawned.read_text().splitlines()
                          if not line.endswith(("session.created", "--serve")))
    return found


def rows(results: list[list[dict[str, Any]]], kinds: list[str],
         runs: dict[str, int]) -> list[dict[str, Any]]:
    """Per kind of call: its two hooks' time together, p50 and p95 over every pass."""
    per_kind: dict[str, list[float]] = {}
    lessons_seen: dict[str, bool] = {}
    for ran in results:
        for number, kind in enumerate(kinds):
            before, after = ran[1 + 2 * number], ran[2 + 2 * number]
            lessons_seen[kind] = "memoryd remembers" in str(after.get("output"))
            if number >= WARM_UP * 4:
                per_kind.setdefault(kind, []).append(before["ms"] + after["ms"])
    return [{"call": kind, "p50_ms": round(percentile(times, 0.5), 2),
             "p95_ms": round(percentile(times, 0.95), 2), "memory_runs": runs[kind],
             "lesson_shown": lessons_seen[kind]} for kind, times in per_kind.items()]


def rendered(file: Path, installed: Path, to: Path) -> Path:
    """``file`` with the installed plugin's command and environment lines."""
    marks = ("// memoryd:command", "// memoryd:env")
    mine = {mark: next(x for x in installed.read_text().splitlines() if x.endswith(mark))
            for mark in marks}
    to.write_text("\n".join(next((mine[m] for m in marks if line.endswith(m)), line)
                            for line in file.read_text().splitlines()) + "\n")
    return to


def _pair(tool: str, args: dict[str, Any], call: str = "counted") -> list[dict[str, Any]]:
    """A call's tool.execute.before and tool.execute.after, in OpenCode's shapes."""
    return [{"hook": "tool.execute.before",
             "input": {"tool": tool, "sessionID": SESSION, "callID": call},
             "output": {"args": args}},
            {"hook": "tool.execute.after",
             "input": {"tool": tool, "sessionID": SESSION, "callID": call, "args": args},
             "output": {"title": tool, "output": "done\n", "metadata": {}}}]


if __name__ == "__main__":
    raise SystemExit(main())
