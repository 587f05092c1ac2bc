"""Promotion (seed 001; seed 002's pinned promote/demote): lessons that keep coming back
become rules in the agent's governance file.

A lesson is **promoted** when it recurs — seen in ``MIN_SESSIONS`` (3) or more distinct
sessions, counting the duplicates consolidation merged into it and the agent's memory-file
lessons that say the same (seed 001's notebook mistake written again in three sessions, its
older copies perhaps in the notebook's archive by now; consolidation never merges a file's
entries), a sighting without a session counting by its day — or when the user's feedback
confirms it (a feedback entry of the agent with cosine ≥ ``FEEDBACK_COSINE`` to it), or the
sessions' outcomes do: broken in 2 sessions, or followed in 3 (memoryd.passes.evidence, which
also proposes lessons followed in several projects for the global tier). The rule is the
lesson's text with its incident dates (seed 001: "a CLAUDE.md rule with incident date"), worded
by its polarity as the memory block words it (memoryd.polarity: a Mistakes bullet that says
what went wrong is written "Don't: …"); one rule a lesson, however many copies said it. Its
rule goes to the agent's governance file:

- Claude Code: the project's ``CLAUDE.md`` (``~/.claude/CLAUDE.md`` for a global lesson);
- Codex: the project's ``AGENTS.md`` (``~/.codex/AGENTS.md`` for a global lesson);
- any other agent: ``CONTEXT.md`` beside the notebook the lesson came from, else in the
  agent's memory directory (``tools.memory_dir``) — a pinned file, injected whole.

memoryd writes only inside its own section, ``## Learned rules (memoryd)`` (created at the end
of the file when missing); nothing outside it is ever touched, and the file is written by
compare-and-swap (memoryd.passes.user_files). With ``passes.promote_mode = "propose"`` (the default)
the pass only proposes: ``memory pass show`` lists the proposals, ``memory promote accept ID``
writes one. With ``"auto"`` the pass writes them itself — except a rule whose lessons an agent
wrote (through the API, MCP, a hook or a script, or by its memory tools: memoryd.provenance),
which waits for a person's accept in either mode: ``memory promote accept`` typed at a
terminal. Text the quarantine's rules flag is never promoted, nor accepted (a proposal made
before the rules flagged it included). A promoted rule whose lesson is later
forgotten, or marked stale, is **demoted** the same way (proposed, or removed in auto mode).
Writing a rule also moves the lesson's bullets out of their notebooks into the notebooks'
archives (seed 001: an entry that graduates to CLAUDE.md leaves the memory file; keeping both
is noise), all in one group of file changes. Every write is a file change of the run: ``memory
undo`` takes it back byte for byte.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from memoryd.agent_settings import claude_home, codex_home
from memoryd.ingest.line_date import day_text, local_day
from memoryd.ingest.markdown import is_pinned
from memoryd.meaning import LESSON_COSINE, Reading, reading, same_thing
from memoryd.passes import evidence
from memoryd.passes.api import NOT_EMBEDDED, Offload
from memoryd.passes.changes import Change
from memoryd.passes.consolidate import best_first
from memoryd.passes.evidence import BROKEN_SESSIONS, GLOBAL, Used
from memoryd.passes.file_care import FileNotWrittenError, NotWritten
from memoryd.passes.file_changes import file_change
from memoryd.passes.notebooks import graduate
from memoryd.passes.runs import UNWRITTEN
from memoryd.passes.user_files import read_text
from memoryd.polarity import as_rule
from memoryd.provenance import agent_wrote
from memoryd.quarantine import reason as quarantine_reason
from memoryd.sources import ARCHIVE_DIR
from memoryd.store.file_versions import tool_written
from memoryd.store.query import EntryQuery
from memoryd.store.records import StoredEntry
from memoryd.text import normalise_text

if TYPE_CHECKING:
    from memoryd.passes.api import PassContext, Steps
    from memoryd.settings import Config
    from memoryd.store.database import Store

SECTION = "## Learned rules (memoryd)"
SECTION_NOTE = ("<!-- memoryd writes this section (lessons seen in 3+ sessions, broken or "
                "followed in sessions, or confirmed by feedback); `memory undo` takes a rule "
                "back. The rest of the file is yours. -->")
MIN_SESSIONS = 3
FEEDBACK_COSINE = 0.8
#: Incident dates a rule names (the newest).
DATES_SHOWN = 5
_HEADING = re.compile(r"^#{1,2}\s")
_NOTE = re.compile(r"\s*\((?:incidents: |confirmed by feedback|broken in |followed in )"
                   r"[^()]*\)\s*$")


# -- the section ---------------------------------------------------------------------------


def _span(lines: list[str]) -> tuple[int, int] | None:
    """[start, end) of memoryd's section: its heading up to the next heading of level 1-2."""
    for start, line in enumerate(lines):
        if line.strip() == SECTION:
            end = start + 1
            while end < len(lines) and not _HEADING.match(lines[end]):
                end += 1
            return start, end
    return None


