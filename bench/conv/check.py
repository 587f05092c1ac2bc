"""Validate the conversational set: `python bench/conv/check.py` (exit 1 on problems).

Prints the sizes per conversation and for the set, what a conversation lacks against
README.md's sizes, and how many questions share no content word with their evidence (the
first set's stemmer). ``--show c03`` prints a conversation's turns with their ids, for
writing questions.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from conversations import SET_TARGETS, TYPES, check_sizes, load  # noqa: E402


def _first_set_words():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("first_set_dataset",
                                                  HERE.parent / "eval" / "dataset.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module.shared_words


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--show", metavar="CNN", help="print a conversation's turns with ids")
    args = parser.parse_args()
    data = load()
    if args.show:
        for conversation in data.conversations:
            if conversation.id == args.show:
                for session in conversation.sessions:
                    print(f"== {session.id} {session.start:%Y-%m-%d %H:%M %A}")
                    for turn in session.turns:
                        print(f"{turn.id} {turn.speaker}: {turn.text}")
        return 0
    shared_words = _first_set_words()
    problems = list(data.problems)
    lacking: list[str] = []
    print(f"{'conv':<5} {'half':<9} {'sessions':>8} {'turns':>6} {'days':>5} "
          + " ".join(f"{t:>11}" for t in TYPES) + f" {'questions':>9}")
    paraphrased = 0
    for conversation in data.conversations:
        lacking += check_sizes(conversation)
        kinds = Counter(q.type for q in conversation.questions)
        turns = conversation.turns()
        for question in conversation.questions:
            said = " ".join(turns[e].text for e in question.evidence)
            paraphrased += not shared_words(question.q, said)
        days = (conversation.sessions[-1].start - conversation.sessions[0].start).days
        print(f"{conversation.id:<5} {conversation.half:<9} {len(conversation.sessions):>8} "
              f"{len(turns):>6} {days:>5} " + " ".join(f"{kinds.get(t, 0):>11}" for t in TYPES)
              + f" {len(conversation.questions):>9}")
    sizes = data.sizes()
    print(f"set: {sizes['conversations']} conversations, {sizes['sessions']} sessions, "
          f"{sizes['turns']} turns, {sizes['questions']} questions ("
          + ", ".join(f"{t} {n}" for t, n in sizes["by_type"].items()) + ")")
    if sizes["questions"]:
        print(f"questions sharing no content word with their evidence: {paraphrased} "
              f"({paraphrased / sizes['questions']:.0%})")
    short = [f"{name} {sizes[name]} of {target}" for name, target in SET_TARGETS.items()
             if sizes[name] < target]
    if short:
        print("the whole set is not complete yet: " + ", ".join(short))
    for line in problems + lacking:
        print(line)
    print(f"{len(problems) + len(lacking)} problems")
    return 1 if problems or lacking else 0


if __name__ == "__main__":
    sys.exit(main())
