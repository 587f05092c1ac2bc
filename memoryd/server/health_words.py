"""What `memory doctor` and `memory status` say of a check, in words (pure functions): a
check's verdict, and the wording of the checks whose detail is built from what was found
(ledger lines, the ledger's differences with the index, torn lines set aside, transcripts with
malformed lines, symlinked directories, interrupted runs). memoryd.server.health runs the
checks."""

from __future__ import annotations

import os
import shlex
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from memoryd.ingest.source_stats import SKIPPED_LINES, UNDATED
from memoryd.ingest.transcript.parser_base import MAX_LINE_CHARS
from memoryd.sources import DirLink
from memoryd.store.durable import TORN_DIR
from memoryd.store.ledger import LedgerProblem

OK, WARNING, PROBLEM = "ok", "warning", "problem"
#: Files with a problem named by the "skipped" check (the others are counted).
SHOWN_FILES = 3
#: Malformed lines of a transcript (skipped; the rest of the file is indexed) are a warning
#: until the file has not changed for this long, then a note: nothing needs doing about them,
#: and a warning that never cleared (even across restarts) hid the ones that matter.
SKIPPED_FRESH_S = 86400.0


def check(name: str, status: str, detail: str, fix: str | None = None) -> dict[str, Any]:
    return {"check": name, "status": status, "detail": detail, "fix": fix}


def worst(checks: list[dict[str, Any]]) -> str:
    statuses = {c["status"] for c in checks}
    return PROBLEM if PROBLEM in statuses else WARNING if WARNING in statuses else OK

def of_target(run: dict[str, Any]) -> str:
    """What an undo or an acceptance was of: " of r50"."""
    scope = run.get("scope") or {}
    target = scope.get("undoes") or scope.get("accepts")
    return f" of {target}" if target else ""


def again(run: dict[str, Any]) -> str:
    """The command that does an interrupted run's work again."""
    scope = run.get("scope") or {}
    if scope.get("undoes"):
        return f"memory undo {scope['undoes']}"
    if scope.get("accepts"):
        return f"memory promote accept {scope['accepts']}"
    if scope.get("paths"):  # `memory notebook check PATH --fix`: one notebook, or a directory
        where = os.path.commonpath(scope["paths"]) if len(scope["paths"]) > 1 \
            else scope["paths"][0]
        return f"memory notebook check {shlex.quote(where)} --fix"
    words = ["memory", "pass", "run", run["pass"]]
    for name in ("agent", "project"):
        if scope.get(name):
            words += [f"--{name}", shlex.quote(str(scope[name]))]
    if scope.get("full"):
        words.append("--full")
    return " ".join(words)


def differences(missing: dict[str, int], total: int,
                unledgered: dict[str, tuple[int, list[str]]]) -> dict[str, Any]:
    """The ledger check's problem: entries of the ledgers the index lacks (``missing``, of
    ``total``), entries of the index no ledger holds (``unledgered``), and what to do."""
    details, fixes = [], []
    if missing:
        details.append("in the ledgers, not in the index: " + ", ".join(
            f"{agent} {n}" for agent, n in missing.items()) + f" of {total} entries")
        fixes.append("stop memoryd and run `memoryd reindex` (it rebuilds the index from the "
                     "ledgers)")
    if unledgered:
        details.append("in the index, not in the ledgers: " + ", ".join(
            f"{agent} {n} ({', '.join(uids)}{' …' if n > len(uids) else ''})"
            for agent, (n, uids) in unledgered.items()))
        agent = next(iter(unledgered))
        fixes.append(f"the ledgers are the truth, so `memoryd reindex` would drop "
                     f"{'those entries' if missing else 'them'}; to keep them, export them "
                     f"first (`memory export --agent {agent} -o kept.jsonl`, an agent at a "
                     "time) and after the reindex store them again (`memory import "
                     "kept.jsonl`: what the ledgers still hold is not stored twice)")
    return check("ledger", PROBLEM, "; ".join(details), "; ".join(fixes))


def torn_files(state_dir: Path) -> list[Path]:
    """The torn last lines set aside in ``torn/`` (memoryd.store.durable.mend_tail), oldest
    first: they stay until the user deletes them."""
    try:
        found = [p for p in (state_dir / TORN_DIR).iterdir() if p.is_file()]
    except OSError:
        return []
    return sorted(found, key=lambda p: p.name.rsplit(".", 1)[-1])


