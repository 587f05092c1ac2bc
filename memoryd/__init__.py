"""memoryd: a local memory daemon for AI agents."""

import os

# numpy's OpenBLAS would run each small product (a search's few thousand rows) on every core:
# on a busy 2-core machine waiting for its threads made a 5 × 384 × 2,000 product 20× slower
# (7.6 ms instead of 0.36). The daemon's parallelism is its threads; set before numpy loads.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

__version__ = "0.1.0"
