"""git's merge driver for memoryd's ledgers and archives (``.gitattributes`` names it; ``memory
sync init`` writes the command into the repository's own config):

    python -m memoryd.sync.driver ledger|archive %O %A %B %P

git hands it the common ancestor's version (%O), ours (%A: the result is written here), theirs
(%B) and the file's path (%P). The merge is :mod:`memoryd.sync.merge`'s union, which never
conflicts; exit 0 (:func:`memoryd.sync.merge.merge_file`: a ledger of the state dir loses a
line only by a purge; a team's file, edited in review, loses the lines a side took out). When
``MEMORYD_SYNC_REPORT`` names a file, what the merge kept back or refused is appended to it, a
JSON line for the file (``memory sync`` says it). A file it cannot read or write exits 1, and
git leaves the file unmerged (``memory sync`` then keeps both versions, as for a markdown
conflict).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from memoryd.store.durable import replace_file
from memoryd.sync.merge import merge_file

KINDS = ("ledger", "archive")
#: The file the driver appends what each merge kept back or refused to (memoryd.sync.repo).
REPORT_ENV = "MEMORYD_SYNC_REPORT"


def main(argv: list[str]) -> int:
    if len(argv) not in (4, 5) or argv[0] not in KINDS:
        print("usage: python -m memoryd.sync.driver ledger|archive BASE OURS THEIRS [PATH]",
              file=sys.stderr)
        return 2
    kind, base, ours, theirs = argv[0], *(Path(a) for a in argv[1:4])
    path = argv[4] if len(argv) == 5 else None
    try:
        merged, report = merge_file(kind, path, base.read_bytes(), ours.read_bytes(),
                               theirs.read_bytes())
        replace_file(ours, merged, 0o600)
    except OSError as exc:
        print(f"memoryd merge driver: {exc}", file=sys.stderr)
        return 1
    for problem in report.damaged:
        print(f"memoryd merge driver: skipped a damaged record ({problem})", file=sys.stderr)
    said = os.environ.get(REPORT_ENV)
    if said and report.said():
        try:
            with open(said, "a", encoding="utf-8") as out:
                out.write(json.dumps({"path": path, **report.said()}) + "\n")
        except OSError as exc:
            print(f"memoryd merge driver: {exc}", file=sys.stderr)
    if os.environ.get("MEMORYD_SYNC_DRIVER_LOG"):
        print(f"memoryd merge driver: {kind}: {report.kept} records, {report.theirs_only} "
              f"new from theirs, {report.dropped_purged} purged", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
