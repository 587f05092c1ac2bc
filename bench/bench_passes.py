#!/usr/bin/env python
"""The maintenance passes against their budgets, through the real daemon and client.

    python bench/bench_passes.py                      # the full store (below)
    python bench/bench_passes.py --scale 0.1          # a tenth of it, to try the script
    python bench/bench_passes.py --keep /tmp/mdpass   # keep (and later reuse) the store
    python bench/bench_passes.py --keep /tmp/mdpass --rounds 3   # p99s over three rounds
    python bench/bench_passes.py --keep /tmp/mdp --rounds 2 --against /tmp/old   # vs a checkout

The store: 1,000 notebooks (~10,000 notebook entries; one in twenty over its 80-line cap, some
with sections out of order and loose dates), 50,000 API entries (a few percent of them
rephrasings of others, for consolidation; a third written in a 5,000-file git project, many
naming its files, functions and flags), and Claude Code transcripts of ~10,000 exchange chunks.
``python -m memoryd serve`` runs as a subprocess with HOME and MEMORYD_HOME under the store dir.

Measured, each pass in turn (``memory pass run NAME``), in this order: retain, staleness
(``--full``: every entry's references read and checked, as a first run), staleness again
(nothing changed), notebooks, consolidate (``--full``: every entry compared),
consolidate again (only what changed since: the survivors the first run updated), promote — the
run's wall time, and
search round trips through the client while it runs (p50/p99). The searches come at random
moments, ``--search-rate`` a second (10: a busy machine's agents together; their hooks search
once a prompt), so that they land anywhere in the pass's slices. They are compared with the
same searches on the idle daemon at the same rate, for IDLE_AT_RATE_S: searches at random
moments find the machine colder than searches back to back (also printed) do — on 2026-11-28,
idle p50 18-20 ms at 10 a second against 14-15 back to back, three interleaved pairs.
``--search-rate 0`` sends them back to back instead: a stress figure, in
which the database thread spends most of the run on searches and the pass gets one slice
between two of them, so its wall time says more about the searches than about the pass. A p99
over fewer than MIN_SEARCHES searches (a pass done in a tenth of a second) is printed but not
judged; the p99 over the searches during all the passes together is. ``--rounds N`` runs the
passes N times and pools each pass's searches (a p99 over one notebook run's ~50 searches is
their second slowest); a duration is then the slowest round's. Every round, and the next run on
a kept store, starts from a copy of the store as built (``pristine/`` in the state dir), so
each does the first-run work (undoing the runs would not do: an undone merge is kept apart
from then on, and the next consolidation would find nothing to merge). Budgets (issue 8): consolidation
≤ 60 s, staleness ≤ 10 s full and ≤ 1 s unchanged, notebooks ≤ 10 s for 1,000 notebooks,
search p99 ≤ 50 ms while a pass runs, and each pass's longest step on the database thread
(what a search that came then waited for; the daemon's reply to the run names it) ≤ ~20 ms.
``--against TREE`` runs TREE's daemon (another checkout) too, on the same store (``--keep``),
the two taking turns round by round, and prints each pass's wall time, the daemon's CPU time
and peak RSS during it (VmHWM, reset before each pass), its longest step and the searches
beside it, for both and as ratios (:func:`compare`). Otherwise it prints a table (with the machine's speed before and
after, as the bare embedder's rate in this process; its tail, as a fixed ~12 ms Python job's
p50 and p99 in this process; and the CPU other processes and the hypervisor took meanwhile,
"noisy run" above 0.2 cores) and writes bench/results/passes.json.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import stat
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))  # the working tree's memoryd, not an installed one

from bench_ingest import AGENTS, TextPool, bullet, random_date, write_transcripts  # noqa: E402
from bench_store import (  # noqa: E402
    CpuMeter,
    DaemonProcess,
    Report,
    load_bare_embedder,
    measure_embedder,
    measure_jitter,
    ms,
    percentile,
    proc_cpu_s,
    progress,
    search_loop,
    settle,
)
from corpus import Corpus  # noqa: E402
from memoryd_client import Client  # noqa: E402

NOTEBOOKS = 1_000
OVER_CAP_EVERY = 20
API_ENTRIES = 50_000
TRANSCRIPT_CHUNKS = 10_000
PROJECT_FILES = 5_000
REPHRASED_SHARE = 0.04
SEARCHES = 300
SEARCH_RATE = 10.0
#: How long the idle daemon is searched at the passes' rate: the baseline their searches are
#: compared with (Poisson arrivals find the machine colder than searches back to back do).
IDLE_AT_RATE_S = 30.0
MIN_SEARCHES = 20
BUDGETS = {"consolidate": 60.0, "staleness": 10.0, "staleness (unchanged)": 1.0,
           "notebooks": 10.0}
#: The issue's "no slice over ~20 ms": a search that comes during a step waits for it.
STEP_MS = 20
SEARCH_P99_MS = 50.0
#: Texts the bare embedder embeds in this process before and after the measurements: how fast
#: the machine is at the time (its speed moves by a third from hour to hour, with no other
#: process busy), so that runs can be compared.
REFERENCE_TEXTS = 512
INGEST_BATCH = 256
RESULTS = HERE / "results" / "passes.json"
PRISTINE = "pristine"  # the store as built, copied aside: every round starts from it


# -- the store ------------------------------------------------------------------------------


def _sockets(directory: str, names: list[str]) -> list[str]:
    """copytree's ignore: a daemon's socket is not copied."""
    return [name for name in names if stat.S_ISSOCK(os.lstat(os.path.join(directory, name)).st_mode)]


def keep_pristine(state: Path) -> None:
    """Copy the store as built (state dir, HOME, git project; the daemon stopped) aside."""
    partial = state / f"{PRISTINE}.partial"
    shutil.rmtree(partial, ignore_errors=True)
    shutil.copytree(state, partial, symlinks=True, ignore=lambda directory, names: _sockets(
        directory, names) + ([PRISTINE, partial.name] if directory == str(state) else []))
    partial.rename(state / PRISTINE)


def restore_pristine(state: Path) -> None:
    """Put the store back as built (the daemon stopped)."""
    progress("restoring the store as built")
    for path in state.iterdir():
        if path.name == PRISTINE:
            continue
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()
    shutil.copytree(state / PRISTINE, state, symlinks=True, dirs_exist_ok=True)


#: No pass runs on its schedule in the bench's daemon: a staleness run during the build left the
#: store as built checked already (its "full" run then found the project unchanged), and a
#: scheduled run would land among the measured ones.
CONFIG = "[passes]\n" + "".join(f'{name} = "off"\n' for name in
                                 ("notebooks", "consolidate", "promote", "staleness", "retain"))


def start_daemon(state: Path, home: Path, tree: Path | None = None) -> DaemonProcess:
    """The daemon (of ``tree``, another checkout, when given) on the store, with HOME under it
    and no scheduled pass; ready (stopped again if it never gets so)."""
    (state / "config.toml").write_text(CONFIG)
    daemon = DaemonProcess(state, tree)
    daemon.env["HOME"] = str(home)
    daemon.start()
    try:
        daemon.wait_ready()
    except BaseException:
        daemon.stop()
        raise
    return daemon


def write_notebooks(home: Path, count: int, pool: TextPool, rng: random.Random) -> int:
    """Notebooks spread over the agents' memory dirs; returns how many bullets."""
    total = 0
    for number in range(count):
        agent = AGENTS[number % len(AGENTS)]
        over = number % OVER_CAP_EVERY == 0
        sections = {"Session Log": rng.randint(60, 90) if over else rng.randint(1, 4),
                    "Learnings": rng.randint(2, 6) if over else rng.randint(1, 3),
                    "Mistakes": rng.randint(1, 4), "Shareholder Feedback": rng.randint(0, 3)}
        order = list(sections)
        if number % 7 == 0:
            rng.shuffle(order)  # out of order: the pass puts them right
        parts = [f"# {agent} notebook {number}\n"]
        for name in order:
            lines = []
            for _ in range(sections[name]):
                date = random_date(rng)
                if rng.random() < 0.05:  # a loose date the pass rewrites
                    date = date.replace("-0", "-")
                lines.append(bullet(pool.text(), date, rng))
            total += len(lines)
            parts.append(f"\n## {name}\n" + "".join(line + "\n" for line in lines))
        path = home / ".mastersof-ai" / "agents" / agent / "memory" / f"notebook-{number:04d}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(parts))
    return total


