"""`memory __complete KIND [PREFIX] [--socket PATH]`: what the shell completion scripts
(:mod:`memoryd_client.completion`) ask the daemon for while a person presses TAB: agent names,
entry ids, session ids. One line a candidate, ``value<TAB>description`` (bash keeps the value;
zsh and fish show the description beside it).

A person is waiting: one connection, one request, TIMEOUT_S for everything, nothing printed
and exit 0 when the daemon is down, slow or refuses (the completion then offers nothing). The
command table is not imported (nor argparse, nor the client class): a start and a connect.
"""

from __future__ import annotations

import os
import sys
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: All the time a completion may take for the daemon's part, connect included.
TIMEOUT_S = 0.5
#: At most this many candidates (a shell lists them all).
LIMIT = 50
KINDS = ("agents", "ids", "sessions")


def ask(path: str, method: str, params: dict[str, Any]) -> Any:
    """The daemon's result, or None (down, slow, refused)."""
    from memoryd_client import wire
    from memoryd_client.connect import connect

    deadline = time.monotonic() + TIMEOUT_S
    try:
        sock = connect(path, TIMEOUT_S, retry_s=0)
    except OSError:
        return None
    try:
        sock.sendall(wire.pack({"id": 1, "method": method, "params": params}))
        data = b""
        while len(data) < wire.HEADER.size or \
                len(data) < wire.HEADER.size + wire.frame_length(data[:wire.HEADER.size]):
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            sock.settimeout(left)
            chunk = sock.recv(65536)
            if not chunk:
                return None
            data += chunk
        reply = wire.unpack(data[wire.HEADER.size:])
    except Exception:
        return None
    finally:
        sock.close()
    return reply.get("result") if reply.get("id") == 1 else None


def candidates(kind: str, prefix: str, path: str) -> list[tuple[str, str]]:
    """(value, description) of ``kind`` beginning with ``prefix``."""
    if kind == "agents":
        status = ask(path, "status", {})
        agents = status.get("agents") if isinstance(status, dict) else None
        return [(a, "agent") for a in agents or () if isinstance(a, str) and a.startswith(prefix)]
    if kind == "ids":
        params: dict[str, Any] = {"agents": ["*"], "status": "any", "limit": LIMIT}
        if prefix:
            params["prefix"] = prefix
        page = ask(path, "list", params)
        return [(e["id"], f"{e['agent']}/{e.get('category') or '-'} {e['kind']}: "
                 + " ".join(str(e["text"]).split())[:60])
                for e in (page or {}).get("entries") or () if str(e.get("id")).startswith(prefix)]
    if kind == "sessions":
        found = ask(path, "sessions", {"limit": LIMIT})
        return [(s["id"], f"{s.get('agent', '?')}, last seen "
                 + time.strftime("%Y-%m-%d %H:%M", time.localtime(s.get("last_seen") or 0)))
                for s in (found or {}).get("sessions") or ()
                if isinstance(s, dict) and str(s.get("id")).startswith(prefix)]
    return []


def main(argv: list[str]) -> int:
    """Print the candidates; always exit 0 (a completion never fails loudly)."""
    socket = None
    if "--socket" in argv:
        at = argv.index("--socket")
        socket = argv[at + 1] if at + 1 < len(argv) else None
        argv = argv[:at] + argv[at + 2:]
    if not argv or argv[0] not in KINDS:
        print(f"usage: memory __complete {{{','.join(KINDS)}}} [PREFIX] [--socket PATH]",
              file=sys.stderr)
        return 0
    if socket is None:
        from memoryd_client.paths import socket_text

        socket = socket_text()  # the CLI's socket, mostly said without platformdirs
    for value, description in candidates(argv[0], argv[1] if len(argv) > 1 else "",
                                         os.path.expanduser(socket)):
        print(f"{value}\t{description}")
    return 0
