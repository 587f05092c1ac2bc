"""How `memory` prints the daemon's replies: entries, search hits, sources, sessions,
injections, and what a command did. A printer takes the reply, or (``show_*``) the reply and the
command's arguments (memoryd_client.commands names them)."""

from __future__ import annotations

import os
import sys
import time

TYPE_CHECKING = False  # see memoryd_client/__init__.py
if TYPE_CHECKING:
    from typing import Any

    from memoryd_client.command_spec import Args


def count(n: int, one: str, many: str | None = None) -> str:
    """``n`` and the noun, singular for one: "1 ledger record", "2 ledger records"."""
    return f"{n:,} {one if n == 1 else many or one + 's'}"


def when(ts: float | None) -> str:
    """A time as people read it in a listing ("-" for none)."""
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ts)) if ts else "-"


def shown_text(text: str) -> str:
    """Text as it can be printed, stored and sent: the bytes of a name or an argument that
    were not UTF-8 (lone surrogates, as the OS hands them over) as ``\\xff``, any other lone
    surrogate as ``\\udcff``."""
    try:
        raw = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        raw = text.encode("utf-8", "backslashreplace")
    return raw.decode("utf-8", "backslashreplace")


def size_text(size: float) -> str:
    """A size in bytes as a person reads it: 740 KB, 2.4 MB, 216 MB, 3.1 GB, 40 GB."""
    if size < 1e6:
        return f"{max(1, round(size / 1e3))} KB" if size else "0 KB"
    value, unit = (size / 1e6, "MB") if size < 1e9 else (size / 1e9, "GB")
    return f"{value:.1f} {unit}" if value < 10 else f"{value:.0f} {unit}"


def duration(seconds: float) -> str:
    """A span of time as people say it: "45 s", "12 min", "5 h", "3 days"."""
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    if seconds < 172800:
        return f"{seconds / 3600:.0f} h"
    return f"{seconds / 86400:.0f} days"


def entry_line(entry: dict[str, Any], whole: bool = False) -> str:
    """An entry as one line (its text's line breaks as spaces, so that a listing is one entry
    a line), or with its text ``whole``. A superseded entry names its successor, as a search
    hit ranked below a newer version of it names that one."""
    status = "" if entry.get("status") == "active" else f" [{entry.get('status')}]"
    successor = entry.get("superseded_by") if entry.get("status") == "superseded" else None
    if successor:
        status = f" [superseded by {successor}]"
    if entry.get("stale"):  # something it names is gone from its project (staleness pass)
        status += f" [stale: {entry['stale']}]"
    if entry.get("quarantined"):  # looks like an instruction to the model: never injected
        status += " [⚠ quarantined: looks like an instruction to the model; never injected " \
                  "until a person runs `memory release` on it]"
    if entry.get("newer") and entry["newer"] != successor:  # a search hit said again since,
        # otherwise (a version of it)
        status += f" [earlier version of {entry['newer']}]"
    key = f" {entry['key']}" if entry.get("key") else ""
    category = entry.get("category") or "-"
    text = entry["text"] if whole else " ".join(entry["text"].split())
    return f"{entry['id']}  {entry['agent']}/{category} {entry['kind']}{key}{status}: {text}"


def print_entry(entry: dict[str, Any]) -> None:
    print(entry_line(entry, whole=True))
    tags = ",".join(entry.get("tags") or [])
    source = entry.get("source")
    span = f":{entry['line_start']}-{entry['line_end']}" if entry.get("line_start") else ""
    details = [
        f"created {when(entry['created'])}"
        + (f" ({entry['age_note']})" if entry.get("age_note") else ""),
        f"confidence {entry['confidence']:.2f}",
        f"via {entry['via']}" + (f" by {entry['writer']}" if entry.get("writer") else ""),
    ]
    if tags:
        details.append(f"tags {tags}")
    if entry.get("project"):
        details.append(f"project {entry['project']}")
    if entry.get("session"):
        details.append(f"session {entry['session']}")
    if source:
        details.append(f"source {source}{span}")
    if entry.get("superseded_by") and entry.get("status") != "superseded":  # (else its
        details.append(f"superseded by {entry['superseded_by']}")  # first line names it)
    print("    " + "; ".join(details))
    if entry.get("usage") is not None:  # memoryd.store.usage: what became of it in sessions
        print("    usage: " + usage_words(entry["usage"]))
    if entry.get("text_chars"):  # a removed file entry, as its history event keeps it
        print(f"    (its history keeps the first {len(entry['text']):,} of its "
              f"{entry['text_chars']:,} characters; versions the memory tools wrote: "
              "memory history file:AGENT:PATH)")


