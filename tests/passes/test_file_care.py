"""What a pass's rewrite does to a user's file beyond its text (R7 and R11 of the reliability
report): a file memoryd may not or cannot rewrite — read-only for its owner, hard-linked,
immutable — is skipped with its reason while the others are maintained, shown by `memory
status` and `memory pass show`, and leaves no temporary file behind; extended attributes are
kept; what a killed memoryd left beside the files is cleaned at the next start. The real
daemon, real files, ``chattr`` where the file system and privileges allow it."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from memoryd_client import Client

from tests.conftest import run_cli, start_daemon, wait_until
from tests.passes.test_passes import active_count, notebook_text


@pytest.fixture
def memory_dir(memoryd_home: Path) -> Path:
    path = memoryd_home / "user" / ".mastersof-ai" / "agents" / "designer" / "memory"
    path.mkdir(parents=True)
    return path


def chattr(flag: str, path: Path) -> bool:
    """``chattr FLAG path``; False where the file system or the privileges do not allow it."""
    if shutil.which("chattr") is None:
        return False
    return subprocess.run(["chattr", flag, str(path)], capture_output=True,
                          check=False).returncode == 0


@pytest.fixture
def immutable() -> Iterator[list[Path]]:
    """Files made immutable by the test: made mutable again after it (or rmtree fails)."""
    made: list[Path] = []
    yield made
    for path in made:
        chattr("-i", path)


def temporaries(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if ".memoryd-" in p.name)



def _indexed_preference(client: Client, claude: Path, text: str) -> dict[str, Any]:
    """Write ``claude`` (a CLAUDE.md holding "Answer in British English"), wait until that
    line is an entry, and return it as a search hit."""
    claude.write_text(text)

    def found() -> list[dict[str, Any]]:
        return [h for h in client.search("British English", agents=["*"], limit=5)["hits"]
                if "British" in h["text"]]

    wait_until(lambda: bool(found()))
    [entry] = found()
    return entry

def test_files_a_pass_may_not_or_cannot_rewrite_are_skipped_and_the_others_maintained(
        memory_dir: Path, memoryd_home: Path, immutable: list[Path], daemon,
        client: Client) -> None:
    names = ["plain-1.md", "plain-2.md", "readonly.md", "hardlinked.md", "immutable.md",
             "xattr.md"]
    for name in names:
        (memory_dir / name).write_text(notebook_text())
    wait_until(lambda: active_count(client) >= 78 * len(names), timeout_s=60)
    readonly = memory_dir / "readonly.md"
    readonly.chmod(0o444)
    other_name = memoryd_home / "user" / "hardlink-elsewhere.md"
    os.link(memory_dir / "hardlinked.md", other_name)
    if chattr("+i", memory_dir / "immutable.md"):
        immutable.append(memory_dir / "immutable.md")
    os.setxattr(memory_dir / "xattr.md", "user.note", b"drawn on the train")
    left_alone = [memory_dir / "readonly.md", memory_dir / "hardlinked.md", *immutable]
    before = {path: path.read_bytes() for path in left_alone}

    for _ in range(2):  # and the next run alike: the others are not held back by them
        run = client.pass_run("notebooks")
        assert run["status"] == "done", run
        assert run["counts"]["skipped"] == 2 * len(left_alone)  # each notebook and its archive
        assert run["counts"]["problems"] == len(left_alone)
        assert {path: path.read_bytes() for path in left_alone} == before
    # the others were maintained (the first run): held to the cap, the rest archived
    for name in ("plain-1.md", "plain-2.md", "xattr.md"):
        assert len((memory_dir / name).read_text().splitlines()) <= 80
        assert (memory_dir / "archive" / name).exists()
    for path in left_alone:
        assert not (memory_dir / "archive" / path.name).exists()
    # read-only stays read-only, the hard link stays one file, the attribute stays
    assert readonly.stat().st_mode & 0o777 == 0o444
    assert os.path.samefile(memory_dir / "hardlinked.md", other_name)
    assert os.getxattr(memory_dir / "xattr.md", "user.note") == b"drawn on the train"
    assert temporaries(memory_dir) == []

    shown = client.pass_show(run["run"])
    skipped = sorted(c["target"] for c in shown["changes"]
                     if c["kind"] == "file" and c["state"] == "skipped")
    assert skipped == sorted(str(p) for path in left_alone
                             for p in (path, memory_dir / "archive" / path.name))
    reasons = {c["target"]: c["why"] for c in shown["changes"] if c["kind"] == "problem"}
    assert reasons[str(readonly)].startswith("not written: read-only (mode 0444)")
    assert "2 hard links" in reasons[str(memory_dir / "hardlinked.md")]
    if immutable:
        assert "immutable (chattr +i)" in reasons[str(memory_dir / "immutable.md")]
    printed = run_cli("pass", "show", run["run"])
    assert printed.returncode == 0 and "[skipped]" in printed.stdout
    assert "not written: read-only (mode 0444)" in printed.stdout

    # `memory status` warns, naming the files
    [warning] = [c for c in client.status()["health"]["checks"] if c["check"] == "unwritten"]
    assert warning["status"] == "warning"
    assert all(str(path) in warning["detail"] for path in left_alone)
    status = run_cli("status")
    assert status.returncode == 0 and str(readonly) in status.stdout.splitlines()[0]

    # made writable again, the next run maintains it, and the warning goes
    readonly.chmod(0o644)
    os.unlink(other_name)
    for path in immutable:
        chattr("-i", path)
    run = client.pass_run("notebooks")
    assert run["status"] == "done" and "skipped" not in run["counts"]
    assert not [c for c in client.status()["health"]["checks"] if c["check"] == "unwritten"]


def test_a_file_write_that_fails_fails_the_request_and_settles_its_change(
        memoryd_home: Path, immutable: list[Path], daemon, client: Client) -> None:
    """L-n of the newcomer report: a forget whose file write failed (EROFS under the unit's
    sandbox; EPERM of an immutable file here) left the run `done: nothing to do` and its
    change pending until the next start; the command failed with exit 2."""
    claude = Path(os.environ["HOME"]) / ".claude" / "CLAUDE.md"
    claude.parent.mkdir()
    entry = _indexed_preference(
        client, claude, "# Preferences\n\n- Answer in British English.\n- Keep answers short.\n")
    if not chattr("+i", claude):
        pytest.skip("chattr +i is not possible here (not root, or the file system has no flags)")
    immutable.append(claude)
    original = claude.read_bytes()

    done = run_cli("forget", entry["id"])
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert "immutable (chattr +i)" in done.stderr and str(claude) in done.stderr
    assert claude.read_bytes() == original and temporaries(claude.parent) == []
    assert client.get(entry["id"])["status"] == "active"
    run = re.search(r"\((r\d+)\)", done.stderr)
    assert run is not None, done.stderr
    shown = client.pass_show(run[1])
    assert shown["status"] == "failed" and "immutable (chattr +i)" in shown["error"]
    assert [c["state"] for c in shown["changes"] if c["kind"] == "file"] == ["skipped"]

    chattr("-i", claude)  # once it can be written, the same command works
    again = run_cli("forget", entry["id"])
    assert again.returncode == 0, again.stderr
    assert "British" not in claude.read_text()

    # an undo that cannot write the file fails the same way, saying why
    assert chattr("+i", claude)
    forgotten = claude.read_bytes()
    undo = run_cli("undo", again.stdout.split("`memory undo ")[1].split("`")[0])
    assert undo.returncode == 1 and " undo failed" in undo.stdout
    assert "error: " in undo.stderr and "immutable (chattr +i)" in undo.stderr
    assert claude.read_bytes() == forgotten and client.get(entry["id"])["status"] == "forgotten"


def test_a_read_only_file_is_not_rewritten_by_a_forget_either(daemon, client: Client) -> None:
    claude = Path(os.environ["HOME"]) / ".claude" / "CLAUDE.md"
    claude.parent.mkdir()
    entry = _indexed_preference(client, claude, "# Preferences\n\n- Answer in British English.\n")
    claude.chmod(0o444)
    done = run_cli("forget", entry["id"])
    assert done.returncode == 1 and "read-only (mode 0444)" in done.stderr
    assert "British" in claude.read_text() and claude.stat().st_mode & 0o777 == 0o444


def test_what_a_killed_memoryd_left_beside_the_files_is_cleaned_at_the_next_start(
        memory_dir: Path, embedder) -> None:
    notebook = memory_dir / "notebook.md"
    notebook.write_text(notebook_text())
    (memory_dir / "archive").mkdir()
    (memory_dir / "archive" / "notebook.md").write_text("# Archive\n")
    first = start_daemon(embedder)
    try:
        with Client(first.socket, timeout_s=30) as client:
            # both files indexed (the archive's directory is one the next start looks in):
            # the notebook's entries alone came a slice before it under load
            wait_until(lambda: active_count(client) >= 78
                       and client.status()["ingest"]["indexing"] is None
                       and client.status()["ingest"]["queue"] == 0)
    finally:
        first.stop()
    gone = subprocess.Popen(["true"])
    gone.wait()
    dead, alive = gone.pid, os.getpid()
    left = {  # as a kill -9 mid-pass leaves them (R11: archive/.nb129.md.memoryd-8811.tmp)
        memory_dir / f".notebook.md.memoryd-{dead}.tmp": b"new text never renamed",
        memory_dir / "archive" / f".notebook.md.memoryd-{dead}.tmp": b"archive text",
        # someone's edit on its way to a conflict copy: its only copy
        memory_dir / f".notebook.md.memoryd-conflict-20261128-120000.memoryd-{dead}.tmp":
            b"their edit",
        # a live process's: being written now
        memory_dir / f".notebook.md.memoryd-{alive}.tmp": b"in flight",
    }
    for path, data in left.items():
        path.write_bytes(data)
    second = start_daemon(embedder)
    try:
        assert temporaries(memory_dir) == sorted([
            f".notebook.md.memoryd-{alive}.tmp", "notebook.md.memoryd-conflict-20261128-120000"])
        assert (memory_dir / "notebook.md.memoryd-conflict-20261128-120000").read_bytes() == \
            b"their edit"
    finally:
        second.stop()


APPENDER = """
import sys, time
with open(sys.argv[1], "a", buffering=1) as log:
    print("open", flush=True)
    for number in range(30):
        time.sleep(0.1)
        log.write(f"- [2026-11-28] appended line {number}\\n")