def write_project(root: Path, files: int, rng: random.Random) -> list[str]:
    """A git repository of ``files`` small Python modules; returns their paths."""
    paths = []
    for number in range(files):
        package = f"pkg_{number // 100:02d}"
        relative = f"src/{package}/mod_{number % 100:02d}.py"
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f'"""Module {number}."""\n\nTIMEOUT_{number} = {rng.randint(1, 90)}\n\n\n'
                        f"def handle_{number}(request):\n    return request.get('--flag-{number}')\n")
        paths.append(relative)
    git = ["git", "-c", "user.name=bench", "-c", "user.email=bench@localhost"]
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run([*git, "commit", "-qm", "bench project"], cwd=root, check=True)
    return paths


def api_entries(n: int, project: Path, paths: list[str], rng: random.Random) -> list[dict[str, Any]]:
    corpus = Corpus(seed=17)
    entries = corpus.entries(n)
    out = []
    for number, entry in enumerate(entries):
        params = {k: entry[k] for k in ("agent", "category", "text", "kind") if k in entry}
        if "key" in entry:
            params["key"] = entry["key"]
        if number % 3 == 0:  # written in the project, naming its things
            params["cwd"] = str(project)
            target = rng.choice(paths)
            module = int(target.split("_")[-1][:2]) + 100 * int(target.split("/")[1][4:])
            gone = rng.random() < 0.02
            params["text"] += (f" See `{target if not gone else target.replace('mod_', 'old_')}` "
                               f"and `handle_{module}`.")
        else:
            params["cwd"] = None
        params["session"] = f"bench-{number % 997}"
        out.append(params)
    for number in range(int(n * REPHRASED_SHARE)):  # rephrasings: consolidation's work
        source = out[rng.randrange(len(out))]
        again = dict(source)
        again["text"] = rng.choice(("Always: ", "Note: ", "Remember, ", "")) + source["text"]
        again["session"] = f"bench-again-{number}"
        again["force"] = True
        out.append(again)
    rng.shuffle(out)
    return out