def ledger_lines(problems: list[LedgerProblem], torn: list[Path]) -> dict[str, Any]:
    """Damaged ledger lines (bad JSON, a checksum mismatch, a torn tail): each was skipped when
    read, and the lines after it were read. Then the torn last lines set aside (``torn``):
    writes never acknowledged, kept for the user to look at."""
    aside = set_aside(torn)
    if not problems:
        if aside is not None:
            return check("ledger lines", WARNING, "every ledger line is whole and matches its "
                         "checksum; " + aside["detail"], aside["fix"])
        return check("ledger lines", OK, "every ledger line is whole and matches its checksum")
    shown = "; ".join(f"{p.path}@{p.offset}: {p.kind}: {p.message}" for p in problems[:3])
    more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
    return check("ledger lines", PROBLEM, f"{len(problems)} damaged: {shown}{more}"
                 + (f"; {aside['detail']}" if aside else ""),
                 "the records on those lines were not read; keep a copy of the ledger for a "
                 "bug report, and recover the lines by hand if they matter (the others are in "
                 "the index)" + (f"; {aside['fix']}" if aside else ""))


def set_aside(torn: list[Path]) -> dict[str, str] | None:
    """What to say of the torn last lines set aside (None: there are none)."""
    if not torn:
        return None
    shown = ", ".join(f"{p} ({_size(p)} bytes)" for p in torn[:SHOWN_FILES])
    more = f" (and {len(torn) - SHOWN_FILES} more)" if len(torn) > SHOWN_FILES else ""
    lines = "a torn last line was" if len(torn) == 1 else f"{len(torn)} torn last lines were"
    return {"detail": f"{lines} set aside: {shown}{more}",
            "fix": "each holds the bytes of a write cut short before it was acknowledged (a "
                   "crash, a full disk, or a last line edited by hand): nothing of it was "
                   "stored. Look at it, mend and store again what matters, then delete it: "
                   f"rm {shlex.quote(str(torn[0].parent))}/*"}


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def skipped_lines(rows: list[tuple[str, str, float, bool]], now: float) -> dict[str, Any]:
    """Transcripts with malformed lines: harmless (each such line is skipped, the rest of the
    file is indexed, nothing is lost that memoryd could have read), so a warning only while
    fresh (the file changed within SKIPPED_FRESH_S), then a note. The warning names the files
    and the lines' kinds and says what to do: nothing, or mend the lines. A file none of whose
    lines could be read is another matter: it is not in its source's format, and stays a
    warning that says so."""
    if not rows:
        return check("skipped", OK, "no file or line skipped")
    unread = [path for path, _, _, read in rows if not read]
    if unread:
        where = (os.path.basename(unread[0]) if len(unread) == 1
                 else f"{len(unread)} transcripts")
        more = f" (and {len(unread) - SHOWN_FILES} more)" if len(unread) > SHOWN_FILES else ""
        reasons = _reasons(error for _, error, _, read in rows if not read)
        if set(reasons) <= _TOO_LONG:  # the lines may well be in the format: too long
            return check("skipped", WARNING, f"nothing of {where} could be read",
                         f"{', '.join(unread[:SHOWN_FILES])}{more}: every line is longer than "
                         f"memoryd reads ({'; '.join(_LINE_KINDS[r] for r in reasons)}); "
                         "raise watch.max_line_bytes if they are what was said "
                         f"(docs/configuration.md; a line of more than {MAX_LINE_CHARS:,} "
                         "characters is never read)")
        return check("skipped", WARNING, f"nothing of {where} could be read",
                     f"{', '.join(unread[:SHOWN_FILES])}{more}: no line is in the format of "
                     "its source (memory status --sources shows each source's format and "
                     "the lines' kinds); a `generic` transcript needs lines with `role` and "
                     "`content` (docs/sources.md). A mended file is read again at once; after "
                     "a change of the source's format, `memoryd reindex` reads it again")
    fresh = [row for row in rows if now - row[2] < SKIPPED_FRESH_S]
    shown = fresh or rows
    undated = sum(_line_count(error, UNDATED) for _, error, _, _ in shown)
    lines = sum(_line_count(error) for _, error, _, _ in shown) - undated
    where = (os.path.basename(shown[0][0]) if len(shown) == 1
             else f"{len(shown)} transcripts")
    said = [f"{lines} malformed line{'' if lines == 1 else 's'} skipped"] if lines else []
    if undated:
        said.append(f"{undated} line{'' if undated == 1 else 's'} with a time memoryd cannot "
                    "read")
    detail = f"{' and '.join(said)} in {where}"
    named = "; ".join(f"{path}: {error.removeprefix(SKIPPED_LINES)}"
                      for path, error, _, _ in shown[:SHOWN_FILES])
    more = f" (and {len(shown) - SHOWN_FILES} more files)" if len(shown) > SHOWN_FILES else ""
    if not fresh:
        return check("skipped", OK, f"{detail}, more than a day ago: left as they are, the "
                     f"rest indexed ({named}{more})")
    kinds = [_LINE_KINDS.get(reason, f"{reason}: lines the source's format does not read")
             for reason in _reasons(error for _, error, _, _ in shown) if reason != UNDATED]
    why = [f"Those lines are skipped and the rest of the file is indexed: {'; '.join(kinds)}."
           ] if lines else []
    if undated:
        why.append(f"A line counted as {UNDATED} is indexed, but its time is in no form "
                   "memoryd reads (docs/sources.md lists them): its exchange is dated by "
                   "another of its times, else when it was read.")
    indexed = " (the rest of it is indexed)" if lines else " (its text is indexed)"
    return check("skipped", WARNING, detail + indexed,
                 f"nothing needs doing: {named}{more}. {' '.join(why)} This turns into a note "
                 "a day after the file last changed; mending or deleting the lines clears it "
                 "at once (memoryd reads the file again)")


