"""`memory status` as text: first the answer to "is it healthy, and is it done?", then the
details (paths, model, counts, sources, passes, contradictions). The health is the daemon's
checks, and before them whether it runs older code than this client (memoryd_client.revision).

    healthy · indexing files 1,234/5,000 (25%, ~2 min left) · embedding 812/3,100 (26%)
    problem: model: not loaded, search is keyword-only: … (memory doctor says how to fix it)
"""

from __future__ import annotations

import time

TYPE_CHECKING = False  # see memoryd_client/__init__.py

if TYPE_CHECKING:
    from typing import Any


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    if seconds < 90:
        return f"{seconds:.0f} s" if seconds >= 1 else "under 1 s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def next_run(at: float, now: float) -> str:
    """When a pass runs next, as a clock time that cannot be read as today's when it is not:
    "16:35", "tomorrow 14:35", "due" (it waits for a quiet moment or its turn)."""
    if at <= now:
        return "due"
    day, clock = time.strftime("%Y-%m-%d %H:%M", time.localtime(at)).split()
    if day == time.strftime("%Y-%m-%d", time.localtime(now)):
        return clock
    if day == time.strftime("%Y-%m-%d", time.localtime(now + 86400)):
        return f"tomorrow {clock}"
    return f"{day} {clock}"


def _fraction(what: str, done: int, total: int, eta_s: float | None) -> str:
    percent = 100 * done // total if total else 100
    left = f", ~{duration(eta_s)} left" if eta_s else ""
    return f"{what} {done:,}/{total:,} ({percent}%{left})"


def health_line(status: dict[str, Any]) -> str:
    """One line: the verdict, then what is still being done (or "up to date")."""
    from memoryd_client.revision import revision_check

    health = status.get("health") or {}
    older = revision_check(status)  # a daemon not restarted since an upgrade: said first
    checks = [older, *(health.get("checks") or [])] if older else health.get("checks") or []
    state = health.get("state", "ok")
    if older and state == "ok":
        state = older["status"]
    if state == "ok":
        verdict = "healthy"
    else:
        first = checks[0] if checks else {"check": "?", "detail": "?"}
        more = f" (and {len(checks) - 1} more)" if len(checks) > 1 else ""
        verdict = f"{state}: {first['check']}: {first['detail']}{more}; memory doctor says how " \
            "to fix it"
    work = []
    if status.get("model_loading"):
        work.append("loading the model")
    if (status.get("vector_index") or {}).get("filling"):
        work.append("building the vector index")
    ingest = status.get("ingest") or {}
    initial = ingest.get("initial") or {}
    later = ingest.get("indexing")  # files written while memoryd runs
    indexing = initial.get("started") and initial.get("finished") is None
    if indexing:
        work.append(_fraction("indexing files", initial.get("done", 0), initial["total"],
                              initial.get("eta_s")) if initial.get("total") else
                    "scanning the watched files")
    elif later and later.get("total"):
        indexing = True
        work.append(_fraction("indexing files", later["done"], later["total"], None))
    history = status.get("history_import") or {}
    if history.get("finished") is None and history.get("phase"):  # memory import-history
        if history["phase"] == "extracting":
            sessions = history["sessions"]
            work.append(_fraction("importing history: extracting sessions", sessions["done"],
                                  sessions["total"], history.get("eta_s")))
        elif history["phase"] == "indexing":
            files = history["files"]
            work.append(_fraction("importing history: indexing files", files["done"],
                                  files["total"], history.get("eta_s")))
        else:
            work.append("importing history: finding the files")
    lexicon = status.get("lexicon") or {}
    behind = lexicon.get("entries_behind") or 0
    if behind and behind >= lexicon.get("shown_from", 1):
        total = sum((status.get("entries") or {}).values())
        work.append(_fraction("filling the word index", max(total - behind, 0), total, None)
                    if total >= behind else f"filling the word index ({behind:,} entries)")
    backlog = status.get("backlog") or 0
    if backlog:
        embedding = status.get("embedding") or {}
        done = embedding.get("done") or 0
        if indexing:  # files still add entries: a share of a total that grows would shrink
            work.append(f"embedding {done:,} done, {backlog:,} waiting")
        else:
            work.append(_fraction("embedding", done, done + backlog, embedding.get("eta_s")))
    return " · ".join([verdict, *(work or ["up to date"])])


def _waiting(status: dict[str, Any]) -> str:
    """The vectors still to be made: the backlog, and the long entries searchable by their
    sentences' mean until their text has been run whole."""
    waiting = [f"backlog {status['backlog']}"] if status.get("backlog") else []
    if status.get("refining"):
        waiting.append(f"{status['refining']} long entries being refined")
    return f" ({', '.join(waiting)})" if waiting else ""


def keyword_only(status: dict[str, Any]) -> bool:
    """Whether no embedding model is loaded (search by keywords alone). Not every degradation
    is that: while the word index fills, the model is loaded and embeds."""
    return status.get("degraded") == "keyword-only"


def _model_lines(status: dict[str, Any], model: dict[str, Any] | None) -> list[str]:
    """The embedding model: degraded and why, loading, or which (keyword-only, ``model`` is
    the one the stored vectors were made by, not one that is loaded)."""
    lines = []
    if status.get("degraded"):
        lines.append(f"degraded: {status['degraded']} ({status.get('degraded_reason')})")
    if keyword_only(status):
        if model:
            lines.append(f"model: none loaded (the stored vectors are {model['id']}'s, "
                         f"{model['dim']} dims)")
        return lines
    if status.get("model_loading"):
        lines.append("model: loading")
    if model:
        lines.append(f"model: {model['id']} ({model['dim']} dims, sha256 "
                     f"{model['sha256'][:12]}…)")
    return lines


