#!/usr/bin/env python
"""How stable the memory block is from one session to the next: a provider caches the prompt
prefix, and a block that changes while memory did not defeats that (issue 37, §4).

    python bench/bench_block_stability.py                 # ~300 entries, 60 simulated days
    python bench/bench_block_stability.py --days 20 --seed 3

Builds, under a fresh directory in /tmp, a realistic project memory for Claude Code in a git
repository, with the bench's generator (bench/corpus.py) and the real daemon (a process):

- notebooks in the agent's memory directory: a pinned ``CONTEXT.md``, a notebook with dated
  Mistakes, Learnings, Feedback and Session Log bullets, and topic files with descriptions;
- lessons, facts (keyed and not), notes and feedback (a person's, through the terminal
  channel), three quarters of them the project's and the rest global, dated over the past
  ~400 days (a tenth of them older than a year, a third younger than a month).

Then, with the daemon stopped, the same store opens in this process (the daemon's real parts: store,
model, search) and the blocks are built by the real builder, its clock set to the simulated
time of each session:

1. ``after a restart``: the block the daemon served last against the first one built then (at
   its start the daemon refreshes the database's statistics, and the query plan may change);
2. ``unchanged``: sessions minutes and hours apart on the first day, then one a day (at a
   random hour) for ``--days`` days; for each pair of consecutive sessions, the share of the
   newer block's bytes that are the older one's (lines in a longest common subsequence) and
   the share that is a common prefix (what a prefix cache reuses); the prompt hook's block for
   a few fixed prompts likewise;
3. ``one added``: lessons, feedback, notes and keyed facts written one at a time (through the
   write path, as the daemon writes them), each block against the one before it: which lines went
   (an item the budget trim dropped, or another change) and which came (the new entry's own,
   or another change).

Prints a table; the figures as JSON on the last line. Target: ≥ 95 % identical bytes between
consecutive sessions while memory did not change; when one entry is added, no change but its
line and the trim.
"""

from __future__ import annotations

import argparse
import asyncio
import difflib
import itertools
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Self

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))  # the working tree's memoryd, not an installed one

from corpus import Corpus  # noqa: E402
from memoryd_client import Client, DaemonUnreachableError  # noqa: E402

DAY = 86_400.0
AGENT = "claude-code"
#: (share of entries, youngest age in days, oldest): a third under a month, a tenth over a year
AGES = ((0.35, 0.0, 30.0), (0.3, 30.0, 90.0), (0.25, 90.0, 365.0), (0.1, 365.0, 420.0))
KINDS = {"lesson": 80, "fact": 70, "note": 60, "feedback": 20}
PROMPTS = ("how do we deploy the payments worker to staging?",
           "why does the search indexer time out in CI?",
           "what did we decide about the public API freeze?",
           "write a test for the webhook relay retries",
           "which config holds the session lifetime?")


def age_days(rng: random.Random) -> float:
    pick = rng.random()
    for share, low, high in AGES:
        if pick < share:
            return rng.uniform(low, high)
        pick -= share
    return rng.uniform(AGES[-1][1], AGES[-1][2])


# -- the memory ---------------------------------------------------------------------------

def write_notebooks(memory_dir: Path, rng: random.Random, now: float, corpus: Corpus) -> int:
    """CONTEXT.md (pinned), a notebook of dated bullets, topic files with descriptions."""
    memory_dir.mkdir(parents=True, exist_ok=True)
    (memory_dir / "CONTEXT.md").write_text(
        "# Project context\n\nThe billing service and its workers live in this repository.\n"
        "- Python 3.11, uv for dependencies, pytest for tests.\n"
        "- Releases are cut on Tuesdays from main; staging mirrors production weekly.\n"
        "- The on-call rotation is in docs/oncall.md.\n")
    drawn = corpus.entries(60, salt=99)
    sections = {"Mistakes": [], "Learnings": [], "Feedback": [], "Session Log": []}
    for i, entry in enumerate(drawn[:48]):
        day = time.strftime("%Y-%m-%d", time.gmtime(now - age_days(rng) * DAY))
        section = list(sections)[i % 4]
        sections[section].append(f"- [{day}] {entry['text']}")
    text = "---\ndescription: what this project taught us\n---\n# Notebook\n"
    for name, bullets in sections.items():
        text += f"\n## {name}\n" + "\n".join(sorted(bullets, reverse=True)) + "\n"
    (memory_dir / "notebook.md").write_text(text)
    for number, entry in enumerate(drawn[48:], 1):
        topic = entry["category"]
        (memory_dir / f"topic-{number:02d}-{topic}.md").write_text(
            f"---\ndescription: notes on {topic.replace('-', ' ')}\n---\n# {topic}\n\n"
            f"{entry['text']}\n")
    return 48 + len(drawn[48:])


