"""Turn a plain-text draft of a conversation into its ``cNN.toml``: `python bench/conv/draft.py
DRAFT [--out bench/conv/cNN.toml]` (README.md, "Writing with a draft").

A draft is quicker to write than TOML: one line per turn, sessions under a date line, and the
questions beside the talk, naming their evidence by labels instead of turn ids::

    id: c03
    title: Lucía (Mexico City) and Tariq (Hobart), a couple apart
    speakers: Lucía = L, Tariq = T

    == 2025-02-03 21:10
    L: did you land?? [#landed]
    T: just now. Hobart is cold in a very rude way

    == questions
    ? single-hop | landed | where did Tariq fly to in February | Hobart

The converter numbers the sessions (s01, s02, …) and the turns (s01.01, …), replaces the labels
by the ids, checks the result with conversations.load and writes the TOML. The TOML is the set
from then on: edit it, not the draft.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from conversations import TYPES, load

_LABEL = re.compile(r"\s*\[#([a-z0-9_-]+)\]")


def parse(text: str) -> dict[str, object]:
    header: dict[str, str] = {}
    sessions: list[dict[str, object]] = []
    questions: list[dict[str, object]] = []
    labels: dict[str, str] = {}
    initials: dict[str, str] = {}
    in_questions = False
    for number, line in enumerate(text.splitlines(), 1):
        line = line.rstrip()
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        where = f"line {number}"
        if line.startswith("=="):
            rest = line[2:].strip()
            if rest == "questions":
                in_questions = True
                continue
            try:
                start = datetime.strptime(rest, "%Y-%m-%d %H:%M")
            except ValueError:
                raise SystemExit(f"{where}: a session line is '== YYYY-MM-DD HH:MM'") from None
            sessions.append({"id": f"s{len(sessions) + 1:02d}", "start": start, "turns": []})
            in_questions = False
            continue
        if line.startswith("?"):
            parts = [p.strip() for p in line[1:].split("|")]
            if len(parts) != 4 or parts[0] not in TYPES:
                raise SystemExit(f"{where}: a question is '? TYPE | labels | question | answer'")
            questions.append({"type": parts[0], "labels": [x.strip() for x in parts[1].split(",")],
                              "q": parts[2], "answer": parts[3], "where": where})
            continue
        if in_questions:
            raise SystemExit(f"{where}: only questions after '== questions'")
        if not sessions:
            _header_line(line, header, initials)
        else:
            _turn(line, where, sessions[-1], initials, labels)
    for number, question in enumerate(questions, 1):
        ids = []
        for label in question.pop("labels"):  # type: ignore[attr-defined]
            if label not in labels:
                raise SystemExit(f"{question['where']}: no turn labelled {label}")
            ids.append(labels[label])
        question.pop("where")
        question["id"] = f"q{number:02d}"
        question["evidence"] = ids
    return {"header": header, "speakers": list(initials.values()), "sessions": sessions,
            "questions": questions}


def _header_line(line: str, header: dict[str, str], initials: dict[str, str]) -> None:
    key, _, value = line.partition(":")
    header[key.strip()] = value.strip()
    if key.strip() == "speakers":
        for part in value.split(","):
            name, _, initial = part.partition("=")
            initials[initial.strip()] = name.strip()


def _turn(line: str, where: str, session: dict[str, object], initials: dict[str, str],
          labels: dict[str, str]) -> None:
    """A turn of the session, its labels noted (label → turn id)."""
    initial, _, said = line.partition(":")
    if initial.strip() not in initials:
        raise SystemExit(f"{where}: a turn starts with a speaker's initial {sorted(initials)}")
    turns = session["turns"]
    assert isinstance(turns, list)
    tid = f"{session['id']}.{len(turns) + 1:02d}"
    for label in _LABEL.findall(said):
        if label in labels:
            raise SystemExit(f"{where}: label {label} used twice")
        labels[label] = tid
    turns.append({"id": tid, "who": initials[initial.strip()],
                  "text": _LABEL.sub("", said).strip()})


def to_toml(draft: dict[str, object]) -> str:
    header = draft["header"]
    assert isinstance(header, dict)
    out = [f"id = {json.dumps(header['id'])}",
           f"title = {json.dumps(header.get('title', ''), ensure_ascii=False)}",
           f"speakers = {json.dumps(draft['speakers'], ensure_ascii=False)}"]
    if header.get("asked"):
        out.append(f"asked = {datetime.strptime(header['asked'], '%Y-%m-%d %H:%M').isoformat()}")
    for session in draft["sessions"]:  # type: ignore[attr-defined]
        out += ["", "[[session]]", f"id = {json.dumps(session['id'])}",
                f"start = {session['start'].isoformat()}", "turns = ["]
        for turn in session["turns"]:
            out.append(f"  {{id = {json.dumps(turn['id'])}, who = "
                       f"{json.dumps(turn['who'], ensure_ascii=False)}, "
                       f"text = {json.dumps(turn['text'], ensure_ascii=False)}}},")
        out.append("]")
    for question in draft["questions"]:  # type: ignore[attr-defined]
        out += ["", "[[question]]", f"id = {json.dumps(question['id'])}",
                f"type = {json.dumps(question['type'])}",
                f"q = {json.dumps(question['q'], ensure_ascii=False)}",
                f"evidence = {json.dumps(question['evidence'])}",
                f"answer = {json.dumps(question['answer'], ensure_ascii=False)}"]
    return "\n".join(out) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("draft", type=Path)
    parser.add_argument("--out", type=Path, help="default: bench/conv/<id>.toml")
    args = parser.parse_args()
    draft = parse(args.draft.read_text("utf-8"))
    header = draft["header"]
    assert isinstance(header, dict)
    out = args.out or Path(__file__).resolve().parent / f"{header['id']}.toml"
    out.write_text(to_toml(draft), "utf-8")
    data = load(out.parent, only={out.stem})
    for problem in data.problems:
        print(problem)
    print(f"wrote {out}: {data.sizes()}")
    return 1 if data.problems else 0


if __name__ == "__main__":
    sys.exit(main())
