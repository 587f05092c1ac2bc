"""Hooks as the agents run them: subprocesses with the agents' payloads, against a real daemon."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from memoryd_client import Client, wire

from tests.conftest import run_cli, run_hook, start_daemon, wait_until

SESSION = "5b0c9e4e-1f2a-4c55-9d55-6a3cf1f0a001"


def start_payload(cwd: str, event: str = "SessionStart", **extra: object) -> dict:
    return {"session_id": SESSION, "transcript_path": f"/tmp/{SESSION}.jsonl", "cwd": cwd,
            "hook_event_name": event, "source": "startup", **extra}


def test_session_start_injects_the_block(daemon, client, tmp_path) -> None:
    client.remember("claude-code", "prefs", "Commit messages use the imperative mood", key="pref.commit_style")
    client.remember("claude-code", "git", "Never force-push to main", kind="lesson", polarity="negative")
    with Client(daemon.socket, channel="terminal") as person:  # feedback: a person's words
        person.remember("claude-code", "feedback", "Stop adding emojis to commit messages",
                        kind="feedback")
    result = run_hook("claude-code", "SessionStart", start_payload(str(tmp_path)))
    assert result.returncode == 0, result.stderr
    output = json.loads(result.stdout)
    context = output["hookSpecificOutput"]["additionalContext"]
    assert output["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    assert context.startswith(wire.INJECTION_MARKER)
    assert len(context) <= 8000
    assert "- “Never force-push to main” [git]" in context  # an agent's words, quoted
    assert "pref.commit_style: “Commit messages use the imperative mood”" in context
    assert "Stop adding emojis" in context
    assert context.rstrip().endswith("before relying on it.")
    session = client.session(SESSION)
    assert session["session"]["cwd"] == str(tmp_path) and session["session"]["harness"] == "claude-code"
    [injection] = client.explain(SESSION)["injections"]
    assert injection["event"] == "SessionStart" and injection["chars"] == len(context)
    assert {i["section"] for i in injection["items"]} == {"feedback", "lessons", "facts"}
    unknown = run_cli("explain", "no-such-session")  # documented: exit 1, and says so
    assert unknown.returncode == 1 and "no session with id 'no-such-session'" in unknown.stderr
    # a harness's session id is a UUID: the start of it is enough, as for an entry's id
    by_prefix = run_cli("--json", "explain", SESSION[:6])
    assert by_prefix.returncode == 0, by_prefix.stderr
    assert json.loads(by_prefix.stdout)["injections"][0]["chars"] == len(context)
    shown = run_cli("session", "show", SESSION[:6])
    assert shown.returncode == 0 and SESSION in shown.stdout, shown.stderr


def test_block_respects_its_budget_and_drops_lowest_ranked_first(daemon, client) -> None:
    for i in range(60):
        client.remember("coder", "rules", f"Rule number {i}: keep module {i} free of side effects",
                        kind="lesson", polarity="positive", force=True)
    with Client(daemon.socket, channel="terminal") as person:  # feedback: a person's words
        person.remember("coder", "feedback", "The user wants short answers", kind="feedback")
    block = client.context("coder", budget=1000)
    assert len(block["text"]) <= 1000
    assert "The user wants short answers" in block["text"]  # feedback outranks lessons
    dropped = [i for i in block["items"] if not i["included"]]
    assert dropped and all(i["section"] == "lessons" for i in dropped)


def test_stale_fact_carries_its_warning(daemon, client, memoryd_home) -> None:
    entry = client.remember("claude-code", "deploy", "Deploys go to the personal account",
                            key="project.deploy_target")["entry"]
    old = time.time() - 95 * 86400
    import apsw

    db = apsw.Connection(str(memoryd_home / "memoryd.db"))
    db.execute("UPDATE entries SET created=? WHERE uid=?", (old, entry["id"]))
    db.close()
    text = client.context("claude-code")["text"]
    assert "project.deploy_target: “Deploys go to the personal account” (⚠ over 90 days old: verify " \
           "before acting)" in text


def test_user_prompt_injects_only_what_matches(daemon, client, tmp_path) -> None:
    client.remember("claude-code", "payments", "Checkout retries must reuse the idempotency key")
    matched = run_hook("claude-code", "UserPromptSubmit", start_payload(
        str(tmp_path), "UserPromptSubmit", prompt="why does checkout double-charge on retry? idempotency key"))
    assert matched.returncode == 0
    context = json.loads(matched.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "idempotency key" in context and len(context) <= 2000
    nothing = run_hook("claude-code", "UserPromptSubmit", start_payload(
        str(tmp_path), "UserPromptSubmit", prompt="what is the capital of Mongolia"))
    assert nothing.returncode == 0 and nothing.stdout == ""
    for blank in ("", "  "):  # an image pasted alone: no error line, nothing injected
        alone = run_hook("claude-code", "UserPromptSubmit", start_payload(
            str(tmp_path), "UserPromptSubmit", prompt=blank))
        assert (alone.returncode, alone.stdout, alone.stderr) == (0, "", "")


def test_a_payload_without_cwd_is_of_the_directory_the_hook_runs_in(daemon, client,
                                                                      tmp_path) -> None:
    """An agent runs its hooks in the session's directory; a payload that does not say it
    (an older harness, a script) is of that directory's project, not of every project."""
    shop, blog = tmp_path / "shop", tmp_path / "blog"
    for repo in (shop, blog):
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
    client.remember("claude-code", "testing", "Run the shop's tests with make check",
                    kind="lesson", cwd=str(shop))
    client.remember("claude-code", "testing", "Run the blog's tests with hugo server",
                    kind="lesson", cwd=str(blog))
    (blog / "content").mkdir()
    payload = {"session_id": SESSION, "hook_event_name": "SessionStart", "source": "startup"}
    started = subprocess.run([sys.executable, "-m", "memoryd_client", "hook", "claude-code",
                              "SessionStart"], input=json.dumps(payload), capture_output=True,
                             text=True, timeout=30, cwd=blog / "content")
    assert started.returncode == 0, started.stderr
    context = json.loads(started.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "hugo server" in context and "make check" not in context
    assert client.session(SESSION)["session"]["cwd"] == str(blog / "content")


def test_codex_output_is_its_strict_subset(daemon, client, tmp_path) -> None:
    client.remember("codex", "style", "Prefer small pull requests", kind="lesson", polarity="positive")
    result = run_hook("codex", "SessionStart", start_payload(str(tmp_path)))
    output = json.loads(result.stdout)
    assert set(output) == {"hookSpecificOutput"}
    assert set(output["hookSpecificOutput"]) == {"hookEventName", "additionalContext"}
    assert "- “Prefer small pull requests” [style]" in \
        output["hookSpecificOutput"]["additionalContext"]


def test_post_compact_summary_is_kept_and_stop_notes_progress(daemon, client, tmp_path) -> None:
    assert run_hook("claude-code", "SessionStart", start_payload(str(tmp_path))).returncode == 0
    summary = "The session moved billing to the new ledger service and agreed on weekly releases."
    assert run_hook("claude-code", "PostCompact", start_payload(
        str(tmp_path), "PostCompact", trigger="auto", compact_summary=summary)).stdout == ""
    assert run_hook("claude-code", "Stop", start_payload(
        str(tmp_path), "Stop", stop_hook_active=False,
        last_assistant_message="Added the ledger adapter.")).stdout == ""
    [hit] = client.search("billing ledger service weekly releases", agent="claude-code", match=True)["hits"]
    assert hit["kind"] == "summary" and hit["session"] == SESSION
    assert client.session(SESSION)["session"]["last_message"] == "Added the ledger adapter."
    assert run_hook("claude-code", "SessionEnd", start_payload(str(tmp_path), "SessionEnd", reason="other")).returncode == 0
    assert client.session(SESSION)["session"]["closed"] is not None


@pytest.mark.parametrize("stdin, args", [
    ("not json at all", ["claude-code", "SessionStart"]),
    ("[1, 2, 3]", ["claude-code", "SessionStart"]),
    ("", ["codex", "UserPromptSubmit"]),
    ("{}", ["nobody", "SessionStart"]),
    ("{}", []),
    ("\x00\xff garbage", ["claude-code", "Stop"]),
])
def test_garbage_and_usage_errors_exit_0_with_empty_output(daemon, stdin, args) -> None:
    result = subprocess.run([sys.executable, "-m", "memoryd_client", "hook", *args], input=stdin,
                            capture_output=True, text=True, timeout=30, env=os.environ.copy())
    assert result.returncode == 0
    assert result.stdout == ""


def test_a_payload_too_big_to_read_is_said_to_be_so(daemon) -> None:
    """A prompt of a pasted 5 MB log: the hook reads 4 MiB at most, and says why it ignored
    the rest rather than calling the payload no JSON."""
    payload = json.dumps({"session_id": SESSION, "cwd": "/", "hook_event_name":
                          "UserPromptSubmit", "prompt": "x" * 5_000_000})
    result = run_hook("claude-code", "UserPromptSubmit", payload)
    assert (result.returncode, result.stdout) == (0, "")
    assert "the payload is over 4 MiB; ignored" in result.stderr


def test_daemon_down_exits_quickly_and_the_event_is_replayed(memoryd_home, embedder, tmp_path) -> None:
    started = time.monotonic()
    result = run_hook("claude-code", "SessionStart", start_payload(str(tmp_path)))
    elapsed = time.monotonic() - started
    assert result.returncode == 0 and result.stdout == ""
    assert elapsed < 5  # the whole process, generously; bench/bench_hooks.py measures it
    assert "spooled" in result.stderr
    run_hook("claude-code", "SessionEnd", start_payload(str(tmp_path), "SessionEnd", reason="other"))
    from memoryd_client.hooks import read_spool

    spooled = read_spool((memoryd_home / "spool.msgpack").read_bytes())
    assert [r["event"] for r in spooled] == ["SessionStart", "SessionEnd"]
    running = start_daemon(embedder)
    try:
        with Client(running.socket) as client:
            # the spool is renamed when its replay begins: wait for the replay to finish
            wait_until(lambda: not (memoryd_home / "spool.msgpack").exists()
                       and not (memoryd_home / "spool.msgpack.replaying").exists())
            session = client.session(SESSION)["session"]
            assert session["cwd"] == str(tmp_path) and session["closed"] is not None
    finally:
        running.stop()


def run_on_terminal(*args: str, timeout: float = 10) -> subprocess.CompletedProcess[str]:
    """`memory …` with a pseudo-terminal as stdin, as when a person types the command; a hook
    that read stdin until EOF would hang there until the timeout."""
    controller, terminal = pty.openpty()
    try:
        return subprocess.run([sys.executable, "-m", "memoryd_client", *args], stdin=terminal,
                              capture_output=True, text=True, timeout=timeout, env=os.environ.copy())
    finally:
        os.close(terminal)
        os.close(controller)


@pytest.mark.parametrize("args, events", [
    (["hook", "--help"], ["SessionStart", "SubagentStop", "SessionEnd", "install|uninstall"]),
    (["hook", "claude-code", "--help"], ["SessionStart", "UserPromptSubmit", "SubagentStop", "PostCompact"]),
    (["hook", "codex", "-h"], ["SessionStart", "UserPromptSubmit", "Stop", "SessionEnd"]),
])
def test_help_lists_the_events_and_never_waits_on_the_terminal(args, events) -> None:
    started = time.monotonic()
    result = run_on_terminal(*args)
    assert time.monotonic() - started < 5
    assert result.returncode == 0
    for event in events:
        assert event in result.stdout
    if "codex" in args:
        assert "SubagentStop" not in result.stdout  # Codex has no such event


def test_a_hook_typed_in_a_terminal_prints_its_usage_and_reads_nothing(memoryd_home) -> None:
    result = run_on_terminal("hook", "claude-code", "SessionStart")
    assert result.returncode == 0 and result.stdout == ""
    assert "usage: memory hook claude-code EVENT" in result.stderr and "SessionEnd" in result.stderr
    assert not (memoryd_home / "spool.msgpack").exists()  # nothing was sent or spooled


def test_a_hook_process_imports_neither_json_nor_typing_nor_argparse_nor_msgpack() -> None:
    code = ("import sys; before = set(sys.modules); from memoryd_client.cli import main; main(sys.argv[1:]); "
            "print(sorted(m for m in ('json', 'typing', 'pathlib', 'argparse', 'msgpack', 'datetime')"
            " if m in sys.modules and m not in before), file=sys.stderr)")
    result = subprocess.run([sys.executable, "-c", code, "hook", "claude-code", "Stop"], input="{}",
                            capture_output=True, text=True, timeout=30, env=os.environ.copy())
    assert result.returncode == 0
    assert result.stderr.strip().splitlines()[-1] == "[]", result.stderr


def test_explain_shows_what_was_injected_and_why_in_words(daemon, client, tmp_path) -> None:
    """L-d (2026-11-28): explain listed ids and, per prompt, the raw evidence vector."""
    client.remember("claude-code", "testing", "Integration tests run against a real Postgres, "
                    "never mocks", kind="lesson", polarity="negative")
    client.remember("claude-code", "deploy", "We deploy to fly.io with flyctl deploy", kind="fact")
    assert run_hook("claude-code", "SessionStart", start_payload(str(tmp_path))).returncode == 0
    prompt = {**start_payload(str(tmp_path), "UserPromptSubmit"),
              "prompt": "how do we deploy to fly.io? and write a test for the refund endpoint"}
    assert run_hook("claude-code", "UserPromptSubmit", prompt).returncode == 0
    shown = run_cli("explain", SESSION)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    # the text as injected (quoted: the library's words are an agent's, not the user's)
    assert "        - Don't: “Integration tests run against a real Postgres, never mocks” " \
        "[testing]" in lines
    assert "        why: a lesson (global): every session gets the lessons, newest first" in lines
    matched = next(line for line in lines if line.startswith("        why: matched the prompt"))
    assert "close in meaning (cosine" in matched
    assert "        why: a lesson filed under [testing], a topic the prompt names" in lines
    assert "mix_z" not in shown.stdout and "kw_rr" not in shown.stdout  # words, not the vector
    as_json = json.loads(run_cli("explain", SESSION, "--json").stdout)
    scored = [i for inj in as_json["injections"] for i in inj["items"] if i.get("score")]
    assert scored and "mix_z" in scored[0]["evidence"] and scored[0]["reason"]


def modules_of_a_hook(env: dict[str, str], payload: dict) -> set[str]:
    """The modules a hook process imports beyond the interpreter's start."""
    code = ("import sys; before = set(sys.modules); from memoryd_client.cli import main; "
            "main(sys.argv[1:]); "
            "print(' '.join(sorted(set(sys.modules) - before)), file=sys.stderr)")
    result = subprocess.run([sys.executable, "-c", code, "hook", "claude-code", "SessionStart"],
                            input=json.dumps(payload), capture_output=True, text=True, timeout=30,
                            env=env, check=False)
    assert result.returncode == 0, result.stderr
    return set(result.stderr.strip().splitlines()[-1].split())


def test_a_hook_spooling_for_a_daemon_that_is_down_imports_no_more_than_one_that_reaches_it(
        daemon, memoryd_home, tmp_path) -> None:
    """L-p (2026-11-28): with the daemon down a hook cost twice the CPU of one with the daemon
    up: finding the state dir and the socket without MEMORYD_HOME imported platformdirs (and
    with it shutil, tempfile, random, pathlib). Now the hook says both itself."""
    payload = start_payload(str(tmp_path))
    up = modules_of_a_hook(os.environ.copy(), payload)
    assert "platformdirs" not in up
    user = tmp_path / "user"
    (tmp_path / "run").mkdir(mode=0o700)
    down_env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORYD_", "XDG_"))}
    down_env.update(HOME=str(user), XDG_RUNTIME_DIR=str(tmp_path / "run"))
    down = modules_of_a_hook(down_env, payload)
    assert down <= up, sorted(down - up)
    assert (user / ".local" / "share" / "memoryd" / "spool.msgpack").exists()


@pytest.mark.parametrize("home, xdg_data", [("/home/ana", None), ("/home/ana/", None),
                                            ("/", None), ("/home/ana", "/srv/data"),
                                            ("/home/ana", "relative/data"), ("/home/ana", "")])
def test_a_hook_spools_where_the_daemon_replays(monkeypatch, home, xdg_data) -> None:
    """The spool's directory, said without platformdirs, is platformdirs' user data dir (the
    daemon's state dir, where it replays the spool)."""
    import platformdirs
    from memoryd_client import paths

    monkeypatch.delenv("MEMORYD_HOME")
    monkeypatch.setenv("HOME", home)
    if xdg_data is None:
        monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    else:
        monkeypatch.setenv("XDG_DATA_HOME", xdg_data)
    assert paths.data_text() == platformdirs.user_data_dir("memoryd", appauthor=False)


def _runtime_layout(base) -> dict[str, str | None]:
    """XDG_RUNTIME_DIR values of every kind platformdirs tells apart, made under ``base``."""
    (base / "private").mkdir(mode=0o700)
    (base / "shared").mkdir(mode=0o755)
    (base / "shared").chmod(0o755)
    (base / "open").mkdir()
    (base / "open").chmod(0o777)  # writable by anyone, not sticky: no safe parent
    (base / "file").write_text("")
    (base / "link").symlink_to(base / "private")
    return {"unset": None, "empty": "", "private": str(base / "private"),
            "private/": f"{base}/private/", "dotted": f"{base}/./private",
            "shared": str(base / "shared"), "missing": str(base / "xrt"),
            "missing deep": str(base / "no" / "such" / "dir"),
            "under an open dir": str(base / "open" / "xrt"), "a file": str(base / "file"),
            "a symlink": str(base / "link"), "relative": "run", "spaced": f" {base}/private"}


def test_a_hook_reaches_the_socket_the_cli_reaches_in_every_environment(
        monkeypatch, memoryd_home) -> None:
    """F-1 (2026-11-30): a hook took the first socket found in $XDG_RUNTIME_DIR, /run/user/UID
    or runtime-UID of the temporary directory, where the CLI asked platformdirs: with
    XDG_RUNTIME_DIR set, a daemon started without it (in /tmp/runtime-UID) got this shell's
    events. Now both call one function, and it is platformdirs' answer (what the daemon
    binds) for every environment, a socket elsewhere or not; the common ones are said without
    importing platformdirs."""
    import itertools
    import socket as socket_module
    import tempfile

    from memoryd_client import paths

    base = memoryd_home / "env"
    base.mkdir()
    runtimes = _runtime_layout(base)
    temporaries = {"TMPDIR unset": None, "TMPDIR": str(base / "t"),
                   "TMPDIR open": str(base / "open"), "TMPDIR missing": str(base / "gone")}
    (base / "t").mkdir()
    (base / "t").chmod(0o755)
    listener = socket_module.socket(socket_module.AF_UNIX)  # another HOME's daemon, in the
    (base / "t" / f"runtime-{os.geteuid()}" / "memoryd").mkdir(parents=True, mode=0o700)
    listener.bind(str(base / "t" / f"runtime-{os.geteuid()}" / "memoryd" / "memoryd.sock"))
    (base / "private" / "memoryd").mkdir(mode=0o700)  # and one in XDG_RUNTIME_DIR
    with listener, socket_module.socket(socket_module.AF_UNIX) as in_runtime:
        in_runtime.bind(str(base / "private" / "memoryd" / "memoryd.sock"))
        settings = {"neither": {}, "MEMORYD_HOME": {"MEMORYD_HOME": str(base / "home")},
                    "relative MEMORYD_HOME": {"MEMORYD_HOME": "state"},
                    "MEMORYD_SOCKET": {"MEMORYD_SOCKET": "~/m.sock"},
                    "both": {"MEMORYD_HOME": str(base / "home"),
                             "MEMORYD_SOCKET": str(base / "s.sock")}}
        cheap = 0
        for (runtime, xdg), (temporary, tmp), (name, chosen), user in itertools.product(
                runtimes.items(), temporaries.items(), settings.items(),
                [str(base / "user"), "/"]):
            for variable, value in [("XDG_RUNTIME_DIR", xdg), ("TMPDIR", tmp),
                                    ("MEMORYD_HOME", chosen.get("MEMORYD_HOME")),
                                    ("MEMORYD_SOCKET", chosen.get("MEMORYD_SOCKET"))]:
                if value is None:
                    monkeypatch.delenv(variable, raising=False)
                else:
                    monkeypatch.setenv(variable, value)
            monkeypatch.setenv("HOME", user)
            monkeypatch.delenv("TEMP", raising=False)
            monkeypatch.delenv("TMP", raising=False)
            monkeypatch.setattr(tempfile, "tempdir", None)  # gettempdir() reads TMPDIR again
            case = (runtime, temporary, name, user)
            try:
                expected = str(paths.socket_path())  # platformdirs: what `memoryd serve` binds
            except PermissionError as exc:  # no safe runtime dir: the daemon cannot start
                with pytest.raises(PermissionError):
                    paths.socket_text()
                assert "runtime" in str(exc), case
                continue
            assert paths.socket_text() == expected, case
            cheap += name == "neither" and paths._linux_runtime_dir() is not None
        assert cheap >= 6 * len(temporaries) * 2  # said without platformdirs for most


def test_a_hook_with_another_runtime_dir_spools_instead_of_reaching_another_homes_daemon(
        daemon, client, memoryd_home) -> None:
    """F-1, the tester's repro: a daemon started without XDG_RUNTIME_DIR listens in
    runtime-UID of the temporary directory; a hook of another HOME, with XDG_RUNTIME_DIR set
    (to a directory no daemon made yet), registered its session in that daemon and got its
    memories back, where `memory status` of the same shell said memoryd is not running. It
    spools now, in its own HOME, as `memory status` expects."""
    base = memoryd_home / "hv5"
    other = base / "t" / f"runtime-{os.geteuid()}" / "memoryd"
    other.mkdir(parents=True, mode=0o700)
    (other / "memoryd.sock").symlink_to(daemon.socket)  # the daemon of the quick start
    client.remember("claude-code", "prefs", "Another home's preference", key="pref.other")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORYD_", "XDG_"))}
    env.update(HOME=str(base / "fresh3"), XDG_RUNTIME_DIR=str(base / "xrt"),
               TMPDIR=str(base / "t"))
    session = "aaaaaaaa-0000-0000-0000-00000000abcd"
    payload = {"session_id": session, "cwd": str(base), "hook_event_name": "SessionStart",
               "source": "startup"}
    result = subprocess.run([sys.executable, "-m", "memoryd_client", "hook", "claude-code",
                             "SessionStart"], input=json.dumps(payload), capture_output=True,
                            text=True, timeout=30, env=env)
    assert result.returncode == 0 and "Another home" not in result.stdout, result.stdout
    assert "spooled" in result.stderr
    assert (base / "fresh3" / ".local" / "share" / "memoryd" / "spool.msgpack").exists()
    assert session not in json.dumps(client.sessions())
    status = subprocess.run([sys.executable, "-m", "memoryd_client", "status"],
                            capture_output=True, text=True, timeout=30, env=env)
    assert status.returncode == 3
    assert f"not running on {base / 'xrt' / 'memoryd' / 'memoryd.sock'}" in status.stderr


_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(1 << 63), (1 << 64) - 1)
    | st.floats(allow_nan=False) | st.text() | st.binary(),
    lambda inner: st.lists(inner, max_size=20) | st.dictionaries(st.text(), inner, max_size=20),
    max_leaves=60)


