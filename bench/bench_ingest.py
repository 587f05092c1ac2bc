#!/usr/bin/env python
"""Benchmark memoryd's live ingestion against its budget, through the real daemon and client.

    python bench/bench_ingest.py                  # 10,000 memory files, 100,000 transcript lines
    python bench/bench_ingest.py --quick          # 1,000 files, 10,000 lines (a smoke run)
    python bench/bench_ingest.py --files 3000 --transcript-lines 30000

Everything lives under one short temp dir, ``/tmp/mdi-XXXX``: the daemon's state
(``MEMORYD_HOME=/tmp/mdi-XXXX/state``) and a fake home (``HOME=/tmp/mdi-XXXX/home``, set in the
daemon's environment), so the built-in sources see only the generated tree. The tree:

- ``~/.mastersof-ai/agents/{agent}/memory/**.md``: ``--files`` notebook files over 20 agents in
  nested topic folders (plus a ``CONTEXT.md``, a ``notebook.md`` and a ``system/`` folder each),
  each with ``## Mistakes`` / ``## Learnings`` / ``## Shareholder Feedback`` / ``## Session Log``
  and 2–8 dated bullets ``- [2026-03-15] …`` drawn from ``bench/corpus.py`` (all distinct, so the
  daemon's content-hash vector cache never answers), some wrapped onto continuation lines, some
  with a nested bullet, some files with frontmatter;
- ``~/.claude/projects/-home-ana-proj-N/<uuid>.jsonl``: Claude Code transcripts totalling
  ``--transcript-lines`` lines (500 per session; every 10th session also has a subagent file
  ``<uuid>/subagents/agent-<id>.jsonl``), shaped as integrations.md §2: typed prompts, assistant
  messages spread over several lines sharing ``message.id`` (thinking, text and tool_use blocks),
  tool_result user records with ``toolUseResult``, progress / attachment / file-history-snapshot
  records, slash-command wrappers, ``isMeta`` caveats, and in one session out of four a compaction
  (``compact_boundary`` + ``isCompactSummary``).

Two phases, two daemons on one state dir (``python -m memoryd serve`` subprocesses):

A. **Memory files.** The daemon starts on the tree of markdown files only. Timeline from the
   spawn: socket answers, model loaded, every entry keyword-searchable (ingest queue 0, not
   scanning, as many active entries as ``memoryd.ingest.markdown`` finds in the files), backlog 0 (every
   entry has a vector). Initial indexing rate = entries / (spawn → backlog 0); files/s likewise.
   Then, with all files watched and indexed: RSS; 50 edits (append ``- [2026-11-22] nonce-XXXX
   …`` to a random file, then search for the nonce (``match=True``, limit 5, the hit whose text
   holds the nonce: earlier nonce bullets share the word "nonce") every 5 ms until the hit is
   there *with* a vector score: embedding included; the query's own vector is cached first by
   one search before the write, so query embedding is not counted); idle CPU (the daemon's
   utime + stime over ``--idle-s`` seconds, as % of one core).
B. **Transcripts.** The daemon is stopped, the transcripts (generated beforehand outside the
   fake home) are moved in, and a new daemon starts on the same state dir: the unchanged
   markdown files are known and skipped, so what is indexed is the transcripts alone, while all
   memory files stay watched — as when a user's sessions pile up. The rate is chunks /
   (spawn → backlog 0), including the start-up (rebuilding the RAM vector index of phase A's
   entries); lines/s and files/s likewise; the expected chunk count comes from running
   ``memoryd.ingest.transcript`` over the files here. Then RSS and peak RSS, and idle CPU.

Finally, with the phase-B daemon idle, the bare embedder (``memoryd.embedding.model.Embedder`` in this
process, batches of 32) on a sample of the very texts the daemon indexed, read read-only from its
database (``via='watch'``): markdown entries and transcript chunks separately. The ratio
indexing rate / bare rate is the budget (≥ 0.8: indexing is embedding-bound).

Budgets (the issue's): edit → searchable p50 ≤ 250 ms and p95 ≤ 600 ms; indexing rate ≥ 0.8 ×
the bare embedder's; idle CPU ~0 (here ≤ 1 % of one core); RSS ≤ 300 MB (docs/performance.md),
applied to the peak (VmHWM) too, since the embedder's memory on long texts must be bounded.

Prints a table (metric | value | budget | status) and writes the same as JSON to
``bench/results/ingest.json`` (``ingest-quick.json`` with --quick). Two benchmarks (or a test
run) on a 2-core machine spoil each other's figures, so it starts only on a quiet machine (no
``bench_*.py`` or pytest running, other processes below 0.25 cores), waits for one again before
the edits and the bare embedder, redoes the edits (up to 3 times) when other processes took more
than that meanwhile, and reports the CPU other processes (and the hypervisor) took per phase.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import string
import subprocess
import sys
import tempfile
import textwrap
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))  # the working tree's memoryd, not an installed one

from bench_store import (  # noqa: E402
    DaemonProcess,
    Report,
    machine,
    ms,
    percentile,
    progress,
)
from corpus import NAMES, PROJECTS, SERVICES, TOOLS, Corpus  # noqa: E402
from memoryd_client import Client  # noqa: E402
from memoryd_client.errors import MemorydError  # noqa: E402

AGENTS = [
    "designer", "coder", "reviewer", "ops-bot", "researcher", "planner", "tester", "scribe",
    "sticker-artist", "support", "analyst", "writer", "scout", "builder", "auditor",
    "marketer", "translator", "archivist", "mentor", "curator",
]
SECTIONS = ["Mistakes", "Learnings", "Shareholder Feedback", "Session Log"]
LINES_PER_SESSION = 500
SUBAGENT_EVERY = 10  # every 10th session also has a subagent transcript
SUBAGENT_LINES = 60
EDITS = 50
EDIT_POLL_S = 0.005
EDIT_TIMEOUT_S = 30.0
STATUS_POLL_S = 0.5
EMBED_BATCH = 32
BACKFILL_BATCH = 64  # memoryd.server.BACKFILL_BATCH: what the daemon hands the embedder
SAMPLE_MD = 3_000
SAMPLE_CHUNKS = 2_000
RSS_BUDGET_MB = 300  # docs/performance.md: RSS ≤ 300 MB
IDLE_CPU_BUDGET_PCT = 1.0  # "should be ~0"
OTHERS_PATTERN = r"bench_[a-z_]+\.py|pytest"  # other benchmarks and test runs
QUIET_CORES = 0.25  # the machine counts as quiet while other processes use less than this
EDIT_ATTEMPTS = 3


# -- texts ------------------------------------------------------------------------------------


class TextPool:
    """Distinct corpus sentences, drawn in batches as needed."""

    def __init__(self, seed: int) -> None:
        self.corpus = Corpus(seed)
        self.seen: set[str] = set()
        self.buffer: list[dict[str, Any]] = []
        self.salt = 1000

    def take(self) -> dict[str, Any]:
        if not self.buffer:
            self.salt += 1
            self.buffer = self.corpus.entries(2_000, salt=self.salt, avoid=self.seen)[::-1]
        return self.buffer.pop()

    def text(self) -> str:
        return self.take()["text"]


def slug(text: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in text.lower()).strip("-")


def random_date(rng: random.Random, start: str = "2025-01-01", days: int = 660) -> str:
    return (datetime.fromisoformat(start) + timedelta(days=rng.randrange(days))).date().isoformat()


# -- markdown memory files --------------------------------------------------------------------


def agent_dirs(rng: random.Random) -> list[str]:
    """~25 nested topic folders of one agent's memory dir."""
    dirs = ["", "system"]
    dirs += [f"projects/{p}" for p in rng.sample(PROJECTS, 8)]
    dirs += [f"projects/{p}/decisions" for p in rng.sample(PROJECTS, 3)]
    dirs += [f"tools/{slug(t)}" for t in rng.sample(TOOLS, 5)]
    dirs += [f"people/{slug(n)}" for n in rng.sample(NAMES, 3)]
    dirs += [f"u-{rng.randint(10, 9999)}" for _ in range(2)]
    dirs += ["archive/2025", "archive/2026/q1", "archive/2026/q2"]
    return dirs


