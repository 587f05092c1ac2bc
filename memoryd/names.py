"""What a name or a path may be, wherever it comes from: a request (memoryd.server.params),
the configuration, a source's glob, a file on disk (the store's ledgers and archives are named
after agents). These are the file system's limits and memoryd's own, not a request's.
"""

from __future__ import annotations

import os
import re

from memoryd_client.wire import AGENT_PATTERN, MAX_AGENT_CHARS, agent_problem

__all__ = ["AGENT_NAME", "MAX_AGENT_CHARS", "MAX_NAME_BYTES", "MAX_PATH_BYTES", "agent_problem",
           "path_problem"]

#: An agent name: also a ledger file name, so no path separators and no leading dot (the
#: rule is the protocol's, in the client's wire module, which checks it too).
AGENT_NAME = re.compile(AGENT_PATTERN)
#: Paths: PATH_MAX and NAME_MAX of Linux (macOS: 1024 and 255).
MAX_PATH_BYTES = 4096
MAX_NAME_BYTES = 255


def path_problem(value: str) -> str | None:
    """Why ``value`` cannot be a file-system path, or None."""
    if "\0" in value:
        return "contains a NUL character"
    try:
        encoded = os.fsencode(value)
    except UnicodeError:
        return "is not valid text"
    if len(encoded) > MAX_PATH_BYTES:
        return f"is {len(encoded)} bytes long; the limit is {MAX_PATH_BYTES}"
    if any(len(part) > MAX_NAME_BYTES for part in encoded.split(b"/")):
        return f"has a name longer than {MAX_NAME_BYTES} bytes"
    return None


