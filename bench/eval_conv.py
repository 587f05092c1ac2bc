"""Retrieval on long conversations: `python bench/eval_conv.py` (bench/conv/README.md).

The second evaluation set: long chats between two people, each session written as a generic
JSONL transcript (the first speaker as role ``user``, the second as ``assistant``) under a
fake $HOME and watched through one transcript source, one agent per conversation (``--one-agent``:
all in one). The corpus is built and indexed once by the real daemon (bench/results/conv/
corpus/<key>/, reused while the set, this builder and the index settings are unchanged); then
every question is asked through the client with the default settings, at the conversation's
``asked`` time, and each hit is credited with the turns its entry covers (a transcript chunk:
the turn its ``message_id`` names and the second speaker's turns after it).

Prints R@1/R@5/R@10/MRR overall, per question type and per half (tuning: odd conversations,
held-out: even ones); the match flag's precision and recall per hit (a hit is relevant when it
covers an evidence turn); search latency through the client. The figures go to
bench/results/conv/last.json, and the previous last.json is shown beside them.

    python bench/eval_conv.py                        # every conversation, both halves
    python bench/eval_conv.py --half tuning          # only the tuning half's questions
    python bench/eval_conv.py --one-agent            # all conversations in one namespace
    python bench/eval_conv.py --names                # each line with its speaker's `name`
    python bench/eval_conv.py --set search.match_precision=0.8
    python bench/eval_conv.py --index embed.max_tokens=128   # index settings: another build
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import shutil
import sys
import time
from collections import defaultdict
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CONV = ROOT / "bench" / "conv"
RESULTS = ROOT / "bench" / "results" / "conv"
sys.path.insert(0, str(CONV))

from conversations import HALVES, Conversation, ConversationSet, load  # noqa: E402
from measure import TOP, metrics, show  # noqa: E402


def _first_set() -> Any:
    """bench/eval.py as a module: the daemon runner and the settings helpers are shared."""
    spec = importlib.util.spec_from_file_location("bench_eval", ROOT / "bench" / "eval.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


first = _first_set()
Daemon, parse_settings, toml_value = first.Daemon, first.parse_settings, first.toml_value

BUILD_VERSION = 3  # bump when write_transcripts or write_config changes what they write
ONE_AGENT = "chats"
#: the generic parser keeps an ``id`` this long as it is, a shorter one as "<session>:<id>"
GLOBAL_ID_CHARS = 16
TRANSCRIPT_PREFIX = "t"  # memoryd.store.archive: a transcript chunk's uid starts with it


# -- the corpus -------------------------------------------------------------------------------


def agent_of(conversation: Conversation, one_agent: bool) -> str:
    return ONE_AGENT if one_agent else conversation.id


def session_key(conversation: Conversation, session_id: str) -> str:
    return f"{conversation.id}-{session_id}"


def line_id(conversation: Conversation, turn_id: str, bare: str | None = None) -> str:
    """A turn's ``id``; ``bare`` (lines without ``session_id``): one unique across the set."""
    given = f"{conversation.id}:{turn_id}"
    return given.ljust(GLOBAL_ID_CHARS, "~") if bare else given


def record_ids(data: ConversationSet, bare: str | None = None) -> dict[str, tuple[str, str]]:
    """The record id memoryd gives each turn → (conversation, turn id)."""
    out = {}
    for conversation in data.conversations:
        for session in conversation.sessions:
            for turn in session.turns:
                given = line_id(conversation, turn.id, bare)
                record = given if len(given) >= GLOBAL_ID_CHARS else \
                    f"{session_key(conversation, session.id)}:{given}"
                out[record] = (conversation.id, turn.id)
    return out


