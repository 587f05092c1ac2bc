"""`memory doctor` and the health line of `memory status`, against the real daemon: a healthy
installation passes every check; a source that does not exist, a hook whose program was
deleted, hooks or a shell on another MEMORYD_HOME, a stopped daemon are each named with a fix,
and doctor exits 1."""

from __future__ import annotations

import json
import logging
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest
from memoryd_client import Client

from memoryd.store.ledger import encode_record
from tests.conftest import (
    run_cli,
    run_hook,
    run_memoryd,
    spawn_daemon,
    start_daemon,
    stop_process,
    wait_until,
)


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No unit from the real user config; the CLI runs outside any project."""
    for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)


def doctor(*args: str, env: dict[str, str] | None = None) -> tuple[int, dict]:
    result = subprocess.run([sys.executable, "-m", "memoryd_client", "doctor", "--json", *args],
                            capture_output=True, text=True, timeout=120,
                            env={**os.environ, **(env or {})})
    assert result.returncode in (0, 1), result.stderr
    return result.returncode, json.loads(result.stdout)


def by_name(report: dict) -> dict[str, dict]:
    return {c["check"]: c for c in report["checks"]}


def test_a_healthy_installation_passes_every_check(daemon, client) -> None:
    client.remember("coder", "tools", "We lint with ruff, not flake8")
    code, report = doctor()
    assert code == 0 and report["healthy"]
    checks = by_name(report)
    for name in ("daemon", "version", "code", "memoryd_home", "service", "hooks", "spool", "model",
                 "telemetry", "database", "ledger lines", "ledger", "disk", "sources", "skipped",
                 "backlog"):
        assert checks[name]["status"] == "ok", checks[name]
    assert "as shipped" in checks["model"]["detail"]
    assert "quick_check ok" in checks["database"]["detail"]
    assert "1 entries, all in the index" in checks["ledger"]["detail"]
    # where the disk goes: the whole state dir, its largest parts named (the outcomes file
    # and the injection log grow with every session: the database alone was a third short)
    disk = checks["disk"]["detail"]
    assert " holds " in disk and "memoryd.db " in disk and " MB" in disk, disk
    text = run_cli("doctor")
    assert text.returncode == 0
    assert text.stdout.splitlines()[-1] == "healthy: every check ok"
    assert all(line.startswith("ok ") for line in text.stdout.splitlines()
               if line.split(" ")[0] in ("ok", "warning", "problem"))


def test_a_source_that_does_not_exist_is_a_problem_with_its_fix(daemon, memoryd_home) -> None:
    gone = memoryd_home / "notes"
    added = run_cli("sources", "add", "notes", f"{gone}/**/*.md", "--kind", "memory",
                    "--agent", "writer")
    assert added.returncode == 0, added.stderr
    code, report = doctor()
    sources = by_name(report)["sources"]
    assert code == 1 and not report["healthy"]
    assert sources["status"] == "problem" and str(gone) in sources["detail"]
    assert sources["fix"].endswith("memory sources remove notes")
    status = run_cli("status").stdout.splitlines()
    assert status[0].startswith("problem: sources: does not exist: notes")
    gone.mkdir()
    assert doctor()[0] == 0


def test_each_missing_source_gets_a_command_that_removes_it(daemon, memoryd_home) -> None:
    """Two sources whose directories do not exist, one named with a space: the fix is one
    command each, that runs as written (it was `memory sources remove notes old notes`, which
    the command refuses: it takes one name). A source rooted at / is refused outright."""
    for name, path in (("notes", "~/notes/*.md"), ("old notes", "~/old/*.md")):
        added = run_cli("sources", "add", name, path, "--kind", "memory", "--agent", "writer")
        assert added.returncode == 0, added.stderr
    fix = by_name(doctor()[1])["sources"]["fix"]
    assert fix.endswith("memory sources remove notes; memory sources remove 'old notes'")
    for command in fix.split(": ", 1)[1].split("; "):
        done = subprocess.run(command, shell=True, capture_output=True, text=True, check=False,
                              env={**os.environ, "PATH": os.path.dirname(sys.executable)
                                   + os.pathsep + os.environ.get("PATH", "")})
        assert done.returncode == 0, done.stderr
    assert doctor()[0] == 0
    everything = run_cli("sources", "add", "all", "/**/*.md", "--kind", "memory",
                         "--agent", "writer")
    assert everything.returncode == 2 and "the whole file system" in everything.stderr


def test_every_skipped_file_is_named_and_still_after_a_restart(memoryd_home, embedder) -> None:
    """Two files of one memory directory memoryd cannot index: doctor names both (it named a
    source's last problem only), a restart does not forget them (unchanged files are not read
    again), and a fixed file leaves the list."""
    memory = memoryd_home / "user/.mastersof-ai/agents/designer/memory"
    memory.mkdir(parents=True)
    (memory / "good.md").write_text("- Keep this lesson about kerning.\n")
    (memory / "binary.md").write_bytes(b"\x00\x01 binary junk")
    (memory / "huge.md").write_text("- x\n" * 600_000)

    def both_named() -> bool:
        check = by_name(doctor()[1])["skipped"]
        return check["status"] == "warning" and check["detail"].startswith("2 files") and \
            "binary.md: binary file" in check["detail"] and "huge.md: file is" in check["detail"]

    for _ in range(2):  # before and after a restart
        running = start_daemon(embedder)
        try:
            wait_until(both_named, timeout_s=30)
        finally:
            running.stop()
    (memory / "huge.md").write_text("- a short file now\n")
    running = start_daemon(embedder)
    try:
        def fixed() -> bool:
            detail = by_name(doctor()[1])["skipped"]["detail"]
            return detail.startswith("1 file with a problem") and "huge.md" not in detail
        wait_until(fixed, timeout_s=30)
    finally:
        running.stop()


def test_a_project_root_is_checked_as_a_whole(daemon, tmp_path) -> None:
    project = tmp_path / "shop"
    project.mkdir()
    (project / "CLAUDE.md").write_text("- Run the linter before every commit.\n")
    assert run_cli("sources", "add", "--project", str(project)).returncode == 0
    assert by_name(doctor()[1])["sources"]["status"] == "ok"  # no .claude/rules/: fine
    # and `memory status` does not count its optional files' directories as missing sources
    status = json.loads(run_cli("status", "--json").stdout)
    mine = [s for s in status["ingest"]["sources"] if str(project) in s["name"]]
    assert len(mine) > 3 and all(s["root_exists"] for s in mine)
    (project / "CLAUDE.md").unlink()
    project.rmdir()
    code, report = doctor()
    sources = by_name(report)["sources"]
    assert code == 1 and sources["detail"] == f"does not exist: project {project}"
    assert sources["fix"].endswith(f"memory sources remove {project}")


def test_an_entry_in_the_ledger_missing_from_the_index_is_a_problem(daemon, client,
                                                                      memoryd_home) -> None:
    import apsw

    from memoryd.store.migrations import add_functions

    client.remember("coder", "tools", "We lint with ruff, not flake8")
    lost = client.remember("coder", "tools", "Tests run with pytest -x")["entry"]["id"]
    db = apsw.Connection(str(memoryd_home / "memoryd.db"))  # the index loses a row
    add_functions(db)  # its keyword index's triggers call them
    db.execute("DELETE FROM entries WHERE uid=?", (lost,))
    db.close()
    code, report = doctor()
    ledger = by_name(report)["ledger"]
    assert code == 1 and ledger["status"] == "problem"
    assert ledger["detail"] == "in the ledgers, not in the index: coder 1 of 2 entries"
    assert "memoryd reindex" in ledger["fix"]


def test_an_entry_in_the_index_that_no_ledger_holds_is_a_problem(daemon, client,
                                                                 memoryd_home) -> None:
    """The other way: a ledger lost its last record (cut by a tool, or by an older version
    that took a whole last line without its newline for a torn one) while the index still
    holds the entry. Doctor said "all in the index", and `memoryd reindex` then dropped it."""
    client.remember("coder", "tools", "We lint with ruff, not flake8")
    kept = client.remember("coder", "tools", "Tests run with pytest -x")["entry"]["id"]
    path = memoryd_home / "ledger" / "coder.jsonl"
    first, _ = path.read_bytes().split(b"\n", 1)
    path.write_bytes(first + b"\n")
    code, report = doctor()
    ledger = by_name(report)["ledger"]
    assert code == 1 and ledger["status"] == "problem"
    assert ledger["detail"] == f"in the index, not in the ledgers: coder 1 ({kept})"
    assert "memoryd reindex` would drop them" in ledger["fix"]
    assert "memory export --agent coder" in ledger["fix"]


def test_a_ledger_record_replayed_as_a_duplicate_is_not_missing(memoryd_home,
                                                                 embedder) -> None:
    """Two machines that superseded one entry with the same text: the merged ledger holds two
    remember records of that text, and the replay keeps one. Doctor called the other "in the
    ledgers, not in the index", a problem whose fix (`memoryd reindex`) never cured it."""
    running = start_daemon(embedder)
    try:
        with Client(running.socket) as c:
            c.remember("bob", "notes", "The Redis cluster for sessions has eight shards")
    finally:
        running.stop()
    path = memoryd_home / "ledger" / "bob.jsonl"
    record = json.loads(path.read_bytes().splitlines()[0])
    record.pop("crc", None)
    record["entry"].update(uid="0000000000300000003")  # the other machine's copy
    with path.open("ab") as handle:
        handle.write(encode_record(record))
    running = start_daemon(embedder)
    try:
        ledger = by_name(doctor()[1])["ledger"]
        assert ledger["status"] == "ok", ledger
    finally:
        running.stop()