def drafts(corpus: Corpus, rng: random.Random, repo: Path, now: float) -> list[dict[str, Any]]:
    """Lessons, facts, notes and feedback of Claude Code, dated, mostly the project's."""
    pool = corpus.entries(2000)
    out: list[dict[str, Any]] = []
    for kind, count in KINDS.items():
        chosen = [e for e in pool if e["kind"] == kind][:count]
        if len(chosen) < count:  # the generator has few notes: facts written as notes
            chosen += [e for e in pool if e["kind"] == "fact" and not e.get("key")][-count:]
            chosen = chosen[:count]
        for entry in chosen:
            draft: dict[str, Any] = {"agent": AGENT, "category": entry["category"],
                                     "text": entry["text"], "kind": kind, "force": True,
                                     "created": now - age_days(rng) * DAY}
            if kind == "fact" and entry.get("key"):
                draft["key"] = entry["key"]
            elif kind == "fact" and rng.random() < 0.4:
                draft["key"] = f"{rng.choice(['project', 'tool', 'pref'])}.{entry['category']}" \
                               f"_{len(out)}"
            if kind == "lesson":
                draft["polarity"] = rng.choice(["negative", "positive", None])
            if rng.random() < 0.75:
                draft["cwd"] = str(repo)
            else:
                draft["is_global"] = True
            out.append({k: v for k, v in draft.items() if v is not None})
    rng.shuffle(out)
    return out


def remember_all(client: Client, person: Client, entries: list[dict[str, Any]]) -> None:
    for entry in entries:
        who = person if entry["kind"] == "feedback" else client
        fields = {k: v for k, v in entry.items() if k not in ("agent", "category", "text")}
        who.remember(entry["agent"], entry["category"], entry["text"], **fields)


def wait_ready(socket: Path) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            with Client(socket, timeout_s=10) as c:
                status = c.status()
                if status["model"] and status["vector_index"]["ready"]:
                    return
        except DaemonUnreachableError:
            pass
        time.sleep(0.2)
    raise SystemExit("daemon did not start")


def build_memory(home: Path, seed: int, now: float) -> tuple[Path, dict[str, int], str]:
    """The memory, written by a real daemon; returns the repository, the counts and the
    block the daemon served last."""
    repo = home / "user" / "src" / "billing"
    repo.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    rng = random.Random(seed)
    corpus = Corpus(seed=seed)
    socket = home / "memoryd.sock"
    with (home / "daemon.log").open("w") as log:
        daemon = subprocess.Popen([sys.executable, "-m", "memoryd", "serve"], stderr=log,
                                  stdout=subprocess.DEVNULL)
    try:
        wait_ready(socket)
        bullets = write_notebooks(home / "agents" / AGENT, rng, now, corpus)
        entries = drafts(corpus, rng, repo, now)
        with Client(socket, timeout_s=300) as client, \
                Client(socket, timeout_s=300, channel="terminal") as person:
            remember_all(client, person, entries)
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:  # the notebooks indexed
                listed = client.list_entries(agent=AGENT, limit=1)["total"]
                if listed >= len(entries) + bullets - 5:
                    break
                time.sleep(0.2)
            total = client.list_entries(agent=AGENT, limit=1)["total"]
            served = client.context(AGENT, cwd=str(repo))["text"]
    finally:
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(timeout=60)
    counts = {kind: sum(1 for e in entries if e["kind"] == kind) for kind in KINDS}
    return repo, {**counts, "file_lines": bullets, "total": total}, served


# -- comparing blocks -----------------------------------------------------------------------

def shared(old: str, new: str) -> tuple[float, float]:
    """(share of the new block's bytes in lines it has in common with the old, in order;
    share of its bytes in the common prefix)."""
    if not new:
        return 1.0, 1.0
    a, b = old.split("\n"), new.split("\n")
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    same = sum(len("\n".join(b[m.b:m.b + m.size]).encode()) + (1 if m.b + m.size < len(b) else 0)
               for m in matcher.get_matching_blocks() if m.size)
    prefix = len(os.path.commonprefix([old.encode(), new.encode()]))
    size = len(new.encode())
    return min(same / size, 1.0), prefix / size


def line_changes(old: str, new: str) -> tuple[list[str], list[str]]:
    """(lines that went, lines that came)."""
    a, b = old.split("\n"), new.split("\n")
    went, came = [], []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag in ("delete", "replace"):
            went += a[i1:i2]
        if tag in ("insert", "replace"):
            came += b[j1:j2]
    return went, came


