#!/usr/bin/env python
"""What one change of a Cline task log costs memoryd: the whole log read again.

    python bench/bench_task_log.py                    # logs of 200, 1,000 and 4,000 messages
    python bench/bench_task_log.py --messages 10000 --repeat 5
    python bench/bench_task_log.py --daemon           # and through a daemon, per change
    python bench/bench_task_log.py --daemon --against /tmp/old   # and another checkout's

Cline and Roo Code write a task's ``ui_messages.json`` whole on every change (a JSON array of
every message), so memoryd reads it whole each time the watcher reports it changed
(memoryd.ingest.document: ``read_document``, then each message through the ``cline`` parser;
record ids keep what was indexed from being indexed again). The logs are generated in the shape
of a real one: per exchange the user's reply, a request (whose text holds its environment
details), the model's prose, a tool use with a file's content (~2 KB), a command and its output.
Prints, per size, the file's size and the time of one read (median of ``--repeat``, the CPU of
this process), and the share of a core it takes when the log changes once a second: Cline
writes the log when a message is added (not for each streamed piece of one), a busy task every
second or two.

With ``--daemon``, the same logs are watched by a daemon (``python -m memoryd serve``, a fresh
state dir, the log in a fake home's VS Code storage for Cline): once it is indexed and settled,
``--changes`` rounds each add one exchange (the user's reply holds a new word) and write the log
whole, as Cline does; printed per size: the p50 time from the write to the first search that
finds the word, and the daemon's CPU per change (``/proc/<pid>/stat``, from the write until it
is found and settled again, the embedding of the new exchange included). With ``--against``,
another checkout's daemon is measured the same way, each size alternating between the two
(``--rounds`` times), and the ratio of the medians printed (this tree / the other).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memoryd.ingest.document import read_document
from memoryd.ingest.transcript import make_parser

CHANGE_EVERY_S = 1.0
FILE_TEXT = "\n".join(f"    const line{n} = compute(order.items[{n}], rates);" for n in range(40))


def messages(count: int) -> list[dict[str, object]]:
    """A task of ``count`` messages, six to an exchange."""
    ts = 1_764_502_861_000
    out: list[dict[str, object]] = [{"ts": ts, "type": "say", "say": "task",
                                     "text": "Fix the rounding of the invoice totals"}]
    n = 0
    while len(out) < count:
        n += 1
        ts += 1000
        out += [
            {"ts": ts, "type": "say", "say": "api_req_started", "text": json.dumps(
                {"request": f"<feedback>step {n}</feedback>\n<environment_details>\n# "
                 "Current Working Directory (/home/ana/src/shop) Files\nsrc/\n" * 3,
                 "tokensIn": 5000 + n, "tokensOut": 300, "cost": 0.02})},
            {"ts": ts + 100, "type": "say", "say": "text",
             "text": f"Step {n}: the totals are summed as floats before rounding; " * 6},
            {"ts": ts + 200, "type": "ask", "ask": "tool", "text": json.dumps(
                {"tool": "editedExistingFile", "path": f"src/invoice/total{n}.ts",
                 "content": FILE_TEXT})},
            {"ts": ts + 300, "type": "say", "say": "command", "text": "pnpm vitest run"},
            {"ts": ts + 400, "type": "say", "say": "command_output",
             "text": "Test Files  12 passed (12)\n" * 5},
            {"ts": ts + 500, "type": "say", "say": "user_feedback",
             "text": f"Good, now step {n + 1}, and keep the cents as integers."},
        ]
    return out[:count]


def read_once(path: Path) -> float:
    """CPU seconds of one read of the log, as the watcher does it on a change."""
    started = time.process_time()
    parser = make_parser("cline")
    turns = 0
    for line in read_document(path, "cline").lines:
        turns += len(parser.feed(line))
    elapsed = time.process_time() - started
    assert turns > 0
    return elapsed


def cpu_s(pid: int) -> float:
    """User and system CPU seconds of process ``pid`` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def through_daemon(count: int, changes: int, tree: Path | None = None) -> tuple[float, float]:
    """p50 seconds from a write of the log to the new word being found, and p50 daemon CPU
    seconds per change, for a log of ``count`` messages."""
    from bench_store import DaemonProcess, settle
    from memoryd_client import Client

    with tempfile.TemporaryDirectory(prefix="btl-") as tmp:
        state, home = Path(tmp) / "s", Path(tmp) / "h"
        log = home / (".config/Code/User/globalStorage/saoudrizwan.claude-dev/tasks/"
                      f"t{count}/ui_messages.json")
        log.parent.mkdir(parents=True)
        written = messages(count)
        log.write_text(json.dumps(written))
        state.mkdir()
        daemon = DaemonProcess(state, tree)
        daemon.env["HOME"] = str(home)
        daemon.start()
        try:
            daemon.wait_ready()
            latencies, cpus = [], []
            with Client(daemon.socket, timeout_s=60) as client:
                settle(client)
                for change in range(changes):
                    word = f"zq{change}x{count}"
                    client.search(word, agents=["*"], limit=1)  # its vector cached
                    ts = int(time.time() * 1000)
                    written += [{"ts": ts, "type": "say", "say": "text", "text": "Done."},
                                {"ts": ts + 1, "type": "say", "say": "user_feedback",
                                 "text": f"Also rename the {word} helper"}]
                    before, started = cpu_s(daemon.pid), time.monotonic()
                    log.write_text(json.dumps(written))
                    while not any(word in h["text"] for h in client.search(
                            word, agents=["*"], limit=5, match=False)["hits"]):
                        time.sleep(0.01)
                    latencies.append(time.monotonic() - started)
                    settle(client)
                    cpus.append(cpu_s(daemon.pid) - before)
            return statistics.median(latencies), statistics.median(cpus)
        finally:
            daemon.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, nargs="*", default=[200, 1000, 4000])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--daemon", action="store_true")
    parser.add_argument("--changes", type=int, default=10)
    parser.add_argument("--against", type=Path, help="another checkout, measured alternately")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    print(f"{'messages':>9} {'size MB':>8} {'read p50 ms':>12} {'share of a core':>16}")
    with tempfile.TemporaryDirectory() as tmp:
        for count in args.messages:
            path = Path(tmp) / "tasks" / f"t{count}" / "ui_messages.json"
            path.parent.mkdir(parents=True)
            path.write_text(json.dumps(messages(count)))
            times = [read_once(path) for _ in range(args.repeat)]
            p50 = statistics.median(times)
            print(f"{count:>9} {path.stat().st_size / 1e6:>8.2f} {p50 * 1000:>12.1f} "
                  f"{p50 / CHANGE_EVERY_S:>15.1%}")
    if not args.daemon:
        return
    print(f"\nthrough a daemon, {args.changes} changes each")
    print(f"{'messages':>9} {'tree':>6} {'found p50 ms':>13} {'daemon CPU p50 ms':>18}")
    trees: list[tuple[str, Path | None]] = [("this", None)]
    if args.against is not None:
        trees.append(("other", args.against))
    for count in args.messages:
        runs: dict[str, list[tuple[float, float]]] = {name: [] for name, _ in trees}
        for number in range(args.rounds if args.against else 1):
            for name, tree in (trees if number % 2 == 0 else trees[::-1]):
                runs[name].append(through_daemon(count, args.changes, tree))
        for name, _ in trees:
            found = statistics.median(r[0] for r in runs[name])
            cpu = statistics.median(r[1] for r in runs[name])
            print(f"{count:>9} {name:>6} {found * 1000:>13.0f} {cpu * 1000:>18.0f}")
        if args.against is not None:
            ratio = statistics.median(r[1] for r in runs["this"]) / \
                statistics.median(r[1] for r in runs["other"])
            print(f"{count:>9} {'ratio':>6} {'':>13} {ratio:>17.2f}x")


if __name__ == "__main__":
    main()