#: What each kind of skipped line is (memoryd.ingest.source_stats.MALFORMED, and the tailer's
#: and the documents' own), for doctor's advice: true of the file's format, whichever it is.
_LINE_KINDS = {
    "invalid_json": "invalid_json: not JSON (a line cut short, or text between the records)",
    "not_object": "not_object: JSON, but not the object every record of a JSONL transcript is",
    "bad_field": "bad_field: records with a field in a form their format does not have "
                 "(another agent's, another version's, or not the source's format)",
    "invalid-utf8": "invalid-utf8: bytes that are not UTF-8 text, so no JSON record (in a "
                    "markdown transcript, Aider's, such bytes are replaced and the line kept)",
    "line-too-long": "line-too-long: lines longer than watch.max_line_bytes",
    "too_long": f"too_long: lines of more than {MAX_LINE_CHARS:,} characters",
    "internal_error": "internal_error: lines memoryd's parser failed on (a bug: the log has "
                      "the traceback)",
}


_TOO_LONG = {"too_long", "line-too-long"}


def _reasons(errors: Iterable[str]) -> list[str]:
    """The kinds of lines errors like "skipped lines: 1 invalid_json, 2 not_object" count,
    each once, in their order."""
    found: dict[str, None] = {}
    for error in errors:
        for part in error.removeprefix(SKIPPED_LINES).split(", "):
            words = part.split()
            if len(words) == 2 and words[0].isdigit():
                found.setdefault(words[1], None)
    return list(found)


def _line_count(error: str, reason: str | None = None) -> int:
    """The lines an error like "skipped lines: 1 invalid_json, 2 not_object" counts (of
    ``reason`` only: 0 when it has none)."""
    if reason is not None:
        return sum(int(part.split()[0]) for part in error.removeprefix(SKIPPED_LINES).split(", ")
                   if part.split()[1:] == [reason] and part.split()[0].isdigit())
    return sum(int(part.split()[0]) for part in error.removeprefix(SKIPPED_LINES).split(", ")
               if part.split() and part.split()[0].isdigit()) or 1


def dir_links_said(links: Sequence[DirLink]) -> str:
    """The symlinked directories below the sources' roots, in words: which the scan follows,
    and which not and why."""
    followed = [f"{link.path} (-> {link.target})" for link in links if link.why_not is None]
    refused = [f"{link.path}: {link.why_not}" for link in links if link.why_not is not None]
    return (f"; symlinked directories followed, their files indexed under the link: "
            f"{', '.join(followed)}" if followed else "") + (
        f"; symlinked directories not followed: {'; '.join(refused)}" if refused else "")


def copies_before_purge(database: dict[str, Any], paths: Sequence[Path],
                        purged: float) -> dict[str, Any]:
    """The ``database`` check, with the copies of the index made before the last purge
    (``paths``: the one a reindex replaced, those set aside as damaged) named: they may hold
    what the purge removed."""
    if not paths or database["status"] != OK:
        return database
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(purged))
    names = ", ".join(p.name for p in paths)
    return check("database", WARNING, f"{database['detail']}; {names}: "
                 f"{'a copy' if len(paths) == 1 else 'copies'} of the index from before the "
                 f"last purge ({when}), which may hold what it removed",
                 "delete " + ("it" if len(paths) == 1 else "them") + ": rm "
                 + " ".join(shlex.quote(str(p)) + "*" for p in paths))