# -- the sessions ---------------------------------------------------------------------------

class Sessions:
    """The daemon's real parts over the bench's store; blocks built at a simulated time."""

    def __init__(self, repo: Path) -> None:
        self.repo = repo
        self.now = time.time()

    async def __aenter__(self) -> Self:
        from memoryd.config import load_config
        from memoryd.server.parts import Parts
        from memoryd.sessions.context import ContextBuilder
        from memoryd.settings import Settings

        config = load_config()
        self.parts = await Parts.standalone(Settings(config))
        assert self.parts.threads.ready is not None
        await self.parts.threads.ready
        deadline = time.monotonic() + 120
        while self.parts.derived.index is None and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        self.builder = ContextBuilder(self.parts.searcher, self.parts.store,  # type: ignore[arg-type]
                                      config.context.shared_agents, lambda: config.memory_dir,
                                      clock=lambda: self.now)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.parts.stop()

    async def block(self, prompt: str | None = None) -> Any:
        from memoryd.sessions.context import DEFAULT_BUDGET_CHARS, PROMPT_BUDGET_CHARS

        vector, words = await asyncio.gather(
            self.parts.threads.query(prompt), self.parts.search.question_words(prompt)) \
            if prompt else (None, {})
        budget = DEFAULT_BUDGET_CHARS if prompt is None else PROMPT_BUDGET_CHARS
        return await self.parts.db(lambda: self.builder.build(
            AGENT, cwd=str(self.repo), prompt=prompt, prompt_vector=vector, prompt_words=words,
            budget=budget, only_relevant=prompt is not None))

    async def remember(self, entry: dict[str, Any]) -> None:
        from memoryd.server.params import Params
        from memoryd.server.requests import remember_request

        await self.parts.writes.remember(remember_request(Params("bench", {
            "agent": AGENT, "cwd": str(self.repo), "force": True, **entry})))


def additions(seed: int) -> list[tuple[str, dict[str, Any]]]:
    """Entries learned one at a time: lessons and feedback (the sections the block fills with
    first), notes and keyed facts, in turn."""
    wanted = {"lesson": 8, "feedback": 6, "note": 3, "fact": 3}
    drawn = Corpus(seed=seed).entries(600, salt=123)
    out: list[tuple[str, dict[str, Any]]] = []
    for kind, count in wanted.items():
        pool = [e for e in drawn if e["kind"] == ("fact" if kind == "note" else kind)]
        for number, entry in enumerate(pool[:count]):
            draft = {"category": entry["category"], "kind": kind, "text": entry["text"]}
            if kind == "fact":
                draft["key"] = f"project.{entry['category']}_{number}"
            out.append((kind, draft))
    order = random.Random(seed).sample(range(len(out)), len(out))
    return [out[i] for i in order]


