"""The conversational evaluation set as data: ``c*.toml`` read, validated, with each turn's
time and each question's half (see README.md for the format and the rules).

No memoryd import: the check, the harness, the baseline and the test all read the set
through this module.
"""

from __future__ import annotations

import hashlib
import re
import tomllib
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
TYPES = ("single-hop", "multi-hop", "temporal", "open-domain")
HALVES = ("tuning", "held-out")
#: What one conversation needs (README.md, "Sizes").
MIN_SESSIONS = 15
MIN_TURNS = 100
MIN_QUESTIONS = 30
#: What the whole set needs once every conversation is written.
SET_TARGETS = {"conversations": 10, "turns": 1000, "questions": 300}
#: Seconds between two turns of a session: from the turn's id, 20 s to 4 min (README.md).
GAP_RANGE_S = (20, 240)

_CONV_ID = re.compile(r"c\d\d")
_SESSION_ID = re.compile(r"s\d\d")
_TURN_ID = re.compile(r"(s\d\d)\.(\d\d\d?)")
_QUESTION_ID = re.compile(r"q\d\d\d?")


@dataclass(frozen=True)
class Turn:
    id: str  # "s03.07": unique within its conversation
    speaker: str
    text: str
    at: datetime  # the session's start plus the gaps before it


@dataclass(frozen=True)
class Session:
    id: str  # "s03"
    start: datetime
    turns: tuple[Turn, ...]


@dataclass(frozen=True)
class Question:
    id: str  # "q07": unique within its conversation
    q: str
    type: str
    evidence: tuple[str, ...]  # turn ids
    answer: str
    conversation: str

    @property
    def key(self) -> str:
        return f"{self.conversation}/{self.id}"


@dataclass(frozen=True)
class Conversation:
    id: str
    title: str
    speakers: tuple[str, str]  # the first is written as role "user", the second "assistant"
    sessions: tuple[Session, ...]
    questions: tuple[Question, ...]
    asked: datetime  # when the questions are asked ("last month" counts back from it)
    path: Path

    @property
    def half(self) -> str:
        """Odd conversations tune, even ones are held out: each half mixes both writers."""
        return "tuning" if int(self.id[1:]) % 2 == 1 else "held-out"

    def turns(self) -> dict[str, Turn]:
        return {t.id: t for s in self.sessions for t in s.turns}

    def session_of(self, turn_id: str) -> str:
        return turn_id.split(".")[0]


@dataclass(frozen=True)
class ConversationSet:
    conversations: tuple[Conversation, ...]
    problems: tuple[str, ...]

    def questions(self) -> list[Question]:
        return [q for c in self.conversations for q in c.questions]

    def sizes(self) -> dict[str, Any]:
        turns = sum(len(s.turns) for c in self.conversations for s in c.sessions)
        by_type = Counter(q.type for q in self.questions())
        return {"conversations": len(self.conversations),
                "sessions": sum(len(c.sessions) for c in self.conversations),
                "turns": turns, "questions": sum(by_type.values()),
                "by_type": {t: by_type.get(t, 0) for t in TYPES}}


def gap_s(turn_id: str, conversation: str) -> int:
    """A turn's delay after the one before, stable across runs (a hash of its id)."""
    digest = hashlib.sha256(f"{conversation}/{turn_id}".encode()).digest()
    low, high = GAP_RANGE_S
    return low + int.from_bytes(digest[:4], "big") % (high - low + 1)


def load(directory: Path = HERE, only: set[str] | None = None) -> ConversationSet:
    conversations: list[Conversation] = []
    problems: list[str] = []
    for path in sorted(directory.glob("c[0-9][0-9].toml")):
        if only and path.stem not in only:
            continue
        try:
            raw = tomllib.loads(path.read_text("utf-8"))
        except tomllib.TOMLDecodeError as exc:
            problems.append(f"{path.name}: not TOML: {exc}")
            continue
        conversation = _conversation(raw, path, problems)
        if conversation is not None:
            conversations.append(conversation)
    return ConversationSet(tuple(conversations), tuple(problems))


def _moment(value: object) -> datetime | None:
    if isinstance(value, datetime) and value.tzinfo is None:
        return value
    return None


def _session(raw: dict[str, Any], label: str, sid: str, ident: str, speakers: list[str],
             seen_turns: set[str], previous: datetime | None,
             problems: list[str]) -> Session | None:
    """Session ``sid`` of conversation ``ident``, or None (its problems added)."""
    if raw.get("id") != sid:
        problems.append(f"{label}: id must be {sid} (sessions are numbered in order)")
        return None
    start = _moment(raw.get("start"))
    if start is None:
        problems.append(f"{label}: start must be a local date-time, 2025-03-02T19:40:00")
        return None
    if previous is not None and start <= previous:
        problems.append(f"{label}: starts before the session before it has ended")
    turns: list[Turn] = []
    moment = start
    for raw_turn in raw.get("turns", []):
        tid, who, text = raw_turn.get("id"), raw_turn.get("who"), raw_turn.get("text")
        problem = _turn_problem(label, sid, tid, who, text, speakers, seen_turns)
        if problem is not None:
            problems.append(problem)
            continue
        seen_turns.add(tid)
        if turns:
            moment += timedelta(seconds=gap_s(tid, ident))
        turns.append(Turn(tid, who, text.strip(), moment))
    if not turns:
        problems.append(f"{label}: no turns")
        return None
    return Session(sid, start, tuple(turns))