"""


def test_a_notebook_an_appender_holds_open_is_left_for_a_later_run(
        memory_dir: Path, daemon, client: Client) -> None:
    """R11: a writer that keeps the notebook open in append mode (a logger, `tee -a`) wrote on
    into the file a rewrite replaced: 21 of 30 lines lost. A file held open for writing is
    now left for a later run (Linux, a file the daemon's user owns)."""
    notebook = memory_dir / "notebook.md"
    notebook.write_text(notebook_text())
    wait_until(lambda: active_count(client) >= 78)
    writer = subprocess.Popen([sys.executable, "-c", APPENDER, str(notebook)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout is not None and writer.stdout.readline() == "open\n"
        run = client.pass_run("notebooks")
        assert run["status"] == "done" and run["counts"].get("skipped") == 2, run
        [problem] = [c for c in client.pass_show(run["run"])["changes"]
                     if c["kind"] == "problem"]
        assert "holds it open for writing" in problem["why"]
        assert writer.wait(timeout=30) == 0
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.wait()
        if writer.stdout is not None:
            writer.stdout.close()
    assert client.pass_run("notebooks")["counts"].get("applied") == 2  # once it is closed
    kept = notebook.read_text() + (memory_dir / "archive" / "notebook.md").read_text()
    assert [n for n in range(30) if f"appended line {n}\n" not in kept] == []


# A writer that opens the notebook just while the check holds its lease: the moment is made
# certain by opening it from another thread right after the lease is granted (the open waits
# until the lease is given back; the kernel signals the lease's holder as it begins).
LEASE_BROKEN_BY_A_WRITER = """
import fcntl, sys, threading, time
from pathlib import Path
from memoryd.passes import file_care

notebook = Path(sys.argv[1])
granted = fcntl.fcntl
writers = []

def fcntl_then_a_writer(fd, command, argument=0):
    answer = granted(fd, command, argument)
    if command == fcntl.F_SETLEASE and argument == fcntl.F_RDLCK:
        writer = threading.Thread(target=lambda: notebook.open("a").close())
        writer.start()
        writers.append(writer)
        time.sleep(0.3)
    return answer

fcntl.fcntl = fcntl_then_a_writer
held = file_care.rewrite_refusal(notebook, None)
for writer in writers:
    writer.join()
print("alive", len(writers), held is None, flush=True)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="leases are Linux's")
def test_a_writer_that_comes_while_the_check_holds_its_lease_does_not_kill_the_daemon(
        memory_dir: Path) -> None:
    """An agent that wrote its notebook in the instant a pass checked it for writers (a read
    lease, taken and given back at once) killed the daemon: the lease's break is signalled
    with SIGIO, whose default action ends the process (6 of 139 runs of the concurrent-edits
    test of the passes, three at once)."""
    notebook = memory_dir / "notebook.md"
    notebook.write_text(notebook_text())
    checker = subprocess.run([sys.executable, "-c", LEASE_BROKEN_BY_A_WRITER, str(notebook)],
                             capture_output=True, text=True, timeout=60, check=False)
    assert checker.returncode == 0, (checker.returncode, checker.stderr[-2000:])
    assert checker.stdout == "alive 1 True\n"  # the lease was taken; the file may be rewritten


@pytest.fixture
def full_tmpfs(memoryd_home: Path) -> Iterator[Path]:
    """Another agent's memory directory on a real 1 MB tmpfs, to be filled (skipped where this
    process cannot mount one); the state dir is not on it."""
    path = memoryd_home / "user" / ".mastersof-ai" / "agents" / "painter" / "memory"
    path.mkdir(parents=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(path)],
                             capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def test_a_notebook_on_a_full_file_system_is_skipped_and_the_others_maintained(
        memory_dir: Path, full_tmpfs: Path, daemon, client: Client) -> None:
    """One notebook on a full disk that is not memoryd's failed the whole notebooks pass
    (`r9 notebooks failed`, the other notebooks' changes aborted), with an error naming no
    file. That notebook is skipped with its reason, as a read-only one is."""
    from tests.store.test_durability import fill

    (memory_dir / "notebook.md").write_text(notebook_text())
    (full_tmpfs / "notebook.md").write_text(notebook_text())
    wait_until(lambda: active_count(client) >= 2 * 78, timeout_s=60)
    fill(full_tmpfs / "filler")
    before = (full_tmpfs / "notebook.md").read_bytes()
    run = client.pass_run("notebooks")
    assert run["status"] == "done", run
    assert run["counts"]["skipped"] == 2  # the notebook and its archive
    assert len((memory_dir / "notebook.md").read_text().splitlines()) <= 80  # maintained
    assert (full_tmpfs / "notebook.md").read_bytes() == before
    assert temporaries(full_tmpfs) == []
    reasons = {c["target"]: c["why"] for c in client.pass_show(run["run"])["changes"]
               if c["kind"] == "problem"}
    archive = full_tmpfs / "archive" / "notebook.md"  # written first, it found the disk full
    assert reasons == {str(archive): "not written: No space left on device"}
    [warning] = [c for c in client.status()["health"]["checks"] if c["check"] == "unwritten"]
    assert f"{archive}: No space left on device" in warning["detail"]


def test_a_forget_of_an_entry_whose_file_cannot_be_read_fails_with_exit_1(
        daemon, client: Client) -> None:
    """The entry's file replaced by a FIFO (its entries kept): `memory forget ID` exited 2, a
    usage error, though the command was right. It fails (exit 1), saying why."""
    claude = Path(os.environ["HOME"]) / ".claude" / "CLAUDE.md"
    claude.parent.mkdir()
    entry = _indexed_preference(client, claude, "# Preferences\n\n- Answer in British English.\n")
    fifo = claude.with_name(".swap")
    os.mkfifo(fifo)
    os.rename(fifo, claude)
    wait_until(lambda: any(c["check"] == "skipped" for c in client.status()["health"]["checks"]))
    done = run_cli("forget", entry["id"])
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert f"comes from {claude}, which cannot be read (not a regular file (a FIFO))" \
        in done.stderr
    assert client.get(entry["id"])["status"] == "active"