def rules_in(text: str) -> list[str]:
    lines = text.split("\n")
    span = _span(lines)
    if span is None:
        return []
    return [line.strip()[2:].strip() for line in lines[span[0] + 1:span[1]]
            if line.strip().startswith("- ")]


def with_rule(text: str, rule: str) -> str:
    lines = text.rstrip("\n").split("\n") if text.strip() else []
    span = _span(lines)
    if span is None:
        block = [SECTION, "", SECTION_NOTE, f"- {rule}"]
        return "\n".join(lines + ([""] if lines else []) + block) + "\n"
    start, end = span
    last = max((i for i in range(start + 1, end) if lines[i].strip()), default=start)
    lines.insert(last + 1, f"- {rule}")
    return "\n".join(lines) + "\n"


def without_rule(text: str, rule: str) -> str:
    lines = text.split("\n")
    span = _span(lines)
    if span is None:
        return text
    start, end = span
    wanted = normalise_text(rule)
    kept = [line for line in lines[start + 1:end]
            if not (line.strip().startswith("- ") and normalise_text(line.strip()[2:]) == wanted)]
    # the section goes with its last rule
    if not any(line.strip().startswith("- ") for line in kept):
        before = lines[:start]
        while before and not before[-1].strip():
            before.pop()
        rest = lines[end:]
        return "\n".join(before + ([""] + rest if rest and any(r.strip() for r in rest) else [])
                         ).rstrip("\n") + "\n"
    return "\n".join(lines[:start + 1] + kept + lines[end:])


def governance_file(agent: str, project: str | None, source: str | None,
                    memory_dir: str) -> Path:
    """The file a lesson of ``agent`` (of ``project``, or global; from the memory file
    ``source``, if any) is promoted into."""
    if agent == "claude-code":  # the global file where Claude Code keeps its files
        return Path(project) / "CLAUDE.md" if project else \
            Path(claude_home()).expanduser() / "CLAUDE.md"
    if agent == "codex":
        return Path(project) / "AGENTS.md" if project else \
            Path(codex_home()).expanduser() / "AGENTS.md"
    if source:
        return Path(source).parent / "CONTEXT.md"
    return Path(memory_dir.replace("{agent}", agent)).expanduser() / "CONTEXT.md"


def _rule_text(entry: StoredEntry, days: list[int], recurs: bool,
               used: Used | None = None) -> str:
    """The lesson's text as a rule and when it happened: its incidents' dates (the last few)
    when it recurs; else the sessions that broke it (their dates) or followed it; else that
    the user's feedback confirmed it. A bare statement reads as the memory block shows it,
    by the lesson's polarity (memoryd.polarity): a Mistakes bullet "Used threshold-based
    black removal; it ate the dark hair." is written "Don't: Used …", never as an
    instruction to do what went wrong."""
    text = as_rule(" ".join(entry.text.split()), entry.polarity)
    if not recurs and used is not None and used.by_evidence:
        if used.broken >= BROKEN_SESSIONS:
            return f"{text} (broken in {used.broken} sessions: {_dates(used.broken_days)})"
        return f"{text} (followed in {used.followed} sessions)"
    if not recurs:
        return f"{text} (confirmed by feedback)"
    return f"{text} (incidents: {_dates(days)})"