def build(state: Path, home: Path, scale: float) -> DaemonProcess:
    rng = random.Random(5)
    pool = TextPool(seed=23)
    project = home / "work" / "project"
    project.mkdir(parents=True)
    paths = write_project(project, max(50, int(PROJECT_FILES * scale)), rng)
    bullets = write_notebooks(home, max(20, int(NOTEBOOKS * scale)), pool, rng)
    progress(f"wrote {int(NOTEBOOKS * scale):,} notebooks ({bullets:,} bullets) and a "
             f"{len(paths):,}-file git project")
    sample = write_transcripts(Path(tempfile.mkdtemp()), 2_000, TextPool(seed=3), 9)
    lines = int(2_000 * TRANSCRIPT_CHUNKS * scale / max(1, sample.chunks))
    tree = write_transcripts(home, lines, pool, 11)
    progress(f"wrote transcripts: {tree.lines:,} lines, ~{tree.chunks:,} chunks")
    daemon = start_daemon(state, home)
    try:
        entries = api_entries(int(API_ENTRIES * scale), project, paths, rng)
        # the terminal channel: the corpus's feedback entries stand in for what a person typed
        with Client(daemon.socket, timeout_s=600, channel="terminal") as client:
            for start in range(0, len(entries), INGEST_BATCH):
                client.remember_many(entries[start:start + INGEST_BATCH])
                if start % (INGEST_BATCH * 40) == 0:
                    progress(f"  remembered {start:,}/{len(entries):,}")
            settle(client)  # everything indexed and embedded, the word index filled
    except BaseException:
        daemon.stop()  # a failed fill leaves no daemon behind on the kept state dir
        raise
    (state / "bench-ready").write_text(json.dumps({"scale": scale}))
    return daemon


