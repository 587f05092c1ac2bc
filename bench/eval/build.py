"""Lay the evaluation set out as a user's machine would hold it.

Under a fake ``$HOME``: Claude Code transcripts and auto-memory, Codex rollouts, the assistant's
generic JSONL chats, the role agents' notebooks, the projects' CLAUDE.md / AGENTS.md, the user's
~/.claude/CLAUDE.md. Facts and notes go through the API (``imports``). Items are placed in
sessions among filler turns on their day; filler-only sessions fill the rest of the 120 days.
Everything is derived from the data files, the seed and "today": the same inputs give the same
bytes.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path
from typing import Any

from dataset import MAX_DAY, Dataset, Item, when_words

PROJECTS = ("shop", "atlas", "infra")
_SLOT = re.compile(r"\{([a-z_]+)\}")


@dataclass
class Sizes:
    """Session lengths; every filler turn is used once, so the filler files set the volume."""

    turns_per_session: tuple[int, int] = (4, 14)
    filler_notes: int = 1000
    #: "as-written"; "joined": filler templates joined two by two (within a project, agent or
    #: section), as long as the items; "half": half the templates, as written (the control for
    #: "joined", which has half as many filler entries). README.md, "A known bias".
    filler: str = "as-written"


FILLER_VARIANTS = ("as-written", "joined", "half")


@dataclass
class Corpus:
    home: Path
    project_roots: list[Path]
    imports: list[dict[str, Any]] = field(default_factory=list)  # remember_many params
    queries: list[dict[str, Any]] = field(default_factory=list)


def at(day: date, rng: random.Random) -> datetime:
    return datetime.combine(day, time(rng.randint(7, 20), rng.randint(0, 59), rng.randint(0, 59)),
                            UTC)


def iso(moment: datetime) -> str:
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _joined(pool: list[dict[str, Any]], group: Callable[[dict[str, Any]], Any]
            ) -> list[dict[str, Any]]:
    """Templates joined two by two within a group: each text field is the two texts in turn."""
    groups: dict[Any, list[dict[str, Any]]] = {}
    for raw in pool:
        groups.setdefault(group(raw), []).append(raw)
    joined = []
    for members in groups.values():
        for a, b in zip(members[0::2], members[1::2]):
            joined.append({**a, **{k: a[k].rstrip() + " " + b[k]
                                   for k in ("user", "assistant", "text") if k in a and k in b}})
        if len(members) % 2:
            joined.append(members[-1])
    return joined


def filler_variant(filler: dict[str, Any], how: str, rng: random.Random) -> dict[str, Any]:
    """The filler templates as ``Sizes.filler`` asks."""
    if how == "as-written":
        return filler
    groups: dict[str, Callable[[dict[str, Any]], Any]] = {
        "exchange": lambda r: (r["project"], r.get("harness", "any")), "chat": lambda r: None,
        "bullet": lambda r: (r["agent"], r["section"]), "note": lambda r: r["agent"]}
    varied = dict(filler)
    for kind, group in groups.items():
        pool = list(filler[kind])
        rng.shuffle(pool)
        varied[kind] = _joined(pool, group) if how == "joined" else pool[:len(pool) // 2]
    return varied


class Filler:
    """Filler turns, each used once: templates drawn without replacement (a template reused
    across sessions would make clusters of near-identical turns that real memory does not
    have)."""

    def __init__(self, data: dict[str, Any], rng: random.Random) -> None:
        self.slots = data["slots"]
        self.rng = rng
        self.pools: dict[str, list[dict[str, Any]]] = {}
        for exchange in data["exchange"]:
            self.pools.setdefault(exchange["project"], []).append(exchange)
        self.pools["chat"] = list(data["chat"])
        for pool in self.pools.values():
            rng.shuffle(pool)

    def fill(self, template: str) -> str:
        return _SLOT.sub(lambda m: self.rng.choice(self.slots[m.group(1)])
                         if m.group(1) in self.slots else m.group(0), template)

    def left(self, pool: str) -> int:
        return len(self.pools.get(pool, []))

    def take(self, pool: str, harness: str, count: int) -> list[tuple[str, str]]:
        taken: list[tuple[str, str]] = []
        entries = self.pools.get(pool, [])
        for entry in list(entries):
            if len(taken) >= count:
                break
            if entry.get("harness", "any") in ("any", harness):
                entries.remove(entry)
                taken.append((self.fill(entry["user"]), self.fill(entry["assistant"])))
        return taken


def build(data: Dataset, root: Path, today: date, seed: int = 7, sizes: Sizes | None = None) -> Corpus:
    sizes = sizes or Sizes()
    rng = random.Random(seed)
    home = root / "home"
    corpus = Corpus(home, [home / "src" / p for p in PROJECTS])
    for project in corpus.project_roots:
        (project / ".git").mkdir(parents=True, exist_ok=True)
    data = replace(data, filler=filler_variant(data.filler, sizes.filler, random.Random(seed + 1)))
    filler = Filler(data.filler, rng)
    items = sorted(data.items.values(), key=lambda i: i.id)

    # sessions: items grouped by (where, project, day), filler turns around them
    groups: dict[tuple[str, str, int], list[Item]] = {}
    for item in items:
        if item.where in ("claude-code", "codex", "assistant"):
            groups.setdefault((item.where, item.project, item.day), []).append(item)
    for (where, project, day), members in sorted(groups.items()):
        _session(corpus, filler, rng, where, project, today - timedelta(days=day), members, sizes)
    # filler-only sessions until every filler turn is used (codex gets a third of them)
    while any(filler.left(p) for p in PROJECTS):
        project = rng.choice([p for p in PROJECTS if filler.left(p)])
        where = "codex" if rng.random() < 1 / 3 else "claude-code"
        day = today - timedelta(days=rng.randint(1, MAX_DAY))
        _session(corpus, filler, rng, where, project, day, [], sizes)
    while filler.left("chat"):
        day = today - timedelta(days=rng.randint(1, MAX_DAY))
        _session(corpus, filler, rng, "assistant", "none", day, [], sizes)

    _notebooks(corpus, data, items, rng, today)
    _governance(corpus, items, today)
    _imports(corpus, data, items, rng, today, sizes)
    _queries(corpus, data, today)
    return corpus


# -- transcripts ------------------------------------------------------------------------------


def _session(corpus: Corpus, filler: Filler, rng: random.Random, where: str, project: str,
             day: date, items: list[Item], sizes: Sizes) -> None:
    low, high = sizes.turns_per_session
    if where == "assistant":
        turns = filler.take("chat", where, rng.randint(max(2, low - 2), high - 4))
    else:
        turns = filler.take(project, where, rng.randint(low, high))
    if not turns and not items:
        return
    for item in items:
        assert item.user is not None and item.assistant is not None
        turns.insert(rng.randint(0, len(turns)), (item.user, item.assistant))
    start = at(day, rng)
    moments = []
    moment = start
    for _ in turns:
        moments.append(moment)
        moment += timedelta(seconds=rng.randint(40, 900))
    session_id = str(uuid.UUID(int=rng.getrandbits(128)))
    cwd = str(corpus.home / "src" / project) if project != "none" else str(corpus.home)
    if where == "claude-code":
        lines = _claude_code(session_id, cwd, turns, moments, rng)
        directory = corpus.home / ".claude" / "projects" / cwd.replace("/", "-")
        path = directory / f"{session_id}.jsonl"
    elif where == "codex":
        lines = _codex(session_id, cwd, turns, moments, rng)
        path = (corpus.home / ".codex" / "sessions" / f"{day:%Y/%m/%d}"
                / f"rollout-{start:%Y-%m-%dT%H-%M-%S}-{session_id}.jsonl")
    else:
        lines = _generic(session_id, turns, moments, rng)
        path = corpus.home / "chats" / "assistant" / f"{day:%Y-%m-%d}-{session_id[:8]}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), "utf-8")
    stamp = moments[-1].timestamp() + 60
    os.utime(path, (stamp, stamp))


def _claude_code(session: str, cwd: str, turns: list[tuple[str, str]], moments: list[datetime],
                 rng: random.Random) -> list[dict[str, Any]]:
    lines: list[dict[str, Any]] = []
    parent = None
    common = {"sessionId": session, "cwd": cwd, "version": "2.1.190", "gitBranch": "main",
              "userType": "external", "isSidechain": False}
    for (user, answer), moment in zip(turns, moments):
        uid = str(uuid.UUID(int=rng.getrandbits(128)))
        lines.append({**common, "type": "user", "uuid": uid, "parentUuid": parent,
                      "timestamp": iso(moment), "message": {"role": "user", "content": user}})
        parent = uid
        message_id = "msg_" + hashlib.sha256(uid.encode()).hexdigest()[:24]
        later = moment + timedelta(seconds=rng.randint(5, 60))
        if rng.random() < 0.4:  # a tool call and its result, as real sessions have
            tool_id = "toolu_" + uid[:20].replace("-", "")
            step = str(uuid.UUID(int=rng.getrandbits(128)))
            lines.append({**common, "type": "assistant", "uuid": step, "parentUuid": parent,
                          "timestamp": iso(later), "message": {
                              "id": message_id + "t", "role": "assistant", "model": "claude-opus-4-5",
                              "content": [{"type": "tool_use", "id": tool_id, "name": "Bash",
                                           "input": {"command": "git status --short"}}]}})
            result = str(uuid.UUID(int=rng.getrandbits(128)))
            lines.append({**common, "type": "user", "uuid": result, "parentUuid": step,
                          "timestamp": iso(later), "toolUseResult": {"stdout": " M README.md"},
                          "message": {"role": "user", "content": [
                              {"type": "tool_result", "tool_use_id": tool_id,
                               "content": " M README.md"}]}})
            parent = result
        answer_id = str(uuid.UUID(int=rng.getrandbits(128)))
        lines.append({**common, "type": "assistant", "uuid": answer_id, "parentUuid": parent,
                      "timestamp": iso(later + timedelta(seconds=3)), "message": {
                          "id": message_id, "role": "assistant", "model": "claude-opus-4-5",
                          "content": [{"type": "text", "text": answer}]}})
        parent = answer_id
    return lines


def _codex(session: str, cwd: str, turns: list[tuple[str, str]], moments: list[datetime],
           rng: random.Random) -> list[dict[str, Any]]:
    lines: list[dict[str, Any]] = [{"timestamp": iso(moments[0]), "type": "session_meta", "payload": {
        "id": session, "timestamp": iso(moments[0]), "cwd": cwd, "originator": "codex_cli_rs",
        "cli_version": "0.63.0", "source": "cli", "model_provider": "openai"}}]
    for (user, answer), moment in zip(turns, moments):
        later = moment + timedelta(seconds=rng.randint(5, 60))
        lines.append({"timestamp": iso(moment), "type": "turn_context",
                      "payload": {"cwd": cwd, "model": "gpt-5-codex"}})
        lines.append({"timestamp": iso(moment), "type": "event_msg",
                      "payload": {"type": "user_message", "message": user, "kind": "plain"}})
        lines.append({"timestamp": iso(later), "type": "response_item", "payload": {
            "type": "message", "role": "assistant", "id": "msg_" + uuid.UUID(
                int=rng.getrandbits(128)).hex[:20],
            "content": [{"type": "output_text", "text": answer}]}})
        lines.append({"timestamp": iso(later), "type": "event_msg",
                      "payload": {"type": "agent_message", "message": answer}})
    return lines


def _generic(session: str, turns: list[tuple[str, str]], moments: list[datetime],
             rng: random.Random) -> list[dict[str, Any]]:
    lines = []
    for (user, answer), moment in zip(turns, moments):
        lines.append({"role": "user", "content": user, "timestamp": iso(moment),
                      "session_id": session, "id": str(uuid.UUID(int=rng.getrandbits(128)))})
        lines.append({"role": "assistant", "content": answer,
                      "timestamp": iso(moment + timedelta(seconds=rng.randint(3, 40))),
                      "session_id": session, "id": str(uuid.UUID(int=rng.getrandbits(128)))})
    return lines


# -- memory files -----------------------------------------------------------------------------

NOTEBOOK_SECTIONS = ("Mistakes", "Learnings", "Shareholder Feedback", "Session Log")


def _notebooks(corpus: Corpus, data: Dataset, items: list[Item], rng: random.Random,
               today: date) -> None:
    """Role agents' notebooks, and claude-code's auto-memory per project."""
    bullets: dict[Path, list[tuple[str, date, str]]] = {}

    def path_for(agent: str, project: str) -> Path:
        if agent == "claude-code":
            cwd = str(corpus.home / "src" / (project if project != "none" else "shop"))
            return corpus.home / ".claude" / "projects" / cwd.replace("/", "-") / "memory" / "MEMORY.md"
        return corpus.home / ".mastersof-ai" / "agents" / agent / "memory" / "notebook.md"

    for item in items:
        if item.where == "notebook":
            assert item.section is not None
            bullets.setdefault(path_for(item.agent, item.project), []).append(
                (item.section, item.date(today), item.text))
    for raw in data.filler["bullet"]:
        agent = raw["agent"]
        project = rng.choice(PROJECTS) if agent == "claude-code" else "none"
        day = today - timedelta(days=rng.randint(1, MAX_DAY))
        bullets.setdefault(path_for(agent, project), []).append((raw["section"], day, raw["text"]))
    for path, entries in bullets.items():
        agent = path.parent.parent.name if ".mastersof-ai" in path.parts else "Claude"
        lines = [f"# {agent.title()} Memory", ""]
        for section in NOTEBOOK_SECTIONS:
            chosen = sorted((e for e in entries if e[0] == section), key=lambda e: e[1], reverse=True)
            if not chosen:
                continue
            lines += [f"## {section}"]
            lines += [f"- [{day.isoformat()}] {text}" for _, day, text in chosen]
            lines.append("")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines), "utf-8")


def _governance(corpus: Corpus, items: list[Item], today: date) -> None:
    """CLAUDE.md / AGENTS.md bullets per project, and the user's ~/.claude/CLAUDE.md."""
    files: dict[Path, list[Item]] = {}
    for item in items:
        if item.where == "claude-md":
            files.setdefault(corpus.home / "src" / item.project / "CLAUDE.md", []).append(item)
        elif item.where == "agents-md":
            files.setdefault(corpus.home / "src" / item.project / "AGENTS.md", []).append(item)
        elif item.where == "user-claude-md":
            files.setdefault(corpus.home / ".claude" / "CLAUDE.md", []).append(item)
    for path, members in files.items():
        title = "Global rules" if path.parent.name == ".claude" else f"{path.parent.name}"
        lines = [f"# {title}", "", "## Conventions", ""]
        lines += [f"- {item.text}" for item in sorted(members, key=lambda i: i.day, reverse=True)]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines) + "\n", "utf-8")
        newest = today - timedelta(days=min(i.day for i in members))
        stamp = datetime.combine(newest, time(12), UTC).timestamp()
        os.utime(path, (stamp, stamp))


