"""What pressing TAB costs: the daemon's part of shell completion (`memory __complete`), with
the daemon down and up, against a bare Python start.

    python bench/bench_completion.py [--entries 1000] [--runs 20]

Runs this checkout's client (``python -m memoryd_client``, PYTHONPATH as the caller set it)
and, interleaved (one of each per round, so load on the machine hits them alike):

  - bare `python -c pass`
  - `memory __complete agents` with no daemon          (budget: p50 <= 3x bare: a failed
                                                         connect, nothing slow)
  - `memory __complete agents` with the daemon up       (a status request)
  - `memory __complete ids 3` with the daemon up        (a list by id prefix)

and prints p50 / p95 per command and the ratio to bare Python. The request itself is bounded by
completion_values.TIMEOUT_S (0.5 s) whatever the daemon does. Exits 1 when the budget is missed.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from memoryd_client import Client, DaemonUnreachableError

BUDGET_RATIO = 3.0


def timed(command: list[str], env: dict[str, str]) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    return (time.perf_counter() - started) * 1000, done.stdout


def start_daemon(home: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    daemon = subprocess.Popen([sys.executable, "-m", "memoryd", "serve"], env=env,
                              stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            with Client(home / "memoryd.sock", timeout_s=5) as client:
                client.status()
            return daemon
        except DaemonUnreachableError:
            time.sleep(0.2)
    daemon.kill()
    raise SystemExit("the daemon did not start")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=20)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="mdc-", dir="/tmp") as tmp:
        up, down = Path(tmp) / "up", Path(tmp) / "down"
        up.mkdir()
        down.mkdir()
        env = {**os.environ, "MEMORYD_HOME": str(up), "HOME": str(up)}
        env_down = {**env, "MEMORYD_HOME": str(down)}
        daemon = start_daemon(up, env)
        try:
            with Client(up / "memoryd.sock", timeout_s=300) as client:
                for start in range(0, options.entries, 500):
                    client.remember_many([
                        {"agent": f"agent{i % 7}", "category": "bench", "force": True,
                         "text": f"bench note {i} about the release train and code review"}
                        for i in range(start, min(start + 500, options.entries))])
            memory = [sys.executable, "-m", "memoryd_client", "__complete"]
            commands = {
                "bare python -c pass": ([sys.executable, "-c", "pass"], env),
                "__complete agents, daemon down": ([*memory, "agents"], env_down),
                "__complete agents, daemon up": ([*memory, "agents"], env),
                "__complete ids 3, daemon up": ([*memory, "ids", "3"], env),
            }
            times: dict[str, list[float]] = {name: [] for name in commands}
            offered: dict[str, int] = {}
            for _ in range(options.runs):
                for name, (command, command_env) in commands.items():
                    ms, out = timed(command, command_env)
                    times[name].append(ms)
                    offered[name] = len(out.splitlines())
        finally:
            daemon.send_signal(signal.SIGTERM)
            daemon.wait(timeout=60)
    bare = sorted(times["bare python -c pass"])[len(times["bare python -c pass"]) // 2]
    print(f"{options.runs} interleaved rounds, {options.entries} entries, load average "
          f"{os.getloadavg()[0]:.1f}")
    print(f"{'command':34} {'p50 ms':>8} {'p95 ms':>8} {'p50/bare':>9} {'offered':>8}")
    ok = True
    for name, values in times.items():
        values.sort()
        p50, p95 = values[len(values) // 2], values[min(len(values) - 1, len(values) * 95 // 100)]
        budget = ""
        if name.endswith("daemon down"):
            ok = p50 <= BUDGET_RATIO * bare
            budget = f"  <= {BUDGET_RATIO:g}x {'ok' if ok else 'OVER'}"
        print(f"{name:34} {p50:8.1f} {p95:8.1f} {p50 / bare:9.2f} {offered.get(name, 0):8}"
              f"{budget}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
