"""Did the agent follow what memoryd injected? A deterministic judge of one entry in one session.

Design
------

memoryd knows what it injected into each session (the injection log, ``memory explain``) and
it can read the same session's transcript afterwards. For every entry injected into a session
the judge decides one **outcome** from what happened after the injection:

``followed``     the agent acted in line with it: a lesson's prescribed program, flag, path
                 or file shows up in its tool calls or edits; a fact's value is what it used;
                 a "don't" met its occasion and the agent kept it (``git push`` without
                 ``--force``; ``uv add`` against "don't use pip").
``broken``       the agent did what a "don't" forbids or a rival of what a "do" names
                 (``pip install`` after "use uv, not pip"; ``npm install`` against the fact
                 "package manager: pnpm"), or did Y without X against "X before Y"; or it did
                 something close (the program without the branch the memory names) and the
                 user then corrected it.
``no occasion``  nothing in the session touched it (most entries, most sessions).

Each outcome carries its **evidence**: the record id of the step (a transcript line's uuid, or
the hash of a Codex line), the tool call id, what the call did, and the memory's words it
matched; and a sentence saying why. What it quotes of a step (a command, a user's message) is
redacted (memoryd.redact) before it is cut to length: an outcome is kept and shown (the
outcomes file, ``memory explain``, ``memory history``), and a command often carries a token.

**Signals, strongest first.** Only what the agent *did* counts: tool calls (shell commands as
the programs they run, memoryd.sessions.shell; files written; text added to files) read from
Claude Code, Codex and generic transcripts alike (memoryd.ingest.transcript.actions). What
anyone merely *says* is not an action: a command quoted in the assistant's prose, a "don't"
the user repeats, ``grep "pip install"`` or ``echo`` do not break "use uv, not pip". The
user's messages matter in two ways. A **correction** after a matching call ("no, we use uv",
"I told you…", a rejected tool call) is strong evidence: it turns a near match into
``broken`` and is kept as evidence. A **request** before it ("install it with pip this time")
sanctions the call: the user overruled the memory, so it is not counted as broken (no
occasion, with the request as evidence).

**Rules from the entry's own words** (memoryd.sessions.outcome_rules): commands, programs,
flags, paths, identifiers and values, and how the sentence holds them: negations ("never",
"don't"), contrasts ("use X, not Y", "X instead of Y", "prefer X over Y"), order ("X before
Y", "never Y without X"), deprecations ("Y is deprecated"). Nothing is learned, nothing is
guessed from meaning: a memory whose words name nothing a session can show ("be concise")
never has an occasion. That is the price of precision: a wrong "broken" would teach memoryd
the wrong thing about a memory that was fine.

**One outcome per entry and session.** An entry injected twice in a session (the session
start and a prompt) is judged once, from its first injection. ``broken`` wins over
``followed`` (the agent did the opposite at least once, which is what a person wants to
know), ``followed`` over ``no occasion``.

**Pure and fast.** No I/O: the caller reads the transcript (memoryd.sessions.usage runs it
when a session ends or goes quiet, and when ``memory explain`` asks) and stores the outcomes
(memoryd.store.usage). Rules are compiled once per text (cached); a session's steps are read
once for all its entries. Measured on a hand-labelled set (bench/eval/outcomes,
``python bench/eval_outcomes.py``).
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Protocol

from memoryd.ingest.transcript.actions import Step
from memoryd.redact import redact
from memoryd.sessions.outcome_rules import Rule, Term, rule_of
from memoryd.sessions.shell import Invocation, invocations, written_paths

FOLLOWED, BROKEN, NO_OCCASION = "followed", "broken", "no occasion"
OUTCOMES = (FOLLOWED, BROKEN, NO_OCCASION)
#: Steps this much before the injection's time still count (the prompt that triggered a
#: prompt hook is written to the transcript about when the hook runs).
SLACK_S = 5.0
#: Programs whose path arguments are files they change (``rm``, ``git add``, ``sed -i``, …).
_MUTATORS = {"rm", "mv", "cp", "touch", "truncate", "chmod", "chown", "unlink", "shred", "ln",
             "tee"}
_INSTALLS = {"install", "add", "i"}
_GIT_MUTATING = {"add", "rm", "mv", "commit", "checkout", "restore"}
_CORRECTION_START = re.compile(
    r"^\W*(?:no+\b|nope|stop|wait|hold on|why (?:did|are|would) you|i (?:said|told you)|wrong|"
    r"that'?s (?:wrong|not)|not like that|undo|revert|ugh|please don'?t|don'?t do that|"
    r"you (?:should|shouldn'?t) have)", re.I)
_CORRECTION_ANYWHERE = re.compile(
    r"\b(?:i told you|i said|as i said|we use|we don'?t use|supposed to|you should have|"
    r"remember(?:,| that| we)|instead)\b", re.I)
_NEGATED = re.compile(r"\b(?:not|don'?t|never|no|avoid|stop|instead of|rather than|without|"
                      r"isn'?t|aren'?t)\b", re.I)
_SKIP = re.compile(r"\b(?:skip|no need|don'?t bother|without (?:running|the)|don'?t run|"
                   r"not now|later)\b", re.I)
_REJECTED = "rejected"


@dataclass(frozen=True)
class Evidence:
    """One step that counts: what it did and which of the memory's words it matched."""

    signal: str  # 'broke' | 'near' | 'followed' | 'correction' | 'asked'
    record_id: str
    call_id: str
    what: str
    term: str
    ts: float | None