# -- measuring ------------------------------------------------------------------------------


def measure_pass(client: Client, searcher: Client, name: str, queries: list[str],
                 rate: float, **options: Any) -> tuple[float, list[float], dict[str, Any]]:
    stop = threading.Event()
    box: dict[str, Any] = {}

    def run() -> None:
        started = time.perf_counter()
        box["result"] = client.pass_run(name, **options)
        box["wall"] = time.perf_counter() - started
        stop.set()

    thread = threading.Thread(target=run)
    thread.start()
    times = search_loop(searcher, queries, stop, rate)
    thread.join()
    return box["wall"], times, box["result"]


def open_store(state: Path, home: Path, scale: float, again: bool) -> DaemonProcess:
    """A daemon on the kept store as built, or on a new one (kept as built when ``again``)."""
    if (state / "bench-ready").exists():
        if not (state / PRISTINE).exists():
            raise SystemExit(f"{state} was kept by an older bench_passes, which undid its runs "
                             "(an undone merge stays apart): remove it to build a new store")
        progress(f"reusing the store in {state}")
        restore_pristine(state)
        return start_daemon(state, home)
    state.mkdir(parents=True, exist_ok=True)
    home.mkdir(parents=True, exist_ok=True)
    daemon = build(state, home, scale)
    if again:
        daemon.stop()
        keep_pristine(state)
        daemon = start_daemon(state, home)
    return daemon


def report_pass(report: Report, label: str, walls: list[float], steps: list[dict[str, Any]],
                times: list[float]) -> None:
    """A pass's rounds: how long it took, its longest step, the searches while it ran."""
    result = report.info[label]
    rounds = [] if len(walls) == 1 else [f"rounds {', '.join(f'{w:.2f}' for w in walls)} s"]
    counts = ", ".join(f"{k} {v}" for k, v in sorted(result["counts"].items()))
    report.add(f"{label}: duration", max(walls), "s", le=BUDGETS.get(label),
               note="; ".join(rounds + ([counts] if counts else [])))
    if any(step["from"] for step in steps):  # it took a step at all
        step = max(steps, key=lambda s: s["ms"])
        report.add(f"{label}: longest step on the database thread", step["ms"],
                   "ms", le=STEP_MS, note=f"{step.get('cpu_ms', '?')} ms of CPU; "
                   f"{step['from']} to {step['to']}")
    if times:
        report.add(f"{label}: search p50 while it runs", percentile(ms(times), 50), "ms")
        judged = len(times) >= MIN_SEARCHES
        report.add(f"{label}: search p99 while it runs", percentile(ms(times), 99),
                   "ms", le=SEARCH_P99_MS if judged else None,
                   note=f"{len(times)} searches" + ("" if judged else ": too few to judge a p99"))


# -- --against: this tree's daemon and another checkout's, interleaved -------------------------

#: The passes in the order they run, and the options they run with (consolidate and staleness
#: do everything, --full, as a first run; then only what changed since).
ORDER = [("retain", "retain"), ("staleness", "staleness"), ("staleness", "staleness (unchanged)"),
         ("notebooks", "notebooks"), ("consolidate", "consolidate"),
         ("consolidate", "consolidate (again)"), ("promote", "promote")]
OPTIONS = {"consolidate": {"full": True}, "staleness": {"full": True}}


