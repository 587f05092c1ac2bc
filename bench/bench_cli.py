"""The `memory` command as a whole process, against a bare Python start.

    python bench/bench_cli.py [--entries 1000] [--runs 30] [--importtime-runs 5] [--venv DIR]
                              [--compare CLIENT_DIR [--compare-venv DIR]]

The client is measured as the README installs it: `pip install ./client` into a venv of its
own (not editable: an editable install's import hook makes every Python start in its venv,
bare ones included, import pathlib and more; pip compiles the .pyc files). The venv is made in
a temporary directory, or kept in --venv DIR and reused (--reinstall to refresh it after a
change). Starts a real daemon (this interpreter's memoryd) with a user's default paths (XDG_DATA_HOME,
XDG_CONFIG_HOME and XDG_RUNTIME_DIR in a temporary directory, no MEMORYD_HOME), stores N entries through the client, then
runs, interleaved (one of each per round, so load on the machine hits them alike):

  - bare `python -c pass` (the same interpreter as the `memory` script)
  - `memory search AGENT - QUERY`                 (budget: p50 <= 2.5x bare; a new QUERY
                                                   each round: its vector is not cached)
  - `memory search` of one question every round  (its vector cached: the client's share)
  - `memory store AGENT CATEGORY TEXT --global`   (budget: p50 <= 2.5x bare)
  - `memory hook claude-code SessionStart`        (payload on stdin; for scale)
  - `memory --help`                               (the whole parser; for scale)

and prints p50 / min per command and the ratios to bare Python (wall clock; and the CPU
time of the process itself, which load on the machine disturbs less), then the heaviest imports of
`memory search` from `python -X importtime` (the minimum of several runs, in microseconds,
cumulative), the imports that `python -c pass` does not make. PYTHONDONTWRITEBYTECODE is
dropped from the commands' environment: an installed client has its .pyc files. JSON goes to
bench/results/cli.json. Exits 1 when a budget is missed.

With --compare, another checkout's client (e.g. a worktree of the code before a change) is
installed into a venv of its own and its commands run in the same rounds, against the same
daemon (its questions and texts differ, so nothing it asks is cached for the other); the
report then gives each command's p50 and CPU against the other client's. The rounds alternate
their order, so that neither client always runs right after the other.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from memoryd_client import Client, DaemonUnreachableError

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
BUDGET_RATIO = 2.5
AGENT = "bench"
TOPICS = ["git", "testing", "deploy", "style", "tooling", "review", "docs", "security", "ci", "db"]
SUBJECTS = ["the payment service", "the CLI", "release notes", "the staging cluster",
            "commit messages", "the test suite", "database migrations", "code review"]
RULES = ["must be reviewed by two people", "should stay under 72 characters",
         "run before every merge", "need a changelog entry", "are frozen on Fridays",
         "must not log secrets", "go through the release train"]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def start_daemon(home: Path, socket: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    log = (home / "daemon.log").open("w")
    daemon = subprocess.Popen([sys.executable, "-m", "memoryd", "serve"], env=env, stderr=log,
                              stdout=subprocess.DEVNULL)
    with Client(socket, timeout_s=300) as client:
        deadline = time.monotonic() + 120
        while True:
            try:
                status = client.status()
                if status["model"] and status["vector_index"]["ready"]:
                    break
            except DaemonUnreachableError:
                client.close()
            if daemon.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"daemon did not start; see {home / 'daemon.log'}")
            time.sleep(0.1)
    return daemon


def fill(socket: Path, n: int) -> None:
    entries = []
    for i in range(n):
        topic = TOPICS[i % len(TOPICS)]
        text = f"{SUBJECTS[i % len(SUBJECTS)]} {RULES[(i // 3) % len(RULES)]} (note {i}, {topic})"
        entries.append({"agent": AGENT, "category": topic, "text": text, "force": True})
    with Client(socket, timeout_s=600) as client:
        for start in range(0, len(entries), 500):
            client.remember_many(entries[start:start + 500])


def query(number: int) -> str:
    """A different question each round (the daemon caches a question's vector)."""
    subject = SUBJECTS[number % len(SUBJECTS)]
    rule = RULES[(number // len(SUBJECTS)) % len(RULES)].split()
    return f"does {subject} {' '.join(rule[:3])} (round {number})"


def timed(command: list[str], env: dict[str, str],
          stdin: bytes | None = None) -> tuple[float, float, int]:
    """(wall ms, CPU ms of the process itself: user + system, less sensitive to load, int)."""
    started = time.perf_counter()
    process = subprocess.Popen(command, env=env, stdin=subprocess.PIPE if stdin else
                               subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    if stdin:
        assert process.stdin is not None
        process.stdin.write(stdin)
        process.stdin.close()
    _, status, usage = os.wait4(process.pid, 0)
    wall = (time.perf_counter() - started) * 1000
    process.returncode = os.waitstatus_to_exitcode(status)
    return wall, (usage.ru_utime + usage.ru_stime) * 1000, process.returncode


def heaviest_imports(python: str, command: list[str], env: dict[str, str],
                     runs: int) -> list[tuple[str, int, int]]:
    """(module, cumulative µs, self µs): the minimum over runs, for the modules imported by
    `command` and not by a bare start."""

    def profile(cmd: list[str]) -> dict[str, tuple[int, int, int]]:
        stderr = subprocess.run([python, "-X", "importtime", *cmd], env=env, check=False,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                text=True).stderr
        rows: dict[str, tuple[int, int, int]] = {}
        for line in stderr.splitlines():
            if not line.startswith("import time:") or "self [us]" in line:
                continue
            own, cumulative, name = line[len("import time:"):].split("|")
            depth = (len(name) - len(name.lstrip(" "))) // 2
            rows[name.strip()] = (int(cumulative), int(own), depth)
        return rows

    bare: set[str] = set()
    best: dict[str, list[int]] = {}
    for _ in range(runs):
        bare |= set(profile(["-c", "pass"]))
        for name, (cumulative, own, depth) in profile(command).items():
            if name in best:
                best[name] = [min(best[name][0], cumulative), min(best[name][1], own), depth]
            else:
                best[name] = [cumulative, own, depth]
    extra = [(n, c, s) for n, (c, s, _) in best.items() if n not in bare]
    return sorted(extra, key=lambda row: -row[1])


def client_venv(path: Path, reinstall: bool, client: Path) -> tuple[str, str]:
    """(python, memory) of a venv holding a non-editable install of ./client."""
    python, memory = path / "bin" / "python", path / "bin" / "memory"
    if reinstall or not memory.exists():
        if not python.exists():
            subprocess.run([sys.executable, "-m", "venv", str(path)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", "--force-reinstall",
                        "--no-deps", str(client)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", "msgpack>=1.0",
                        "platformdirs>=4.6"], check=True)
    return str(python), str(memory)


def user_env(home: Path) -> dict[str, str]:
    """A user's default set-up in ``home``: no MEMORYD_HOME, the socket in
    $XDG_RUNTIME_DIR/memoryd."""
    for name in ("user", "data", "config", "run"):
        (home / name).mkdir(mode=0o700)
    env = {**os.environ, "HOME": str(home / "user"), "XDG_DATA_HOME": str(home / "data"),
           "XDG_CONFIG_HOME": str(home / "config"), "XDG_RUNTIME_DIR": str(home / "run")}
    for name in list(env):
        if name.startswith("MEMORYD_"):
            del env[name]
    # an installed client has its .pyc files (pip compiles them); without them every start
    # compiles the modules again, which is not what a user pays
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=1000, help="entries stored (default 1000)")
    parser.add_argument("--runs", type=int, default=30, help="rounds (default 30)")
    parser.add_argument("--importtime-runs", type=int, default=5,
                        help="`python -X importtime` runs, the minimum kept (default 5)")
    parser.add_argument("--venv", type=Path, help="keep the client's venv here and reuse it")
    parser.add_argument("--reinstall", action="store_true", help="install the client again")
    parser.add_argument("--client", type=Path, default=ROOT / "client",
                        help="the client's source to install (default: ./client; another "
                        "checkout's client to compare)")
    parser.add_argument("--compare", type=Path, metavar="CLIENT_DIR",
                        help="also run this client's commands in the same rounds (another "
                        "checkout's client/), and compare")
    parser.add_argument("--compare-venv", type=Path, help="keep the compared client's venv here")
    args = parser.parse_args()

    scratch = Path(tempfile.mkdtemp(prefix="mdc-venv-"))
    python, memory = client_venv(args.venv or scratch, args.reinstall, args.client)
    compared = None
    if args.compare is not None:
        compared = client_venv(args.compare_venv or scratch / "compare", args.reinstall,
                               args.compare)[1]
    home = Path(tempfile.mkdtemp(prefix="mdc-", dir="/tmp"))
    env = user_env(home)
    socket = home / "run" / "memoryd" / "memoryd.sock"
    daemon = start_daemon(home, socket, env)
    try:
        fill(socket, args.entries)
        payload = json.dumps({"session_id": "bench-cli", "transcript_path": None,
                              "cwd": str(home / "user"), "hook_event_name": "SessionStart",
                              "source": "startup"}).encode()
        commands: dict[str, tuple[list[str], bytes | None]] = {
            "bare python -c pass": ([python, "-c", "pass"], None),
            "memory search": ([memory, "search", AGENT, "-", "QUERY"], None),
            "memory search, same query": ([memory, "search", AGENT, "-", "who reviews the CLI"],
                                          None),
            "memory store": ([memory, "store", AGENT, "bench", "TEXT", "--global"], None),
            "memory hook SessionStart": ([memory, "hook", "claude-code", "SessionStart"], payload),
            "memory --help": ([memory, "--help"], None),
        }
        if compared is not None:  # the other client's, with questions and texts of their own
            commands.update({f"{name} (compared)": ([compared, *command[1:]], stdin)
                             for name, (command, stdin) in list(commands.items())
                             if name.startswith("memory ")})
        times: dict[str, list[float]] = {name: [] for name in commands}
        codes: dict[str, set[int]] = {name: set() for name in commands}
        cpu_times: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(2):  # warm the page cache and the .pyc files
            for command, stdin in commands.values():
                timed([a.replace("TEXT", "warm-up").replace("QUERY", "warm-up") for a in command],
                      env, stdin)
        for round_ in range(args.runs):
            order = list(commands.items())
            for name, (command, stdin) in order[::-1] if round_ % 2 else order:
                number = round_ + (args.runs if name.endswith("(compared)") else 0)
                command = [a.replace("TEXT", f"bench cli entry number {number}")
                           .replace("QUERY", query(number)) for a in command]
                elapsed, cpu, code = timed(command, env, stdin)
                times[name].append(elapsed)
                cpu_times[name].append(cpu)
                codes[name].add(code)
        imports = heaviest_imports(python, [memory, "search", AGENT, "-",
                                            "who reviews the payment service"],
                                   env, args.importtime_runs)
    finally:
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(timeout=60)

    bare_p50 = percentile(times["bare python -c pass"], 0.5)
    bare_min = min(times["bare python -c pass"])
    bare_cpu = percentile(cpu_times["bare python -c pass"], 0.5)
    rows = []
    for name, values in times.items():
        p50, low = percentile(values, 0.5), min(values)
        budget = name in ("memory search", "memory store")
        ratio = p50 / bare_p50
        rows.append({"command": name, "p50_ms": round(p50, 1), "min_ms": round(low, 1),
                     "p95_ms": round(percentile(values, 0.95), 1),
                     "ratio_p50": round(ratio, 2), "ratio_min": round(low / bare_min, 2),
                     "cpu_p50_ms": round(percentile(cpu_times[name], 0.5), 1),
                     "cpu_ratio": round(percentile(cpu_times[name], 0.5) / bare_cpu, 2),
                     "exit_codes": sorted(codes[name]),
                     "budget": f"<= {BUDGET_RATIO}x" if budget else "",
                     "ok": (ratio <= BUDGET_RATIO) if budget else None})
    print(f"{args.runs} interleaved rounds, {args.entries} entries, {os.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.1f}")
    print(f"{'command':<27} {'p50 ms':>8} {'min ms':>8} {'p95 ms':>8} {'p50/bare':>9} "
          f"{'min/bare':>9} {'CPU ms':>7} {'CPU/bare':>9}  {'budget':>7}  ok")
    for row in rows:
        mark = "" if row["ok"] is None else ("ok" if row["ok"] else "OVER")
        print(f"{row['command']:<27} {row['p50_ms']:>8} {row['min_ms']:>8} {row['p95_ms']:>8} "
              f"{row['ratio_p50']:>9} {row['ratio_min']:>9} {row['cpu_p50_ms']:>7} "
              f"{row['cpu_ratio']:>9}  {row['budget']:>7}  {mark}")
    print("(budget: the wall-clock p50 ratio; CPU = the process's own user + system time, p50, "
          "which load disturbs less and which leaves out the daemon's share)")
    by_name = {row["command"]: row for row in rows}
    if compared is not None:
        print(f"\nagainst the compared client ({args.compare}): this one's p50 and CPU p50 over "
              "the other's")
        for name, row in by_name.items():
            other = by_name.get(f"{name} (compared)")
            if other is not None:
                print(f"{name:<27} p50 {row['p50_ms'] / other['p50_ms']:>5.2f}   "
                      f"CPU {row['cpu_p50_ms'] / other['cpu_p50_ms']:>5.2f}")
    print(f"\nheaviest imports of `memory search` beyond a bare start (min of "
          f"{args.importtime_runs} runs, µs):")
    print(f"{'module':<40} {'cumulative':>10} {'self':>8}")
    for name, cumulative, own in imports[:20]:
        print(f"{name:<40} {cumulative:>10} {own:>8}")
    print(f"({len(imports)} modules beyond a bare start)")
    out_dir = HERE / "results"
    out_dir.mkdir(exist_ok=True)
    (out_dir / "cli.json").write_text(json.dumps(
        {"entries": args.entries, "runs": args.runs, "rows": rows, "raw_ms": times,
         "imports": [{"module": n, "cumulative_us": c, "self_us": s} for n, c, s in imports]},
        indent=2))
    shutil.rmtree(home, ignore_errors=True)
    shutil.rmtree(scratch, ignore_errors=True)
    return 0 if all(row["ok"] in (None, True) for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