def iso(moment: datetime) -> str:
    """The set's local times, written as UTC (README.md, "Times")."""
    return moment.replace(tzinfo=UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


#: ``--bare``: lines without ``session_id``, one file a session or one a conversation
BARE = ("session", "conversation")


def write_transcripts(data: ConversationSet, home: Path, names: bool = False,
                      bare: str | None = None) -> int:
    """One generic JSONL file per session under ~/chats/<conversation>/ (``names``: each
    line with its speaker's ``name``; ``bare``: without ``session_id``, as many chat exporters
    write it, a file being the session, or with ``conversation`` all of a conversation's
    sessions); returns the lines."""
    lines = 0
    for conversation in data.conversations:
        first_speaker = conversation.speakers[0]
        directory = home / "chats" / conversation.id
        directory.mkdir(parents=True, exist_ok=True)
        files: dict[Path, list[dict[str, Any]]] = {}
        stamps: dict[Path, float] = {}
        for session in conversation.sessions:
            key = session_key(conversation, session.id)
            rows = [{"role": "user" if t.speaker == first_speaker else "assistant",
                     "content": t.text, "timestamp": iso(t.at),
                     **({} if bare else {"session_id": key}),
                     "id": line_id(conversation, t.id, bare),
                     **({"name": t.speaker} if names else {})}
                    for t in session.turns]
            path = directory / (f"{conversation.id}.jsonl" if bare == "conversation" else
                                f"{session.start:%Y-%m-%d}-{key}.jsonl")
            files.setdefault(path, []).extend(rows)
            stamps[path] = session.turns[-1].at.replace(tzinfo=UTC).timestamp() + 60
        for path, rows in files.items():
            path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                            "utf-8")
            os.utime(path, (stamps[path], stamps[path]))
            lines += len(rows)
    return lines


def write_config(state: Path, settings: dict[str, str], one_agent: bool) -> None:
    sections: dict[str, list[str]] = defaultdict(list)
    for name, value in settings.items():
        section, key = name.split(".", 1)
        sections[section].append(f"{key} = {toml_value(value)}")
    lines = []
    for section, values in sections.items():
        lines += [f"[{section}]", *values, ""]
    lines += ["[[sources]]", 'name = "chats"', 'kind = "transcript"', 'format = "generic"']
    lines += ['path = "~/chats/*/*.jsonl"', f'agent = "{ONE_AGENT}"'] if one_agent else \
        ['path = "~/chats/{agent}/*.jsonl"']
    (state / "config.toml").write_text("\n".join(lines) + "\n", "utf-8")


def corpus_key(index_settings: dict[str, str], one_agent: bool, names: bool = False,
               bare: str | None = None) -> str:
    digest = hashlib.sha256()
    for path in sorted(CONV.glob("c[0-9][0-9].toml")) + [CONV / "conversations.py"]:
        digest.update(path.name.encode() + path.read_bytes())
    model = ROOT / "memoryd" / "data" / "model.onnx"
    # the key of a build before --names and --bare
    variant = [one_agent, *(["names"] if names else []),
               *([{"session": "bare"}.get(bare, f"bare-{bare}")] if bare else [])]
    digest.update(json.dumps([BUILD_VERSION, index_settings, *variant,
                              model.stat().st_size if model.exists() else None],
                             sort_keys=True).encode())
    return digest.hexdigest()[:16]


def prepare(data: ConversationSet, index_settings: dict[str, str], one_agent: bool,
            rebuild: bool, names: bool = False, bare: str | None = None) -> Path:
    """The built corpus directory, reused when its key matches."""
    directory = RESULTS / "corpus" / corpus_key(index_settings, one_agent, names, bare)
    if rebuild and directory.exists():
        shutil.rmtree(directory)
    meta = directory / "corpus.json"
    if meta.exists():
        return directory
    if directory.exists():
        shutil.rmtree(directory)
    started = time.monotonic()
    home, state = directory / "home", directory / "state"
    lines = write_transcripts(data, home, names, bare)
    state.mkdir(parents=True)
    write_config(state, index_settings, one_agent)
    daemon = Daemon(state, home)
    try:
        status = daemon.wait_indexed()
    finally:
        daemon.stop()
    entries = sum(status["entries"].values())
    print(f"\rbuilt {directory.name}: {lines} turns → {entries} entries "
          f"in {time.monotonic() - started:.0f} s", file=sys.stderr)
    meta.write_text(json.dumps({"index_settings": index_settings, "one_agent": one_agent,
                                "turns": lines, "entries": entries}), "utf-8")
    return directory


# -- hits → turns -----------------------------------------------------------------------------