def _dates(days: Sequence[int]) -> str:
    """The last few of ``days`` (local days: memoryd.ingest.line_date.local_day) as dates,
    oldest first: the dates of the notebook lines they were seen in."""
    dates = [day_text(day) for day in days[-DATES_SHOWN:]]
    return ("…, " if len(days) > DATES_SHOWN else "") + ", ".join(dates)


def _bare(rule: str) -> str:
    """A rule without its incident note, normalised: what it says."""
    return normalise_text(_NOTE.sub("", rule))


# -- the pass ------------------------------------------------------------------------------


#: Entries looked at in one step for the lessons merged into others.
ID_WINDOW = 10_000
#: Lessons compared with their agent's feedback (or memory-file lessons) in one hand-off.
COMPARED_AT_ONCE = 500


def _lessons(ctx: PassContext) -> Steps[list[StoredEntry]]:
    """The active lessons in the pass's scope, a page at a time (a slice each; sent back via
    the generator's return value)."""
    # not quarantined: a planted instruction never becomes a rule
    wanted = (EntryQuery().kind("lesson").active().quarantined(False).not_transcripts()
              .not_under(ARCHIVE_DIR).also(ctx.scope()))
    lessons: list[StoredEntry] = []
    top = ctx.store.last_rowid()
    last = 0
    while last < top:  # a page of lessons, within ID_WINDOW ids: finding that there are no
        # more lessons after the last one read every entry after it (31 ms in one step)
        end = last + ID_WINDOW
        rows = ctx.store.entries(wanted.ids_within(last, end), "id", 250)
        lessons.extend(rows)
        last = rows[-1].rowid if len(rows) == 250 else end
        yield
    return lessons


def _sighting(session: str | None, created: float) -> tuple[str, int]:
    """What makes a sighting independent (its session, else its local day), and its day."""
    day = local_day(created)
    return (f"session:{session}" if session else f"day:{day}"), day


def _sightings(ctx: PassContext) -> Steps[dict[str, dict[str, int]]]:
    """uid → the independent sightings (key → day) of the lessons merged into it (sent back
    via the generator's return value), a page at a time: all at once held the database thread
    for ~30 ms after a consolidation of the bench's store."""
    found: dict[str, dict[str, int]] = {}
    top = ctx.store.last_rowid()
    for start in range(0, top, ID_WINDOW):  # by ids, not by matches: those are few and far
        for row in ctx.store.entry_fields(
                EntryQuery().ids_within(start, start + ID_WINDOW).kind("lesson").superseded(),
                ("superseded_by", "session", "created")):
            key, day = _sighting(row["session"], row["created"])
            found.setdefault(row["superseded_by"], {})[key] = day
        yield
    return found


FILE_COLUMNS = ("id", "uid", "text", "session", "created")