def test_a_ledger_shared_by_case_is_counted_as_the_index_holds_it(memoryd_home,
                                                                   embedder) -> None:
    """D16's recovery case (an older version on a case-insensitive disk wrote bob's records
    into Bob.jsonl): the index keeps each record under its own agent, and doctor counts it
    there, not as missing from Bob's entries (which no reindex could clear)."""
    running = start_daemon(embedder)
    try:
        with Client(running.socket) as c:
            c.remember("Bob", "notes", "Bob prefers tabs")
    finally:
        running.stop()
    path = memoryd_home / "ledger" / "Bob.jsonl"
    record = json.loads(path.read_bytes().splitlines()[0])
    record["entry"].update(agent="bob", uid="0000000000200000002", text="bob prefers spaces",
                           hash="other", writer="bob")
    with path.open("ab") as handle:
        handle.write(encode_record(record))
    assert run_memoryd("reindex").returncode == 0
    running = start_daemon(embedder)
    try:
        _, report = doctor()
    finally:
        running.stop()
    ledger = by_name(report)["ledger"]
    assert ledger["status"] == "ok", ledger
    assert ledger["detail"].startswith("1 ledgers, 2 entries, all in the index")


def test_a_damaged_ledger_line_is_a_problem_and_the_lines_after_it_still_count(
        daemon, client, memoryd_home) -> None:
    damaged = client.remember("coder", "tools", "We lint with ruff, not flake8")["entry"]["id"]
    client.remember("coder", "tools", "Tests run with pytest -x")
    path = memoryd_home / "ledger" / "coder.jsonl"
    first, rest = path.read_bytes().split(b"\n", 1)
    path.write_bytes(first.replace(b"ruff", b"rufF") + b"\n" + rest)  # a flipped bit on disk
    code, report = doctor()
    lines = by_name(report)["ledger lines"]
    assert code == 1 and lines["status"] == "problem"
    assert lines["detail"].startswith(f"1 damaged: {path}@0: checksum")
    # the entry of the damaged line is in the index only: a reindex would drop it
    assert by_name(report)["ledger"]["detail"] == \
        f"in the index, not in the ledgers: coder 1 ({damaged})"