def usage_words(usage: dict[str, Any]) -> str:
    """An entry's usage record as a sentence: the sessions it was injected into and what
    became of it there (memoryd.sessions.outcomes)."""
    sessions = usage.get("injected") or 0
    if not sessions:
        return "never injected into a session yet"
    said = (f"injected into {sessions} session{'s' if sessions != 1 else ''}: followed "
            f"{usage['followed']}, broken {usage['broken']}, no occasion {usage['no_occasion']}")
    if usage.get("pending"):
        said += f", {usage['pending']} not judged yet"
    if usage.get("last_followed"):
        said += f"; last followed {when(usage['last_followed'])}"
    if usage.get("last_broken"):
        said += f"; last broken {when(usage['last_broken'])}"
    return said


def print_sources(status: dict[str, Any]) -> None:
    ingest = status.get("ingest", status)
    print(f"queue: {ingest['queue']}" + (" (scanning)" if ingest.get("scanning") else ""))
    absent: list[str] = []  # nothing there and nothing to say: named on one line at the end
    empty: list[str] = []  # its directory there, no file of it yet (most of a project root's)
    for source in ingest["sources"]:
        if not (source["files"] or source["entries_added"] or source["entries_removed"]
                or source["skipped"] or source["last_error"] or source.get("indexed")):
            (empty if source["root_exists"] else absent).append(source["name"])
            continue
        state = "" if source["root_exists"] else " (not present)"
        agent = source["agent"] or "{agent}"
        lines = source.get("notebook_lines")
        cap = f", notebooks {lines} lines" if lines else ""
        print(f"{source['name']}: {source['path']} [{source['kind']}, {source['format']}, "
              f"agent {agent}{cap}]{state}")
        indexed = f"{source['indexed']} entries indexed, " if "indexed" in source else ""
        print(f"    files {source['files']}, {indexed}since start +{source['entries_added']} "
              f"-{source['entries_removed']}")
        if source["skipped"]:
            skipped = sorted(source["skipped"].items())
            print("    skipped: " + ", ".join(f"{n} {r}" for r, n in skipped))
        if source["last_error"]:
            print(f"    last problem: {source['last_error_path']}: {source['last_error']}")
    for link in ingest.get("dir_links") or []:
        print(f"symlinked directory {link['path']} -> {link['target']}: " + (
            f"followed, its files indexed under {link['path']}" if link["why_not"] is None
            else f"not followed: {link['why_not']}"))
    if empty:
        print(f"no files yet ({len(empty)}: watched, a file that appears is indexed): "
              + ", ".join(empty))
    if absent:
        print(f"not present ({len(absent)}: their files or directories do not exist; --json "
              "gives where each looks): " + ", ".join(families(absent)))


def print_read_by(status: dict[str, Any], name: str) -> None:
    """The files a source just added matches that another source reads already; how to read
    them here only where that works (one of a project root's sources is not removed alone)."""
    for owner, n in sorted((status.get("read_by") or {}).get(name, {}).items()):
        files = "1 file it matches is" if n == 1 else f"{n} files it matches are"
        how = "" if owner.startswith("project:") else \
            f"; `memory sources remove {owner}` to read {'it' if n == 1 else 'them'} here"
        print(f"    {files} read by source {owner} already (a file is read by the first "
              f"source that matches it{how})")