class Coverage:
    """Which turns an entry covers, from the provenance memoryd records: a transcript chunk's
    ``message_id`` is the record id of its first turn, and a chunk runs from it through the
    second speaker's turns after it (memoryd.ingest.transcript.chunks); any other entry with
    a ``message_id`` (extracted at session end) covers that one turn."""

    def __init__(self, data: ConversationSet, index_settings: dict[str, str] | None = None,
                 bare: str | None = None) -> None:
        settings = index_settings or {}
        self.records = record_ids(data, bare)
        self.following: dict[tuple[str, str], tuple[str, ...]] = {}
        self.texts = {(c.id, t.id): t.text for c in data.conversations
                      for t in c.turns().values()}
        windows = settings.get("watch.transcript_chunks", "exchange") == "window"
        width = int(settings.get("watch.transcript_window", "1"))
        for conversation in data.conversations:
            for session in conversation.sessions:
                turns = session.turns
                for i, turn in enumerate(turns):
                    if windows:  # the turn with its neighbours (memoryd's window chunks)
                        covered = [t.id for t in turns[max(0, i - width):i + width + 1]]
                    else:
                        covered = [turn.id]
                        for later in turns[i + 1:]:
                            if later.speaker == conversation.speakers[0]:
                                break
                            covered.append(later.id)
                    self.following[(conversation.id, turn.id)] = tuple(covered)

    def turn(self, record: str) -> tuple[str, str] | None:
        """The (conversation, turn id) of a record id: ``<session>:<id>``, or, for a session
        named by a short id, ``<file's session>:<session>:<id>`` (one of its file's)."""
        return self.records.get(record) or self.records.get(record.partition(":")[2])

    def turns(self, hit: dict[str, Any]) -> tuple[str, set[str]]:
        """(conversation, turn ids) of an entry; ("", ∅) when it names no known turn. A
        window's neighbour counts only where the entry holds it whole (a neighbour cut to its
        context is not credited)."""
        if hit.get("records"):  # the turns the hit shows, as memoryd maps them
            turns = [found for r in hit["records"] if (found := self.turn(r)) is not None]
            if turns:
                return turns[0][0], {t for c, t in turns if c == turns[0][0]}
        found = self.turn(hit.get("message_id") or "")
        if found is None:
            return "", set()
        if hit["id"].startswith(TRANSCRIPT_PREFIX) and hit.get("via") == "watch":
            text = hit.get("text") or ""
            return found[0], {t for t in self.following[found]
                              if t == found[1] or self.texts[(found[0], t)] in text}
        return found[0], {found[1]}


def coverage_problems(entries: Iterable[dict[str, Any]], data: ConversationSet,
                      coverage: Coverage) -> list[str]:
    """Entries (``id``, ``via``, ``message_id``, ``text``) that do not hold the turns Coverage
    credits them with, and turns no entry holds."""
    texts = {(c.id, t.id): t.text for c in data.conversations for t in c.turns().values()}
    problems, seen = [], set()
    for entry in entries:
        conversation, turns = coverage.turns(entry)
        if not turns:
            problems.append(f"{entry['id']}: names no turn of the set ({entry['message_id']!r})")
            continue
        for turn in turns:
            seen.add((conversation, turn))
            if texts[(conversation, turn)][:40] not in entry["text"]:
                problems.append(f"{entry['id']}: does not hold {conversation}/{turn}")
    missing = set(texts) - seen
    if missing:
        problems.append(f"{len(missing)} turns are in no entry, e.g. {sorted(missing)[:3]}")
    return problems


def verify_coverage(state: Path, data: ConversationSet, coverage: Coverage) -> list[str]:
    """coverage_problems over the built index's active entries (read-only)."""
    import apsw

    db = apsw.Connection(f"file:{state / 'memoryd.db'}?mode=ro",
                         flags=apsw.SQLITE_OPEN_URI | apsw.SQLITE_OPEN_READONLY)
    try:
        rows = db.execute("SELECT uid, via, message_id, text, records FROM entries "
                          "WHERE status='active'").fetchall()
    finally:
        db.close()
    return coverage_problems(({"id": u, "via": v, "message_id": m, "text": t,
                               "records": json.loads(r) if r else None}
                              for u, v, m, t, r in rows), data, coverage)


# -- asking and measuring ---------------------------------------------------------------------