def _file_copies(ctx: PassContext, lessons: list[StoredEntry], unembedded: set[int]
                 ) -> Steps[dict[str, list[tuple[str, str, int]]]]:
    """uid → the agent's memory-file lessons that say what the lesson says (cosine ≥ the
    near-duplicate threshold, or worded alike; saying the same thing: memoryd.meaning),
    archived ones included:
    their uids and sightings (sent back via the generator's return value). A notebook's
    lesson written again is never merged (its file is the truth), so its copies are found
    here. The lessons left out as they have no vector yet go into ``unembedded``."""
    index = ctx.index
    if index is None or not lessons:
        return {}
    found: dict[str, list[tuple[str, str, int]]] = {}
    by_agent: dict[str, list[StoredEntry]] = {}
    for lesson in lessons:
        by_agent.setdefault(lesson.agent, []).append(lesson)
    for agent, mine in by_agent.items():
        yield
        files = ctx.store.entry_fields(
            EntryQuery().agent(agent).kind("lesson").active().from_files().quarantined(False),
            FILE_COLUMNS)
        if not files:
            continue
        file_vectors = yield from ctx.index_vectors([f["id"] for f in files])
        unembedded.update(f["id"] for f in files if f["id"] not in file_vectors)
        files = [f for f in files if f["id"] in file_vectors]
        lesson_vectors = yield from ctx.index_vectors([e.rowid for e in mine])
        unembedded.update(e.rowid for e in mine if e.rowid not in lesson_vectors)
        mine = [e for e in mine if e.rowid in lesson_vectors]
        if not files or not mine:
            continue
        against = np.stack([file_vectors[f["id"]] for f in files])
        for start in range(0, len(mine), COMPARED_AT_ONCE):
            some = mine[start:start + COMPARED_AT_ONCE]
            pairs = yield Offload(_copies, (
                np.stack([lesson_vectors[e.rowid] for e in some]), against,
                [e.text for e in some], [f["text"] for f in files],
                ctx.config.remember.near_duplicate_cosine))
            for i, j in pairs:
                lesson, copy = some[i], files[j]
                if copy["uid"] != lesson.uid:
                    key, day = _sighting(copy["session"], copy["created"])
                    found.setdefault(lesson.uid, []).append((copy["uid"], key, day))
    return found


def _copies(rows: np.ndarray, against: np.ndarray, texts: list[str], others: list[str],
            threshold: float) -> list[tuple[int, int]]:
    """(i, j): ``others[j]`` says what ``texts[i]`` says (off the database thread)."""
    similar = rows @ against.T
    low = min(threshold, LESSON_COSINE)
    readings: dict[tuple[int, int], Reading] = {}

    def of(side: int, number: int) -> Reading:
        if (side, number) not in readings:
            readings[side, number] = reading((texts if side == 0 else others)[number])
        return readings[side, number]

    return [(i, j) for i, j in zip(*np.nonzero(similar >= low))
            if same_thing(of(0, i), of(1, j), float(similar[i, j]), threshold, lesson=True)]


def _confirmed(ctx: PassContext, lessons: list[StoredEntry], unembedded: set[int]
               ) -> Steps[set[str]]:
    """uids of lessons a feedback entry of their agent confirms (sent back via the generator's
    return value); the lessons left out as they have no vector yet go into ``unembedded``."""

    if not lessons or ctx.index is None:
        return set()
    feedback: list[tuple[int, str]] = []
    for agent in {e.agent for e in lessons}:  # by agent: one query for all took ~15 ms
        yield
        feedback += [(e["id"], e["agent"]) for e in ctx.store.entry_fields(
            EntryQuery().agent(agent).kind("feedback").active().quarantined(False),
            ("id", "agent"))]
    if not feedback:
        return set()
    lesson_vectors = yield from ctx.index_vectors([e.rowid for e in lessons])
    feedback_vectors = yield from ctx.index_vectors([rowid for rowid, _ in feedback])
    confirmed: set[str] = set()
    by_agent: dict[str, list[StoredEntry]] = {}
    for lesson in lessons:
        if lesson.rowid in lesson_vectors:
            by_agent.setdefault(lesson.agent, []).append(lesson)
        else:
            unembedded.add(lesson.rowid)
    for agent in {a for _, a in feedback}:
        yield
        mine = by_agent.get(agent, [])
        theirs = [feedback_vectors[r] for r, a in feedback if a == agent and r in feedback_vectors]
        if not mine or not theirs:
            continue
        against = np.stack(theirs)
        for start in range(0, len(mine), COMPARED_AT_ONCE):  # stacking thousands: ~20 ms
            some = mine[start:start + COMPARED_AT_ONCE]
            best = yield Offload(_best_cosines, (np.stack([lesson_vectors[e.rowid] for e in some]),
                                                 against))
            confirmed.update(e.uid for e, cosine in zip(some, best)
                             if cosine >= FEEDBACK_COSINE)
    return confirmed