def print_status(status: dict[str, Any], every: bool = False) -> None:
    """The state as text; ``every``: each open contradiction, however many."""
    model = status.get("model")
    entries = status.get("entries", {})
    print(health_line(status))
    print(f"memoryd {status['version']} (pid {status['pid']}, up {duration(status['uptime_s'])})")
    print(f"socket: {status['socket']}")
    print(f"state:  {status['state_dir']}")
    if status.get("config_file"):
        print(f"config: {status['config_file']}")
    if status.get("log"):
        print(f"log:    {status['log']}")
    for line in _model_lines(status, model):
        print(line)
    print("entries: " + (", ".join(f"{n} {s}" for s, n in sorted(entries.items())) or "none"))
    print(f"vectors: {status['vectors']}{_waiting(status)}")
    print(f"agents: {', '.join(status.get('agents') or []) or 'none'}")
    ingest = status.get("ingest")
    if ingest:
        watched = sum(s["files"] for s in ingest["sources"])
        present = sum(1 for s in ingest["sources"] if s["root_exists"])
        problems = sum(1 for s in ingest["sources"] if s["last_error"])
        print(f"sources: {present} of {len(ingest['sources'])} present, {watched} files, "
              f"queue {ingest['queue']}" + (f", {problems} with problems" if problems else ""))
        initial = ingest.get("initial") or {}
        if initial.get("finished") is not None:
            watched = initial.get("watched")
            files = (f"{watched:,} files watched, {initial['total']:,} of them new or changed "
                     "since the last run" if watched is not None else
                     f"{initial['total']:,} files")  # a daemon from before "watched"
            print(f"initial indexing: done, {files}, {initial['entries']:,} entries indexed, "
                  f"in {duration(initial.get('duration_s'))} "
                  f"(finished {time.strftime('%H:%M', time.localtime(initial['finished']))})")
    history = status.get("history_import") or {}
    if history.get("finished") is not None:
        counts = ", ".join(f"{name} {n:,}" for name, n in history["counts"].items() if n)
        print(f"history import: {history['phase']}"
              + (f" ({history['error']})" if history.get("error") else "")
              + f", {history['files']['total']:,} files, {history['sessions']['done']:,} "
              f"sessions extracted" + (f", {counts}" if counts else "")
              + f" (finished {time.strftime('%H:%M', time.localtime(history['finished']))})")
    if status.get("rss_bytes"):
        print(f"memory: {status['rss_bytes'] / 1e6:.0f} MB RSS")
    upcoming = [p for p in status.get("passes") or [] if p["next"]]
    if upcoming:
        print("passes: " + ", ".join(
            f"{p['pass']} next {next_run(p['next'], time.time())}"
            + (f" (last {p['last_run']}: "
               + (", ".join(f"{k} {v}" for k, v in sorted(p["last_counts"].items()))
                  or "nothing to do") + ")" if p["last_run"] else "")
            for p in upcoming) + (f"; running {status['pass_running']}"
                                  if status.get("pass_running") else ""))
    sync = status.get("sync")
    if sync and "remote" in sync:  # a machine that only follows teams has teams alone
        last = (time.strftime("%Y-%m-%d %H:%M", time.localtime(sync["last_sync"]))
                if sync.get("last_sync") else "never")
        next_sync = (f", next {next_run(sync['next'], time.time())}" if sync.get("next")
                     else f" ({sync['schedule']})")
        print(f"sync: {sync['remote']}, last {last}{next_sync}"
              + (f"; last error: {sync['last_error']}" if sync.get("last_error") else ""))
        for copy in sync.get("conflicts") or []:
            print(f"sync conflict: {copy} holds the other machine's version (merge it into the "
                  "file, delete the copy, memory sync)")
    if sync and sync.get("teams"):
        for name, team in sorted(sync["teams"].items()):
            print(f"team {name}: {unpushed(team)}")
    print_contradictions(status.get("contradictions") or [], every=every)


def unpushed(team: dict[str, Any]) -> str:
    """A team's shares not pushed yet, and why (`memory status`, and `memory sync` and `memory
    share`: memoryd_client.sync_view)."""
    n = team["unpushed"]
    return (f"{n} share{'' if n == 1 else 's'} not pushed yet (kept in the team's clone; the "
            f"next `memory sync` pushes {'it' if n == 1 else 'them'})"
            + (f": {team['push_error']}" if team.get("push_error") else ""))


#: Open contradictions `memory status` names one by one; more are counted (a run over 300
#: notebooks once printed 488 lines of them), and `--contradictions` lists them all.
CONTRADICTIONS_SHOWN = 3


def print_contradictions(contradictions: list[dict[str, Any]], every: bool = False) -> None:
    """Each open contradiction, a line each (the first CONTRADICTIONS_SHOWN of many, unless
    ``every``), and where there are more, how many and how to list them."""
    many = len(contradictions) > CONTRADICTIONS_SHOWN and not every
    if many:
        print(f"contradictions: {len(contradictions):,} open (a person decides: forget or "
              "supersede one of each); the first:")
    for contradiction in contradictions[:CONTRADICTIONS_SHOWN] if many else contradictions:
        texts = " / ".join(repr(t[:60]) for t in contradiction["texts"])
        print(f"contradiction {contradiction['change']}: {texts}"
              + ("" if many else " (a person decides: forget or supersede one)"))
    if many:
        print(f"… and {len(contradictions) - CONTRADICTIONS_SHOWN:,} more: memory status "
              "--contradictions lists them all")