def ask(client: Any, data: ConversationSet, coverage: Coverage, one_agent: bool,
        halves: Iterable[str]) -> list[dict[str, Any]]:
    rows = []
    for conversation in data.conversations:
        if conversation.half not in halves:
            continue
        now = conversation.asked.replace(tzinfo=UTC).timestamp()
        agent = agent_of(conversation, one_agent)
        for question in conversation.questions:
            started = time.perf_counter()
            result = client.search(question.q, agents=[agent], limit=TOP, now=now)
            elapsed = time.perf_counter() - started
            covered = []
            for hit in result["hits"]:
                owner, turns = coverage.turns(hit)
                covered.append(sorted(turns) if owner == conversation.id else [])
            rows.append({"id": question.key, "type": question.type, "half": conversation.half,
                         "q": question.q, "evidence": list(question.evidence),
                         "covered": covered, "match": [bool(h["match"]) for h in result["hits"]],
                         "relevance": [h["score"]["relevance"] for h in result["hits"]],
                         "ms": elapsed * 1000})
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--half", choices=("tuning", "held-out", "both"), default="both",
                        help="which half's questions to ask (default both, printed apart)")
    parser.add_argument("--one-agent", action="store_true",
                        help="every conversation in one agent's namespace (a separate build)")
    parser.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                        help="a search setting for this run (config.toml, applied by reload)")
    parser.add_argument("--index", action="append", default=[], metavar="SECTION.KEY=VALUE",
                        help="an indexing setting: builds a separate corpus")
    parser.add_argument("--names", action="store_true",
                        help="each turn with its speaker's name (generic `name`): a separate build")
    parser.add_argument("--bare", nargs="?", const="session", choices=BARE,
                        help="lines without session_id, a file being a session (or with "
                        "'conversation' a whole conversation): a separate build")
    parser.add_argument("--rebuild", action="store_true", help="rebuild the corpus")
    parser.add_argument("--dump", metavar="FILE", help="write every question's hits here")
    args = parser.parse_args()

    data = load()
    if data.problems:
        raise SystemExit("the conversational set has problems; run bench/conv/check.py")
    index_settings = parse_settings(args.index)
    directory = prepare(data, index_settings, args.one_agent, args.rebuild, args.names,
                        args.bare)
    state, home = directory / "state", directory / "home"
    coverage = Coverage(data, index_settings, args.bare)
    problems = verify_coverage(state, data, coverage)
    for problem in problems[:10]:
        print(f"warning: {problem}", file=sys.stderr)
    halves = HALVES if args.half == "both" else (args.half,)
    previous_path = RESULTS / "last.json"
    previous = json.loads(previous_path.read_text()) if previous_path.exists() else {}
    settings = parse_settings(args.set)
    daemon = Daemon(state, home)
    try:
        status = daemon.wait_indexed()
        entries = sum(status["entries"].values())
        if settings:
            write_config(state, {**index_settings, **settings}, args.one_agent)
            daemon.client.reload()
        rows = ask(daemon.client, data, coverage, args.one_agent, halves)
    finally:
        write_config(state, index_settings, args.one_agent)
        daemon.stop()
    figures = metrics(rows)
    sizes = data.sizes()
    label = (f"memoryd {settings or ''} ({sizes['conversations']} conversations, "
             f"{sizes['turns']} turns → {entries} entries, {len(rows)} questions"
             f"{', one agent' if args.one_agent else ''}{', names' if args.names else ''}"
             f"{f', bare ({args.bare})' if args.bare else ''})")
    same = (previous.get("one_agent"), previous.get("names", False),
            previous.get("bare"), previous.get("half")) \
        == (args.one_agent, args.names, args.bare, args.half)
    show(label, figures, previous.get("figures") if same else None)
    results = {"when": time.strftime("%Y-%m-%d %H:%M"), "corpus": directory.name,
               "index_settings": index_settings, "settings": settings,
               "one_agent": args.one_agent, "names": args.names, "bare": args.bare,
               "half": args.half,
               "entries": entries,
               "figures": figures}
    RESULTS.mkdir(parents=True, exist_ok=True)
    previous_path.write_text(json.dumps(results, indent=1))
    (RESULTS / f"conv-{time.strftime('%Y%m%d-%H%M%S')}.json").write_text(
        json.dumps(results, indent=1))
    if args.dump:
        Path(args.dump).write_text(json.dumps(rows, indent=1, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