def _best_cosines(rows: np.ndarray, against: np.ndarray) -> list[float]:
    return (rows @ against.T).max(axis=1).tolist()


def run(ctx: PassContext) -> Steps[None]:
    lessons = yield from _lessons(ctx)
    sightings = yield from _sightings(ctx)
    unembedded: set[int] = set()  # lessons not compared: no vector yet (being embedded)
    copies = yield from _file_copies(ctx, lessons, unembedded)
    confirmed = yield from _confirmed(ctx, lessons, unembedded)
    if unembedded:  # said, not left out quietly: "nothing to do" while they are embedded
        ctx.count(NOT_EMBEDDED, len(unembedded))
    outcomes = ctx.config.outcomes
    verdicts = (yield from evidence.verdicts(ctx)) if outcomes.enabled and outcomes.promote \
        else {}
    covered = _covered(ctx)
    yield
    disputed = ctx.store.disputed_ids()
    yield
    texts: dict[Path, str] = {}
    # the best first (as consolidation picks a survivor): it speaks for the copies after it
    lessons = [lessons[number] for number in best_first(lessons)]
    for entry in lessons:
        yield
        if entry.uid in disputed:  # a person decides first
            continue
        seen = dict(sightings.get(entry.uid, {}))
        seen.update({key: day for _, key, day in copies.get(entry.uid, [])})
        key, day = _sighting(entry.session, entry.created)
        seen[key] = day
        lesson_uids = [entry.uid, *dict.fromkeys(uid for uid, _, _ in
                                                    copies.get(entry.uid, []))]
        used = evidence.used(verdicts, lesson_uids)
        if entry.stale or (len(seen) < MIN_SESSIONS and entry.uid not in confirmed
                              and not used.by_evidence):
            continue
        if covered.intersection(lesson_uids):
            continue
        covered.update(lesson_uids)
        target = governance_file(entry.agent, entry.project, entry.source,
                                 ctx.config.memory_dir)
        recurs = len(seen) >= MIN_SESSIONS
        rule = _rule_text(entry, sorted(set(seen.values())), recurs, used)
        if _has_rule(texts, target, rule):
            continue
        reasons = [f"seen in {len(seen)} sessions"] if recurs else []
        if used.by_evidence:
            reasons.append(used.why())
        why = "; ".join(reasons) or "confirmed by the user's feedback"
        _propose(ctx, "promote", target, lesson_uids, rule, why,
                 {"outcomes": used.summary()} if used.by_evidence else None)
    open_proposals = _open_proposals(ctx)
    if verdicts:  # lessons that prove true in several projects: for the global tier
        yield from evidence.propose_global(ctx, lessons, verdicts, open_proposals)
    yield from _demotions(ctx, open_proposals)


def _has_rule(cache: dict[Path, str], target: Path, rule: str) -> bool:
    if target not in cache:
        try:
            cache[target] = read_text(target).text if target.exists() else ""
        except OSError:
            cache[target] = ""
    return _bare(rule) in {_bare(r) for r in rules_in(cache[target])}


def _propose(ctx: PassContext, action: str, target: Path, uids: list[str], rule: str,
             why: str, more: dict[str, Any] | None = None) -> None:
    """``uids``: the lesson, then its copies the rule speaks for; ``more``: what else the
    proposal shows (the outcomes that made it)."""
    by_agent = action == "promote" and agent_written(ctx.store, ctx.config, uids)
    if by_agent:
        why += f"; an agent wrote it ({by_agent[0]}): a person accepts it, at a terminal"
    proposal = Change("proposal", str(target), action, why, None,
                      {"entry": uids[0], "lessons": uids, "text": rule, "file": str(target),
                       **(more or {})})
    if ctx.config.passes.promote_mode == "auto" and not ctx.dry_run and not by_agent:
        try:
            written = _write(ctx, proposal.action, proposal.after, why)
        except FileNotWrittenError as exc:  # reported; the other rules are written
            what = exc.what or NotWritten(str(target), exc.message)
            ctx.report(what.path, f"not written: {what.why}", action=UNWRITTEN)
            return
        if written == "applied":
            ctx.count("promoted" if action == "promote" else "demoted")
        return
    ctx.note(proposal, "preview" if ctx.dry_run else "proposed")