def peak_rss_mb(pid: int, reset: bool = False) -> float:
    """The process's peak RSS since it started or since the last ``reset`` (writing 5 to
    /proc/PID/clear_refs sets VmHWM back to the RSS of the moment)."""
    if reset:
        Path(f"/proc/{pid}/clear_refs").write_text("5")
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmHWM for process {pid}")


def one_round(daemon: DaemonProcess, queries: list[str], rate: float) -> dict[str, Any]:
    """The idle searches, then every pass with searches beside it; each pass's wall time, the
    daemon's CPU time and peak RSS during it, its longest step and the searches' times."""
    out: dict[str, Any] = {}
    with Client(daemon.socket, timeout_s=900) as client, \
            Client(daemon.socket, timeout_s=60) as searcher:
        settle(client)
        for query in queries:  # warm, as main() does
            searcher.search(query + " warm", agents=["*"], limit=10)
        idle = []
        for number, query in enumerate(queries):
            started = time.perf_counter()
            searcher.search(query + f" idle {number}", agents=["*"], limit=10)
            idle.append(time.perf_counter() - started)
        out["idle"] = {"searches": idle, "rss_mb": peak_rss_mb(daemon.pid, reset=True)}
        known = {p["pass"] for p in client.pass_list()["passes"]}
        for name, label in [(name, label) for name, label in ORDER if name in known]:
            progress(f"  {label}")
            peak_rss_mb(daemon.pid, reset=True)
            cpu = proc_cpu_s(daemon.pid)
            wall, times, result = measure_pass(client, searcher, name, queries, rate,
                                               **OPTIONS.get(label, {}))
            out[label] = {"wall_s": wall, "cpu_s": proc_cpu_s(daemon.pid) - cpu,
                          "peak_rss_mb": peak_rss_mb(daemon.pid), "searches": times,
                          "step_ms": (result.get("longest_step") or {}).get("ms"),
                          "counts": result.get("counts")}
    return out


def compare(args: argparse.Namespace) -> int:
    """``--against TREE``: this tree's daemon and TREE's take turns on the same store (built by
    this tree's, kept in ``--keep DIR``): round by round each runs the passes from the store as
    built, the order of the two alternating from round to round, so that the machine's slow and
    fast minutes weigh on both. The same path matters: the store names its files, notebooks and
    project by path. Prints a table of the two and their ratios."""
    if args.keep is None:
        raise SystemExit("--against needs --keep DIR (the store is built once and kept)")
    tree = args.against.expanduser().resolve()
    if not (tree / "memoryd" / "__main__.py").exists():
        raise SystemExit(f"--against {tree}: not a memoryd checkout")
    state = args.keep
    open_store(state, state / "home", args.scale, True).stop()
    sides = [("this tree", None), (f"against ({tree.name})", tree)]
    queries = Corpus(seed=29).queries(SEARCHES)
    rounds: dict[str, list[dict[str, Any]]] = {name: [] for name, _ in sides}
    cpu = CpuMeter()
    loads = [os.getloadavg()]
    for number in range(args.rounds):
        for name, side_tree in sides if number % 2 == 0 else sides[::-1]:
            progress(f"round {number + 1}/{args.rounds}: {name}")
            restore_pristine(state)
            daemon = start_daemon(state, state / "home", side_tree)
            cpu.daemon_pid = daemon.pid
            try:
                with cpu.phase(f"{name}, round {number + 1}"):
                    rounds[name].append(one_round(daemon, queries, args.search_rate))
            finally:
                daemon.stop()
            loads.append(os.getloadavg())
    report = Report(0)
    cpu.report(report)
    table = against_table(rounds, [name for name, _ in sides])
    print(table)
    print(f"load average (1 min) at the start and after each round: "
          f"{', '.join(f'{load[0]:.1f}' for load in loads)}")
    print(report.table())
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.with_name("passes-against.json").write_text(json.dumps(
        {"against": str(tree), "rounds": rounds, "loadavg": loads, **report.to_json()},
        indent=2, default=str))
    return 0


