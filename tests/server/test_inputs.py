"""Input a client can send gets a specific error, never ``internal`` (report D10, D14)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
from memoryd_client import BadParamsError, Client
from memoryd_client.errors import MemorydError

NAN, INF = float("nan"), float("inf")


@pytest.mark.parametrize("value", [NAN, INF, -INF])
def test_non_finite_numbers_are_refused_by_name(client: Client, value: float) -> None:
    with pytest.raises(BadParamsError, match="confidence must be a finite number"):
        client.remember("coder", "tools", "We lint with ruff", confidence=value)
    with pytest.raises(BadParamsError, match="min_score"):
        client.search("ruff", agent="coder", min_score=value)
    with pytest.raises(BadParamsError, match="since") as refused:
        client.search("ruff", agent="coder", since=value)
    assert (refused.value.method, refused.value.param) == ("search", "since")  # on the wire
    assert refused.value.detail == f"{value!r} is not a time between the years 1 and 9999"
    with pytest.raises(BadParamsError, match="ts"):
        client.call("hook", {"harness": "claude-code", "event": "Stop", "ts": value,
                             "raw": json.dumps({"session_id": "s1"})})
    assert client.status()["entries"].get("active", 0) == 0


def test_a_misspelt_param_is_refused_not_ignored(client: Client) -> None:
    """Ignored, ``kinds`` searched every kind and ``tag`` stored an entry without its tags."""
    client.remember("coder", "tools", "We lint with ruff", kind="fact")
    with pytest.raises(BadParamsError) as refused:
        client.search("ruff", agent="coder", kinds=["lesson"])
    assert str(refused.value).startswith("search: unknown param 'kinds' (did you mean 'kind'?); "
                                         "search takes agent, agents, category, cwd, explain, "
                                         "kind, ")
    with pytest.raises(BadParamsError, match=r"remember: unknown param 'tag' \(did you mean "
                                             r"'tags'\?\)"):
        client.call("remember", {"agent": "coder", "category": "tools", "text": "We use uv",
                                 "tag": ["python"]})
    with pytest.raises(BadParamsError, match=r"remember_many: entries\[1\]: unknown param "
                                             r"'catgory' \(did you mean 'category'\?\); an entry "
                                             r"takes agent, category, "):
        client.remember_many([{"agent": "coder", "category": "tools", "text": "We use nox"},
                              {"agent": "coder", "catgory": "tools", "text": "We use tox"}])
    with pytest.raises(BadParamsError, match="reload: unknown param 'force'; reload takes "
                                             "nothing"):
        client.call("reload", {"force": True})
    with Client(client.path) as other, pytest.raises(BadParamsError,
                                                    match="bind: unknown param 'agnet'"):
        other.call("bind", {"agnet": "coder"})
    # nothing of the refused requests was stored; the filter, spelt right, filters
    assert [e["text"] for e in client.list_entries()["entries"]] == ["We lint with ruff"]
    assert client.search("ruff", agent="coder", kind=["lesson"])["hits"] == []


def test_a_refusal_repeats_a_long_value_cut(client: Client) -> None:
    """The tester's MCP call memory_search {"since": "y" * 1000000} answered a
    1,000,122-character error (memory_recent too): every value a refusal repeats is cut,
    saying how long it was."""
    huge = "y" * 1_000_000
    refusals = []
    for call in (lambda: client.search("x", agent="coder", since=huge),
                 lambda: client.list_entries(agent="coder", since=huge),
                 lambda: client.call("search", {"query": "x", "agent": "coder", "shared": huge}),
                 lambda: client.call("list", {"agent": "coder", "order": huge[:50_000]}),
                 lambda: client.call("search", {"query": "x", "agent": "coder", huge: 1}),
                 lambda: client.call(huge)):
        with pytest.raises(MemorydError) as refused:
            call()
        refusals.append(refused.value.message)
    for message in refusals:
        assert len(message) < 600, message[:200]
    assert refusals[0].startswith("search: since 'yyyyyyyyyy")
    assert refusals[0].endswith("… (1,000,000 characters) is not a time (epoch seconds, "
                                "2026-03-15, 7d/12h, today or yesterday)")
    assert refusals[1].startswith("list: since 'yyy")
    assert "(1,000,000 characters)" in refusals[2] and "true or false" in refusals[2]
    assert "(50,000 characters)" in refusals[3]
    assert refusals[4].startswith("search: unknown param 'yyy")
    assert refusals[5].startswith("unknown method 'yyy")


def test_every_method_the_daemon_serves_declares_its_params(client: Client) -> None:
    """The unknown-method error lists what the daemon serves: each is in the wire module's
    table of params (one missing there would refuse every param it is sent)."""
    from memoryd_client import wire

    with pytest.raises(MemorydError) as unknown:
        client.call("no_such_method", {})
    served = str(unknown.value).split("known: ")[1].split(", ")
    assert sorted(served) == sorted(wire.PARAMS)


@pytest.mark.parametrize("path", ["/tmp/a\0b", "/tmp/" + "x" * 256, "/" + "d/" * 2100])
def test_impossible_paths_are_refused_by_name(client: Client, path: str) -> None:
    with pytest.raises(BadParamsError, match="cwd"):
        client.search("ruff", agent="coder", cwd=path)
    with pytest.raises(BadParamsError, match="cwd"):
        client.remember("coder", "tools", "We lint with ruff", cwd=path)
    with pytest.raises(BadParamsError, match="cwd"):
        client.context("coder", cwd=path)
    with pytest.raises(BadParamsError, match="project"):
        client.pass_run("staleness", project=path, dry_run=True)


def test_an_empty_prompt_is_refused_by_its_name(client: Client) -> None:
    for blank in ("", "   "):
        with pytest.raises(BadParamsError, match="prompt must not be empty"):
            client.context("coder", cwd="/", prompt=blank)


def test_a_window_that_ends_before_it_begins_is_refused(client: Client) -> None:
    """`--since 3d --until 5d` read as "from 3 to 5 days ago" answered "no match" (exit 1):
    as if nothing had been written then."""
    client.remember("coder", "tools", "We lint with ruff")
    with pytest.raises(BadParamsError, match=r"since \(3d\) is not before --until \(5d\)"):
        client.search("ruff", agent="coder", since="3d", until="5d")
    assert client.search("ruff", agent="coder", since="5d", until=time.time() + 60)["hits"]


def test_oversized_tag_lists_are_refused(client: Client) -> None:
    with pytest.raises(BadParamsError, match="tags holds 100000 items"):
        client.search("ruff", agent="coder", tags=[f"t{i}" for i in range(100_000)])
    with pytest.raises(BadParamsError, match="tags items are 200 characters at most"):
        client.search("ruff", agent="coder", tags="t" * 200_000)
    with pytest.raises(BadParamsError, match="tags holds"):
        client.remember("coder", "tools", "We lint with ruff", tags=["t"] * 65)


def test_tags_match_exactly_not_as_patterns(client: Client) -> None:
    tagged = client.remember("coder", "tools", "Tests run with pytest -x", tags=["python"])
    client.remember("coder", "tools", "Builds use cargo", tags=["rust"])
    for pattern in (["%"], ["_ython"], ["pyth%"], ["%python%"]):
        assert client.search("pytest cargo", agent="coder", tags=pattern)["hits"] == []
    hits = client.search("pytest cargo", agent="coder", tags=["Python"])["hits"]
    assert [hit["id"] for hit in hits] == [tagged["entry"]["id"]]


def test_a_compact_summary_with_a_lone_surrogate_is_stored(daemon, client: Client) -> None:
    payload = ('{"session_id": "s-sur", "hook_event_name": "PostCompact", "cwd": "/tmp", '
               '"compact_summary": "We switched the linter to ruff \\ud800 last week"}')
    result = subprocess.run([sys.executable, "-m", "memoryd_client", "hook", "claude-code",
                             "PostCompact"], input=payload, capture_output=True, text=True,
                            timeout=60, env=os.environ.copy())
    assert result.returncode == 0 and result.stderr == ""
    hits = client.search("switched the linter to ruff", agent="claude-code")["hits"]
    assert [hit["text"] for hit in hits] == ["We switched the linter to ruff \ufffd last week"]


def leftovers(root) -> list[str]:
    return [os.path.join(top, name) for top, _, names in os.walk(root) for name in names
            if ".memoryd-" in name]


@pytest.mark.parametrize("path", [".", "./", "sub", "sub/", "notes.md/inner.md", "x" * 256,
                                  "/".join(["d" * 250] * 17)])
def test_directory_and_impossible_paths_in_memory_tools(client: Client, memoryd_home,
                                                         path: str) -> None:
    client.file("write", "coder", "notes.md", text="- ruff\n")
    client.file("write", "coder", "sub/deep.md", text="- deep\n")
    with pytest.raises(BadParamsError):
        client.file("write", "coder", path, text="the caller's text")
    with pytest.raises(BadParamsError):
        client.file("replace", "coder", path, old="ruff", new="mypy")
    assert leftovers(memoryd_home) == []
    assert client.file("read", "coder", "notes.md")["text"] == "- ruff\n"