def test_a_deleted_hook_program_is_a_problem(daemon, memoryd_home, tmp_path) -> None:
    installed = run_cli("hook", "install", "claude-code")
    assert installed.returncode == 0, installed.stderr
    assert by_name(doctor()[1])["hooks claude-code"]["status"] == "ok"
    settings = memoryd_home / "user/.claude/settings.json"
    venv = tmp_path / "old-venv/bin"  # the venv the hooks were installed from, deleted since
    program = shlex.split(json.loads(settings.read_text())["hooks"]["Stop"][0]["hooks"][0]
                          ["command"])[2]
    settings.write_text(settings.read_text().replace(program, str(venv / "memory")))
    code, report = doctor()
    hooks = by_name(report)["hooks claude-code"]
    assert code == 1 and hooks["status"] == "problem"
    assert f"runs {venv / 'memory'}, which does not exist" in hooks["detail"]
    assert "memory hook install claude-code" in hooks["fix"]


def test_hooks_checked_from_the_home_directory_are_reported_once(daemon, memoryd_home) -> None:
    """In the home directory the project's settings file is the user's: one file, one check
    (it was reported twice, as the user's and as the project's)."""
    assert run_cli("hook", "install", "claude-code").returncode == 0
    home = Path(os.environ["HOME"])
    assert (home / ".claude" / "settings.json").exists()
    result = subprocess.run([sys.executable, "-m", "memoryd_client", "doctor", "--json"],
                            capture_output=True, text=True, timeout=120, cwd=home)
    names = [c["check"] for c in json.loads(result.stdout)["checks"]
             if c["check"].startswith("hooks")]
    assert names == ["hooks claude-code"], names