def section_of(entry: dict[str, Any], rng: random.Random) -> str:
    kind = entry["kind"]
    if kind == "feedback":
        return "Shareholder Feedback" if rng.random() < 0.8 else "Learnings"
    if kind == "lesson":
        return "Mistakes" if rng.random() < 0.5 else "Learnings"
    if kind == "note":
        return "Session Log" if rng.random() < 0.7 else "Learnings"
    return rng.choice(["Learnings", "Session Log", "Learnings", "Mistakes"])


def bullet(text: str, date: str, rng: random.Random) -> str:
    line = f"- [{date}] {text}"
    if len(line) > 100 and rng.random() < 0.4:  # wrapped, as agents write long bullets
        line = "\n".join(textwrap.wrap(line, 78, subsequent_indent="  ", break_on_hyphens=False))
    if rng.random() < 0.1:
        line += f"\n  - follow-up: checked again on {random_date(rng, '2026-01-01', 300)}, still true"
    return line


def notebook(agent: str, topic: str, pool: TextPool, rng: random.Random) -> str:
    sections: dict[str, list[str]] = {s: [] for s in SECTIONS}
    for _ in range(rng.randint(2, 8)):
        entry = pool.take()
        sections[section_of(entry, rng)].append(bullet(entry["text"], random_date(rng), rng))
    parts = []
    if rng.random() < 0.3:
        kind = rng.choice(["project", "feedback", "reference", "user"])
        parts.append(f"---\ndescription: {agent} notes on {topic}\ntype: {kind}\n---\n")
    parts.append(f"# {agent.replace('-', ' ').title()} Agent Memory — {topic}\n")
    for name in SECTIONS:  # Session Log last: appended edits land in it
        parts.append(f"\n## {name}\n")
        if sections[name]:
            parts.append("\n".join(sections[name]) + "\n")
    return "".join(parts)


@dataclass
class MarkdownTree:
    files: list[Path]
    entries: int
    bytes: int


