"""Redaction's time against hostile input: linear, never quadratic.

    python bench/bench_redact.py [--size 60000] [--rounds 3]

A pattern of memoryd.redact that backtracks quadratically would hang a hook on a long
transcript. For each hostile unit (a fragment that a secret pattern starts to match, repeated),
redact() is timed on ``--size`` characters of it and on four times as many, interleaved, the
best of ``--rounds`` each, so that a busy machine slows both sizes alike. Four times the input
must cost at most eight times the time (linear is four, quadratic sixteen). Exits 1 when a unit
does not. (This was a unit test; a timing belongs here: under load it failed for no fault.)
"""

from __future__ import annotations

import argparse
import gc
import sys
import time

from memoryd.redact import redact

UNITS = ["-", "password: ", "://", "key=", "curl -u ", " -pX", "mysql -p",
         "-----BEGIN PRIVATE KEY----- ", "sk-proj-", "xoxb-", "cookie:a=", "Cookie: a=b; ",
         '"auth":"', "auth=('u', ", "docker login -p "]
#: Four times the input may cost this many times the time (linear: 4; quadratic: 16).
MAX_RATIO = 8


def timed_redact(text: str) -> float:
    """Without the garbage collector: its passes over a large heap grow with the matches
    redact allocates, which is the process's cost, not the pattern's."""
    gc.disable()
    try:
        start = time.perf_counter()
        redact(text)
        return time.perf_counter() - start
    finally:
        gc.enable()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=60_000, help="characters of the small input")
    parser.add_argument("--rounds", type=int, default=3, help="timings of each size (the best)")
    args = parser.parse_args(argv)
    failed = 0
    print(f"{'unit':<32} {'small ms':>9} {'4x ms':>9} {'ratio':>6}")
    for unit in UNITS:
        small = unit * (args.size // len(unit))
        big = small * 4
        small_s, big_s = [], []
        for _ in range(args.rounds):
            small_s.append(timed_redact(small))
            big_s.append(timed_redact(big))
        ratio = min(big_s) / max(min(small_s), 1e-9)
        ok = min(big_s) < MAX_RATIO * min(small_s) + 0.02
        failed += not ok
        print(f"{unit!r:<32} {min(small_s) * 1000:9.1f} {min(big_s) * 1000:9.1f} {ratio:6.1f}"
              f"{'' if ok else '  over the budget'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