def _imports(corpus: Corpus, data: Dataset, items: list[Item], rng: random.Random, today: date,
             sizes: Sizes) -> None:
    """Facts and notes written through the API, with their dates."""
    for item in items:
        if item.where in ("fact", "note"):
            params: dict[str, Any] = {"agent": item.agent, "category": "eval", "text": item.text,
                                      "created": at(item.date(today), rng).timestamp(),
                                      "kind": "fact" if item.where == "fact" else "note"}
            if item.key:
                params["key"] = item.key
            corpus.imports.append(params)
    notes = data.filler["note"]
    for raw in rng.sample(notes, min(sizes.filler_notes, len(notes))):
        day = today - timedelta(days=rng.randint(1, MAX_DAY))
        corpus.imports.append({"agent": raw["agent"], "category": "notes", "kind": "note",
                               "text": raw["text"], "created": at(day, rng).timestamp()})


def _queries(corpus: Corpus, data: Dataset, today: date) -> None:
    for number, query in enumerate(data.queries):
        answers = [data.items[a] for a in query.answers]
        when = when_words(answers[0].date(today), today) if answers else {}
        corpus.queries.append({
            "id": f"q{number:04d}", "origin": query.origin, "q": query.render(when),
            "type": query.type, "agents": query.agents,
            "answers": [{"item": a.id, "span": a.span} for a in answers],
        })