def test_hooks_on_another_memoryd_home_are_a_problem(daemon, memoryd_home, tmp_path) -> None:
    other = tmp_path / "elsewhere"
    installed = run_cli_env({"MEMORYD_HOME": str(other)}, "hook", "install", "codex")
    assert installed.returncode == 0, installed.stderr
    code, report = doctor()
    hooks = by_name(report)["hooks codex"]
    assert code == 1 and hooks["status"] == "problem"
    assert f"MEMORYD_HOME={other}" in hooks["detail"] and "no daemon replays them" in hooks["detail"]
    assert hooks["detail"].startswith("~/.codex/hooks.json: ")
    assert hooks["fix"].endswith(f"MEMORYD_HOME={memoryd_home} memory hook install codex")


def test_a_shell_on_another_memoryd_home_is_a_problem(daemon, tmp_path) -> None:
    other = tmp_path / "elsewhere"
    code, report = doctor("--socket", str(daemon.socket), env={"MEMORYD_HOME": str(other)})
    home = by_name(report)["memoryd_home"]
    assert code == 1 and home["status"] == "problem"
    assert f"this shell: MEMORYD_HOME={other}" in home["detail"]
    assert home["fix"] == f"use the daemon's in this shell: export MEMORYD_HOME={daemon.config.state_dir}"


def test_daemon_down_runs_the_client_checks_and_says_how_to_start_it(memoryd_home) -> None:
    code, report = doctor()
    checks = by_name(report)
    assert code == 1 and checks["daemon"]["status"] == "problem"
    assert "serve" in checks["daemon"]["fix"]
    program = re.search(r"`([^`]+) serve`", checks["daemon"]["fix"]).group(1)
    assert os.access(shlex.split(program)[0], os.X_OK)  # a command that works from here
    assert checks["spool"]["status"] == "ok" and checks["service"]["status"] == "ok"
    assert report["not_checked"] == ["model", "telemetry", "database", "ledger lines", "ledger",
                                     "disk", "sources", "skipped", "backlog"]
    text = run_cli("doctor")
    assert text.returncode == 1 and "not checked without the daemon: model" in text.stdout


def test_a_config_the_running_daemon_did_not_take_is_a_problem(daemon, memoryd_home) -> None:
    """After a bad edit and a refused reload, doctor said "healthy: every check ok" (exit 0),
    `memory status` was healthy, and the next restart exited 3."""
    config = memoryd_home / "config.toml"
    config.write_text("[search]\nlimit = 'ten'\n")
    assert run_cli("reload").returncode == 2
    code, report = doctor()
    found = by_name(report)["config"]
    assert code == 1 and found["status"] == "problem"
    assert found["detail"] == ("config.toml has an error the running daemon did not take: "
                               f"{config}: search.limit must be a whole number, got 'ten'")
    assert "a restart would fail (exit 3)" in found["fix"]
    status = run_cli("status").stdout.splitlines()
    assert status[0].startswith("problem: config: config.toml has an error"), status[0]
    config.write_text('[context]\nshared_agents = ["claude-code", "codx"]\n')
    found = by_name(doctor()[1])["config"]
    assert found["status"] == "warning" and "'codx' is the agent of no source" in \
        found["detail"]
    config.write_text("")
    code, report = doctor()
    assert code == 0 and by_name(report)["config"]["status"] == "ok"


def test_daemon_down_names_the_config_error_that_keeps_it_down(memoryd_home) -> None:
    """With memoryd down because of its configuration, doctor only said to start it (which
    fails, exit 3): it names the error now, as `memoryd serve` would."""
    config = memoryd_home / "config.toml"
    config.write_text('[watch]\nproject_roots = ["src/shop"]\n')
    code, report = doctor()
    found = by_name(report)["config"]
    assert code == 1 and found["status"] == "problem"
    assert found["detail"].startswith(f"{config}: watch.project_roots: 'src/shop' is relative")
    assert "`memoryd serve` refuses to start (exit 3)" in found["fix"]
    config.write_text("")
    found = by_name(doctor()[1])["config"]
    assert found["status"] == "ok" and found["detail"] == f"{config}: memoryd takes it"