async def measure(repo: Path, days: int, seed: int, served: str) -> dict[str, Any]:
    rng = random.Random(seed + 1)
    out: dict[str, Any] = {}
    async with Sessions(repo) as sessions:
        start = sessions.now
        first = (await sessions.block()).text
        out["after_restart"] = {"identical": shared(served, first)[0], "same": served == first}
        # minutes and hours apart on the first day, then one a day at a random hour
        times = [start, start + 600, start + 3 * 3600, start + 9 * 3600]
        times += [start + d * DAY + rng.uniform(-8, 8) * 3600 for d in range(1, days + 1)]
        blocks, prompts = [], []
        for at in times:
            sessions.now = at
            blocks.append((await sessions.block()).text)
            prompts.append([(await sessions.block(p)).text for p in PROMPTS])
        pairs = [shared(a, b) for a, b in itertools.pairwise(blocks)]
        prompt_pairs = [shared(a[i], b[i]) for a, b in itertools.pairwise(prompts)
                        for i in range(len(PROMPTS))]
        changed = [line_changes(a, b) for a, b in itertools.pairwise(blocks)]
        out["unchanged"] = {
            "sessions": len(blocks), "block_chars": statistics.mean(len(b) for b in blocks),
            "identical_mean": statistics.mean(p[0] for p in pairs),
            "identical_min": min(p[0] for p in pairs),
            "prefix_mean": statistics.mean(p[1] for p in pairs),
            "byte_identical_pairs": sum(a == b for a, b in itertools.pairwise(blocks)),
            "pairs": len(pairs),
            "first_day": [round(p[0], 4) for p in pairs[:3]],
            "lines_changed_mean": statistics.mean(len(c[1]) for c in changed),
            "worst": changed[min(range(len(pairs)), key=lambda k: pairs[k][0])],
            "prompt_identical_mean": statistics.mean(p[0] for p in prompt_pairs),
            "prompt_byte_identical_pairs": sum(a[i] == b[i] for a, b in itertools.pairwise(prompts)
                                               for i in range(len(PROMPTS))),
            "prompt_pairs": len(prompt_pairs),
        }
        sessions.now += 60
        out["one_added"] = {}
        for kind, entry in additions(seed):
            before = await sessions.block()
            await sessions.remember(entry)
            after = await sessions.block()
            went, came = line_changes(before.text, after.text)
            trimmed = {line for i in after.dropped for line in i.text.split("\n")}
            new_lines = [i.text for i in after.items if i.entry_id not in
                         {j.entry_id for j in before.items + before.dropped}]
            same, prefix = shared(before.text, after.text)
            row = out["one_added"].setdefault(kind, {"added": 0, "shown": 0, "clean": 0,
                                                     "identical": [], "prefix": [],
                                                     "other": []})
            other = [f"came: {line}" for line in came if line not in new_lines] + \
                    [f"went: {line}" for line in went if line not in trimmed]
            row["added"] += 1
            row["shown"] += any(line in new_lines for line in came)
            row["clean"] += not other
            row["identical"].append(same)
            row["prefix"].append(prefix)
            row["other"] += other
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=60)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="mdbs-", dir="/tmp"))
    (home / "user").mkdir()
    for name in [n for n in os.environ if n.startswith(("MEMORYD_", "XDG_"))]:
        del os.environ[name]
    os.environ.update({"MEMORYD_HOME": str(home), "HOME": str(home / "user")})
    try:
        started = time.perf_counter()
        repo, counts, served = build_memory(home, args.seed, time.time())
        built = time.perf_counter() - started
        figures = asyncio.run(measure(repo, args.days, args.seed, served))
    finally:
        if not args.keep:
            shutil.rmtree(home, ignore_errors=True)
    same = figures["unchanged"]
    rows = [
        ("memory", f"{counts['total']} entries ({built:.0f} s to build)", "", None),
        ("block size, mean", f"{same['block_chars']:.0f} chars", "", None),
        ("sessions (4 on day 0, then daily)", f"{same['sessions']}", "", None),
        ("identical bytes, consecutive, mean", f"{same['identical_mean']:.1%}", ">= 95%",
         same["identical_mean"] >= 0.95),
        ("identical bytes, consecutive, worst", f"{same['identical_min']:.1%}", "", None),
        ("common prefix, consecutive, mean", f"{same['prefix_mean']:.1%}", "", None),
        ("byte-identical consecutive blocks",
         f"{same['byte_identical_pairs']} of {same['pairs']}", "", None),
        ("the daemon's last block against the first after a restart",
         f"{figures['after_restart']['identical']:.1%}", "100%",
         figures["after_restart"]["same"]),
        ("minutes/hours apart (day 0)", " ".join(f"{s:.1%}" for s in same["first_day"]), "",
         None),
        ("prompt blocks, identical bytes, mean", f"{same['prompt_identical_mean']:.1%}", "",
         None),
        ("prompt blocks byte-identical",
         f"{same['prompt_byte_identical_pairs']} of {same['prompt_pairs']}", "", None),
    ]
    for kind, added in figures["one_added"].items():
        rows.append((f"{kind}s added one at a time: shown, no other change",
                     f"{added['shown']}, {added['clean']} of {added['added']}", "all",
                     added["clean"] == added["added"]))
        rows.append((f"{kind}s added: identical bytes, prefix (means)",
                     (f"{statistics.mean(added['identical']):.1%}, "
                      f"{statistics.mean(added['prefix']):.1%}"), "", None))
    width = max(len(r[0]) for r in rows)
    print(f"{'metric':<{width}}  {'value':>36}  {'target':>8}  ok")
    for name, value, target, ok in rows:
        mark = "" if ok is None else ("ok" if ok else "MISSED")
        print(f"{name:<{width}}  {value:>36}  {target:>8}  {mark}")
    went, came = same["worst"]
    for line in went:
        print(f"  the worst pair, went: {line[:150]}")
    for line in came:
        print(f"  the worst pair, came: {line[:150]}")
    for kind, added in figures["one_added"].items():
        for line in added["other"]:
            print(f"  a {kind} added, other change: {line[:150]}")
    print(json.dumps({"counts": counts, "days": args.days, "seed": args.seed, **figures},
                     ensure_ascii=False, default=str))
    return 0 if all(r[3] in (None, True) for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