def against_table(rounds: dict[str, list[dict[str, Any]]], names: list[str]) -> str:
    """A Markdown table: per pass, the median wall and CPU times over the rounds (one round
    that a busy minute slowed does not move it), the peak RSS (highest round), the longest step
    (longest round), the searches' p50/p99 (pooled), each as this tree / the other and their
    ratio."""
    def pair(values: list[float], unit: str, digits: int = 2) -> str:
        ratio = f" ({values[0] / values[1]:.2f}×)" if values[1] else ""
        return f"{values[0]:.{digits}f} / {values[1]:.{digits}f} {unit}{ratio}"

    lines = [f"| pass | wall (median of {len(rounds[names[0]])}) | daemon CPU | peak RSS | "
             "longest step | search p50 / p99 while it runs |", "|---|---|---|---|---|---|"]
    labels = [label for _, label in ORDER if label in rounds[names[0]][0]]
    for label in ["idle", *labels]:
        runs = [[r[label] for r in rounds[name]] for name in names]
        searched = [[t for run in side for t in run["searches"]] for side in runs]
        search = "–" if not all(searched) else (
            f"{pair([percentile(ms(t), 50) for t in searched], 'ms', 1)}; "
            f"{pair([percentile(ms(t), 99) for t in searched], 'ms', 1)}")
        if label == "idle":
            rss = [max(run["rss_mb"] for run in side) for side in runs]
            lines.append(f"| idle, back to back | | | {pair(rss, 'MB', 0)} (RSS) | | {search} |")
            continue
        wall = [statistics.median(run["wall_s"] for run in side) for side in runs]
        used = [statistics.median(run["cpu_s"] for run in side) for side in runs]
        rss = [max(run["peak_rss_mb"] for run in side) for side in runs]
        step = [max(run["step_ms"] or 0.0 for run in side) for side in runs]
        lines.append(f"| {label} | {pair(wall, 's')} | {pair(used, 's')} | {pair(rss, 'MB', 0)} "
                     f"| {pair(step, 'ms', 1)} | {search} |")
    lines.append(f"\n(each cell: {names[0]} / {names[1]} (ratio))")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, default=1.0, help="a fraction of the full store")
    parser.add_argument("--keep", type=Path, help="state dir to keep and reuse")
    parser.add_argument("--search-rate", type=float, default=SEARCH_RATE, metavar="PER_S",
                        help=f"searches a second while a pass runs (default {SEARCH_RATE:g}; "
                        "0: back to back)")
    parser.add_argument("--rounds", type=int, default=1,
                        help="run the passes this many times, each from the store as built "
                        "(so each does the first-run work, and so does the next run on a kept "
                        "store); the p99s pool all rounds")
    parser.add_argument("--against", type=Path, metavar="TREE",
                        help="also run another checkout's daemon (e.g. `git worktree add "
                        "--detach /tmp/old main`) on the same store, the two taking turns round "
                        "by round (needs --keep; --rounds 2 or more)")
    args = parser.parse_args(argv)
    if args.against is not None:
        return compare(args)
    state = args.keep or Path(tempfile.mkdtemp(prefix="mdp-", dir="/tmp"))
    home = state / "home"
    again = args.keep is not None or args.rounds > 1  # the store as built is needed again
    daemon = open_store(state, home, args.scale, again)
    report = Report(0)
    cpu = CpuMeter()
    os.environ["MEMORYD_HOME"] = str(state)  # the bare embedder reads the daemon's config
    embedder = load_bare_embedder()
    reference = [e["text"] for e in Corpus(seed=31).entries(REFERENCE_TEXTS)]
    try:
        queries = Corpus(seed=29).queries(SEARCHES)
        with Client(daemon.socket, timeout_s=900) as client, \
                Client(daemon.socket, timeout_s=60) as searcher:
            settle(client)
            status = client.status()
            report.info["entries"] = status["entries"]
            report.info["search_rate"] = args.search_rate or "back to back"
            progress(f"store: {status['entries']}")
            for query in queries:  # warm: a cold page cache made the idle tail 3× the warm one
                searcher.search(query + " warm", agents=["*"], limit=10)
            idle = []
            cpu.daemon_pid = daemon.pid
            with cpu.phase("idle searches"):
                for number, query in enumerate(queries):
                    started = time.perf_counter()
                    searcher.search(query + f" idle {number}", agents=["*"], limit=10)
                    idle.append(time.perf_counter() - started)
            measure_embedder(report, embedder, reference, "machine speed before the passes")
            measure_jitter(report, "before the passes")
            report.add("search p50, idle", percentile(ms(idle), 50), "ms")
            report.add("search p99, idle", percentile(ms(idle), 99), "ms", le=SEARCH_P99_MS,
                       note=f"{len(idle)} searches back to back")
            if args.search_rate:  # the baseline: the same arrivals as during the passes
                stop = threading.Event()
                timer = threading.Timer(IDLE_AT_RATE_S, stop.set)
                timer.start()
                with cpu.phase("idle searches at the passes' rate"):
                    baseline = search_loop(searcher, queries, stop, args.search_rate)
                rate = f"idle, {args.search_rate:g} a second as during the passes"
                report.add(f"search p50, {rate}", percentile(ms(baseline), 50), "ms")
                report.add(f"search p99, {rate}", percentile(ms(baseline), 99), "ms",
                           le=SEARCH_P99_MS, note=f"{len(baseline)} searches")
            else:
                baseline = idle
            order, options = ORDER, OPTIONS
            known = {p["pass"] for p in client.pass_list()["passes"]}
            for name in sorted({name for name, _ in order} - known):
                progress(f"skipping {name}: this daemon has no such pass")
            order = [(name, label) for name, label in order if name in known]
            walls: dict[str, list[float]] = {label: [] for _, label in order}
            steps: dict[str, list[dict[str, Any]]] = {label: [] for _, label in order}
            searched: dict[str, list[float]] = {label: [] for _, label in order}
            for number in range(args.rounds):
                if number:  # the next round finds the same work to do
                    daemon.stop()
                    restore_pristine(state)
                    daemon = start_daemon(state, home)
                    settle(client)
                    cpu.daemon_pid = daemon.pid
                for name, label in order:
                    progress(f"round {number + 1}/{args.rounds}: running {label}")
                    with cpu.phase(f"{label}, round {number + 1}"):
                        wall, times, result = measure_pass(client, searcher, name, queries,
                                                           args.search_rate,
                                                           **options.get(label, {}))
                    report.info[label] = result
                    walls[label].append(wall)
                    searched[label] += times
                    if "longest_step" in result:  # an older daemon does not say
                        steps[label].append(result["longest_step"])
            during: list[float] = []
            for _, label in order:
                report_pass(report, label, walls[label], steps[label], searched[label])
                during += searched[label]
            if during:
                report.add("search p99 while any pass runs", percentile(ms(during), 99), "ms",
                           le=SEARCH_P99_MS, note=f"{len(during)} searches, p50 "
                           f"{percentile(ms(during), 50):.1f} ms")
                report.add("search p99 while any pass runs, against idle",
                           percentile(ms(during), 99) / percentile(ms(baseline), 99), "×",
                           note="the issue's 'the same as idle': 1 would be; idle "
                           + ("at the same rate" if args.search_rate else "back to back"))
            measure_embedder(report, embedder, reference, "machine speed after the passes")
            measure_jitter(report, "after the passes")
            cpu.report(report)
    finally:
        code = daemon.stop()
        if not args.keep:
            shutil.rmtree(state, ignore_errors=True)
    print(report.table())
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(report.to_json(), indent=2, default=str))
    return 0 if code == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
