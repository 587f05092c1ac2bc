"""Every wire method driven with generated params against one real daemon (Hypothesis): each
request is answered with a result or a typed error, never ``internal``, and the daemon stays
up (report D10, D14)."""

from __future__ import annotations

import json
import socket
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from memoryd_client import Client, wire

from tests.server.test_availability import read_reply

#: Every param name any method reads (and a few no method knows).
NAMES = ("agent", "agents", "category", "text", "kind", "key", "tags", "confidence", "force",
         "cwd", "project", "in_project", "session", "writer", "polarity", "created", "query",
         "limit", "min_score", "match", "since", "until", "now", "status", "id", "reason",
         "action", "name", "path", "format", "project_root", "old", "new", "line", "budget",
         "prompt", "harness", "event", "raw", "payload", "ts", "replayed", "dry_run", "fix",
         "entries", "unknown", "")

#: Values the report tried (wrong types, edges, paths, patterns) beside generated ones.
EDGES = [None, True, False, 0, -1, 2**63 - 1, -(2**63), 2**64 - 1, float("nan"),
         float("inf"), float("-inf"), 1e308, "", "\0", "a\0b", "x" * 300, "é" * 200,
         "/".join(["y" * 255] * 20), "../../etc/passwd", "/etc/passwd", ".", "./", "dir/",
         "*", "%", "_", "%_%", "\u202e", "NEAR(a b)", "text:x", "coder", "claude-code",
         "notes.md", "SessionStart", "PostCompact", "add", "list", "remove", "any", "fact",
         "lesson", "7d", "2026-03-15", b"\x00\xff", [], {}, ["%"], ["a"] * 5000,
         ["t" * 200_000]]

plain_text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=60)

scalars = st.one_of(st.sampled_from(EDGES), plain_text,
                    st.integers(min_value=-(2**63), max_value=2**64 - 1),
                    st.floats(allow_nan=True, allow_infinity=True), st.binary(max_size=20))
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.sampled_from(NAMES), inner, max_size=4)),
    max_leaves=8)
#: A valid request per method: generated values replace some of its params, so that a bad value
#: gets past the others (a NaN confidence only matters on an otherwise good remember).
ENTRY = {"agent": "coder", "category": "tools", "text": "We lint with ruff"}
BASE: dict[str, dict[str, Any]] = {
    "remember": ENTRY, "supersede": {"text": "We lint with ruff and mypy"},
    "search": {"query": "ruff"}, "context": {"agent": "coder"},
    "hook": {"harness": "claude-code", "event": "PostCompact"},
    "file_list": {"agent": "coder"}, "file_read": {"agent": "coder", "path": "notes.md"},
    "file_write": {"agent": "coder", "path": "notes.md", "text": "- ruff\n"},
    "file_replace": {"agent": "coder", "path": "notes.md", "old": "ruff", "new": "ruff!"},
    "file_insert": {"agent": "coder", "path": "notes.md", "line": 1, "text": "- mypy"},
    "sources": {"action": "list"}, "pass_run": {"name": "staleness", "dry_run": True},
    "extract": {"session": "s1", "dry_run": True}, "session": {"id": "s1"},
}
EVENTS = ("SessionStart", "UserPromptSubmit", "PostCompact", "Stop", "SessionEnd")


def hook_json(event: str, field: str, text: str, surrogate: bool) -> str:
    """A hook payload as an agent sends it; ``surrogate`` adds a lone \\ud800 escape."""
    payload = json.dumps({"session_id": "s1", "hook_event_name": event, "cwd": "/tmp",
                          field: text + ("@@" if surrogate else "")})
    return payload.replace("@@", "\\ud800")


hook_raw = st.builds(hook_json, st.sampled_from(EVENTS),
                     st.sampled_from(["compact_summary", "prompt", "last_assistant_message",
                                      "cwd", "session_id", "transcript_path"]),
                     plain_text, st.booleans())


@st.composite
def requests(draw: st.DrawFn, methods: list[str], entry_id: str) -> tuple[str, Any]:
    method = draw(st.sampled_from(methods))
    if draw(st.integers(0, 9)) == 0:  # now and then params that are not a map at all
        return method, draw(values)
    base = dict(BASE.get(method, {}))
    if method in ("get", "forget", "supersede", "history"):
        base["id"] = entry_id
    if method == "remember_many":
        entry = {**ENTRY, **draw(st.dictionaries(st.sampled_from(NAMES), values, max_size=3))}
        base["entries"] = [ENTRY, entry]
    if method == "hook":
        base["raw"] = draw(hook_raw)
    overrides = draw(st.dictionaries(st.sampled_from(NAMES + tuple(base)), values, max_size=3))
    return method, {**base, **overrides}


def call(sock: socket.socket, method: str, request_params: Any) -> dict:
    sock.sendall(wire.pack({"id": 7, "method": method, "params": request_params}))
    return read_reply(sock)


def test_generated_params_get_a_result_or_a_typed_error(daemon) -> None:
    methods = sorted(daemon.daemon.methods)
    assert {"remember", "search", "hook", "file_write", "pass_run"} <= set(methods)
    with Client(daemon.socket) as c:
        entry_id = c.remember("coder", "tools", "We use pytest", tags=["python"])["entry"]["id"]
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(60)
    sock.connect(str(daemon.socket))
    internal: list[tuple[str, Any, str]] = []

    @settings(max_examples=1000, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(request=requests(methods, entry_id))
    @example(request=("remember", {**ENTRY, "confidence": float("nan")}))  # the report's cases
    @example(request=("search", {"query": "x", "agent": "coder", "cwd": "/tmp/a\0b"}))
    @example(request=("search", {"query": "x", "agent": "coder", "tags": "t" * 200_000}))
    @example(request=("hook", {**BASE["hook"], "ts": float("nan"), "raw": "{}"}))
    @example(request=("hook", {**BASE["hook"], "raw": hook_json("PostCompact",
                                                                "compact_summary", "x", True)}))
    @example(request=("file_write", {**BASE["file_write"], "path": "."}))
    def drive(request: tuple[str, Any]) -> None:
        method, request_params = request
        if method == "sources" and isinstance(request_params, dict) \
                and request_params.get("action") == "add":
            request_params["action"] = "list"  # a generated glob could watch the whole disk
        reply = call(sock, method, request_params)
        assert reply["id"] == 7
        error = reply.get("error")
        if error is not None and error["code"] == "internal":
            internal.append((method, request_params, error["message"]))
        assert error is None or error["code"] != "internal", (method, request_params, error)

    try:
        drive()
    finally:
        sock.close()
    assert not internal
    with Client(daemon.socket) as c:  # still up, and still serving
        assert c.status()["pid"]