@dataclass(frozen=True)
class Outcome:
    outcome: str  # FOLLOWED | BROKEN | NO_OCCASION
    evidence: tuple[Evidence, ...]
    why: str

    def as_dict(self) -> dict[str, Any]:
        return {"outcome": self.outcome, "why": self.why,
                "evidence": [e.__dict__ for e in self.evidence]}


def _program(want: str, word: str) -> bool:
    """``word`` runs ``want``: itself, or a versioned name of it (``pip3``, ``python3.12``)."""
    if word == want:
        return True
    version = word[len(want):]
    return word.startswith(want) and bool(version) and version[0].isdigit() \
        and version.replace(".", "").isdigit()


def _base(word: str) -> str:
    """A program's name without its version (``pip3.12`` → ``pip``)."""
    return word.rstrip("0123456789.") or word


def _flag(flag: str, args: Sequence[str]) -> bool:
    if flag == "+":
        return any(a.startswith("+") and len(a) > 1 for a in args)
    if flag.startswith("--"):
        return any(a == flag or a.startswith(flag + "=") for a in args)
    letters = set(flag[1:])
    have: set[str] = set()
    for arg in args:
        if re.fullmatch(r"-[A-Za-z]+", arg):
            have |= set(arg[1:])
    return bool(letters) and letters <= have


def _names_branch(branches: Sequence[str], plain: Sequence[str]) -> bool:
    return any(arg.lstrip("+") == b or arg.endswith((":" + b, "/" + b))
               for arg in plain for b in branches)


def _names_argument(arg: str, plain: Sequence[str]) -> bool:
    """The call names an argument a memory names: the same word, or a path at or under the
    path it names (``/etc/hosts`` under ``/etc``; only ``/`` itself is ``/``)."""
    want = arg.rstrip("/") or "/"
    for given in plain:
        have = given.rstrip("/") or "/"
        if have == want or (want not in ("/", "~", ".") and "/" in want
                            and have.startswith(want + "/")):
            return True
    return False


def match_command(term: Term, inv: Invocation) -> str | None:
    """``thing`` (what the term says), ``near`` (the program without the branch or the
    arguments the memory names), ``occasion`` (the program and subcommand without the term's
    flags), or None."""
    if term.kind == "flag":
        return "thing" if all(any(_flag(f, inv.args) for f in g) for g in term.flags) else None
    for words in term.alternatives:
        if not _program(words[0], inv.command):
            continue
        plain = [a for a in inv.args if not a.startswith("-")]
        if any(w not in plain for w in words[1:]):
            continue
        if term.flags and not all(any(_flag(f, inv.args) for f in g) for g in term.flags):
            # the occasion is the program doing what the flag is about: `docker build`
            # without --no-cache, not `docker ps` against "docker with --privileged"
            return "occasion" if len(words) > 1 else None
        if term.qualifiers and not _names_branch(term.qualifiers, plain):
            return "near"
        if not all(_names_argument(arg, plain) for arg in term.args):
            return "near"
        return "thing"
    return None