def test_a_daemon_on_the_hooks_memoryd_home_is_found_from_a_shell_without_it(
        daemon, memoryd_home, tmp_path) -> None:
    assert run_cli("hook", "install", "claude-code").returncode == 0  # carries MEMORYD_HOME
    code, report = doctor(env={"MEMORYD_HOME": str(tmp_path / "empty")})
    found = by_name(report)["daemon"]
    assert code == 1 and found["status"] == "problem"
    assert f"a memoryd (pid {os.getpid()}) answers on {daemon.socket}" in found["detail"]
    # the hooks are right (they reach that daemon): not a problem, and no fix that would
    # point them at this shell's home, where no daemon runs
    hooks = by_name(report)["hooks claude-code"]
    assert hooks["status"] == "warning", hooks
    assert "where no daemon answers" in hooks["detail"] and "hook install" not in hooks["fix"]


def test_a_daemon_of_another_state_dir_on_the_default_socket_is_not_this_users(
        daemon, memoryd_home, monkeypatch) -> None:
    """F-1 (2026-11-30): with the daemon down, doctor looked for one on the default socket and
    called the quick start's daemon (another HOME's, in the shared runtime dir) this shell's,
    "point this shell at it", instead of saying how to start one. A daemon there that serves
    another state dir is named as such, and the fix is the start command."""
    runtime = memoryd_home / "run"
    (runtime / "memoryd").mkdir(parents=True, mode=0o700)
    runtime.chmod(0o700)
    (runtime / "memoryd" / "memoryd.sock").symlink_to(daemon.socket)  # another HOME's daemon
    code, report = doctor(env={"MEMORYD_HOME": str(memoryd_home / "empty"),
                               "XDG_RUNTIME_DIR": str(runtime)})
    found = by_name(report)["daemon"]
    assert code == 1 and found["status"] == "problem"
    assert "serve" in found["fix"] and "point this shell at it" not in found["fix"], found
    assert (f"answers on {runtime / 'memoryd' / 'memoryd.sock'}, for the state in "
            f"{memoryd_home}: not that of a shell without MEMORYD_HOME") in found["detail"]


def test_a_shell_and_a_daemon_without_memoryd_home_but_with_two_state_dirs(
        memoryd_home, monkeypatch) -> None:
    """F-5 (2026-11-30): a daemon started without MEMORYD_HOME and a shell without it but with
    another XDG_DATA_HOME: doctor described the shell's state dir as the daemon's, said the
    shell set MEMORYD_HOME, and that its commands did not reach that daemon, which they did.
    Now each side's state dir is its own, and the fix gives this shell the daemon's."""
    runtime = memoryd_home / "run"
    runtime.mkdir(mode=0o700)
    spawn = memoryd_home / "spawn"
    spawn.mkdir()
    (spawn / "memoryd.sock").symlink_to(runtime / "memoryd" / "memoryd.sock")  # for its wait
    monkeypatch.delenv("MEMORYD_HOME")
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    proc = spawn_daemon(spawn, model=False)
    try:
        theirs = memoryd_home / "user" / ".local" / "share" / "memoryd"
        xdg = memoryd_home / "xdgdata"
        code, report = doctor(env={"XDG_DATA_HOME": str(xdg)})
        home = by_name(report)["memoryd_home"]
        assert code == 1 and home["status"] == "problem", home
        assert home["detail"].startswith(
            f"this shell: no MEMORYD_HOME (state in {xdg / 'memoryd'}); the daemon: no "
            f"MEMORYD_HOME (state in {theirs}); this shell's commands reach it"), home
        assert "--socket" not in home["detail"]
        assert home["fix"].startswith(f"export XDG_DATA_HOME={theirs.parent} in this shell")
        code, report = doctor(env={"XDG_DATA_HOME": str(theirs.parent)})  # the fix, followed
        assert by_name(report)["memoryd_home"]["status"] == "ok"
    finally:
        assert stop_process(proc) == 0


def test_spooled_hook_events_are_a_warning(memoryd_home) -> None:
    payload = json.dumps({"session_id": "s1", "cwd": "/tmp", "hook_event_name": "Stop"})
    hook = subprocess.run([sys.executable, "-m", "memoryd_client", "hook", "claude-code", "Stop"],
                          input=payload, capture_output=True, text=True, timeout=30)
    assert hook.returncode == 0 and "spooled" in hook.stderr
    spool = by_name(doctor()[1])["spool"]
    assert spool["status"] == "warning" and spool["detail"].startswith("1 hook events spooled")