def print_sources_added(status: dict[str, Any]) -> None:
    """What `memory sources add` added: a source with its files, or a project root with the
    files found in it (its sources without one counted, not listed); where a project root
    lies inside a repository already watched, said; a costly glob warned of on stderr.
    `memory sources` lists every source."""
    added = set(status.get("added", ()))
    mine = [s for s in status.get("ingest", status)["sources"] if s["name"] in added]
    inside = status.get("inside")
    if not mine:
        print("nothing added: those sources are watched already (memory sources lists them)")
    for source in mine:
        if source["name"].startswith("project:"):
            continue
        agent = source["agent"] or "{agent}"
        lines = source.get("notebook_lines")
        cap = f", notebooks {lines} lines" if lines else ""
        print(f"added source {source['name']}: {source['path']} [{source['kind']}, "
              f"{source['format']}, agent {agent}{cap}]: {files_word(source['files'])}"
              + ("" if source["root_exists"] else " (not present yet)"))
        print_read_by(status, source["name"])
    project = [s for s in mine if s["name"].startswith("project:")]
    if project:
        root = status.get("project_root") or "?"
        with_files = [s for s in project if s["files"]]
        print(f"added project root {root}: {len(project)} sources (its agents' instruction "
              f"files), {files_word(sum(s['files'] for s in project))} found"
              + (":" if with_files else ""))
        for source in with_files:
            print(f"    {source['path']}: {files_word(source['files'])}")
            print_read_by(status, source["name"])
        if len(with_files) < len(project):
            print(f"    the other {len(project) - len(with_files)} have no file yet (watched: "
                  "a file that appears is indexed)")
    if inside is not None:
        watched = inside["watched_by"]
        print(f"note: {inside['root']} is inside repository {inside['project']}"
              + (f", which project root {', '.join(watched)} watches already" if watched else "")
              + f": its files belong to project {inside['project']}, as a session there does; "
              f"`memory sources remove {inside['root']}` undoes this add")
    for warning in status.get("warnings") or ():  # a costly glob
        print(f"warning: {warning}", file=sys.stderr)


def print_sources_removed(status: dict[str, Any]) -> None:
    """What `memory sources remove` did, and how many sources stopped with it."""
    stopped = status.get("stopped") or []
    print(status.get("removed", "removed") + (
        f" ({len(stopped)} source{'' if len(stopped) == 1 else 's'} no longer watched: the "
        "entries of their files left the index, but of a file another source reads; the "
        "files are as they were)" if stopped else ""))


def files_word(n: int) -> str:
    return "1 file" if n == 1 else f"{n} files"


def families(names: list[str]) -> list[str]:
    """Names in order, those of a family of three or more (one prefix of two words, an editor
    or the like after it: ``roo-tasks-code``, ``roo-tasks-cursor``, …) written once as
    ``roo-tasks-{code, cursor, …}``."""
    groups: dict[str, list[str]] = {}
    for name in names:
        words = name.split("-", 2)
        groups.setdefault(f"{words[0]}-{words[1]}-" if len(words) == 3 else name, []).append(
            name)
    out = []
    for prefix, members in groups.items():
        if len(members) >= 3:
            out.append(prefix + "{" + ", ".join(m[len(prefix):] for m in members) + "}")
        else:
            out.extend(members)
    return out


def edited(reply: dict[str, Any], how: str) -> str:
    """What a forget or supersede of a file's entry did to the file, or what takes back the
    forget of another entry."""
    edited = reply.get("edited")
    if not edited:
        return f" (`memory undo {reply['undo']}` takes it back)" if reply.get("undo") else ""
    first, last = edited["lines"]
    lines = f"line {first}" if first == last else f"lines {first}-{last}"
    return f" ({how} {edited['file']}, {lines}; `memory undo {edited['run']}` takes it back)"


def print_sessions(result: dict[str, Any], args: Any) -> None:
    """The sessions, a line each; where the page is in the list (and the next page's option)
    on stderr when there are more than it shows."""
    sessions, total = result["sessions"], result.get("total", len(result["sessions"]))
    offset = getattr(args, "offset", 0) or 0
    if not sessions:
        print("no sessions")
        if offset and total:
            print(f"no sessions from --offset {offset}: {total} in all", file=sys.stderr)
    for s in sessions:
        seen = when(s["last_seen"]) if s.get("last_seen") else "-"
        msgs = "msg " if s["user_messages"] == 1 else "msgs"
        print(f"{s['id']}  {s['agent']:<12} {seen}  {s['user_messages']:>4} {msgs}  "
              f"{s.get('project') or s.get('cwd') or '-'}")
    last = offset + len(sessions)
    if sessions and (offset or last < total):
        more = f"; next page: --offset {last}" if last < total else ""
        print(f"sessions {offset + 1}-{last} of {total}{more}", file=sys.stderr)