def path_matches(value: str, path: str) -> bool:
    want = value[2:] if value.startswith("./") else value
    full = "/" + path.lstrip("/")
    base = full.rsplit("/", 1)[-1]
    if "*" in want:
        return fnmatch.fnmatch(base, want) or fnmatch.fnmatch(full, "*/" + want.lstrip("/"))
    if want.endswith("/"):
        return "/" + want.strip("/") + "/" in full
    if "/" in want:
        return full.endswith("/" + want.strip("/")) or "/" + want.strip("/") + "/" in full
    return base == want


@lru_cache(maxsize=4096)
def _word_pattern(value: str) -> re.Pattern[str]:
    pattern = re.escape(value)
    if value[-1].isalnum() or value[-1] == "_":
        pattern += r"(?![\w-])"
    if value[0].isalnum() or value[0] == "_":
        pattern = r"(?<![\w-])" + pattern
    return re.compile(pattern)


def _text_has(value: str, text: str) -> bool:
    """``text`` holds ``value`` as a word (not inside a longer one)."""
    if not value or not text or value not in text:
        return False
    return _word_pattern(value).search(text) is not None


@dataclass
class _Action:
    """A tool step read once for every entry: the programs it runs, the files it writes."""

    step: Step
    runs: list[Invocation]
    writes: list[str]
    code: str  # commands and added text, for literals
    programs: frozenset[str]  # the programs it runs, without versions: a quick first check
    _what: str | None = None  # what evidence quotes of it (:meth:`what`), once

    @classmethod
    def of(cls, step: Step) -> _Action:
        runs = [inv for command in step.commands for inv in invocations(command)]
        writes = list(step.writes)
        for command in step.commands:
            writes.extend(written_paths(command))
        for inv in runs:
            plain = [a for a in inv.args if not a.startswith("-")]
            if inv.command in _MUTATORS:
                writes.extend(plain if inv.command not in ("cp", "ln") else plain[-1:])
            elif inv.command == "git" and plain and plain[0] in _GIT_MUTATING:
                writes.extend(plain[1:])
            elif inv.command == "sed" and any(a.startswith("-i") for a in inv.args):
                writes.extend(plain[1:])
        return cls(step, runs, writes, "\n".join((*step.commands, step.added)),
                   frozenset(w for inv in runs for w in (inv.command, _base(inv.command))))

    def match(self, term: Term, reading: bool = False) -> str | None:
        """How the call matches ``term``; ``reading``: a file it reads counts as its path (a
        memory that says where something is was used when the agent read it)."""
        if term.kind in ("command", "flag"):
            if term.kind == "command" and not term.programs & self.programs:
                return None
            found = [m for inv in self.runs if (m := match_command(term, inv))]
            for level in ("thing", "near", "occasion"):
                if level in found:
                    return level
            return None
        if term.kind == "path":
            paths = self.writes + (self.reads() if reading else [])
            return "thing" if any(path_matches(term.value, p) for p in paths) else None
        if term.kind == "code":
            return "thing" if _text_has(term.value, self.step.added) else None
        if term.kind == "name":  # a library, or a program memoryd does not know
            used = any(_program(term.value, inv.command) or (term.value in inv.args
                                                             and _INSTALLS & set(inv.args))
                       for inv in self.runs)
            return "thing" if used or _text_has(term.value, self.step.added) else None
        return "thing" if _text_has(term.value.lower(), self.code.lower()) else None

    def reads(self) -> list[str]:
        return [*self.step.reads,
                *(a for inv in self.runs for a in inv.args if not a.startswith("-"))]

    def what(self) -> str:
        if self._what is None:
            step = self.step
            if step.commands:
                shown = "; ".join(step.commands)
            elif step.writes:
                shown = ", ".join(step.writes)
            else:
                shown = step.text
            self._what = _quoted(f"{step.tool}: {shown}")
        return self._what