def write_markdown_tree(home: Path, n_files: int, pool: TextPool, seed: int) -> MarkdownTree:
    from memoryd.ingest.markdown import parse_memory_file

    rng = random.Random(f"{seed}/markdown")
    files: list[Path] = []
    entries = size = 0
    agents = AGENTS[:max(1, min(len(AGENTS), n_files // 10))]
    for a, agent in enumerate(agents):
        root = home / ".mastersof-ai" / "agents" / agent / "memory"
        count = n_files // len(agents) + (1 if a < n_files % len(agents) else 0)
        dirs = agent_dirs(rng)
        for i in range(count):
            if i == 0:
                relative = "CONTEXT.md"
            elif i == 1:
                relative = "notebook.md"
            else:
                directory = rng.choice(dirs)
                topic = directory.rsplit("/", 1)[-1] or "general"
                relative = f"{directory}/{topic}-{i:04d}.md".lstrip("/")
            topic = Path(relative).parent.name or "general"
            text = notebook(agent, topic, pool, rng)
            path = root / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            files.append(path)
            entries += len(parse_memory_file(text, relative).items)
            size += len(text.encode())
    return MarkdownTree(files, entries, size)


# -- Claude Code transcripts ------------------------------------------------------------------


CODE_LINES = [
    "def {name}(self, {arg}: str) -> None:", "    return self.{name}_cache.get({arg})",
    "import {mod}", "from {mod} import {name}", "    if not {arg}:", "        raise ValueError({arg!r})",
    "class {Name}Service:", "    # TODO({person}): drop this once the {service} is migrated",
    "    for item in {arg}s:", "        total += item.amount", "    log.info(\"{name} done in %.1f s\", elapsed)",
    "{name}_TIMEOUT_S = {n}", "@pytest.mark.parametrize(\"{arg}\", [1, 2, 3])", "",
    "    await asyncio.sleep({n})", "export const {name} = ({arg}) => {arg}.trim();",
    "  \"{name}\": \"^{n}.2.0\",", "SELECT id, {arg} FROM {name} WHERE created > now() - interval '{n} days';",
]
LOG_LINES = [
    "{n} passed, 2 skipped in {n}.31s", "ERROR {service}: connection reset by peer (attempt {n})",
    "WARNING: {mod} is deprecated, use {name} instead", "Step {n}/12 : RUN pip install -r requirements.txt",
    " ---> Using cache", "error[E0308]: mismatched types in src/{name}.rs:{n}:9",
    "FAILED tests/test_{name}.py::test_{arg} - AssertionError: assert {n} == {n}",
    "{mod}: {n} files changed, {n} insertions(+), 3 deletions(-)", "",
]
PROMPT_LEADS = [
    "", "", "Quick question: ", "Can you look into this? ", "Follow-up on yesterday: ",
    "ok next thing. ", "Please fix this: ", "Context for the next task: ", "hmm, ",
    "Before we ship: ", "I noticed something odd. ", "Reminder from the retro: ",
]
PROMPT_ASKS = [
    "Can you check whether that still holds?", "Please update the code accordingly.",
    "What would you change?", "Write a test for it first.", "Is that documented anywhere?",
    "Let's fix it properly this time.", "Can you find where this happens?", "",
    "Don't touch the migrations though.", "Summarise what you find.",
]
ANSWER_LEADS = [
    "I'll start by reading the relevant files.", "Let me check the current state first.",
    "Good catch — here is what I found.", "Done. Summary of the change:",
    "I looked at the code paths involved.", "Here's my analysis.", "Short answer: yes.",
    "I ran the tests after the change.", "Two things stand out.",
]
TOOLS_CC = ["Bash", "Read", "Grep", "Edit", "Glob", "Write", "TodoWrite"]


class TranscriptWriter:
    """One Claude Code session file: records chained by parentUuid, growing timestamps."""

    def __init__(self, rng: random.Random, pool: TextPool, session: str, cwd: str,
                 start: datetime, agent_id: str | None = None) -> None:
        self.rng, self.pool, self.session, self.cwd = rng, pool, session, cwd
        self.now = start
        self.agent_id = agent_id
        self.parent: str | None = None
        self.records: list[dict[str, Any]] = []

    # ids and filler
    def uid(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def token(self, prefix: str, n: int = 24) -> str:
        return prefix + "".join(self.rng.choices(string.ascii_letters + string.digits, k=n))

    def fill(self, template: str) -> str:
        rng = self.rng
        return template.format(
            name=rng.choice(["parse", "load", "render", "sync", "export", "retry", "flush"]) + "_"
            + rng.choice(["items", "config", "job", "invoice", "sticker", "token", "batch"]),
            Name=rng.choice(["Invoice", "Sticker", "Export", "Session", "Webhook"]),
            arg=rng.choice(["path", "user", "order", "payload", "record"]),
            mod=rng.choice(["os", "json", "requests", "sqlalchemy", "pydantic", "asyncio", "lodash"]),
            person=rng.choice(NAMES), service=rng.choice(SERVICES), n=rng.randint(1, 500))

    def blob(self, templates: list[str], lo: int, hi: int) -> str:
        return "\n".join(self.fill(self.rng.choice(templates)) for _ in range(self.rng.randint(lo, hi)))

    def tick(self, lo: float = 0.5, hi: float = 20.0) -> str:
        self.now += timedelta(seconds=self.rng.uniform(lo, hi))
        return self.now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{self.now.microsecond // 1000:03d}Z"

    def base(self, kind: str, **extra: Any) -> dict[str, Any]:
        record_id = self.uid()
        record = {"parentUuid": self.parent, "isSidechain": self.agent_id is not None,
                  "userType": "external", "cwd": self.cwd, "sessionId": self.session,
                  "version": "2.1.201", "gitBranch": "main", "type": kind, "uuid": record_id,
                  "timestamp": self.tick(), **extra}
        if self.agent_id:
            record["agentId"] = self.agent_id
        self.parent = record_id
        self.records.append(record)
        return record

    # record kinds
    def user(self, content: Any, **extra: Any) -> dict[str, Any]:
        return self.base("user", message={"role": "user", "content": content}, **extra)

    def assistant_message(self, blocks: list[dict[str, Any]]) -> None:
        """One API message: one line per content block, sharing message.id and requestId."""
        message_id, request_id = self.token("msg_01"), self.token("req_011C")
        model = "claude-sonnet-4-5" if self.agent_id else "claude-opus-4-5"
        for block in blocks:
            self.base("assistant", requestId=request_id, message={
                "model": model, "id": message_id, "type": "message", "role": "assistant",
                "content": [block], "stop_reason": None, "stop_sequence": None,
                "usage": {"input_tokens": self.rng.randint(3, 40),
                          "cache_read_input_tokens": self.rng.randint(1000, 90000),
                          "output_tokens": self.rng.randint(5, 900)}})

    def tool_round(self) -> None:
        rng = self.rng
        tool = rng.choice(TOOLS_CC)
        tool_id = self.token("toolu_01")
        if tool == "Bash":
            tool_input: dict[str, Any] = {"command": rng.choice(["pytest -x -q", "git status",
                                                                  "npm run build", "make lint",
                                                                  "ls -la src"]),
                                          "description": "Run the check"}
        elif tool in ("Read", "Write", "Edit"):
            tool_input = {"file_path": f"{self.cwd}/src/{self.fill('{name}')}.py"}
            if tool == "Edit":
                tool_input |= {"old_string": self.fill(rng.choice(CODE_LINES)),
                               "new_string": self.fill(rng.choice(CODE_LINES))}
        else:
            tool_input = {"pattern": self.fill("{name}"), "path": self.cwd}
        blocks: list[dict[str, Any]] = []
        if rng.random() < 0.4:
            blocks.append({"type": "thinking", "thinking": self.pool.text() + " " + self.pool.text(),
                           "signature": self.token("Eq", 120)})
        if rng.random() < 0.5:
            blocks.append({"type": "text", "text": rng.choice(ANSWER_LEADS)})
        blocks.append({"type": "tool_use", "id": tool_id, "name": tool, "input": tool_input})
        self.assistant_message(blocks)
        output = self.blob(CODE_LINES if tool in ("Read", "Grep", "Glob") else LOG_LINES, 3, 60)
        self.user([{"tool_use_id": tool_id, "type": "tool_result", "content": output,
                    "is_error": rng.random() < 0.05}],
                  toolUseResult={"stdout": output, "stderr": "", "interrupted": False,
                                 "isImage": False})
        for _ in range(rng.choice([0, 0, 1, 2])):
            self.base("progress", data={"type": "hook_progress", "hookEvent": "PostToolUse",
                                        "hookName": f"PostToolUse:{tool}",
                                        "command": "~/.claude/hooks/format.sh"},
                      parentToolUseID=tool_id, toolUseID=tool_id)

    def exchange(self) -> None:
        rng = self.rng
        if rng.random() < 0.05:
            self.user("<command-name>/clear</command-name>\n<command-message>clear</command-message>")
        if rng.random() < 0.04:
            self.user("Caveat: The messages below were generated by the user while running local "
                      "commands. DO NOT respond to these messages.", isMeta=True)
        prompt = rng.choice(PROMPT_LEADS) + self.pool.text()
        if rng.random() < 0.5:
            prompt += " " + self.pool.text()
        prompt = (prompt + " " + rng.choice(PROMPT_ASKS)).strip()
        record = self.user(prompt)
        if rng.random() < 0.3:
            self.records.append({"type": "file-history-snapshot", "messageId": record["uuid"],
                                 "snapshot": {"messageId": record["uuid"], "trackedFileBackups": {},
                                              "timestamp": record["timestamp"]},
                                 "isSnapshotUpdate": False})
        if rng.random() < 0.3:
            self.base("attachment", attachment={"type": "hook_success", "hookName": "UserPromptSubmit",
                                                "content": "", "stdout": "", "exitCode": 0})
        for _ in range(rng.choice([0, 1, 1, 2, 2, 3, 4])):
            self.tool_round()
        answer = [rng.choice(ANSWER_LEADS)] + [self.pool.text() for _ in range(rng.randint(1, 5))]
        if rng.random() < 0.3:
            answer.append("\n".join(f"- {self.pool.text()}" for _ in range(rng.randint(2, 4))))
        self.assistant_message([{"type": "text", "text": "\n\n".join(answer)}])
        if rng.random() < 0.3:
            self.base("system", subtype="turn_duration", durationMs=rng.randint(2000, 90000),
                      isMeta=False)

    def compaction(self) -> None:
        boundary = self.base("system", subtype="compact_boundary", content="Conversation compacted",
                             logicalParentUuid=self.parent, level="info",
                             compactMetadata={"trigger": self.rng.choice(["auto", "manual"]),
                                              "preTokens": self.rng.randint(80000, 160000)})
        boundary["parentUuid"] = None
        summary = ("This session is being continued from a previous conversation that ran out of "
                   "context. The conversation is summarized below:\n"
                   + "\n".join(f"{i}. {self.pool.text()}" for i in range(1, self.rng.randint(6, 14))))
        self.user([{"type": "text", "text": summary}], isCompactSummary=True,
                  isVisibleInTranscriptOnly=True)

    def lines(self, n: int, compact: bool) -> list[str]:
        if self.agent_id:  # a subagent's file starts with the prompt the main agent wrote
            self.user(f"Investigate this and report back: {self.pool.text()}")
        compacted = False
        while len(self.records) < n:
            if compact and not compacted and len(self.records) > n // 2:
                self.compaction()
                compacted = True
            self.exchange()
        return [json.dumps(r, ensure_ascii=False) for r in self.records[:n]]


@dataclass
class TranscriptTree:
    files: list[Path] = field(default_factory=list)
    lines: int = 0
    bytes: int = 0
    chunks: int = 0
    turns: int = 0


def write_transcripts(home: Path, total_lines: int, pool: TextPool, seed: int) -> TranscriptTree:
    """Claude Code transcripts under home/.claude/projects, totalling ``total_lines`` lines;
    the chunks the daemon will make of them are counted with memoryd's own parser."""
    from memoryd.ingest.transcript import chunk_exchanges, make_parser

    rng = random.Random(f"{seed}/transcripts")
    tree = TranscriptTree()
    sessions = max(1, total_lines // LINES_PER_SESSION)
    start = datetime(2026, 3, 1, 8, 0, tzinfo=UTC)
    for s in range(sessions):
        budget = total_lines // sessions + (1 if s < total_lines % sessions else 0)
        project = s % 20
        cwd = f"/home/ana/proj-{project}"
        directory = home / ".claude" / "projects" / f"-home-ana-proj-{project}"
        session = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        began = start + timedelta(hours=s * 7.3)
        outputs: list[tuple[Path, list[str]]] = []
        main_lines = budget
        if s % SUBAGENT_EVERY == SUBAGENT_EVERY - 1 and budget > 2 * SUBAGENT_LINES:
            main_lines = budget - SUBAGENT_LINES
            agent_id = "".join(rng.choices("0123456789abcdef", k=17))
            sub = TranscriptWriter(rng, pool, session, cwd, began + timedelta(minutes=20), agent_id)
            outputs.append((directory / session / "subagents" / f"agent-{agent_id}.jsonl",
                            sub.lines(SUBAGENT_LINES, compact=False)))
        main = TranscriptWriter(rng, pool, session, cwd, began)
        outputs.append((directory / f"{session}.jsonl", main.lines(main_lines, compact=s % 4 == 1)))
        for path, lines in outputs:
            path.parent.mkdir(parents=True, exist_ok=True)
            data = "".join(line + "\n" for line in lines)
            path.write_text(data)
            tree.files.append(path)
            tree.lines += len(lines)
            tree.bytes += len(data.encode())
            parser = make_parser("claude-code")
            turns = [t for line in lines for t in parser.feed(line)] + parser.flush()
            tree.turns += len(turns)
            tree.chunks += len(chunk_exchanges(turns))
    return tree


# -- the daemon and /proc -----------------------------------------------------------------------

TICK = os.sysconf("SC_CLK_TCK")


def machine_s() -> tuple[float, float]:
    """(busy, stolen by the hypervisor) CPU seconds of the whole machine since boot."""
    user, nice, system, _idle, _iowait, irq, softirq, steal = (
        int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:9])
    return (user + nice + system + irq + softirq) / TICK, steal / TICK


class Meter:
    """CPU over a phase: the daemon's, this process's, everyone else's on the machine, and the
    time the hypervisor stole (as bench_store.CpuMeter, kept here so the two can evolve)."""

    def __init__(self) -> None:
        self.phases: dict[str, dict[str, float]] = {}
        self.daemon_pid: int | None = None

    def snapshot(self) -> tuple[float, ...]:
        own = os.times()
        daemon = 0.0
        if self.daemon_pid is not None:
            try:
                daemon = proc_cpu_s(self.daemon_pid)
            except OSError:
                pass
        return (time.monotonic(), daemon, own.user + own.system + own.children_user
                + own.children_system, *machine_s())

    def phase(self, name: str) -> Any:
        meter = self

        class _Phase:
            def __enter__(self) -> None:
                self.start = meter.snapshot()

            def __exit__(self, *exc: object) -> None:
                wall, daemon, own, busy, steal = (e - s for e, s in zip(meter.snapshot(), self.start))
                meter.phases[name] = {
                    "wall_s": round(wall, 2), "daemon_cpu_s": round(daemon, 2),
                    "bench_cpu_s": round(own, 2),
                    "other_cpu_s": round(max(busy - daemon - own, 0.0), 2),
                    "steal_s": round(steal, 2),
                }

        return _Phase()

    def describe(self, name: str) -> str:
        p = self.phases[name]
        return (f"bench {p['bench_cpu_s'] / p['wall_s']:.2f}, others {p['other_cpu_s'] / p['wall_s']:.2f}, "
                f"stolen {p['steal_s'] / p['wall_s']:.2f} cores")

    def mean_cores(self, key: str) -> float:
        wall = sum(p["wall_s"] for p in self.phases.values())
        return sum(p[key] for p in self.phases.values()) / wall if wall else 0.0


def proc_status(pid: int | str) -> dict[str, float]:
    """VmRSS and VmHWM in MiB."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            fields[name] = int(value.split()[0]) / 1024
    return fields


def proc_cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def thread_cpu_s(pid: int) -> dict[int, float]:
    """CPU seconds of each thread of a process."""
    out = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        out[int(task.name)] = (int(fields[11]) + int(fields[12])) / TICK
    return out


def thread_names(pid: int) -> dict[int, str]:
    """Python thread names by native id, from ``py-spy dump`` when it is installed."""
    spy = Path(sys.executable).parent / "py-spy"
    if not spy.exists():
        return {}
    try:
        dump = subprocess.run([str(spy), "dump", "--pid", str(pid)], capture_output=True,
                              text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return {}
    names = {}
    for line in dump.splitlines():  # Thread 17399 (active): "memoryd-embed_0"
        if line.startswith("Thread ") and ":" in line:
            head, _, name = line.partition(":")
            tid = head.split()[1]
            if tid.isdigit():
                names[int(tid)] = name.strip().strip('"')
    return names


def thread_shares(pid: int, before: dict[int, float], wall: float) -> dict[str, float]:
    """Cores used by each thread since ``before``, named where py-spy can tell."""
    after, names = thread_cpu_s(pid), thread_names(pid)
    shares: dict[str, float] = {}
    for tid, cpu in after.items():
        used = (cpu - before.get(tid, 0.0)) / wall
        if used >= 0.005:
            name = names.get(tid, f"native thread {tid}" if tid != pid else "MainThread")
            shares[name] = round(shares.get(name, 0.0) + used, 3)
    return dict(sorted(shares.items(), key=lambda kv: -kv[1]))


OTHERS_SEEN: dict[str, str] = {}  # command line → first phase it was seen in


def own_pids() -> set[int]:
    """This process and its ancestors (the shell that started it names this script too)."""
    pids, pid = set(), os.getpid()
    while pid > 1:
        pids.add(pid)
        try:
            pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return pids


def other_benchmarks() -> list[str]:
    """Other benchmarks or test runs on the machine (their load spoils the figures)."""
    found = subprocess.run(["pgrep", "-af", OTHERS_PATTERN], capture_output=True, text=True).stdout
    mine = own_pids()
    return [line for line in found.splitlines()
            if line.split(" ", 1)[0].isdigit() and int(line.split(" ", 1)[0]) not in mine]


def busy_cores(seconds: float = 5.0) -> float:
    """Cores the machine used over ``seconds`` (this process sleeps meanwhile)."""
    before = machine_s()[0]
    time.sleep(seconds)
    return (machine_s()[0] - before) / seconds


def wait_for_quiet_machine(max_wait_s: float, max_busy: float = QUIET_CORES) -> float:
    """Wait (polling every 30 s) until no other benchmark or test run is running and the
    machine is nearly idle; returns the seconds waited."""
    started = time.monotonic()
    while True:
        running = other_benchmarks()
        busy = 0.0 if running else busy_cores()
        if not running and busy <= max_busy:
            return time.monotonic() - started
        if time.monotonic() - started > max_wait_s:
            raise SystemExit(f"the machine is not quiet: {running or f'{busy:.2f} cores busy'}")
        progress("waiting for a quiet machine: "
                 + (running[0][:100] if running else f"{busy:.2f} cores busy"))
        time.sleep(30)


def check_others(phase: str, daemon: DaemonProcess | None = None) -> None:
    """Note other benchmarks or test runs on the machine (their load spoils the figures)."""
    exclude = {daemon.pid} if daemon and daemon.proc else set()
    for line in other_benchmarks():
        pid, _, command = line.partition(" ")
        if int(pid) not in exclude and command[:150] not in OTHERS_SEEN:
            OTHERS_SEEN[command[:150]] = phase
            progress(f"warning: another benchmark or test run during {phase}: {command[:100]}")


def start_daemon(state: Path, home: Path) -> DaemonProcess:
    daemon = DaemonProcess(state)
    daemon.env["HOME"] = str(home)
    daemon.start()
    return daemon


@dataclass
class Indexed:
    status: dict[str, Any]
    timeline: dict[str, float]  # seconds from the spawn
    status_ms: list[float]  # round trips of the status polls (they cost the daemon a little)


def wait_indexed(daemon: DaemonProcess, t_spawn: float, expected_active: int,
                 timeout_s: float) -> Indexed:
    """Poll status until every expected entry is indexed and has a vector."""
    assert daemon.proc is not None
    timeline: dict[str, float] = {}
    status_s: list[float] = []
    last_note = time.monotonic()
    with Client(daemon.socket, timeout_s=120) as client:
        while True:
            now = time.perf_counter() - t_spawn
            if now > timeout_s:
                raise RuntimeError(f"not indexed within {timeout_s:g} s; last status: "
                                   f"{locals().get('status')}\n{daemon.log_tail()}")
            if daemon.proc.poll() is not None:
                raise RuntimeError(f"memoryd exited {daemon.proc.returncode}:\n{daemon.log_tail()}")
            try:
                status = client.status()
            except MemorydError:
                time.sleep(0.05)
                continue
            status_s.append(time.perf_counter() - t_spawn - now)
            now = time.perf_counter() - t_spawn
            timeline.setdefault("socket", now)
            if status.get("degraded"):
                raise RuntimeError(f"memoryd is degraded: {status.get('degraded_reason')}")
            if status.get("model") and status["vector_index"]["ready"]:
                timeline.setdefault("model", now)
            ingest = status.get("ingest") or {}
            active = status["entries"].get("active", 0)
            if ingest.get("queue") == 0 and not ingest.get("scanning") and active >= expected_active:
                timeline.setdefault("keyword", now)
                if status.get("model") and status.get("backlog") == 0:
                    timeline["done"] = now
                    if active != expected_active:
                        progress(f"warning: {active:,} active entries, expected {expected_active:,}")
                    return Indexed(status, timeline, ms(status_s))
            if time.monotonic() - last_note > 15:
                last_note = time.monotonic()
                check_others("indexing", daemon)
                progress(f"  {now:.0f} s: {active:,}/{expected_active:,} entries, "
                         f"{status.get('vectors', 0):,} vectors, backlog {status.get('backlog')}, "
                         f"queue {ingest.get('queue')}, rss {(status.get('rss_bytes') or 0) / 2**20:.0f} MB")
            time.sleep(STATUS_POLL_S)


def measure_idle(report: Report, daemon: DaemonProcess, seconds: float, label: str) -> float:
    time.sleep(3)  # let the last backfill batch and any watcher event settle
    before, t0 = proc_cpu_s(daemon.pid), time.monotonic()
    time.sleep(seconds)
    used, wall = proc_cpu_s(daemon.pid) - before, time.monotonic() - t0
    check_others("idle CPU", daemon)
    pct = 100 * used / wall
    report.add(f"idle CPU, {label}", pct, "%", le=IDLE_CPU_BUDGET_PCT,
               note=f"{used:.2f} s CPU over {wall:.0f} s, % of one core")
    return pct


def add_rss(report: Report, pid: int, label: str, peak_budget: bool) -> dict[str, float]:
    rss = proc_status(pid)
    report.add(f"daemon RSS (VmRSS), {label}", rss.get("VmRSS"), "MB", le=RSS_BUDGET_MB)
    if peak_budget:
        report.add("daemon peak RSS (VmHWM) over the phase", rss.get("VmHWM"), "MB", le=RSS_BUDGET_MB,
                   note="bounds the embedder's memory on long texts")
    else:
        report.add("daemon peak RSS (VmHWM) over the phase", rss.get("VmHWM"), "MB")
    return rss


def time_edits(daemon: DaemonProcess, files: list[Path], pool: TextPool, n: int,
               rng: random.Random) -> dict[str, Any]:
    """Append a bullet with a unique nonce to a random file; poll search until the hit is
    there with a vector score. Returns the latencies in ms."""
    searchable, keyword, failed, polls = [], [], 0, []
    with Client(daemon.socket, timeout_s=60) as client:
        for i in range(n):
            path = rng.choice(files)
            nonce = "nonce-" + "".join(rng.choices(string.ascii_lowercase + string.digits, k=10))
            client.search(nonce, agents=["*"], limit=1)  # caches the query's vector
            line = f"- [2026-11-22] {nonce} {pool.text()}\n"
            t0 = time.perf_counter()
            with path.open("a") as handle:
                handle.write(line)
            t_keyword, count = None, 0
            while True:
                hits = client.search(nonce, agents=["*"], match=True, limit=5)["hits"]
                count += 1
                now = time.perf_counter()
                hit = next((h for h in hits if nonce in h["text"]), None)
                if hit is not None:
                    t_keyword = t_keyword or now
                    if hit["score"]["vector"] is not None:
                        searchable.append(now - t0)
                        keyword.append(t_keyword - t0)
                        break
                if now - t0 > EDIT_TIMEOUT_S:
                    failed += 1
                    progress(f"edit {i}: {nonce} not searchable after {EDIT_TIMEOUT_S:g} s")
                    break
                time.sleep(EDIT_POLL_S)
            polls.append(count)
            if i % 10 == 0:
                check_others("edits", daemon)
            time.sleep(rng.uniform(0.2, 0.4))
    return {"searchable_ms": [round(s, 1) for s in ms(searchable)],
            "keyword_ms": [round(s, 1) for s in ms(keyword)], "failed": failed,
            "polls_mean": round(float(np.mean(polls)), 1)}


def report_edits(report: Report, edits: dict[str, Any], files: int) -> None:
    samples, kw = edits["searchable_ms"], edits["keyword_ms"]
    note = f"{len(samples)} edits, {files:,} files watched"
    report.add("edit → searchable incl. embedding, p50", percentile(samples, 50) if samples else None,
               "ms", le=250, note=note)
    report.add("edit → searchable incl. embedding, p95", percentile(samples, 95) if samples else None,
               "ms", le=600)
    report.add("  edit → searchable, max", max(samples) if samples else None, "ms")
    report.add("  edit → keyword-searchable (no vector yet), p50", percentile(kw, 50) if kw else None,
               "ms")
    report.add("  edit → keyword-searchable, p95", percentile(kw, 95) if kw else None, "ms")
    report.add("edits never searchable", edits["failed"], "", le=0, note=f"timeout {EDIT_TIMEOUT_S:g} s")


# -- the bare embedder ------------------------------------------------------------------------


def indexed_texts(db_path: Path, kinds: tuple[str, ...], n: int, seed: int) -> list[str]:
    """A seeded sample of what the daemon indexed (watched entries of these kinds), in rowid
    order as the backfill takes them."""
    import apsw

    db = apsw.Connection(str(db_path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        marks = ", ".join("?" for _ in kinds)
        rows = db.execute(f"SELECT id, text FROM entries WHERE via='watch' AND kind IN ({marks}) "
                          "ORDER BY id", kinds).fetchall()
    finally:
        db.close()
    rng = random.Random(f"{seed}/sample/{kinds}")
    picked = sorted(rng.sample(range(len(rows)), min(n, len(rows))))
    return [rows[i][1] for i in picked]


def bare_rate(embedder: Any, texts: list[str], batch: int) -> float:
    embedder.embed(texts[:batch])  # warm-up
    started = time.perf_counter()
    for i in range(0, len(texts), batch):
        embedder.embed(texts[i:i + batch])
    return len(texts) / (time.perf_counter() - started)


def token_lengths(embedder: Any, texts: list[str]) -> dict[str, float]:
    lengths = np.array([len(e.ids) for e in embedder.tokenizer.encode_batch(texts)])
    return {"mean": round(float(lengths.mean()), 1), "p50": float(np.median(lengths)),
            "max": int(lengths.max()), "truncated_share": round(float((lengths >= embedder.max_tokens).mean()), 3)}


# -- the run ----------------------------------------------------------------------------------


def run(args: argparse.Namespace) -> Report:
    report = Report(args.files)
    info = report.info
    info["machine"] = machine()
    info["sizes"] = {"files": args.files, "transcript_lines": args.transcript_lines, "edits": args.edits,
                     "idle_s": args.idle_s, "seed": args.seed}
    info["waited_for_other_benchmarks_s"] = round(wait_for_quiet_machine(args.max_wait_s), 1)
    info["started"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    info["loadavg_before"] = Path("/proc/loadavg").read_text().split()[:3]
    overrides = sorted(k for k in os.environ if k.startswith("MEMORYD_") and k != "MEMORYD_SOCKET")
    if overrides:
        info["environment_overrides"] = overrides

    base = Path(tempfile.mkdtemp(prefix="mdi-", dir="/tmp"))
    state, home, staging = base / "state", base / "home", base / "staging"
    for d in (state, home, staging):
        d.mkdir()
    os.environ["MEMORYD_HOME"] = str(state)  # this process's load_config() reads the same config
    os.environ.pop("MEMORYD_SOCKET", None)
    info["base"] = str(base)

    pool = TextPool(args.seed)
    t0 = time.perf_counter()
    md = write_markdown_tree(home, args.files, pool, args.seed)
    progress(f"{len(md.files):,} memory files, {md.entries:,} entries, {md.bytes / 1e6:.1f} MB "
             f"in {time.perf_counter() - t0:.1f} s under {home}")
    t0 = time.perf_counter()
    tx = write_transcripts(staging, args.transcript_lines, pool, args.seed)
    progress(f"{len(tx.files):,} transcripts, {tx.lines:,} lines, {tx.bytes / 1e6:.1f} MB, "
             f"{tx.chunks:,} chunks expected, in {time.perf_counter() - t0:.1f} s")
    if pool.corpus.unique_ratio < 0.98:
        raise RuntimeError(f"the corpus drew only {pool.corpus.unique_ratio:.2%} unique texts")
    info["tree"] = {
        "memory_files": len(md.files), "memory_entries": md.entries, "memory_mb": round(md.bytes / 1e6, 1),
        "agents": len({p.parts[len(home.parts) + 2] for p in md.files}),
        "directories": len({p.parent for p in md.files}),
        "transcript_files": len(tx.files), "transcript_lines": tx.lines,
        "transcript_mb": round(tx.bytes / 1e6, 1), "transcript_turns": tx.turns,
        "transcript_chunks": tx.chunks, "corpus_unique_ratio": round(pool.corpus.unique_ratio, 4),
    }

    cpu = Meter()
    daemon: DaemonProcess | None = None
    ok = False
    try:
        # -- A: memory files ------------------------------------------------------------------
        progress("phase A: daemon on the memory files")
        t_spawn = time.perf_counter()
        daemon = start_daemon(state, home)
        cpu.daemon_pid = daemon.pid
        threads_before = thread_cpu_s(daemon.pid)
        with cpu.phase("index_markdown"):
            a = wait_indexed(daemon, t_spawn, md.entries, args.timeout_s)
        tl = a.timeline
        threads_a = thread_shares(daemon.pid, threads_before, cpu.phases["index_markdown"]["wall_s"])
        progress(f"indexed {md.entries:,} entries: {json.dumps({k: round(v, 1) for k, v in tl.items()})}")
        md_rate = md.entries / tl["done"]
        phase = cpu.phases["index_markdown"]
        report.add("A. memory files: start → socket answers", tl["socket"], "s")
        report.add("A. start → model loaded, vector index ready", tl.get("model"), "s")
        report.add(f"A. start → all {md.entries:,} entries keyword-searchable", tl["keyword"], "s")
        report.add("A. start → backlog 0 (all embedded)", tl["done"], "s")
        report.add("A. initial indexing rate (start → backlog 0)", md_rate, "entries/s",
                   note=f"{len(md.files):,} files")
        report.add("A.   files/s", len(md.files) / tl["done"], "files/s")
        report.add("A.   rate from model ready → backlog 0", md.entries / (tl["done"] - tl["model"]),
                   "entries/s")
        report.add("A.   daemon CPU while indexing", phase["daemon_cpu_s"] / phase["wall_s"], "cores",
                   note=cpu.describe("index_markdown"))
        info["phase_a"] = {"timeline_s": {k: round(v, 2) for k, v in tl.items()},
                           "daemon_threads_cores": threads_a,
                           "status_polls": len(a.status_ms),
                           "status_ms_p50": round(percentile(a.status_ms, 50), 1),
                           "entries": a.status["entries"], "vectors": a.status["vectors"],
                           "sources": [{k: s[k] for k in ("name", "files", "entries_added", "skipped",
                                                           "last_error")}
                                       for s in a.status["ingest"]["sources"] if s["files"]]}
        info["phase_a"]["rss_after_indexing"] = add_rss(
            report, daemon.pid, f"{len(md.files):,} files watched, after indexing", peak_budget=True)

        # The edits take seconds: they are redone (up to EDIT_ATTEMPTS times) when other
        # processes took more than QUIET_CORES of the machine meanwhile.
        edit_rng = random.Random(f"{args.seed}/edits")
        attempts: list[dict[str, Any]] = []
        for attempt in range(1, EDIT_ATTEMPTS + 1):
            waited = wait_for_quiet_machine(args.max_wait_s)
            progress(f"phase A: {args.edits} edits (attempt {attempt})")
            with cpu.phase("edits"):
                edits = time_edits(daemon, md.files, pool, args.edits, edit_rng)
            phase = cpu.phases["edits"]
            edits |= {"attempt": attempt, "waited_s": round(waited, 1),
                      "others_cores": round(phase["other_cpu_s"] / phase["wall_s"], 2)}
            attempts.append(edits)
            if edits["others_cores"] <= QUIET_CORES:
                break
            progress(f"other processes took {edits['others_cores']:.2f} cores during the edits")
        edits_appended = args.edits * len(attempts)
        info["edits"] = attempts[-1]
        info["edit_attempts"] = attempts[:-1]
        report_edits(report, attempts[-1], len(md.files))
        report.add("  other processes during the edits", attempts[-1]["others_cores"], "cores",
                   note=f"attempt {len(attempts)} of at most {EDIT_ATTEMPTS}")
        rss = proc_status(daemon.pid)
        report.add("daemon RSS (VmRSS) after the edits", rss["VmRSS"], "MB", le=RSS_BUDGET_MB)
        progress(f"phase A: idle CPU over {args.idle_s:g} s")
        info["phase_a"]["idle_cpu_pct"] = measure_idle(report, daemon, args.idle_s,
                                                       f"{len(md.files):,} files watched")
        code = daemon.stop()
        report.add("A. daemon exit code after SIGTERM", code, "", note="must be 0")
        if code != 0:
            raise RuntimeError(f"memoryd exited {code} on SIGTERM:\n{daemon.log_tail()}")

        # -- B: transcripts -------------------------------------------------------------------
        progress("phase B: transcripts moved in, a new daemon on the same state")
        (staging / ".claude").rename(home / ".claude")
        expected = md.entries + edits_appended + tx.chunks  # each edit appends one bullet
        t_spawn = time.perf_counter()
        daemon = start_daemon(state, home)
        cpu.daemon_pid = daemon.pid
        threads_before = thread_cpu_s(daemon.pid)
        with cpu.phase("index_transcripts"):
            b = wait_indexed(daemon, t_spawn, expected, args.timeout_s)
        tl = b.timeline
        threads_b = thread_shares(daemon.pid, threads_before, cpu.phases["index_transcripts"]["wall_s"])
        progress(f"indexed {tx.chunks:,} chunks: {json.dumps({k: round(v, 1) for k, v in tl.items()})}")
        tx_rate = tx.chunks / tl["done"]
        phase = cpu.phases["index_transcripts"]
        report.add("B. transcripts: start → model loaded, vector index ready", tl.get("model"), "s",
                   note=f"{a.status['vectors']:,} vectors from phase A")
        report.add(f"B. start → all {tx.chunks:,} chunks keyword-searchable", tl["keyword"], "s")
        report.add("B. start → backlog 0 (all embedded)", tl["done"], "s")
        report.add("B. initial indexing rate (start → backlog 0)", tx_rate, "chunks/s",
                   note=f"{tx.lines:,} lines, {len(tx.files)} files")
        report.add("B.   lines/s", tx.lines / tl["done"], "lines/s")
        report.add("B.   files/s", len(tx.files) / tl["done"], "files/s")
        report.add("B.   rate from model ready → backlog 0", tx.chunks / (tl["done"] - tl["model"]),
                   "chunks/s")
        report.add("B.   daemon CPU while indexing", phase["daemon_cpu_s"] / phase["wall_s"], "cores",
                   note=cpu.describe("index_transcripts"))
        info["phase_b"] = {"timeline_s": {k: round(v, 2) for k, v in tl.items()},
                           "daemon_threads_cores": threads_b,
                           "status_polls": len(b.status_ms),
                           "status_ms_p50": round(percentile(b.status_ms, 50), 1),
                           "entries": b.status["entries"], "vectors": b.status["vectors"],
                           "sources": [{k: s[k] for k in ("name", "files", "entries_added", "skipped",
                                                           "last_error")}
                                       for s in b.status["ingest"]["sources"] if s["files"]]}
        info["phase_b"]["rss_after_indexing"] = add_rss(
            report, daemon.pid, f"{len(md.files):,} files + {len(tx.files)} transcripts watched",
            peak_budget=True)
        progress(f"phase B: idle CPU over {args.idle_s:g} s")
        info["phase_b"]["idle_cpu_pct"] = measure_idle(
            report, daemon, args.idle_s, f"{len(md.files) + len(tx.files):,} files watched")

        # -- the bare embedder on the same texts, the daemon idle -----------------------------
        info["bare_embedder_waited_s"] = round(wait_for_quiet_machine(args.max_wait_s), 1)
        progress("bare embedder on the indexed texts (daemon idle)")
        from memoryd.config import load_config
        from memoryd.embedding.model import Embedder

        md_texts = indexed_texts(state / "memoryd.db", ("lesson", "feedback", "note"), SAMPLE_MD,
                                 args.seed)
        tx_texts = indexed_texts(state / "memoryd.db", ("turn", "summary"), SAMPLE_CHUNKS, args.seed)
        daemon_cpu_before = proc_cpu_s(daemon.pid)
        with cpu.phase("bare_embedder"):
            embedder = Embedder(load_config().embed)
            hwm_before = proc_status("self")["VmHWM"]
            md_bare = bare_rate(embedder, md_texts, EMBED_BATCH)
            md_bare_64 = bare_rate(embedder, md_texts, BACKFILL_BATCH)
            hwm_md = proc_status("self")["VmHWM"]
            tx_bare = bare_rate(embedder, tx_texts, EMBED_BATCH)
            tx_bare_64 = bare_rate(embedder, tx_texts, BACKFILL_BATCH)
            hwm_tx = proc_status("self")["VmHWM"]
        daemon_cpu = proc_cpu_s(daemon.pid) - daemon_cpu_before
        check_others("bare embedder", daemon)
        info["bare_embedder"] = {
            "markdown_tokens": token_lengths(embedder, md_texts),
            "chunk_tokens": token_lengths(embedder, tx_texts),
            "markdown_chars_mean": round(float(np.mean([len(t) for t in md_texts])), 1),
            "chunk_chars_mean": round(float(np.mean([len(t) for t in tx_texts])), 1),
            "threads": embedder.session.get_session_options().intra_op_num_threads,
            "batch_tokens": embedder.batch_tokens, "max_tokens": embedder.max_tokens,
            "bench_vmhwm_mb": {"model_loaded": round(hwm_before, 1), "after_markdown": round(hwm_md, 1),
                               "after_chunks": round(hwm_tx, 1)},
            "daemon_cpu_s_meanwhile": round(daemon_cpu, 2),
        }
        mdt, txt = info["bare_embedder"]["markdown_tokens"], info["bare_embedder"]["chunk_tokens"]
        report.add(f"bare embedder, {len(md_texts):,} indexed md entries, batches of {EMBED_BATCH}",
                   md_bare, "texts/s", note=f"{mdt['mean']:.0f} tokens mean")
        report.add(f"  same, batches of {BACKFILL_BATCH} (as the daemon's backfill)", md_bare_64, "texts/s")
        report.add("A. indexing rate / bare embedder rate", md_rate / md_bare, "", ge=0.8)
        report.add(f"bare embedder, {len(tx_texts):,} indexed chunks, batches of {EMBED_BATCH}",
                   tx_bare, "texts/s", note=f"{txt['mean']:.0f} tokens mean, "
                   f"{100 * txt['truncated_share']:.0f}% truncated at {embedder.max_tokens}")
        report.add(f"  same, batches of {BACKFILL_BATCH} (as the daemon's backfill)", tx_bare_64, "texts/s")
        report.add("B. indexing rate / bare embedder rate", tx_rate / tx_bare, "", ge=0.8)
        report.add("  other processes during the bare embedder", cpu.phases["bare_embedder"]["other_cpu_s"]
                   / cpu.phases["bare_embedder"]["wall_s"], "cores", note=cpu.describe("bare_embedder"))
        report.add("  bench process peak RSS growth on long texts", hwm_tx - hwm_md, "MB",
                   note=f"VmHWM {hwm_tx:.0f} MB")

        code = daemon.stop()
        report.add("B. daemon exit code after SIGTERM", code, "", note="must be 0")
        log_text = daemon.log_path.read_text(errors="replace")
        problems = [line for line in log_text.splitlines()
                    if " ERROR " in line or "Traceback" in line or " WARNING " in line]
        info["daemon_log_problems"] = problems[:50]
        report.add("daemon log: warnings, errors, tracebacks", len(problems), "lines", le=0)
        others = cpu.mean_cores("other_cpu_s")
        report.add("other processes on the machine during the run", others, "cores",
                   note="noise: a shared 2-core box" if others > 0.1 else "")
        report.add("CPU stolen by the hypervisor during the run", cpu.mean_cores("steal_s"), "cores")
        report.add("other benchmarks / test runs seen during the run", len(OTHERS_SEEN), "",
                   note=("figures spoiled" if others > QUIET_CORES else "their load: the row above")
                   if OTHERS_SEEN else "")
        info["others_seen"] = OTHERS_SEEN
        info["cpu_phases"] = cpu.phases
        info["loadavg_after"] = Path("/proc/loadavg").read_text().split()[:3]
        info["disk_db_mb"] = round(sum(p.stat().st_size for p in state.glob("memoryd.db*")) / 1e6, 1)
        if code != 0:
            raise RuntimeError(f"memoryd exited {code} on SIGTERM:\n{daemon.log_tail()}")
        ok = True
    finally:
        if daemon is not None and daemon.proc is not None and daemon.proc.poll() is None:
            daemon.stop()
        if args.keep or not ok:
            progress(f"kept {base} for inspection (state/daemon.log)")
        else:
            shutil.rmtree(base, ignore_errors=True)
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Generate a tree of agent memory files and Claude Code transcripts, let the "
        "real daemon index it, and measure initial indexing rates against the bare embedder, "
        "file edit → searchable latency, RSS and idle CPU.")
    parser.add_argument("--files", type=int, help="markdown memory files (default 10000)")
    parser.add_argument("--transcript-lines", type=int, help="transcript lines in all (default 100000)")
    parser.add_argument("--quick", action="store_true",
                        help="a smoke run: 1,000 files, 10,000 lines, 10 s of idle CPU")
    parser.add_argument("--edits", type=int, default=EDITS, help=f"edits to time (default {EDITS})")
    parser.add_argument("--idle-s", type=float, help="seconds of idle CPU to measure (default 30)")
    parser.add_argument("--seed", type=int, default=11, help="generator seed (default 11)")
    parser.add_argument("--timeout-s", type=float, default=3600, help="per indexing phase (default 3600)")
    parser.add_argument("--max-wait-s", type=float, default=3 * 3600,
                        help="how long to wait for another running benchmark (default 3 h)")
    parser.add_argument("--keep", action="store_true", help="keep the temp dir (tree and state)")
    parser.add_argument("--out", type=Path, help="JSON output (default bench/results/ingest.json)")
    parser.add_argument("--check", action="store_true", help="exit 1 when a budget is over")
    args = parser.parse_args(argv)
    args.files = args.files or (1_000 if args.quick else 10_000)
    args.transcript_lines = args.transcript_lines or (10_000 if args.quick else 100_000)
    args.idle_s = args.idle_s or (10.0 if args.quick else 30.0)
    if args.files < 10 or args.transcript_lines < 2 * SUBAGENT_LINES or args.edits < 1:
        parser.error("--files must be ≥ 10, --transcript-lines ≥ 120, --edits ≥ 1")

    report = run(args)
    if args.out:
        out = args.out
    elif args.quick:
        out = HERE / "results" / "ingest-quick.json"
    elif (args.files, args.transcript_lines) == (10_000, 100_000):
        out = HERE / "results" / "ingest.json"
    else:
        out = HERE / "results" / f"ingest-{args.files}f-{args.transcript_lines}l.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report.to_json(), indent=2, ensure_ascii=False) + "\n")
    info = report.info
    tree = info["tree"]
    print(f"\nmemoryd ingest benchmark: {tree['memory_files']:,} memory files ({tree['memory_entries']:,} "
          f"entries, {tree['agents']} agents, {tree['directories']} dirs), {tree['transcript_files']} "
          f"transcripts ({tree['transcript_lines']:,} lines, {tree['transcript_mb']} MB, "
          f"{tree['transcript_chunks']:,} chunks)\n({info['machine']['cores']} cores, "
          f"{info['machine']['cpu']}, Python {info['machine']['python']}, commit {info['machine']['commit']})")
    print(report.table())
    for phase in ("phase_a", "phase_b"):
        threads = ", ".join(f"{k} {v:.2f}" for k, v in list(info[phase]["daemon_threads_cores"].items())[:6])
        print(f"daemon threads while indexing, {phase[-1].upper()} (cores): {threads}")
    print(f"\nbudgets: {sum(r.ok is True for r in report.rows)} ok, {len(report.over)} over; JSON: {out}")
    return 1 if args.check and report.over else 0


if __name__ == "__main__":
    sys.exit(main())
