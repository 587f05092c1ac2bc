"""Which code each side runs: the wire revision the daemon reports (``status`` and ``doctor``'s
``revision``, :data:`memoryd_client.wire.REVISION`) against this client's.

An upgrade changes the installed client at once (the hooks run it), while a daemon started
before keeps its code until it is restarted: `memory status` and `memory doctor` say so, with
how to restart it. (That any of the daemon's files changed since it started is the daemon's own
check, ``code``: memoryd.server.installed.)
"""

from __future__ import annotations

TYPE_CHECKING = False  # see memoryd_client/__init__.py
if TYPE_CHECKING:
    from typing import Any


def daemon_revision(reply: dict[str, Any]) -> int:
    """The wire revision of the daemon that sent ``reply`` (0: one from before revisions)."""
    revision = reply.get("revision")
    return revision if isinstance(revision, int) and not isinstance(revision, bool) else 0


def revision_check(reply: dict[str, Any]) -> dict[str, Any] | None:
    """A warning when the daemon that sent ``reply`` (its status, or doctor's facts) speaks
    another wire revision than this client; None when both speak this one."""
    from memoryd_client.wire import REVISION

    theirs = daemon_revision(reply)
    if theirs == REVISION:
        return None
    said = f"wire revision {theirs or 'none'} against the client's {REVISION}"
    if theirs < REVISION:
        from memoryd_client.service_probe import restart_hint

        restart = restart_hint(reply.get("pid"))
        return {"check": "version", "status": "warning",
                "detail": f"memoryd runs older code than the installed client ({said}; it "
                f"refuses what it does not know, hook events included): restart it ({restart})",
                "fix": f"restart memoryd so that it runs the installed code: {restart}"}
    return {"check": "version", "status": "warning",
            "detail": f"the installed client is older than memoryd ({said})",
            "fix": "install the client from the same checkout as memoryd (`pip install ./client "
            ".`)"}