def _open_proposals(ctx: PassContext) -> set[tuple[str, str]]:
    """(entry uid, action) of the proposals waiting for a person: one query (read one by one,
    hundreds of them held the database thread for tens of milliseconds)."""
    return {(after["entry"], action)
            for _, action, after in ctx.store.runs.sides("proposal", "proposed")}


def _covered(ctx: PassContext) -> set[str]:
    """The lessons (and their copies) a rule speaks for already: proposed and waiting, or
    promoted and not taken back; and those whose promotion a person took back (`memory
    undo`): an undone promotion stays undone, as an undone merge does (it was written again
    at the next run)."""
    covered = promoted_lessons(ctx.store)
    for _, _, after in ctx.store.runs.sides("proposal", "proposed", ["promote"]):
        covered.update(_lessons_of(after))
    for _, _, after in ctx.store.runs.sides("file", "undone", ["promote"]):
        covered.update(_lessons_of(after))
    return covered


def _lessons_of(detail: dict[str, Any]) -> list[str]:
    """The lessons a proposal or a promotion speaks for (the lesson alone, before copies
    were counted)."""
    return detail.get("lessons") or [detail["entry"]]


def promoted_lessons(store: Store) -> set[str]:
    """uids of the lessons (and their copies) that a promoted rule, not taken back, speaks
    for: kept elsewhere, for the notebook pass's cap."""
    rules: dict[str, list[str]] = {}
    demoted: set[str] = set()
    for _, action, detail in store.runs.sides("file", "applied", ["promote", "demote"]):
        if action == "demote":
            demoted.add(detail["entry"])
        else:
            rules[detail["entry"]] = _lessons_of(detail)
    return {uid for entry, uids in rules.items() if entry not in demoted for uid in uids}


def _demotions(ctx: PassContext, open_proposals: set[tuple[str, str]]) -> Iterator[None]:
    """Rules memoryd promoted whose lesson is gone (forgotten) or stale: proposed for removal."""
    promoted = {(target, json.dumps(after, sort_keys=True, ensure_ascii=False)): after
                for target, _, after in ctx.store.runs.sides("file", "applied", ["promote"])}
    texts: dict[Path, str] = {}
    for (target, _), detail in promoted.items():
        yield
        uid, rule = detail.get("entry"), detail.get("rule") or detail.get("text")
        if not uid or not rule or (uid, "demote") in open_proposals:
            continue
        if not _has_rule(texts, Path(target), rule):
            continue
        entry = _follow(ctx, uid)
        reason = None
        if entry is None or entry.status in ("forgotten", "removed"):
            reason = "its lesson was forgotten"
        elif entry.stale:
            reason = f"its lesson is stale ({entry.stale})"
        if reason:
            open_proposals.add((uid, "demote"))
            _propose(ctx, "demote", Path(target), [uid], rule, reason)


def _follow(ctx: PassContext, uid: str) -> StoredEntry | None:
    """The entry, or the one it was merged into (a superseded lesson lives on in its survivor)."""
    seen: set[str] = set()
    entry = ctx.store.entry_by_uid(uid)
    while entry is not None and entry.status == "superseded" and entry.superseded_by \
            and entry.uid not in seen:
        seen.add(entry.uid)
        entry = ctx.store.entry_by_uid(entry.superseded_by)
    return entry


