"""git's merge driver for memoryd's ledgers and archives (``.gitattributes`` names it; ``memory
sync init`` writes the command into the repository's own config):

    python -m memoryd.sync.driver ledger|archive %O %A %B

git hands it the common ancestor's version (%O), ours (%A: the result is written here) and
theirs (%B). The merge is :mod:`memoryd.sync.merge`'s union, which never conflicts; exit 0.
A file it cannot read or write exits 1, and git leaves the file unmerged (``memory sync``
then keeps both versions, as for a markdown conflict).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from memoryd.store.durable import replace_file
from memoryd.sync.merge import merge_archives, merge_ledgers

KINDS = {"ledger": merge_ledgers, "archive": merge_archives}


def main(argv: list[str]) -> int:
    if len(argv) != 4 or argv[0] not in KINDS:
        print("usage: python -m memoryd.sync.driver ledger|archive BASE OURS THEIRS",
              file=sys.stderr)
        return 2
    kind, base, ours, theirs = argv[0], *(Path(a) for a in argv[1:])
    try:
        merged, report = KINDS[kind](base.read_bytes(), ours.read_bytes(), theirs.read_bytes())
        replace_file(ours, merged, 0o600)
    except OSError as exc:
        print(f"memoryd merge driver: {exc}", file=sys.stderr)
        return 1
    for problem in report.damaged:
        print(f"memoryd merge driver: skipped a damaged record ({problem})", file=sys.stderr)
    if os.environ.get("MEMORYD_SYNC_DRIVER_LOG"):
        print(f"memoryd merge driver: {kind}: {report.kept} records, {report.theirs_only} "
              f"new from theirs, {report.dropped_purged} purged", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