def test_status_answers_is_it_healthy_and_is_it_done(memoryd_home, embedder, caplog) -> None:
    notes = memoryd_home / "user/.mastersof-ai/agents/bob/memory"
    notes.mkdir(parents=True)
    for i in range(120):
        (notes / f"n{i}.md").write_text(f"## Learnings\n- [2026-01-02] lesson {i} on kerning\n")
    with caplog.at_level(logging.INFO):
        running = start_daemon(embedder)
        try:
            def done() -> bool:
                status = json.loads(run_cli("status", "--json").stdout)
                return status["ingest"]["initial"]["finished"] is not None and not status["backlog"]

            wait_until(done, timeout_s=60)
            lines = run_cli("status").stdout.splitlines()
        finally:
            running.stop()
    assert lines[0] == "healthy · up to date"
    assert f"config: {memoryd_home / 'config.toml'}" in lines
    assert any(line.startswith("log:") for line in lines)
    assert any(line.startswith("initial indexing: done, 120 files watched, 120 of them new or "
                               "changed since the last run, 120 entries indexed, in")
               for line in lines)
    finished = [r.getMessage() for r in caplog.records if "Initial indexing finished" in r.getMessage()]
    assert len(finished) == 1 and finished[0].startswith(
        "Initial indexing finished: 120 files watched, 120 of them new or changed")
    migrations = [r.getMessage() for r in caplog.records if "schema version" in r.getMessage()]
    assert migrations == [f"Database created at schema version {migrations[0].split()[-1]}"]


def test_status_shows_indexing_progress_with_an_estimate() -> None:
    from memoryd_client.status_view import health_line
    from memoryd_client.wire import REVISION

    status = {"health": {"state": "ok", "checks": []}, "revision": REVISION, "vectors": 250,
              "backlog": 750,
              "embedding": {"eta_s": 95.0, "done": 250},
              "ingest": {"initial": {"started": time.time() - 10, "finished": None,
                                     "done": 1234, "total": 5000, "eta_s": 31.0}}}
    assert health_line(status) == ("healthy · indexing files 1,234/5,000 (24%, ~31 s left) · "
                                   "embedding 250 done, 750 waiting")
    status["ingest"]["initial"]["finished"] = time.time()
    assert health_line(status) == "healthy · embedding 250/1,000 (25%, ~2 min left)"


def test_second_daemon_refused_without_a_stop_line(daemon) -> None:
    result = run_memoryd("serve", timeout=60)
    assert result.returncode == 3 and "already serving" in result.stderr
    assert "memoryd stopped" not in result.stderr and "Shutting down" not in result.stderr


def run_cli_env(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "memoryd_client", *args], capture_output=True,
                          text=True, timeout=60, env={**os.environ, **env})