def print_injections(result: dict[str, Any]) -> None:
    if not result["injections"] and result.get("unlogged"):
        print(f"the log of what was injected into session {result.get('session') or '-'} "
              "was lost with an index rebuilt before memoryd kept it in outcomes.jsonl; "
              "the entries it was given:")
        for given in result["unlogged"]:
            print(f"    {given['id']}: {given['outcome'] or 'not judged yet'}")
    elif not result["injections"]:
        print("nothing injected yet" + (f" in session {result['session']}"
                                        if result.get("session") else ""), file=sys.stderr)
    for injection in result["injections"]:
        print(f"{when(injection['ts'])}  {injection['event']} for {injection['agent']} "
              f"(session {injection['session'] or '-'}): {injection['chars']} of "
              f"{injection['budget']} characters")
        for item in injection["items"]:  # the evidence vector is in --json
            what = item["id"] or item["path"] or "-"
            state = "" if item["included"] else " (dropped: over budget)"
            print(f"    {item['section']:<9} {what}, {item['chars']} chars{state}")
            if item.get("text"):
                print(f"        {item['text']}")
            if item.get("reason"):
                print(f"        why: {item['reason']}")
            if item.get("outcome"):  # what became of it in the session
                print(f"        outcome: {item.get('outcome_why') or item['outcome']}")


def unknown_agents(result: dict[str, Any]) -> str | None:
    """When an agent named has no entry at all, that said (a misspelt name is not an empty
    one): "no entries of agent 'nobody' at all"; None otherwise. The viewer says it too."""
    unknown = result.get("unknown_agents")
    if not unknown:
        return None
    names = ", ".join(repr(a) for a in unknown)
    return f"no entries of {'agent' if len(unknown) == 1 else 'agents'} {names} at all"


def unknown_category(result: dict[str, Any]) -> str | None:
    """When the category named is no entry's, in any case or form, that said (a misspelt
    category is not an empty one): "no entries in category 'mistaeks' at all"; None
    otherwise. The viewer says it too."""
    category = result.get("unknown_category")
    return f"no entries in category {category!r} at all" if category is not None else None


def no_directory(project: str | None) -> str | None:
    """When a project filter names no directory, that said ("/nonexistent is no directory");
    None otherwise. Said when nothing was found: a misspelt path is not a project without
    entries (a project that was deleted still has its entries, found by its path)."""
    if project and not os.path.isdir(os.path.expanduser(project)):
        return f"{project} is no directory"
    return None


def note_unknown_agents(result: dict[str, Any]) -> None:
    """The agents, and the category, named that no entry has (see :func:`unknown_agents`,
    :func:`unknown_category`), on stderr."""
    said = unknown_agents(result)
    if said:
        print(f"note: {said} (`memory status` lists the agents)", file=sys.stderr)
    said = unknown_category(result)
    if said:
        print(f"note: {said} (`memory list` shows each entry's agent/category)",
              file=sys.stderr)


def note_no_directory(project: str | None) -> None:
    said = no_directory(project)
    if said:
        print(f"note: {said} (--project names a project by its directory)", file=sys.stderr)


def print_hits(result: dict[str, Any], show_all: bool = True,
               project: str | None = None, min_score: float | None = None) -> None:
    """One line per hit: * for a match, the probability that it is relevant, its age; the
    matches only, unless ``show_all``. No match: the best hit, or that nothing was ranked
    (``min_score``: the --min-score a match needed)."""
    hits = [h for h in result["hits"] if show_all or h.get("match")]
    if hits:  # the legend, aligned with the columns (on stderr: stdout stays one hit a line)
        print(f"* rel.   age  {'id':<{len(hits[0]['id'])}}  agent/category kind: text"
              "   (* match, rel. = probability of relevance, age since written)", file=sys.stderr)
    for hit in hits:
        marker = "*" if hit.get("match") else " "
        print(f"{marker} {hit['score']['relevance']:.2f} {hit['age']:>5}  {entry_line(hit)}")
    if not any(h.get("match") for h in result["hits"]):
        best = result["hits"][0] if result["hits"] else None
        hint = "nothing ranked"
        if best is not None:
            hint = (f"best: {best['score']['relevance']:.2f} {best['text'][:60]!r}"
                    + ("" if show_all else "; --all lists the ranked hits"))
            if min_score is not None:
                hint = f"none at or above --min-score {min_score:g}; {hint}"
        print(f"no match ({hint})", file=sys.stderr)
        if not result["hits"]:
            note_no_directory(project)
    note_unknown_agents(result)
    if result.get("degraded"):
        reason = result.get("degraded_reason") or "keyword-only: the embedding model is not loaded"
        print(f"({reason})", file=sys.stderr)


