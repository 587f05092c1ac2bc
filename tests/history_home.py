"""A home directory holding several harnesses' past sessions, in their real on-disk formats:
Claude Code project transcripts, Codex rollouts, and a generic JSONL chat log (a configured
source). Used by tests/sessions/test_import_history.py and bench/bench_import_history.py.

Each session is a few exchanges; its user messages include lessons extraction keeps ("Never
force-push to main") and chatter it does not, so that extraction over past sessions has
something to find and something to reject. Every session is dated ``days_ago`` days back
(file mtimes too), so ``--since`` has something to filter.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

GENERIC_SOURCE = """[[sources]]
name = "chats"
path = "~/chats/*.jsonl"
kind = "transcript"
format = "generic"
agent = "chatter"
"""

#: What users say: a lasting lesson every few messages, the rest chatter about the task.
LESSONS = (
    "Never force-push to main{n}.",
    "Don't use mocks in the integration tests of service{n}, they hide real failures.",
    "Always run the linter{n} before committing.",
    "I prefer tabs over spaces in repo{n}.",
)
CHATTER = (
    "Let's look at the failing build of module {n} together.",
    "Can you explain what the retry loop in worker {n} does?",
    "Please rename the helper in file number {n} to something clearer.",
    "What does the error in step {n} of the pipeline mean?",
)
ANSWER = ("I read the code around item {n}: the function retries three times with a backoff "
          "and then gives up, logging the last error it saw before returning.")


@dataclass(frozen=True)
class Planted:
    """What a fixture home holds."""

    files: dict[str, list[Path]]  # harness → its transcripts
    sessions: dict[str, list[str]]  # harness → its session ids
    turns: int  # user and assistant messages in all
    lessons: dict[str, list[str]]  # harness → the lessons its users said, once each


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _messages(seed: int, exchanges: int, with_lesson: bool) -> list[tuple[str, str]]:
    pairs = []
    for i in range(exchanges):
        n = seed * 100 + i
        if with_lesson and i == 1:
            user = LESSONS[seed % len(LESSONS)].format(n=seed)
        else:
            user = CHATTER[(seed + i) % len(CHATTER)].format(n=n)
        pairs.append((user, ANSWER.format(n=n)))
    return pairs


def _write(path: Path, lines: list[dict], mtime: float) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    os.utime(path, (mtime, mtime))


def claude_code(home: Path, session: str, pairs: list[tuple[str, str]], start: float) -> Path:
    path = home / ".claude/projects/-tmp-proj" / f"{session}.jsonl"
    lines = []
    for i, (user, answer) in enumerate(pairs):
        common = {"sessionId": session, "cwd": "/tmp/proj", "isSidechain": False}
        lines.append({"type": "user", "uuid": str(uuid.uuid5(uuid.NAMESPACE_URL, f"{session}u{i}")),
                      "timestamp": _iso(start + 60 * i), **common,
                      "message": {"role": "user", "content": user}})
        lines.append({"type": "assistant",
                      "uuid": str(uuid.uuid5(uuid.NAMESPACE_URL, f"{session}a{i}")),
                      "timestamp": _iso(start + 60 * i + 5), **common,
                      "message": {"id": f"msg_{session[:8]}_{i}", "role": "assistant",
                                  "model": "claude-sonnet-4-5",
                                  "content": [{"type": "text", "text": answer}]}})
    _write(path, lines, start + 60 * len(pairs))
    return path


def codex(home: Path, session: str, pairs: list[tuple[str, str]], start: float) -> Path:
    day = datetime.fromtimestamp(start, UTC)
    path = (home / ".codex/sessions" / day.strftime("%Y/%m/%d")
            / f"rollout-{day.strftime('%Y-%m-%dT%H-%M-%S')}-{session}.jsonl")
    lines: list[dict] = [{"timestamp": _iso(start), "type": "session_meta",
                          "payload": {"id": session, "timestamp": _iso(start), "cwd": "/tmp/proj",
                                      "originator": "codex_cli_rs", "cli_version": "0.98.0",
                                      "source": "cli", "model_provider": "openai"}}]
    for i, (user, answer) in enumerate(pairs):
        lines.append({"timestamp": _iso(start + 60 * i + 1), "type": "event_msg",
                      "payload": {"type": "user_message", "message": user, "images": []}})
        lines.append({"timestamp": _iso(start + 60 * i + 5), "type": "response_item",
                      "payload": {"type": "message", "role": "assistant", "phase": "final_answer",
                                  "content": [{"type": "output_text", "text": answer}]}})
    _write(path, lines, start + 60 * len(pairs))
    return path


def generic(home: Path, session: str, pairs: list[tuple[str, str]], start: float) -> Path:
    path = home / "chats" / f"{session}.jsonl"
    lines = []
    for i, (user, answer) in enumerate(pairs):
        lines.append({"id": 2 * i, "role": "user", "content": user, "session_id": session,
                      "timestamp": _iso(start + 60 * i), "cwd": "/tmp/proj"})
        lines.append({"id": 2 * i + 1, "role": "assistant", "content": answer,
                      "session_id": session, "timestamp": _iso(start + 60 * i + 5)})
    _write(path, lines, start + 60 * len(pairs))
    return path


WRITERS = {"claude-code": claude_code, "codex": codex, "generic": generic}


def plant(home: Path, memoryd_home: Path, *, sessions: int, exchanges: int,
          days_ago: list[float] | None = None) -> Planted:
    """``sessions`` past sessions of each harness under ``home``, of ``exchanges`` exchanges
    each (every other one with a lesson), dated ``days_ago`` (cycled; default 10 days); the
    generic source is added to ``memoryd_home``'s configuration."""
    if memoryd_home.is_dir():  # else the caller adds the generic source itself
        config = memoryd_home / "config.toml"
        config.write_text((config.read_text() if config.exists() else "") + GENERIC_SOURCE)
    ages = days_ago or [10.0]
    files: dict[str, list[Path]] = {name: [] for name in WRITERS}
    ids: dict[str, list[str]] = {name: [] for name in WRITERS}
    lessons: dict[str, list[str]] = {name: [] for name in WRITERS}
    seed = 0
    for number in range(sessions):
        start = time.time() - ages[number % len(ages)] * 86400 + number
        for harness, write in WRITERS.items():
            seed += 1
            session = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{harness}-{number}"))
            with_lesson = number % 2 == 0
            pairs = _messages(seed, exchanges, with_lesson)
            if with_lesson:
                lessons[harness].append(pairs[1][0])
            files[harness].append(write(home, session, pairs, start))
            ids[harness].append(session)
    return Planted(files, ids, 2 * exchanges * sessions * len(WRITERS), lessons)