def _turn_problem(label: str, sid: str, tid: object, who: object, text: object,
                  speakers: list[str], seen_turns: set[str]) -> str | None:
    match = _TURN_ID.fullmatch(str(tid))
    if not match or match.group(1) != sid:
        return f"{label}: bad turn id {tid!r} (want {sid}.NN)"
    if tid in seen_turns:
        return f"{label}: duplicate turn id {tid}"
    if who not in speakers:
        return f"{label}:{tid}: who must be one of {speakers}"
    if not isinstance(text, str) or not text.strip():
        return f"{label}:{tid}: empty text"
    return None


def _conversation(raw: dict[str, Any], path: Path, problems: list[str]) -> Conversation | None:
    name = path.name
    ident = raw.get("id")
    if ident != path.stem or not _CONV_ID.fullmatch(str(ident)):
        problems.append(f"{name}: id must be the file's name, c01 … c99")
        return None
    speakers = raw.get("speakers")
    if not (isinstance(speakers, list) and len(speakers) == 2 and len(set(speakers)) == 2
            and all(isinstance(s, str) and s for s in speakers)):
        problems.append(f"{name}: speakers must be two different names")
        return None
    sessions: list[Session] = []
    seen_turns: set[str] = set()
    previous: datetime | None = None
    for number, raw_session in enumerate(raw.get("session", []), 1):
        session = _session(raw_session, f"{name}:session {number}", f"s{number:02d}", ident,
                           speakers, seen_turns, previous, problems)
        if session is not None:
            sessions.append(session)
            previous = session.turns[-1].at
    if not sessions:
        problems.append(f"{name}: no sessions")
        return None
    asked = _moment(raw.get("asked")) if "asked" in raw else \
        datetime.combine(sessions[-1].start.date() + timedelta(days=7), datetime.min.time()) \
        + timedelta(hours=12)
    if asked is None or asked <= sessions[-1].turns[-1].at:
        problems.append(f"{name}: asked must be a local date-time after the last session")
        asked = sessions[-1].turns[-1].at + timedelta(days=7)
    questions = _questions(raw, ident, name, seen_turns, problems)
    return Conversation(ident, str(raw.get("title", "")), (speakers[0], speakers[1]),
                        tuple(sessions), tuple(questions), asked, path)


def _questions(raw: dict[str, Any], conversation: str, name: str, turns: set[str],
               problems: list[str]) -> list[Question]:
    questions: list[Question] = []
    seen: set[str] = set()
    for raw_q in raw.get("question", []):
        qid = raw_q.get("id")
        label = f"{name}:{qid}"
        if not _QUESTION_ID.fullmatch(str(qid)) or qid in seen:
            problems.append(f"{label}: question ids are q01, q02, … and unique")
            continue
        seen.add(qid)
        q, kind, answer = raw_q.get("q"), raw_q.get("type"), raw_q.get("answer")
        evidence = raw_q.get("evidence")
        if not isinstance(q, str) or not 3 <= len(q.split()) <= 25:
            problems.append(f"{label}: q must be a question of 3-25 words")
            continue
        if kind not in TYPES:
            problems.append(f"{label}: type must be one of {TYPES}")
            continue
        if not isinstance(answer, str) or not answer.strip():
            problems.append(f"{label}: needs a short reference answer")
            continue
        if not isinstance(evidence, list) or not evidence or len(set(evidence)) != len(evidence):
            problems.append(f"{label}: evidence must be a list of distinct turn ids")
            continue
        unknown = [e for e in evidence if e not in turns]
        if unknown:
            problems.append(f"{label}: unknown evidence {unknown}")
            continue
        sessions = {e.split(".")[0] for e in evidence}
        if kind == "multi-hop" and len(sessions) < 2:
            problems.append(f"{label}: multi-hop evidence must span two or more sessions")
            continue
        if kind == "open-domain" and len(evidence) < 2:
            problems.append(f"{label}: open-domain needs the gist of two or more turns")
            continue
        questions.append(Question(qid, q, kind, tuple(evidence), answer.strip(), conversation))
    return questions


def check_sizes(conversation: Conversation) -> list[str]:
    """What one conversation lacks against README.md's sizes."""
    lacking = []
    turns = sum(len(s.turns) for s in conversation.sessions)
    if len(conversation.sessions) < MIN_SESSIONS:
        lacking.append(f"{conversation.id}: {len(conversation.sessions)} sessions, "
                       f"needs {MIN_SESSIONS}")
    if turns < MIN_TURNS:
        lacking.append(f"{conversation.id}: {turns} turns, needs {MIN_TURNS}")
    if len(conversation.questions) < MIN_QUESTIONS:
        lacking.append(f"{conversation.id}: {len(conversation.questions)} questions, "
                       f"needs {MIN_QUESTIONS}")
    span = conversation.sessions[-1].start - conversation.sessions[0].start
    if span < timedelta(days=90):
        lacking.append(f"{conversation.id}: spans {span.days} days, needs three months")
    kinds = Counter(q.type for q in conversation.questions)
    missing = [t for t in TYPES if not kinds.get(t)]
    if missing:
        lacking.append(f"{conversation.id}: no {', '.join(missing)} question")
    return lacking