def _mentions(term: Term, text: str, loosely: bool = False) -> bool:
    """``text`` names the term's program or value (``loosely``: or a word of what the memory
    says, "lint" of `make lint`)."""
    low = text.lower()
    if term.kind == "command":
        if any(_text_has(p, low) for p in term.programs) or _text_has(term.said.lower(), low):
            return True
        return loosely and any(_text_has(w, low) for w in re.findall(r"[a-z]{3,}",
                                                                      term.said.lower())
                               if w not in ("the", "run", "all", "our", "use"))
    return _text_has((term.value or term.said).lower(), low)


def _asked_for(term: Term, text: str) -> bool:
    """The user asks for the term's thing (mentions it, not negated in its clause): for a
    program with a flag or a branch, the flag or the branch too ("commit it" does not ask for
    ``--no-verify``; "force push main" asks for ``--force`` to main)."""
    for clause in re.split(r"[.;!?\n]|,\s+(?:but|and)\s+", text):
        if not _mentions(term, clause, True) or _NEGATED.search(clause):
            continue
        low = clause.lower()
        flags = [f.lstrip("-+") for group in term.flags for f in group if len(f) > 2]
        if flags and not any(_text_has(f, low) or _text_has(f.split("-")[0], low)
                             for f in flags):
            continue
        if term.qualifiers and not any(_text_has(q, low) for q in term.qualifiers):
            continue
        return True
    return False


def _is_correction(text: str, rule: Rule, terms: Sequence[Term]) -> bool:
    if not (_CORRECTION_START.search(text) or _CORRECTION_ANYWHERE.search(text)):
        return False
    if any(_mentions(t, text, True) for t in terms):
        return True
    words = {w.strip(".-") for w in re.findall(r"[a-z][a-z0-9_.-]{2,}", text.lower())}
    return len(words & rule.words) >= 2


def _evidence(signal: str, action: _Action, term: Term) -> Evidence:
    step = action.step
    return Evidence(signal, step.record_id, step.call_id, action.what(), term.said, step.timestamp)


def _said(signal: str, step: Step, term: str = "") -> Evidence:
    return Evidence(signal, step.record_id, step.call_id, _quoted(step.text) or step.role, term,
                    step.timestamp)


def _quoted(text: str) -> str:
    """What evidence quotes of a step: on one line, at most 200 characters, its secrets
    redacted first (a cut must not leave half a token its pattern no longer knows)."""
    return " ".join(redact(text).split())[:200]


class Worded(Protocol):
    """What an entry's rule is read from (a StoredEntry: memoryd.store.records)."""

    @property
    def kind(self) -> str: ...

    @property
    def text(self) -> str: ...

    @property
    def polarity(self) -> str | None: ...

    @property
    def key(self) -> str | None: ...


def judge(entry: Mapping[str, Any], steps: Sequence[Step], since: float | None = None,
          actions: Sequence[_Action] | None = None) -> Outcome:
    """:func:`judge_rule` of an entry given as a map of its kind, text, polarity and key (a
    case of the hand-labelled set: bench/eval/outcomes)."""
    return judge_rule(rule_of(str(entry.get("kind") or "note"), str(entry.get("text") or ""),
                              entry.get("polarity"), entry.get("key")), steps, since, actions)