@pytest.fixture
def service_managers(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Stand-ins for systemctl and friends first on PATH (tests/fake_service_managers.py)."""
    fakes = Path(__file__).resolve().parents[1] / "fake_service_managers.py"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("systemctl", "journalctl", "loginctl", "launchctl"):
        stub = bin_dir / name
        stub.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{fakes}" {name} "$@"\n')
        stub.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    monkeypatch.setenv("FAKE_MANAGER_DIR", str(bin_dir))
    return bin_dir


@pytest.mark.skipif(sys.platform == "darwin", reason="the systemd user unit")
def test_the_service_is_checked_with_the_service_manager(daemon, service_managers,
                                                         monkeypatch) -> None:
    monkeypatch.setenv("FAKE_MAIN_PID", str(os.getpid()))  # the service runs this daemon
    installed = run_memoryd("service", "install")
    assert installed.returncode == 0, installed.stderr
    code, report = doctor()
    service = by_name(report)["service"]
    assert code == 0 and service["status"] == "ok"
    assert service["detail"].startswith(f"installed, enabled and running (pid {os.getpid()})")
    assert run_memoryd("service", "stop").returncode == 0
    code, report = doctor()
    service = by_name(report)["service"]
    assert code == 1 and service["status"] == "problem"
    assert service["detail"].startswith("enabled, not running (inactive, dead")
    assert "systemctl --user start memoryd" in service["fix"]
    hint = run_cli_env({"MEMORYD_HOME": "/tmp/md-nobody-here"}, "status")
    assert hint.returncode == 3 and "systemctl --user start memoryd" in hint.stderr


@pytest.mark.skipif(sys.platform == "darwin", reason="the systemd user unit")
def test_without_a_user_manager_the_start_hint_is_memoryd_serve(service_managers,
                                                                 monkeypatch) -> None:
    """F-6 (2026-11-30): with the unit installed but no user manager answering, the daemon
    unreachable message said "start it with `systemctl --user start memoryd`", which cannot
    work there; it names `memoryd serve` and why."""
    monkeypatch.setenv("FAKE_NO_BUS", "1")
    assert run_memoryd("service", "install").returncode == 1  # the unit written, not enabled
    hint = run_cli("status", "--socket", "/tmp/md-nonexist.sock")
    assert hint.returncode == 3 and "systemctl" not in hint.stderr, hint.stderr
    assert re.search(r"start it with `[^`]*memoryd serve` \(the service is installed, but no "
                     r"systemd user manager answers \(Failed to connect to bus", hint.stderr)
    code, report = doctor()
    assert "systemctl" not in by_name(report)["daemon"]["fix"]


@pytest.mark.skipif(sys.platform == "darwin", reason="the systemd user unit")
def test_doctor_says_when_the_installed_unit_is_stale(daemon, service_managers,
                                                     monkeypatch) -> None:
    """A unit an older memoryd wrote (here: with the file-system sandbox of before N3, which
    broke forget, promotion, the notebook pass and undo) is named until a reinstall."""
    monkeypatch.setenv("FAKE_MAIN_PID", str(os.getpid()))
    assert run_memoryd("service", "install").returncode == 0
    unit = Path(os.environ["HOME"]) / ".config" / "systemd" / "user" / "memoryd.service"
    unit.write_text(unit.read_text().replace(
        "[Install]", "ProtectSystem=strict\nReadWritePaths=-/somewhere\n\n[Install]"))
    code, report = doctor()
    service = by_name(report)["service"]
    assert code == 0 and service["status"] == "warning", service
    assert "the unit is stale: `memoryd service install` would write it differently " \
        "(-ProtectSystem=strict, -ReadWritePaths=-/somewhere)" in service["detail"]
    assert service["fix"].startswith("memoryd service install")
    assert run_memoryd("service", "install").returncode == 0
    assert by_name(doctor()[1])["service"]["status"] == "ok"


def test_status_sources_counts_what_is_indexed_across_a_restart(memoryd_home, embedder) -> None:
    notes = memoryd_home / "user/.mastersof-ai/agents/ann/memory"
    notes.mkdir(parents=True)
    (notes / "a.md").write_text("- Kerning pairs need a second look.\n- Widows are fixed by hand.\n")

    def indexed() -> dict[str, int]:
        status = json.loads(run_cli("status", "--sources", "--json").stdout)
        return {s["name"]: s["indexed"] for s in status["ingest"]["sources"]}

    for _ in range(2):  # the second daemon adds nothing, but the index holds both entries
        running = start_daemon(embedder)
        try:
            wait_until(lambda: indexed()["mastersof-ai"] == 2)
            listing = run_cli("status", "--sources").stdout
        finally:
            running.stop()
    assert "files 1, 2 entries indexed, since start +0 -0" in listing


def test_a_generic_log_read_without_its_session_is_named_and_reindex_mends_it(
        memoryd_home: Path, embedder) -> None:
    """A store from before a generic log without `session_id` was one session a file: its
    exchanges have no session, so a hit shows no turns around it. doctor says so and what to
    do; `memoryd reindex` reads the log again, and the hit has its passage."""
    import apsw

    chats = memoryd_home / "user" / "logs"
    chats.mkdir(parents=True)
    said = ["we booked the ferry to Hydra", "which one?", "the 7:30 from Piraeus",
            "good, the later ones sell out", "Dimitra is coming along with her sister"]
    (chats / "chat.jsonl").write_text("".join(json.dumps(
        {"role": "user" if n % 2 == 0 else "assistant", "content": text,
         "timestamp": f"2026-02-01T10:0{n}:00Z"}) + "\n" for n, text in enumerate(said)))

    def hit(client: Client) -> dict:
        hits = client.search("Dimitra coming along with her sister", agents=["chatter"])["hits"]
        assert hits and "Dimitra" in hits[0]["text"]
        return hits[0]

    running = start_daemon(embedder)
    try:
        with Client(running.socket) as client:
            client.sources("add", name="logs", path=str(chats / "*.jsonl"), kind="transcript",
                           format="generic", agent="chatter")
            wait_until(lambda: client.list_entries(agents=["chatter"])["total"] == 3)
            assert "context" in hit(client)
            assert by_name(doctor()[1])["sessions"]["status"] == "ok"
    finally:
        running.stop()
    db = apsw.Connection(str(memoryd_home / "memoryd.db"))  # as a store of before wrote it
    db.execute("UPDATE entries SET session = NULL WHERE agent = 'chatter'")
    db.close()
    running = start_daemon(embedder)
    try:
        with Client(running.socket) as client:
            assert "context" not in hit(client)
            check = by_name(doctor()[1])["sessions"]
            assert check["status"] == "warning" and check["detail"].startswith(
                "3 exchanges of 1 generic logs have no session") and "memoryd reindex" in \
                check["fix"], check
    finally:
        running.stop()
    assert run_memoryd("reindex", "--no-vectors").returncode == 0
    running = start_daemon(embedder)
    try:
        with Client(running.socket) as client:
            wait_until(lambda: client.status()["backlog"] == 0)
            assert "context" in hit(client)
            assert by_name(doctor()[1])["sessions"]["status"] == "ok"
    finally:
        running.stop()


def test_a_cline_hook_file_is_one_hook_not_1_hooks(memoryd_home) -> None:
    """Cline runs a file per event, so doctor's line for each said "1 hooks"."""
    assert run_cli("hook", "install", "cline").returncode == 0
    assert run_cli("hook", "install", "cursor").returncode == 0
    result = run_cli("doctor")  # the hooks are checked with the daemon down too
    lines = [line for line in result.stdout.splitlines() if " hooks cline " in line]
    assert len(lines) == 4, result.stdout
    for line in lines:
        assert ": 1 hook, running " in line and "1 hooks" not in line, line
    [cursor] = [line for line in result.stdout.splitlines() if " hooks cursor " in line]
    assert ": 4 hooks, running " in cursor, cursor


def test_a_hooked_project_no_source_watches_is_named_with_the_command(daemon, client,
                                                                      tmp_path) -> None:
    """F-4: a repository whose sessions run the hooks got an empty SessionStart until `memory
    sources add --project` was run, and nothing said that step was needed: `hook install`
    says it, and doctor names the projects sessions ran in that no root watches."""
    shop = tmp_path / "shop"
    shop.mkdir()
    subprocess.run(["git", "init", "-q", str(shop)], check=True)
    (shop / "CLAUDE.md").write_text("- Shop deploys on Fridays only.\n")
    installed = run_cli("hook", "install", "claude-code")
    assert installed.returncode == 0, installed.stderr
    assert "Then `memory sources add --project DIR` for each repository you work in" \
        in installed.stdout
    started = run_hook("claude-code", "SessionStart", {
        "session_id": "s-shop", "cwd": str(shop), "source": "startup",
        "hook_event_name": "SessionStart"})
    assert started.returncode == 0, started.stderr
    loose = tmp_path / "loose"  # no repository: nothing of a project to read there
    loose.mkdir()
    elsewhere = run_hook("claude-code", "SessionStart", {
        "session_id": "s-loose", "cwd": str(loose), "source": "startup",
        "hook_event_name": "SessionStart"})
    assert elsewhere.returncode == 0, elsewhere.stderr
    wait_until(lambda: by_name(doctor()[1])["projects"]["status"] == "warning")
    projects = by_name(doctor()[1])["projects"]
    assert f"sessions ran lately in projects no source watches (their CLAUDE.md, AGENTS.md, " \
        f"… are not read): {shop}" in projects["detail"]
    assert projects["fix"] == f"memory sources add --project {shop}"
    assert run_cli("sources", "add", "--project", str(shop)).returncode == 0
    assert by_name(doctor()[1])["projects"]["status"] == "ok"


@pytest.mark.parametrize(("cause", "fix"), [
    ("Read-only file system", "the state dir's file system is read-only"),
    ("No space left on device", "free some space on the state dir's file system"),
    ("file too large (a file-size limit?)", "raise the file-size limit memoryd runs under"),
    ("Permission denied", "memoryd may not write in its state dir"),
])
def test_refused_writes_are_given_the_fix_of_their_cause(cause: str, fix: str) -> None:
    """The writes check told to "free some space" whatever the disk said: after a
    read-only file system refused a write too."""
    from memoryd.server.health_disk import refused_fix

    said = refused_fix(f"not stored: cannot write the ledger of 'a' ({cause}); nothing of "
                       "this request was kept")
    assert said.startswith(fix), said
    assert cause == "No space left on device" or "free some space" not in said
