"""What becomes of a finished session's candidates (seed 003): the negative list, duplicates,
and the decision for each (:func:`decide`, :func:`extract`, :func:`dry_run_report`).

The candidates come from the deterministic extractor (:mod:`memoryd.sessions.candidates`) or
the optional LLM extractor (:mod:`memoryd.sessions.llm_extractor`). No daemon, no database, no
model: the caller passes the session's user messages, the agent's current lessons and facts,
and (optionally) a cosine similarity function; the result is one :class:`Decision` per
candidate, accepted or rejected with a reason (seed 004's debug view: :func:`dry_run_report`).

Sessions
    :func:`extract` returns ``[]`` for sessions with fewer than :data:`MIN_USER_MESSAGES` user
    messages that have text. Seed 003 extracts only from those: a session of one or two prompts
    is a quick question, and what it says is about that question, not a lasting preference.

The negative list (:func:`negative_reason`, seed 003), applied to every candidate, from either
extractor; the reason is ``negative-list: <what>``:

- ``<what> (key <key>)``: a fact key naming a file path, the project structure, git history or
  the current task (:data:`_KEY_RULES`: keys containing ``filepath``, ``file_path``,
  ``git.history`` or ``current_task``; segments ``path``, ``dir``, ``structure``, ``layout``,
  ``history``, ``commit``, ``sha``, ``task``, ``ticket``, ``todo``; segments ending in
  ``_path``, ``_dir``, ``_file``, ``_sha``, ``_ticket``);
- ``file path``: ``src/app/config.py``, ``./x``, ``~/x``, ``/etc/x/y``, ``C:\\x`` (not URLs,
  not ``and/or``, not slash commands like ``/compact``, not bare names like ``.env``);
- ``git history``: ``git log|blame|show|bisect``, commit hashes, "was merged/reverted …";
- ``debugging recipe``: "to debug …", "set a breakpoint", pdb, "to reproduce", and
  "when/if <error or failure> …, run/try/restart …";
- ``activity summary``: "we fixed …", "we deployed …", "I worked on …", "today …";
- ``current task``: "the current task", "this ticket", "we're working on", ticket ids like
  ``TASK-123`` (not ``UTF-8``, ``ISO-8601``, ``SHA-256``, ``PEP-8``, …);
- ``project structure``: "X lives in / is located in / is defined in …", "the folder layout";
- ``one-off instruction``: "for now", "this time", "right now", "yet", "today", "this PR",
  "this branch", "this file", … (true of this task, not of the next one).

Dedup (:func:`decide`), after the negative list:

- a lesson is a duplicate of an existing unkeyed entry that says the same thing
  (:func:`memoryd.meaning.difference` finds no difference: a "don't" is never the duplicate of
  a "do", nor "use pnpm" of "use npm") when the Jaccard of their terms
  (:func:`memoryd.meaning.term_jaccard`) ≥ :data:`JACCARD_DUPLICATE` (the best match, measure
  ``jaccard``), else, if ``cosine`` is given, when ``cosine(candidate, existing)`` ≥
  :data:`COSINE_DUPLICATE` (measure ``cosine``). The cosine function is called once per pair,
  so it should cache its vectors;
- a fact is a duplicate when an existing entry has the same key and the same normalised value
  (measure ``key``). Existing entries are ``(entry_id, text)`` or ``(entry_id, text, key)``:
  facts are compared only with keyed entries, lessons only with unkeyed ones. A fact with the
  same key and a new value is accepted (the store supersedes the old one by confidence);
- candidates are compared with the ones accepted before them in the session the same way;
  the reason is ``duplicate within session: … with message <message_id>``.

A candidate that says the opposite of an existing lesson is accepted: the write path stores
it beside the lesson it corrects (memoryd.store.remember).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from memoryd.meaning import JACCARD_DUPLICATE, difference, reading, term_jaccard
from memoryd.sessions.candidates import (
    MAX_SENTENCE_CHARS,
    Candidate,
    Message,
    find_candidates,
)
from memoryd.text import normalise_text

MIN_USER_MESSAGES = 3
COSINE_DUPLICATE = 0.92


@dataclass(frozen=True)
class Decision:
    """What happens to a candidate, and why."""

    candidate: Candidate
    accepted: bool
    reason: str
    duplicate_of: str | None = None
    similarity: float | None = None
    measure: str | None = None  # 'jaccard' | 'cosine' | 'key'


# -- the negative list --------------------------------------------------------------------------

_KEY_RULES = (  # (what, whole segments, substrings, segment suffixes)
    ("file path", frozenset({"filepath", "file_path", "path", "paths", "dir", "directory"}),
     ("filepath", "file_path"), ("_path", "_paths", "_dir", "_directory", "_file")),
    ("project structure", frozenset({"structure", "layout", "tree"}), (),
     ("_structure", "_layout")),
    ("git history", frozenset({"history", "commit", "commits", "sha"}),
     ("git.history", "git_history"), ("_sha",)),
    ("current task", frozenset({"task", "ticket", "todo", "wip"}),
     ("current_task", "currenttask"), ("_ticket",)),
)
_PATH = re.compile(
    r"(?<![\w/:.@~-])(?:"
    r"(?:~|\.{1,2})/[\w.@+-]+"  # ~/x, ./x, ../x
    r"|/(?:[\w.@+-]+/)+[\w.@+-]+"  # /abs/two/segments
    r"|/[\w@+-]+\.[A-Za-z0-9]{1,8}\b"  # /file.ext
    r"|(?:[\w.@+-]+/)+[\w@+-]*\.[A-Za-z0-9]{1,8}\b"  # dir/file.ext
    r"|(?:[\w.@+-]+/){2,}"  # dir/sub/
    r"|[A-Za-z]:\\\S+"  # C:\x
    r")"
)
_GIT_HISTORY = re.compile(
    r"\bgit\s+(?:log|blame|show|bisect|reflog|history)\b"
    r"|\b(?:commit|sha|revision|rev)\s+[0-9a-f]{4,40}\b"
    r"|(?<![\w-])(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}(?![\w-])"
    r"|\b(?:was|were|got|been)\s+(?:merged|reverted|introduced|committed|cherry-picked)\b"
    r"|\bregression came from\b",
    re.I,
)
_DEBUGGING = re.compile(
    r"^(?:to|for)\s+debug(?:ging)?\b|\bwhen\s+debugging\b|\bset\s+a\s+breakpoint\b"
    r"|\bbreakpoint\(\)|\bpdb\b|\bto\s+reproduce\b|\bstep\s+through\b"
    r"|^(?:if|when(?:ever)?)\b[^.]*\b(?:errors?|fails?|failing|failed|crash(?:es|ed)?|exception|"
    r"traceback|hangs?|broken)\b[^.]*\b(?:run|try|restart|reinstall|delete|clear|rm|kill|rerun|"
    r"re-run)\b",
    re.I,
)
_ACTIVITY = re.compile(
    r"^(?:(?:today|yesterday|tonight|earlier(?: today)?|so far|this (?:morning|afternoon|evening|"
    r"week)|last (?:night|week))\b"
    r"|(?:we|i)(?:'ve|\s+have|\s+just|\s+then|\s+finally|\s+already|\s+also)*\s+(?:fixed|"
    r"deployed|shipped|merged|released|worked on|finished|completed|implemented|refactored|"
    r"debugged|added|removed|migrated|updated|upgraded|changed|wrote|built|set up|cleaned up|"
    r"rolled back|investigated|tried|been working)\b)",
    re.I,
)
_CURRENT_TASK = re.compile(
    r"\b(?:current|today's)\s+(?:task|ticket|story|sprint|issue|bug)\b"
    r"|\bthis\s+(?:task|ticket|story|sprint|issue)\b|\bthe task (?:is|at hand)\b"
    r"|\b(?:we|i)(?:'re|\s+are|'m|\s+am)\s+(?:currently\s+)?(?:working on|fixing|implementing|"
    r"debugging|building)\b|\bcurrently\s+working\b",
    re.I,
)
_TICKET = re.compile(
    r"(?<![\w-])(?!(?:UTF|ISO|SHA|RFC|PEP|CVE|MD|AES|RSA|HTTP|TLS|SSL|IPV|GPT|ES|ECMA|ANSI|IEEE|"
    r"WCAG|COVID|PDF|EN|BS|X|H|GB)-)[A-Z][A-Z0-9]{1,9}-\d+(?![\w-])"
)
_STRUCTURE = re.compile(
    r"\b(?:lives?|located|resides?|(?:is|are)\s+defined|(?:is|are)\s+declared)\s+"
    r"(?:in|under|at|inside)\b|\b(?:project|folder|directory|repo|package)\s+(?:structure|layout)\b"
    r"|\bthe\s+(?:\w+\s+)?(?:folder|directory)\s+(?:contains|has|holds)\b",
    re.I,
)
_ONE_OFF = re.compile(
    r"\b(?:this time|for now|right now|just now|at the moment|for the moment|yet|today|tonight|"
    r"tomorrow|yesterday|this (?:morning|afternoon|evening|week|sprint|pr|branch|commit|file|"
    r"function|method|class|test|one|change|session)|that (?:one|file|function|change))\b",
    re.I,
)


def negative_reason(candidate: Candidate) -> str | None:
    """Why seed 003's negative list rejects the candidate, or None. Reads the key and the first
    MAX_SENTENCE_CHARS of the text."""
    if candidate.key:
        key = candidate.key.lower().replace("-", "_")
        segments = set(key.split("."))
        for what, names, substrings, suffixes in _KEY_RULES:
            if segments & names or any(s in key for s in substrings) \
                    or any(seg.endswith(suffixes) for seg in segments):
                return f"negative-list: {what} (key {candidate.key})"
    text = candidate.text[:MAX_SENTENCE_CHARS].replace("\u2019", "'")
    checks = (
        ("file path", _PATH), ("git history", _GIT_HISTORY), ("debugging recipe", _DEBUGGING),
        ("activity summary", _ACTIVITY), ("current task", _CURRENT_TASK),
        ("current task", _TICKET), ("project structure", _STRUCTURE),
        ("one-off instruction", _ONE_OFF),
    )
    for what, pattern in checks:
        if pattern.search(text):
            return f"negative-list: {what}"
    return None


# -- decisions ----------------------------------------------------------------------------------

Existing = tuple[str, str] | tuple[str, str, str | None]


def decide(
    candidates: Sequence[Candidate],
    existing: Sequence[Existing],
    cosine: Callable[[str, str], float] | None = None,
) -> list[Decision]:
    """One decision per candidate, in order: the negative list, then dedup against existing
    memory, then dedup against the candidates accepted before it in the session."""
    lessons = [(e[0], e[1]) for e in existing if len(e) < 3 or not e[2]]
    facts: list[tuple[str, str | None, str]] = [
        (e[0], e[2], _factvalue_of(e[1])) for e in existing if len(e) >= 3 and e[2]]
    accepted: list[Candidate] = []
    decisions = []
    for candidate in candidates:
        decision = _decide_one(candidate, lessons, facts, accepted, cosine)
        if decision.accepted:
            accepted.append(candidate)
        decisions.append(decision)
    return decisions


def _decide_one(
    candidate: Candidate,
    lessons: list[tuple[str, str]],
    facts: list[tuple[str, str | None, str]],
    accepted: list[Candidate],
    cosine: Callable[[str, str], float] | None,
) -> Decision:
    reason = negative_reason(candidate)
    if reason:
        return Decision(candidate, False, reason)
    if candidate.kind == "fact" and candidate.key:
        value = _factvalue_of(candidate.text)
        for entry_id, key, existing_value in facts:
            if key == candidate.key and existing_value == value:
                return Decision(candidate, False, f"duplicate: same key and value as {entry_id}",
                                entry_id, 1.0, "key")
        for other in accepted:
            if other.kind == "fact" and other.key == candidate.key \
                    and _factvalue_of(other.text) == value:
                return Decision(candidate, False, "duplicate within session: same key and value "
                                f"as message {other.message_id}", None, 1.0, "key")
        return Decision(candidate, True, "accepted")
    near = _nearest(candidate.text, lessons, cosine)
    if near:
        entry_id, similarity, measure = near
        return Decision(candidate, False, f"duplicate: {measure} {similarity:.2f} with {entry_id}",
                        entry_id, similarity, measure)
    earlier = [(c.message_id, c.text) for c in accepted if c.kind == "lesson"]
    near = _nearest(candidate.text, earlier, cosine)
    if near:
        message_id, similarity, measure = near
        return Decision(candidate, False, f"duplicate within session: {measure} "
                        f"{similarity:.2f} with message {message_id}", None, similarity, measure)
    return Decision(candidate, True, "accepted")


def _nearest(
    text: str, others: Sequence[tuple[str, str]], cosine: Callable[[str, str], float] | None
) -> tuple[str, float, str] | None:
    """(id, similarity, measure) of the best duplicate — one that says the same thing
    (memoryd.meaning: not a "don't" of a "do", not another number, name or order) — by
    Jaccard first, else by cosine."""
    mine = reading(text)
    same = [(other_id, theirs) for other_id, other_text in others
            if difference(mine, theirs := reading(other_text)) is None]
    best: tuple[str, float] | None = None
    for other_id, theirs in same:
        score = term_jaccard(mine, theirs)
        if score >= JACCARD_DUPLICATE and (best is None or score > best[1]):
            best = (other_id, score)
    if best:
        return best[0], round(best[1], 4), "jaccard"
    if cosine is None:
        return None
    texts = dict(others)
    for other_id, _ in same:
        score = float(cosine(text, texts[other_id]))
        if math.isfinite(score) and score >= COSINE_DUPLICATE and (best is None or score > best[1]):
            best = (other_id, score)
    return (best[0], round(best[1], 4), "cosine") if best else None


def _factvalue_of(text: str) -> str:
    return normalise_text(text).strip(" .,;:!\"'`")


def extract(
    messages: Sequence[Message],
    existing: Sequence[Existing],
    cosine: Callable[[str, str], float] | None = None,
) -> list[Decision]:
    """The deterministic extraction of a finished session; ``[]`` below MIN_USER_MESSAGES."""
    if sum(1 for m in messages if m.text.strip()) < MIN_USER_MESSAGES:
        return []
    return decide(find_candidates(messages), existing, cosine)


def dry_run_report(
    messages: Sequence[Message], decisions: Sequence[Decision]
) -> list[dict[str, Any]]:
    """Seed 004's debug view as plain data: each message, the entries taken from it, and what
    became of each. Decisions with no known message come last, under message_id ""."""
    by_message: dict[str, list[dict[str, Any]]] = {}
    for decision in decisions:
        entry = asdict(decision.candidate)
        entry.update(accepted=decision.accepted, reason=decision.reason,
                     duplicate_of=decision.duplicate_of, similarity=decision.similarity,
                     measure=decision.measure)
        by_message.setdefault(decision.candidate.message_id, []).append(entry)
    report: list[dict[str, Any]] = [
        {"message_id": m.message_id, "text": m.text, "entries": by_message.pop(m.message_id, [])}
        for m in messages
    ]
    for message_id, entries in by_message.items():
        report.append({"message_id": message_id, "text": None, "entries": entries})
    return report
