"""Issue 37 §1-2 through the real daemon, hooks and transcript files: what memoryd injected,
what the agent then did, and each entry's usage record in `memory get`, `memory explain`,
`memory list --usage`, MCP `memory_get` and `memory history`."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from pathlib import Path

from tests.conftest import run_cli, run_hook, start_daemon, wait_until

SESSION = "7c1d2e3f-4a5b-4c6d-8e9f-0a1b2c3d4e5f"
UV = "Use uv, not pip, to manage dependencies"
FORCE = "Never force-push to main"
CONCISE = "Keep answers short"


def hook(harness: str, event: str, payload: dict) -> None:
    result = run_hook(harness, event, {**payload, "hook_event_name": event})
    assert result.returncode == 0, result.stderr


def iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def claude_transcript(path: Path, session: str, steps: list[tuple[str, str]],
                      start: float | None = None) -> None:
    """A Claude Code session file written after now (or from ``start``, a step a second):
    ("user", text) and ("bash", command)."""
    start = time.time() + 1 if start is None else start
    lines = []
    for n, (kind, text) in enumerate(steps):
        base = {"uuid": f"{session[:8]}-{n:04d}-4000-8000-000000000000", "sessionId": session,
                "cwd": str(path.parent), "timestamp": iso(start + n), "isSidechain": False}
        if kind == "user":
            lines.append({**base, "type": "user", "message": {"role": "user", "content": text}})
        else:
            lines.append({**base, "type": "assistant", "message": {
                "id": f"msg_{n}", "role": "assistant", "content": [
                    {"type": "tool_use", "id": f"toolu_{n}", "name": "Bash",
                     "input": {"command": text}}]}})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


def run_session(client, tmp_path: Path, session: str, steps: list[tuple[str, str]],
                end: bool = True) -> Path:
    """A Claude Code session through its hooks: start (memoryd injects the block), what the
    agent did (the transcript), end."""
    path = tmp_path / f"{session}.jsonl"
    payload = {"session_id": session, "transcript_path": str(path), "cwd": str(tmp_path),
               "source": "startup"}
    hook("claude-code", "SessionStart", payload)
    claude_transcript(path, session, steps)
    if end:
        hook("claude-code", "SessionEnd", {**payload, "reason": "other"})
    return path


def lessons(client) -> dict[str, str]:
    ids = {}
    for text in (UV, FORCE, CONCISE):
        reply = client.remember("claude-code", "workflow", text, kind="lesson",
                                polarity="negative" if text == FORCE else "positive")
        ids[text] = reply["entry"]["id"]
    return ids


def test_session_end_judges_each_injected_entry_and_get_shows_its_usage(
        daemon, client, tmp_path) -> None:
    ids = lessons(client)
    run_session(client, tmp_path, SESSION, [
        ("user", "add requests to the project"), ("bash", "pip install requests"),
        ("user", "no, we use uv here"), ("bash", "uv add requests"),
        ("bash", "git push origin main")])
    wait_until(lambda: client.get(ids[UV])["usage"]["pending"] == 0
               and client.get(ids[UV])["usage"]["injected"] == 1)
    assert client.get(ids[UV])["usage"]["broken"] == 1  # pip install, corrected by the user
    assert client.get(ids[FORCE])["usage"]["followed"] == 1  # a push, not forced
    assert client.get(ids[CONCISE])["usage"]["no_occasion"] == 1
    shown = run_cli("get", ids[UV])
    assert shown.returncode == 0, shown.stderr
    assert "    usage: injected into 1 session: followed 0, broken 1, no occasion 0; " \
        "last broken " in shown.stdout
    as_json = json.loads(run_cli("get", ids[UV], "--json").stdout)["usage"]
    assert (as_json["injected"], as_json["broken"], as_json["followed"]) == (1, 1, 0)
    assert as_json["last_broken"] is not None and as_json["last_followed"] is None
    # `memory history` shows the verdicts that say something, not a line a session for
    # every entry nothing touched (a thousand sessions made a thousand identical lines)
    assert ": broken in session 7c1d2e3f-4a5" in run_cli("history", ids[UV]).stdout
    concise = run_cli("history", ids[CONCISE])
    assert concise.returncode == 0 and "outcome" not in concise.stdout, concise.stdout
    never = client.remember("claude-code", "misc", "Tabs are wider than spaces", kind="note")
    assert "usage: never injected into a session yet" in run_cli("get", never["entry"]["id"]).stdout


def test_explain_lists_the_injected_texts_with_their_outcomes_and_history_journals_them(
        daemon, client, tmp_path) -> None:
    ids = lessons(client)
    run_session(client, tmp_path, SESSION, [
        ("user", "sync main with the remote"), ("bash", "git push --force origin main"),
        ("bash", "uv sync")], end=False)  # no SessionEnd: explain judges what it shows
    shown = run_cli("explain", SESSION)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if "“Never force-push to main”" in line)
    outcome = next(line for line in lines[at:] if line.startswith("        outcome: "))
    assert outcome.startswith("        outcome: broken: Bash: git push --force origin main")
    at = next(i for i, line in enumerate(lines) if "“Use uv, not pip" in line)
    assert next(line for line in lines[at:] if line.startswith("        outcome: ")) \
        .startswith("        outcome: followed: Bash: uv sync")
    items = [i for inj in json.loads(run_cli("explain", SESSION, "--json").stdout)["injections"]
             for i in inj["items"]]
    force = next(i for i in items if i["id"] == ids[FORCE])
    assert force["outcome"] == "broken" and force["outcome_evidence"][0]["call_id"] == "toolu_1"
    assert "git push --force origin main" in force["outcome_evidence"][0]["what"]
    history = run_cli("history", ids[FORCE])
    assert "outcome" in history.stdout and "memoryd (outcomes)" in history.stdout
    events = json.loads(run_cli("history", ids[FORCE], "--json").stdout)["events"]
    judged = [e for e in events if e["action"] == "outcome"]
    assert judged[0]["after"]["session"] == SESSION and judged[0]["after"]["outcome"] == "broken"


def test_list_usage_ranks_most_broken_never_used_and_most_followed(
        daemon, client, tmp_path) -> None:
    ids = lessons(client)
    sessions = [f"{SESSION[:-1]}{n}" for n in range(3)]
    for n, session in enumerate(sessions):
        steps = [("user", "ship it"), ("bash", "git push origin main")]
        if n < 2:
            steps.append(("bash", "pip install rich"))
        run_session(client, tmp_path, session, steps)
    wait_until(lambda: client.get(ids[UV])["usage"]["pending"] == 0
               and client.get(ids[UV])["usage"]["injected"] == 3)
    shown = run_cli("list", "--usage")
    assert shown.returncode == 0, shown.stderr
    text = shown.stdout
    broken, rest = text.split("never used", 1)
    unused, followed = rest.split("most followed", 1)
    assert "2/3" in broken and ids[UV] in broken and ids[FORCE] not in broken
    assert ids[CONCISE] in unused and ids[UV] not in unused
    assert "3/3" in followed and ids[FORCE] in followed
    only = json.loads(run_cli("list", "claude-code", "--usage", "broken", "--json").stdout)
    assert [e["id"] for e in only["broken"]] == [ids[UV]] and "followed" not in only
    refused = run_cli("list", "--usage", "--since", "7d")
    assert refused.returncode == 2 and "--usage" in refused.stderr


def test_usage_history_survives_a_forget_and_its_undo(daemon, client, tmp_path) -> None:
    ids = lessons(client)
    run_session(client, tmp_path, SESSION, [("user", "add rich"), ("bash", "pip install rich")])
    wait_until(lambda: client.get(ids[UV])["usage"]["broken"] == 1)
    forgotten = json.loads(run_cli("forget", ids[UV], "--json").stdout)
    assert client.get(ids[UV])["usage"]["broken"] == 1  # forgotten: its history stays
    assert run_cli("undo", forgotten["undo"]).returncode == 0
    assert client.get(ids[UV])["status"] == "active"
    assert client.get(ids[UV])["usage"]["broken"] == 1


def test_mcp_memory_get_shows_the_usage(daemon, client, tmp_path) -> None:
    from tests.client.test_mcp import mcp_session, text_of

    ids = lessons(client)
    run_session(client, tmp_path, SESSION, [("user", "ship"), ("bash", "git push origin main")])
    wait_until(lambda: client.get(ids[FORCE])["usage"]["followed"] == 1)
    session = mcp_session([("memory_get", {"entry_id": ids[FORCE]})], agent="claude-code")
    assert "usage: injected into 1 session: followed 1, broken 0, no occasion 0" in \
        text_of(session["results"][0])


def test_outcomes_turned_off_record_and_judge_nothing(memoryd_home, embedder, tmp_path) -> None:
    (memoryd_home / "config.toml").write_text("[outcomes]\nenabled = false\n")
    running = start_daemon(embedder)
    try:
        from memoryd_client import Client

        with Client(running.socket, timeout_s=30) as client:
            ids = lessons(client)
            run_session(client, tmp_path, SESSION, [("user", "x"), ("bash", "pip install x")])
            time.sleep(0.5)
            assert client.get(ids[UV])["usage"]["injected"] == 0
            shown = run_cli("explain", SESSION)
            assert shown.returncode == 0 and "outcome:" not in shown.stdout
            assert "“Use uv, not pip" in shown.stdout  # what was injected is still shown
    finally:
        running.stop()


def test_a_merge_by_the_consolidate_pass_and_its_undo_keep_both_usage_records(
        daemon, client, tmp_path) -> None:
    first = client.remember("claude-code", "workflow", UV, kind="lesson",
                            polarity="positive")["entry"]["id"]
    second = client.remember("claude-code", "workflow", "Always use uv, not pip, to manage "
                             "dependencies", kind="lesson", polarity="positive",
                             force=True)["entry"]["id"]
    run_session(client, tmp_path, SESSION, [("user", "add rich"), ("bash", "pip install rich")])
    wait_until(lambda: all(client.get(i)["usage"]["broken"] == 1 for i in (first, second)))
    merged = json.loads(run_cli("pass", "run", "consolidate", "--json").stdout)
    assert {client.get(i)["status"] for i in (first, second)} == {"active", "superseded"}
    assert all(client.get(i)["usage"]["broken"] == 1 for i in (first, second))
    assert run_cli("undo", merged["run"]).returncode == 0
    assert {client.get(i)["status"] for i in (first, second)} == {"active"}
    assert all(client.get(i)["usage"]["broken"] == 1 for i in (first, second))


def test_a_codex_session_is_judged_from_its_rollout_when_shown(daemon, client, tmp_path) -> None:
    """Codex: its SessionStart hook, its rollout file (shell calls, apply_patch), no
    SessionEnd; `memory session show` judges what it shows."""
    ids = lessons(client)
    generated = client.remember("codex", "workflow", "Don't edit generated files in src/gen/",
                                kind="lesson", polarity="negative")["entry"]["id"]
    session = "019c2a7e-3b1d-7c40-9e1a-5d2f8a0b4c11"
    path = tmp_path / f"rollout-2026-06-01T10-00-00-{session}.jsonl"
    hook("codex", "SessionStart", {"session_id": session, "transcript_path": str(path),
                                   "cwd": str(tmp_path), "source": "startup"})
    start = time.time() + 1
    rows = [
        {"type": "session_meta", "payload": {"id": session, "cwd": str(tmp_path)}},
        {"type": "event_msg", "payload": {"type": "user_message", "message": "add rich"}},
        {"type": "response_item", "payload": {
            "type": "function_call", "name": "shell", "call_id": "call_1",
            "arguments": json.dumps({"command": ["bash", "-lc", "uv add rich"]})}},
        {"type": "response_item", "payload": {
            "type": "custom_tool_call", "name": "apply_patch", "call_id": "call_2",
            "input": "*** Begin Patch\n*** Update File: src/gen/models.py\n@@\n-a = 1\n+a = 2\n"
                     "*** End Patch"}},
    ]
    path.write_text("".join(json.dumps({"timestamp": iso(start + n), **row}) + "\n"
                            for n, row in enumerate(rows)))
    shown = run_cli("session", "show", session)
    assert shown.returncode == 0, shown.stderr
    assert "        outcome: followed: shell: uv add rich (“uv”)" in shown.stdout.splitlines()
    assert client.get(generated)["usage"]["broken"] == 1
    assert client.get(ids[UV])["usage"]["followed"] == 1


def test_sessions_are_due_when_they_end_or_go_quiet_with_something_to_judge(tmp_path) -> None:
    """The minute's check (memoryd.sessions.usage) picks the sessions that ended or have been
    quiet since the cut-off and have injections not judged, or moved on since judged."""
    from memoryd.store.database import Store
    from memoryd.store.usage import Usage

    store = Store(tmp_path / "db")
    usage = Usage(store)
    now = time.time()
    for name, last_seen, closed in (("quiet", now - 900, None), ("live", now - 5, None),
                                    ("ended", now - 5, now), ("nothing", now - 900, None)):
        store._db.execute("INSERT INTO sessions(id, harness, agent, last_seen, closed) "
                         "VALUES (?, 'claude-code', 'claude-code', ?, ?)",
                         (name, last_seen, closed))
        if name != "nothing":
            usage.record_injection(name, "claude-code", ["e1", "e2"], last_seen - 60)
    assert sorted(usage.quiet_sessions(now - 600, 10)) == ["ended", "quiet"]
    assert usage.due("live") and not usage.due("nothing")
    usage.save_outcomes("quiet", [("e1", "broken", "broken: …", [], None),
                                  ("e2", "no occasion", "no occasion", [], None)])
    assert sorted(usage.quiet_sessions(now - 600, 10)) == ["ended"]  # judged, not moved on
    store._db.execute("UPDATE sessions SET last_seen=? WHERE id='quiet'", (time.time() + 1,))
    assert usage.due("quiet")  # resumed after it was judged: judged again
    record = usage.record("e1")  # injected into three sessions, one judged
    assert (record.injected, record.broken, record.pending) == (3, 1, 2)
    store.close()


def test_purge_removes_an_entrys_outcomes_and_scrubs_the_text_from_others_evidence(
        daemon, client, tmp_path, memoryd_home) -> None:
    ids = lessons(client)
    secret = client.remember("claude-code", "workflow", "The deploy token is tok_9f8e7d6c5b",
                             kind="note")["entry"]["id"]
    run_session(client, tmp_path, SESSION, [
        ("user", "add rich"),
        ("bash", "pip install rich --index-url https://pkgs.example/tok_9f8e7d6c5b/simple")])
    wait_until(lambda: client.get(ids[UV])["usage"]["broken"] == 1)
    assert client.get(secret)["usage"]["injected"] == 1
    purged = run_cli("purge", "--agent", "claude-code", "--match", "tok_9f8e7d6c5b", "--yes")
    assert purged.returncode == 0, purged.stderr
    items = [i for inj in json.loads(run_cli("explain", SESSION, "--json").stdout)["injections"]
             for i in inj["items"]]
    uv = next(i for i in items if i["id"] == ids[UV])
    assert uv["outcome"] == "broken"  # kept, without the text
    assert "tok_9f8e7d6c5b" not in json.dumps(uv) and "[PURGED]" in uv["outcome_why"]
    assert not any(i["id"] == secret and i.get("outcome") for i in items)
    kept = (memoryd_home / "outcomes.jsonl").read_text()  # what a rebuild would bring back
    assert "tok_9f8e7d6c5b" not in kept and secret not in kept and "[PURGED]" in kept


def test_what_an_outcome_quotes_of_a_session_has_its_secrets_redacted(
        daemon, client, tmp_path, memoryd_home) -> None:
    """A force-push with a token in its environment and in its URL, the user's correction
    quoting the token, a pip install through an index with a password: the outcomes keep
    those steps as evidence with the secrets redacted, in every place they are kept or shown
    (the database, the outcomes file, the entries' history, `memory explain`, `memory session
    show`)."""
    from tests.writes.test_secrets import fake, state_holds

    ids = lessons(client)
    token, password = "ghp_" + fake(36, 11), "Pw7" + fake(9, 12)
    run_session(client, tmp_path, SESSION, [
        ("user", "publish the release"),
        ("bash", f"GITHUB_TOKEN={token} git push --force "
                 f"https://x-access-token:{token}@github.com/acme/app.git main"),
        ("user", f"no, why did you force push to main? {token} was in that command"),
        ("bash", f"PIP_INDEX_URL=https://bot:{password}@pypi.acme.example/simple "
                 "pip install requests")])
    wait_until(lambda: client.get(ids[FORCE])["usage"]["broken"] == 1
               and client.get(ids[UV])["usage"]["broken"] == 1)
    shown = [run_cli("explain", SESSION, "--json").stdout, run_cli("session", "show", SESSION).stdout,
             run_cli("history", ids[FORCE], "--json").stdout,
             run_cli("history", ids[UV], "--json").stdout]
    for secret in (token, password):
        assert not [out for out in shown if secret in out]
        assert state_holds(memoryd_home, secret) == []
    items = {i["id"]: i for inj in json.loads(shown[0])["injections"] for i in inj["items"]}
    force = items[ids[FORCE]]
    assert force["outcome_why"].startswith(
        "broken: Bash: GITHUB_TOKEN=[REDACTED:github-token] git push --force "
        "https://x-access-token:[REDACTED:github-token]@github.com/acme/app.git main")
    assert [e["what"] for e in force["outcome_evidence"] if e["signal"] == "correction"] == [
        "no, why did you force push to main? [REDACTED:github-token] was in that command"]
    assert "bot:[REDACTED:url-password]@pypi" in items[ids[UV]]["outcome_why"]
