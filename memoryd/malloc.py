"""Keep glibc's allocator from hoarding memory in a long-running, multi-threaded daemon.

onnxruntime allocates large, short-lived buffers (attention scores grow with batch size ×
sequence length²) from several threads. With glibc's defaults each thread gets its own arena
and freed blocks stay mapped: measured on this daemon, RSS after embedding a few hundred mixed
texts was 359 MB with the defaults and 185 MB with these settings (same work, same model).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import sys

log = logging.getLogger(__name__)

M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
M_ARENA_MAX = -8


def tune_malloc() -> bool:
    """Two arenas, blocks of 1 MiB and more straight from mmap (returned on free), trimming
    above 4 MiB. Call before starting threads. Does nothing off glibc."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    done = all(mallopt(option, value) == 1 for option, value in (
        (M_ARENA_MAX, 2), (M_MMAP_THRESHOLD, 1 << 20), (M_TRIM_THRESHOLD, 4 << 20)))
    if not done:
        log.debug("mallopt refused a setting; keeping the allocator's defaults.")
    return done