@settings(max_examples=100, deadline=None)
@given(_VALUES)
def test_the_hooks_own_msgpack_agrees_with_msgpack(value) -> None:
    """A hook speaks the wire protocol without msgpack (memoryd_client.hook_wire): what it
    packs, msgpack reads as the same value, and it reads what msgpack packs."""
    import msgpack
    from memoryd_client import hook_wire

    assert msgpack.unpackb(hook_wire.pack(value), raw=False, strict_map_key=False) == value
    assert hook_wire.unpack(msgpack.packb(value, use_bin_type=True)) == value
    framed = hook_wire.frame({"id": 1, "result": value})
    assert hook_wire.frame_length(framed) == len(framed) - 4
    assert wire.unpack(framed[4:]) == {"id": 1, "result": value}


@pytest.mark.parametrize("data", [b"", b"\x92\x01", b"\xd9\x05ab", b"\xc7\x01\x05x",
                                  b"\x01\x02", b"\xa2\xff\xfe"])
def test_the_hooks_own_msgpack_refuses_what_it_cannot_read(data) -> None:
    from memoryd_client import hook_wire

    with pytest.raises(ValueError):
        hook_wire.unpack(data)


def test_a_serving_hook_answers_each_line_as_the_hook_would_until_stdin_closes(
        daemon, client, tmp_path) -> None:
    """`memory hook opencode --serve` (the process memoryd's OpenCode plugin keeps): each JSON
    line answered in order, with its id and what `memory hook opencode EVENT` prints for it; a
    line it cannot read gets an empty answer and the next line is answered all the same."""
    client.remember("opencode", "tooling", "Use uv, not pip", kind="lesson", cwd=str(tmp_path))

    def call(command: str) -> dict:
        return {"session_id": SESSION, "cwd": str(tmp_path), "tool_name": "bash",
                "tool_input": {"command": command}, "tool_use_id": "call_1"}

    lines = [json.dumps({"id": 1, "event": "tool.execute.after",
                         "payload": call("pip install requests")}),
             "not json at all",
             json.dumps({"id": 3, "event": "tool.execute.after", "payload": call("ls -la")}),
             json.dumps({"id": 4, "event": "tool.execute.after", "payload": "not a map"}),
             json.dumps({"id": 5, "event": "tool.execute.after",
                         "payload": call("pip install rich")})]
    served = subprocess.run([sys.executable, "-m", "memoryd_client", "hook", "opencode",
                             "--serve"], input="\n".join(lines) + "\n", capture_output=True,
                            text=True, timeout=60, env=os.environ.copy())
    assert served.returncode == 0, served.stderr
    answers = [json.loads(line) for line in served.stdout.splitlines()]
    assert [a["id"] for a in answers] == [1, None, 3, 4, 5]
    alone = run_hook("opencode", "tool.execute.after", call("pip install requests"))
    assert answers[0]["output"] + "\n" == alone.stdout
    assert "Use uv, not pip" in json.loads(answers[0]["output"])["context"]
    assert [a["output"] for a in answers[1:4]] == ["", "", ""]
    assert "Use uv, not pip" in json.loads(answers[4]["output"])["context"]