def show_status(status: dict[str, Any], args: Args) -> None:
    from memoryd_client.status_view import print_status  # health line first, then details

    print_status(status, every=args.contradictions)
    if args.sources:
        print_sources(status)


def print_reloaded(result: dict[str, Any]) -> None:
    print(f"reloaded: {result['sources']} sources")
    for warning in result.get("warnings") or ():  # a name that names nothing, a restart due
        print(f"warning: {warning}", file=sys.stderr)


def print_files(result: dict[str, Any]) -> None:
    for f in result["files"]:
        print(f"{f['bytes']:>8}  {when(f['modified'])}  {f['path']}")
    if not result["files"]:  # said where it looked: an empty answer reads as a failure
        print(f"no files yet in {result['root']}", file=sys.stderr)


def print_file_text(result: dict[str, Any]) -> None:
    sys.stdout.write(result["text"])


def show_file_written(result: dict[str, Any], args: Args) -> None:
    print(f"{args.action}: {result['path']}")


def show_extract(result: dict[str, Any], args: Args) -> None:
    print(f"session {result['session']} ({result['agent']}): {result['messages']} user messages"
          + (f"; {result['reason']}" if result.get("reason") else ""))
    for message in result["report"]:
        print(f"- message {message['message_id'] or '(unknown)'}: "
              f"{(message['text'] or '')[:100]!r}")
        if not message["entries"]:
            print("    → nothing to keep")
        for entry in message["entries"]:
            key = f" {entry['key']}" if entry.get("key") else ""
            verdict = "accepted" if entry["accepted"] else f"rejected: {entry['reason']}"
            print(f"    → {entry['kind']}{key} [{entry['category']}] {entry['text']!r}: "
                  f"{verdict}")
    if not args.dry_run:
        print(f"stored {len(result['stored'])} entries")


def show_context(result: dict[str, Any], args: Args) -> None:
    if result["text"]:
        print(result["text"])
    else:  # stdout stays empty for scripts; a person learns why there is nothing
        what = "for this prompt " if args.prompt else ""
        print(f"(nothing {what}for {args.agent} in {os.path.abspath(args.cwd or os.getcwd())})",
              file=sys.stderr)


def print_session(result: dict[str, Any]) -> None:
    s = result["session"]
    print(f"session {s['id']} ({s['harness']}, agent {s['agent']})")
    for name in ("cwd", "project", "transcript_path"):
        if s.get(name):
            print(f"  {name}: {s[name]}")
    print(f"  started {when(s.get('started'))}, last seen {when(s.get('last_seen'))}"
          + (f", closed {when(s['closed'])}" if s.get("closed") else
             f", extracted {when(s['extracted'])} (no end was seen)" if s.get("extracted")
             else ", open"))
    print(f"  user messages: {s['user_messages']}")
    if "exchanges" in result:  # (a daemon before 2026-11-30 does not count them)
        print(f"  exchanges indexed: {result['exchanges']}")
    print(f"  memories from this session (extracted, or written in it): "
          f"{len(result['entries'])}")
    for entry in result["entries"]:
        print("    " + entry_line(entry))
    print_injections({"injections": result["injections"]})