def judge_rule(rule: Rule, steps: Sequence[Step], since: float | None = None,
               actions: Sequence[_Action] | None = None) -> Outcome:
    """The outcome of an entry whose words say ``rule`` (memoryd.sessions.outcome_rules) in a
    session whose steps are ``steps``, injected at ``since`` (None: from the start).
    ``actions``: the steps' tool calls read already (:func:`read_actions`), to judge many
    entries over one session."""
    if rule.empty:
        return Outcome(NO_OCCASION, (), "its words name no program, file or value a session "
                                        "can show")
    window = [s for s in steps if not s.sidechain and
              (since is None or s.timestamp is None or s.timestamp >= since - SLACK_S)]
    by_step = {id(a.step): a for a in actions} if actions is not None else {}
    breaks: list[tuple[int, Evidence, bool]] = []  # (index, evidence, near)
    follows: list[Evidence] = []
    asked: list[Evidence] = []
    seen: list[_Action] = []
    for index, step in enumerate(window):
        if step.role != "tool":
            continue
        action = by_step.get(id(step)) or _Action.of(step)
        for term in rule.dont:
            level = action.match(term)
            if level in ("thing", "near"):
                request = next((s for s in window[:index] if s.role == "user"
                                and _asked_for(term, s.text)), None)
                if request is not None:
                    asked.append(_said("asked", request, term.said))
                    continue
                breaks.append((index, _evidence("broke" if level == "thing" else "near", action,
                                                term), level == "near"))
            elif level == "occasion":
                follows.append(_evidence("followed", action, term))
        for term in rule.do:
            if action.match(term, reading=True) == "thing":
                follows.append(_evidence("followed", action, term))
        for term in rule.occasion:
            if action.match(term) != "thing":
                continue
            done = [t for t in rule.first for a in [*seen, action] if a.match(t) == "thing"
                    and (a is not action or _runs_before(a, t, term))]
            if done:
                follows.append(_evidence("followed", action, done[0]))
                continue
            skipped = next((s for s in window[:index] if s.role == "user" and _SKIP.search(s.text)
                            and any(_mentions(t, s.text, True) for t in rule.first)), None)
            if skipped is not None:
                asked.append(_said("asked", skipped, rule.first[0].said))
                continue
            breaks.append((index, _evidence("broke", action, term), False))
        seen.append(action)
    return _verdict(rule, window, breaks, follows, asked)


def _runs_before(action: _Action, first: Term, then: Term) -> bool:
    """In one command line: ``pytest && git commit`` runs the tests first."""
    firsts = [i for i, inv in enumerate(action.runs) if match_command(first, inv) == "thing"]
    thens = [i for i, inv in enumerate(action.runs) if match_command(then, inv) == "thing"]
    return bool(firsts and thens and min(firsts) < min(thens))


def _verdict(rule: Rule, window: Sequence[Step], breaks: list[tuple[int, Evidence, bool]],
             follows: list[Evidence], asked: list[Evidence]) -> Outcome:
    terms = (*rule.dont, *rule.do, *rule.first, *rule.occasion)
    confirmed: list[Evidence] = []
    for index, evidence, near in breaks:
        correction = _correction_after(window, index, evidence.call_id, rule, terms)
        if near and correction is None:
            continue
        confirmed.append(evidence)
        if correction is not None:
            confirmed.append(correction)
    if confirmed:
        first = confirmed[0]
        corrected = any(e.signal == "correction" for e in confirmed)
        return Outcome(BROKEN, tuple(_first_few(confirmed)),
                       f"broken: {first.what} (against “{first.term}”)"
                       + ("; the user corrected it" if corrected else ""))
    if follows:
        return Outcome(FOLLOWED, tuple(_first_few(follows)),
                       f"followed: {follows[0].what} (“{follows[0].term}”)")
    if asked:
        return Outcome(NO_OCCASION, tuple(asked[:3]),
                       f"no occasion: the user asked for “{asked[0].term}” themselves")
    return Outcome(NO_OCCASION, (), "no occasion: nothing in the session touched it")


def _correction_after(window: Sequence[Step], index: int, call_id: str, rule: Rule,
                      terms: Sequence[Term]) -> Evidence | None:
    """The user's correction of the step at ``index``: its call rejected, or the next user
    message correcting it."""
    for step in window[index + 1:]:
        if step.role == _REJECTED and call_id and step.call_id == call_id:
            return _said("correction", step)
        if step.role == "user":
            return _said("correction", step) if _is_correction(step.text, rule, terms) else None
    return None


def _first_few(evidence: list[Evidence], limit: int = 5) -> list[Evidence]:
    unique: dict[tuple[str, str, str], Evidence] = {}
    for e in evidence:
        unique.setdefault((e.signal, e.record_id, e.call_id), e)
    return list(unique.values())[:limit]


def read_actions(steps: Sequence[Step]) -> list[_Action]:
    """The tool calls of a session's steps, read once for judging many entries over them."""
    return [_Action.of(s) for s in steps if s.role == "tool"]