def agent_written(store: Store, config: Config, uids: list[str]) -> list[str]:
    """Who wrote those of the lessons ``uids`` an agent wrote (memoryd.provenance), if any."""
    files: dict[str, set[str]] = {}
    writers = []
    for entry in store.entries(EntryQuery().uids(uids)):
        agent, writer = entry.agent, entry.writer
        if agent not in files:
            root = Path(config.memory_dir.replace("{agent}", agent)).expanduser()
            files[agent] = tool_written(store, agent, str(root))
        if agent_wrote(entry, files[agent]):
            writers.append(f"{writer}, its memory tools" if entry.via == "watch" else str(writer))
    return writers


def accept_refusal(store: Store, config: Config, proposal: dict[str, Any],
                   human: bool) -> str | None:
    """Why ``memory promote accept`` of ``proposal`` is refused, or None: a rule the
    quarantine's rules flag is never promoted; one whose lessons an agent wrote is accepted by
    a person at a terminal (a script or an agent's connection cannot)."""
    detail = proposal["after"] or {}
    if proposal["action"] not in ("promote", GLOBAL):
        return None
    name = proposal["change"]
    flagged = quarantine_reason(str(detail.get("text", "")))
    if flagged is not None and proposal["action"] == "promote":
        return (f"{name}: the rule looks like an instruction to the model ({flagged}); memoryd "
                "never promotes such text. Read its lesson (memory get "
                f"{detail.get('entry')}); write a rule of your own into the file if you want one")
    writers = agent_written(store, config, _lessons_of(detail)) if not human else []
    if writers:
        return (f"{name}: an agent wrote this lesson ({writers[0]}); a person accepts it, by "
                f"typing `memory promote accept {name}` at a terminal")
    return None


def _write(ctx: PassContext, action: str, detail: dict[str, Any], why: str) -> str:
    target = Path(detail["file"])
    if action == "promote" and quarantine_reason(detail["text"]) is not None:
        ctx.report(str(target), f"not promoted: {detail['text'][:80]!r} looks like an "
                   "instruction to the model")
        return "skipped"
    try:
        basis = read_text(target) if target.exists() else None
    except OSError as exc:
        ctx.report(str(target), f"cannot read: {exc}")
        return "skipped"
    current = basis.text if basis else ""
    text = with_rule(current, detail["text"]) if action == "promote" \
        else without_rule(current, detail["text"])
    change = file_change(target, basis, text, action, why)
    if change is None:
        return "skipped"
    assert change.after is not None
    lessons = _lessons_of(detail)
    change.after.update(entry=detail["entry"], lessons=lessons, rule=detail["text"])
    changes = [change]
    if action == "promote":  # its bullets leave their notebooks: written all or none with it
        changes += _graduations(ctx, set(lessons), target)
    return ctx.apply_all(changes)


def _graduations(ctx: PassContext, lessons: set[str], target: Path) -> list[Change]:
    """The notebook changes that move a promoted lesson's bullets to their archives."""
    sources = {source for source in ctx.store.entry_values(
        EntryQuery().uids(list(lessons)).active().from_files(), "source", distinct=True)
        if f"/{ARCHIVE_DIR}/" not in source and source != str(target) and not is_pinned(source)}
    return [c for source in sorted(sources) for c in graduate(ctx, source, lessons, target)]


def accept(ctx: PassContext, proposal: dict[str, Any]) -> Steps[None]:
    """`memory promote accept ID`: write a proposed promotion (or demotion), or move a
    lesson to the global tier (memoryd.passes.evidence)."""
    if proposal["action"] == GLOBAL:
        yield from evidence.accept_global(ctx, proposal)
        return
    yield
    state = _write(ctx, proposal["action"], proposal["after"], proposal["why"] or "accepted")
    if state == "applied":
        ctx.runs.set_state(int(proposal["change"][1:]), "accepted")
    elif state == "skipped":  # the file has it already (or no longer has it)
        ctx.runs.set_state(int(proposal["change"][1:]), "accepted")
        ctx.count("already")