def print_stored(result: dict[str, Any]) -> None:
    """What `memory store` did: stored (and what it superseded or disputes), or why not."""
    redacted = ", ".join(result.get("redacted") or ())
    if not result["stored"]:
        kind = {"exact": "exact duplicate",
                "seen again": "the same text dated otherwise: counted as another sighting",
                "inactive": "imported before (since forgotten, superseded or archived)",
                }.get(result["duplicate"]) or \
            f"near duplicate (cosine {result['cosine']:.2f}; --force stores it anyway)"
        secrets = f" (with its secrets redacted: {redacted})" if redacted else ""
        print(f"not stored: {kind}{secrets} of", file=sys.stderr)
        print_entry(result["entry"])
        return
    if redacted:
        print(f"redacted before it was stored: {redacted} (the secret is kept nowhere)",
              file=sys.stderr)
    entry = result["entry"]
    # a note stored in a repository is that project's: say so, or it is missed elsewhere
    print(f"stored {entry['id']}" + (f" (project {entry['project']}; --global stores it for "
                                      "every project)" if entry.get("project") else ""))
    if entry.get("quarantined"):
        print("quarantined: it looks like an instruction to the model and is not injected "
              f"until a person runs `memory release {entry['id']}`", file=sys.stderr)
    for old in result.get("superseded") or []:
        print(f"superseded {old['id']}: {old['text']}")
    _print_corrections(result)
    for old in result.get("resembles") or []:  # said otherwise, not contradicted: both kept
        print(f"kept beside {old['id']}: {old['text']} (`memory forget {old['id']}` if it no "
              "longer holds)")
    if entry["status"] == "superseded":
        print(f"kept as superseded: an entry with key {entry['key']} has higher confidence")


def _print_corrections(result: dict[str, Any]) -> None:
    """The entries a stored one contradicts (memoryd.passes.corrections), and its run."""
    for c in result.get("corrects") or []:
        if c["action"] == "dispute":
            print(f"disputes {c['entry']['id']}: {c['entry']['text']} ({c['why']}; "
                  "both kept until you forget or supersede one)")
    if result.get("run") and any(c["action"] == "supersede" for c in result["corrects"]):
        print(f"recorded as {result['run']}: `memory undo {result['run']}` takes it back")
    elif result.get("run"):
        print(f"recorded as {result['run']} (memory pass show {result['run']})")


def print_forgotten(entry: dict[str, Any]) -> None:
    print(f"forgotten {entry['id']}" + edited(entry, "removed from"))


def print_scope(result: dict[str, Any]) -> None:
    """What `memory scope` did: the move and the run that takes it back, or nothing."""
    entry = result["entry"]
    where = f"project {result['project']}" if result["project"] else "the global tier"
    if not result["moved"]:
        print(f"{entry['id']} is in {where} already; nothing was changed")
        return
    before = f"project {result['before']}" if result["before"] else "the global tier"
    print(f"moved {entry['id']} to {where} (from {before}); `memory undo {result['undo']}` "
          "moves it back")


def print_project_moved(result: dict[str, Any]) -> None:
    """What `memory move-project` did: how many moved and the run that takes them back, and
    each entry left where it was, with the reason."""
    where = f"project {result['to']}" if result["to"] else "the global tier"
    moved = result["moved"]
    if moved:
        print(f"moved {moved} entr{'y' if moved == 1 else 'ies'} from project {result['from']} "
              f"to {where}; `memory undo {result['undo']}` moves them back")
    elif not result["left"]:
        print(f"the entries of project {result['from']} are in {where} already; nothing was "
              "changed")
    for left in result["left"]:
        print(f"left {left['id']} in project {result['from']}: {left['why']}")


def print_superseded(result: dict[str, Any]) -> None:
    """What `memory supersede` did, and what redaction took out of the new text, as `memory
    store` says it (a daemon before 2026-12 does not say)."""
    redacted = ", ".join(result.get("redacted") or ())
    if redacted and result.get("edited"):  # the user's file holds what they typed
        print(f"redacted in the index: {redacted} (the file holds the text as you typed it)",
              file=sys.stderr)
    elif redacted:
        print(f"redacted before it was stored: {redacted} (the secret is kept nowhere)",
              file=sys.stderr)
    print(f"stored {result['entry']['id']}, superseding {result['superseded']['id']}"
          + edited(result, "in"))


def print_history(result: dict[str, Any]) -> None:
    for entry in result["entries"]:
        print_entry(entry)
    for event in result["events"]:
        print(f"{when(event['ts'])}  {event['action']:<10} {event['id']}  "
              f"by {event['actor'] or '-'}{verdict(event)}")


def verdict(event: dict[str, Any]) -> str:
    """What an outcome event of `memory history` says: the verdict and the session."""
    after = event.get("after") or {}
    if event.get("action") != "outcome" or not after.get("outcome"):
        return ""
    return f": {after['outcome']} in session {str(after.get('session') or '?')[:12]}"


def print_released(entry: dict[str, Any]) -> None:
    print(f"released {entry['id']}: it may be injected again")
