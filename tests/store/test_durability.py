"""The ledger cannot swallow a write (D1), a write answered as failed never comes back (D2),
agent names differing only in case never share a ledger (D16): with the real daemon, real files
and real faults (a full tmpfs, RLIMIT_FSIZE)."""

from __future__ import annotations

import json
import os
import re
import resource
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from memoryd_client import Client, MemorydError

from memoryd.store.ledger import Ledger, LedgerProblem, encode_record
from tests.conftest import run_memoryd, start_daemon, wait_until

FACTS = ["We use ruff for linting", "Tests run with pytest -x", "Never force-push to main",
         "The staging database lives in Frankfurt", "Deploys happen on Tuesdays after lunch",
         "Alice owns the billing service", "Invoices are rendered with WeasyPrint",
         "The mobile app targets Android 12 and later"]


def ledger_problems(directory: Path) -> list[LedgerProblem]:
    """Every ledger read whole: torn tails, damaged lines (bad JSON or a checksum mismatch),
    recovered fragments, and records of an agent whose name differs only in case from the
    file's ("shared")."""
    ledger = Ledger(directory)
    problems: list[LedgerProblem] = []
    for agent in ledger.agents():
        for position, record in ledger.read(agent, 0, problems):
            entry = record.get("entry") if record.get("op") == "remember" else None
            owner = entry.get("agent") if isinstance(entry, dict) else None
            if isinstance(owner, str) and owner != agent:
                problems.append(LedgerProblem(
                    agent, str(ledger.path(agent)), position, "shared",
                    f"a record of agent {owner!r} in the ledger of {agent!r}"))
    return problems


def spawn(home: Path, *, fsize: int | None = None, log: Path | None = None,
          model: bool = False) -> subprocess.Popen[bytes]:
    """The daemon as a process, keyword-only unless ``model`` (most tests here are about
    storage), optionally under RLIMIT_FSIZE (Python ignores SIGXFSZ: a write past it fails
    with EFBIG). With the model, every write is kept apart (no near-duplicate merges)."""
    env = ({**os.environ, "MEMORYD_REMEMBER_NEAR_DUPLICATE_COSINE": "1.0"} if model
           else {**os.environ, "MEMORYD_EMBED_MODEL": str(home / "no-model")})

    def limit() -> None:
        if fsize is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))

    log = log or home / "daemon.log"
    with log.open("ab") as stderr:
        proc = subprocess.Popen([sys.executable, "-m", "memoryd", "serve"], env=env,
                                stdout=subprocess.DEVNULL, stderr=stderr, preexec_fn=limit)

    def up() -> bool:
        assert proc.poll() is None, log.read_text()
        try:
            with Client(home / "memoryd.sock", timeout_s=5) as c:
                c.status()
            return True
        except MemorydError:
            return False

    wait_until(up, 60)
    return proc


def stop(proc: subprocess.Popen[bytes]) -> int:
    proc.send_signal(signal.SIGTERM)
    return proc.wait(timeout=60)


def stored_texts(home: Path, agent: str) -> list[str]:
    """Every entry text of the agent after a rebuild from the files alone."""
    result = run_memoryd("reindex", "--no-vectors")
    assert result.returncode == 0, result.stderr
    import apsw
    db = apsw.Connection(str(home / "memoryd.db"))
    try:
        return [row[0] for row in db.execute("SELECT text FROM entries WHERE agent=?", (agent,))]
    finally:
        db.close()


def fill(path: Path) -> None:
    """Fill the filesystem to the last byte."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for size in (1 << 16, 4096, 512, 1):
            try:
                while True:
                    os.write(fd, b"\0" * size)
            except OSError:
                pass
    finally:
        os.close(fd)


@pytest.fixture
def small_tmpfs(memoryd_home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """MEMORYD_HOME on a real 24 MB tmpfs (skipped where this process cannot mount one)."""
    home = memoryd_home / "fs"
    home.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=24m,mode=0700", "tmpfs", str(home)],
        capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    monkeypatch.setenv("MEMORYD_HOME", str(home))
    try:
        yield home
    finally:
        subprocess.run(["umount", "-l", str(home)], check=False)


def test_full_disk_leaves_no_torn_line_and_no_write_is_lost(small_tmpfs: Path) -> None:
    home = small_tmpfs
    proc = spawn(home, log=home.parent / "daemon.log")  # the log is not on the full disk
    acknowledged: list[str] = []
    refused: list[str] = []
    try:
        with Client(home / "memoryd.sock", timeout_s=30) as c:
            def remember(text: str) -> None:
                try:
                    c.remember("a", "notes", text)
                    acknowledged.append(text)
                except MemorydError as exc:
                    assert exc.code != "internal", exc.message  # a specific error, not a crash
                    refused.append(text)

            for i in range(20):
                remember(f"before the full disk, note {i}: " + "x" * 3000)
            filler = home / "filler"
            fill(filler)
            for i in range(40):  # big texts: the ledger write is cut short by ENOSPC
                remember(f"during the full disk, note {i}: " + "y" * 20000)
            filler.unlink()
            for i in range(20):
                remember(f"after the full disk, note {i}: " + "z" * 3000)
    finally:
        assert stop(proc) == 0
    assert len(refused) > 0, "the disk never filled up"
    assert not ledger_problems(home / "ledger")  # no torn or damaged line stayed behind
    texts = stored_texts(home, "a")
    assert sorted(texts) == sorted(acknowledged)  # none lost, none of the refused came back


def test_a_full_disk_under_the_run_log_refuses_forget_scope_and_pass_runs(
        small_tmpfs: Path, tmp_path: Path) -> None:
    """`memory forget`, `memory scope` and `memory pass run` append to the run log
    (passes.jsonl): on a full disk that append failed with an OSError answered as `internal`
    with a traceback. It is answered as the ledger's is, nothing is half-applied, and `memory
    status` says writes are being refused. The ledger has room left in its last page and the
    run log none, so it is the run log's append the disk refuses."""
    from tests.passes.test_scope import git_repository

    home = small_tmpfs
    shop = git_repository(tmp_path / "shop")
    proc = spawn(home, log=home.parent / "daemon.log")  # the log is not on the full disk
    try:
        with Client(home / "memoryd.sock", timeout_s=30) as c:
            ids = [c.remember("a", "notes", text, cwd=str(shop))["entry"]["id"]
                   for text in FACTS[:3]]
            run_log = home / "passes.jsonl"
            assert not run_log.exists() and (home / "ledger" / "a.jsonl").stat().st_size < 3000
            fill(home / "filler")
            attempts = [lambda: c.forget(ids[0]), lambda: c.scope(ids[1], "global"),
                        lambda: c.pass_run("staleness")]
            for attempt in attempts:
                with pytest.raises(MemorydError) as refused:
                    attempt()
                assert refused.value.code == "unavailable", refused.value.message
                assert refused.value.message.startswith("not stored: cannot write the run log")
                assert "nothing of this request was kept" in refused.value.message
            assert [c.get(i)["status"] for i in ids] == ["active"] * 3  # nothing half-applied
            assert c.get(ids[1])["project"] == str(shop)
            health = c.status()["health"]
            writes = next(check for check in health["checks"] if check["check"] == "writes")
            assert health["state"] == "problem" and writes["detail"].startswith(
                "3 writes were refused since ")
            (home / "filler").unlink()
            assert c.forget(ids[0])["status"] == "forgotten"
    finally:
        assert stop(proc) == 0
    assert "Traceback" not in (home.parent / "daemon.log").read_text()
    assert not ledger_problems(home / "ledger")


def test_a_file_indexing_refused_by_a_full_disk_is_tried_again_and_its_problem_goes(
        small_tmpfs: Path) -> None:
    """A notebook written while the state disk is full: its indexing failed with a traceback
    ("it is read again when it changes": only at the next rescan, 300 s later), and once it
    was indexed `memory status --sources` still said "last problem: … database or disk is
    full". It is tried again within seconds, the log has one line for it, and its problem
    goes once it is indexed."""
    home = small_tmpfs
    log = home.parent / "daemon.log"  # the log is not on the full disk
    memory = Path(os.environ["HOME"]) / ".mastersof-ai/agents/potter/memory"  # not on it either
    memory.mkdir(parents=True)
    proc = spawn(home, log=log)
    try:
        with Client(home / "memoryd.sock", timeout_s=30) as c:
            fill(home / "filler")
            notes = "".join(f"- Glaze recipe {i}: {' '.join(f'oxide{i}x{j}' for j in range(40))}"
                            f"\n" for i in range(400))
            (memory / "MEMORY.md").write_text(notes)

            def last_problem() -> str | None:
                [source] = [s for s in c.call("sources", {})["sources"]
                            if s["name"] == "mastersof-ai"]
                return source["last_error"]

            wait_until(lambda: (last_problem() or "").startswith("not indexed: "), 30)
            (home / "filler").unlink()
            wait_until(lambda: c.search("glaze recipe oxide12x3", agents=["potter"])["hits"]
                       and last_problem() is None, 30)
            # the room left, in words that say it (it was "0.0 GB free" with 21 MB free)
            [disk] = [check for check in c.status()["health"]["checks"]
                      if check["check"] == "disk"]
            assert re.match(r"\d+(\.\d)? MB free on the state dir's file system", disk["detail"]), \
                disk
    finally:
        assert stop(proc) == 0
    said = log.read_text()
    assert "Indexing " in said and "it is tried again in 5 s" in said
    assert "Traceback" not in said


def test_a_reindex_on_a_full_disk_says_so_and_keeps_the_index_in_use(small_tmpfs: Path) -> None:
    """`memoryd reindex` on a nearly full state disk: a traceback, "memoryd: crashed:
    FullError", exit 1. It says there is not enough space, exit 3, with the index in use as it was and
    nothing of the new one left; with vectors it is refused before it writes anything."""
    home = small_tmpfs
    proc = spawn(home, log=home.parent / "daemon.log")
    with Client(home / "memoryd.sock", timeout_s=30) as c:
        c.remember_many([{"agent": "a", "category": "notes", "text": f"note {i}: " + " ".join(
            f"word{i}x{j}" for j in range(80))} for i in range(400)])
    assert stop(proc) == 0
    fill(home / "filler")  # then room for the new index to open, not to hold the entries
    os.truncate(home / "filler", (home / "filler").stat().st_size - 256 * 1024)
    for args, said in ((["--no-vectors"], "; the index in use is kept, and the unfinished one "
                        "removed: free some space and run `memoryd reindex` again"),
                       ([], "; the index in use is kept, nothing was written: free some space "
                        "and run `memoryd reindex` again")):
        done = run_memoryd("reindex", *args)
        assert done.returncode == 3, done.stderr
        last = done.stderr.splitlines()[-1]  # (after what SQLite logged of the full disk)
        assert last.startswith(f"memoryd: not enough space to rebuild the index in {home}"), \
            done.stderr
        assert last.endswith(said) and "Traceback" not in done.stderr
        assert not list(home.glob("memoryd.db.new*")) and not (home / "memoryd.db.bak").exists()
        import apsw
        db = apsw.Connection(str(home / "memoryd.db"), flags=apsw.SQLITE_OPEN_READONLY)
        try:  # the index in use, whole
            assert db.execute("SELECT count(*) FROM entries").fetchone()[0] == 400
        finally:
            db.close()
    (home / "filler").unlink()
    assert sorted(stored_texts(home, "a"))[:1] == ["note 0: " + " ".join(
        f"word0x{j}" for j in range(80))]


def test_a_source_added_on_a_full_disk_is_refused_in_words(small_tmpfs: Path,
                                                             tmp_path: Path) -> None:
    """`memory sources add` on a full state disk: "Error: OSError: [Errno 28]" and an internal
    error's traceback in the log. Refused as a write is (unavailable, exit 1), sources.toml
    as it was; with room again, the same command works."""
    home = small_tmpfs
    log = home.parent / "daemon.log"
    notes = tmp_path / "notes"
    notes.mkdir()
    add = [sys.executable, "-m", "memoryd_client", "sources", "add", "notes",
           f"{notes}/**/*.md", "--kind", "memory", "--agent", "writer"]
    proc = spawn(home, log=log)
    try:
        fill(home / "filler")
        done = subprocess.run(add, capture_output=True, text=True, timeout=60)
        assert done.returncode == 1, done.stderr
        assert done.stderr.startswith(f"Error: not stored: cannot write {home}/sources.toml "
                                      "(No space left on device)"), done.stderr
        assert not (home / "sources.toml").exists()
        (home / "filler").unlink()
        again = subprocess.run(add, capture_output=True, text=True, timeout=60)
        assert again.returncode == 0, again.stderr
        assert "notes" in (home / "sources.toml").read_text()
    finally:
        assert stop(proc) == 0
    assert "Traceback" not in log.read_text()


def distinct_note(i: int) -> str:
    """A note of its own (no two alike), in words the model embeds as words."""
    people = ["Alice", "Bruno", "Chen", "Dana", "Emeka", "Farah", "Goran", "Hana"]
    things = ["billing service", "staging database", "mobile app", "deploy script",
              "search index", "invoice template", "test suite", "release notes"]
    doings = ["reviews", "rewrites", "monitors", "documents", "benchmarks", "migrates"]
    return (f"Note {i}: {people[i % 8]} {doings[i // 8 % 6]} the {things[i // 48 % 8]} "
            f"every {['Monday', 'Tuesday', 'Friday'][i % 3]}, ticket {i * 7919 % 10007}.")


def test_a_full_disk_under_the_vector_file_refuses_writes_and_the_daemon_lives(
        small_tmpfs: Path) -> None:
    """R4: the row file of the vector index is read through a shared mapping; a row its
    write left as a hole on a full tmpfs killed the daemon with SIGBUS at the next search.
    Now a write the disk cannot take is refused whole, and the daemon serves on (also
    started again on the still-full disk)."""
    home = small_tmpfs
    log = home.parent / "daemon.log"  # the log is not on the full disk
    acknowledged: list[str] = []
    refused: list[str] = []

    def session(first: int, count: int) -> None:
        with Client(home / "memoryd.sock", timeout_s=30) as c:
            wait_until(lambda: c.status()["model"] is not None, 60)
            for i in range(first, first + count):
                text = distinct_note(i)
                try:
                    c.remember("f", "notes", text)
                    acknowledged.append(text)
                except MemorydError as exc:
                    assert exc.code == "unavailable", exc.message
                    assert "not stored" in exc.message and "nothing" in exc.message
                    refused.append(text)
                c.search("who monitors the staging database", agent="f")  # reads the rows
                assert proc.poll() is None, log.read_text()[-2000:]

    proc = spawn(home, log=log, model=True)
    try:
        with Client(home / "memoryd.sock") as c:
            wait_until(lambda: c.status()["vector_index"]["ready"], 60)
        session(0, 50)
        fill(home / "filler")
        session(50, 30)
    finally:
        assert stop(proc) == 0
    assert len(refused) > 0, "the disk never filled up"
    proc = spawn(home, log=log, model=True)  # the disk still full
    try:
        session(80, 10)
        with Client(home / "memoryd.sock") as c:
            hits = c.search("Alice", agent="f", limit=100)["hits"]
            assert {h["text"] for h in hits} <= set(acknowledged) and hits
    finally:
        assert stop(proc) == 0
    (home / "filler").unlink()
    assert not ledger_problems(home / "ledger")
    assert sorted(stored_texts(home, "f")) == sorted(acknowledged)  # none lost, none back


def spawn_with_room(home: Path, room: int) -> subprocess.Popen[bytes]:
    """A daemon whose database can grow by ``room`` bytes at most (RLIMIT_FSIZE), started on
    a database that holds a first note."""
    proc = spawn(home)
    with Client(home / "memoryd.sock") as c:
        c.remember("a", "notes", "a first note so that the database exists")
    assert stop(proc) == 0
    return spawn(home, fsize=(home / "memoryd.db").stat().st_size + room)


def test_writes_answered_as_failed_are_not_resurrected(memoryd_home: Path) -> None:
    """The database cannot grow (RLIMIT_FSIZE) while the small ledger still can. (Once 20
    notes were refused, three times each, the rest would be refused alike.)"""
    proc = spawn_with_room(memoryd_home, 64 * 1024)
    acknowledged, refused = ["a first note so that the database exists"], []
    try:
        with Client(memoryd_home / "memoryd.sock", timeout_s=30) as c:
            for i in range(150):
                if len(refused) >= 3 * 20:
                    break
                text = f"note number {i} about the database limit: " + " ".join(
                    f"word{i}x{j}" for j in range(150))
                for _attempt in range(3):  # a client retries what failed
                    try:
                        c.remember("a", "notes", text)
                        acknowledged.append(text)
                        break
                    except MemorydError as exc:
                        assert exc.code == "unavailable", exc.message
                        assert "not stored" in exc.message
                        refused.append(text)
    finally:
        stop(proc)
    assert refused, "the file size limit was never reached"
    proc = spawn(memoryd_home)  # replays what the database missed
    try:
        with Client(memoryd_home / "memoryd.sock") as c:
            assert c.status()["entries"]["active"] == len(acknowledged)
    finally:
        assert stop(proc) == 0
    texts = stored_texts(memoryd_home, "a")
    assert sorted(texts) == sorted(acknowledged)


def test_a_bulk_write_refused_halfway_says_what_it_stored(memoryd_home: Path) -> None:
    """remember_many commits its slices one by one: the disk refusing a later slice left the
    earlier ones stored (in the ledger, after a restart too) while the answer said "nothing
    of this request was kept". It says how many were stored, and their results (ids)."""
    proc = spawn_with_room(memoryd_home, 512 * 1024)
    texts = [f"bulk note {i} about the file size limit: " + " ".join(
        f"word{i}x{j}" for j in range(60)) for i in range(1000)]
    try:
        with Client(memoryd_home / "memoryd.sock", timeout_s=60) as c, \
                pytest.raises(MemorydError) as refused:
            c.remember_many([{"agent": "a", "category": "notes", "text": t} for t in texts])
    finally:
        assert stop(proc) == 0
    error = refused.value
    assert error.code == "unavailable", error.message
    results = (getattr(error, "data", None) or {}).get("results", [])
    assert 0 < len(results) < 1000, error.message  # some slices stored, not all
    assert error.message.startswith(f"{len(results)} of 1000 entries stored; the other "
                                    f"{1000 - len(results)} not: "), error.message
    assert "file too large" in error.message and "nothing of this request" not in error.message
    assert all(r["stored"] for r in results) and error.data["total"] == 1000
    expected = ["a first note so that the database exists", *texts[:len(results)]]
    assert sorted(stored_texts(memoryd_home, "a")) == sorted(expected)  # the files agree
    import apsw
    db = apsw.Connection(str(memoryd_home / "memoryd.db"))
    try:
        ids = {row[0] for row in db.execute("SELECT uid FROM entries WHERE agent='a'")}
    finally:
        db.close()
    assert {r["id"] for r in results} <= ids


def test_a_file_size_limit_is_named_and_status_says_writes_are_refused(
        memoryd_home: Path) -> None:
    """Under `ulimit -f` the index's commit fails with EFBIG, which SQLite calls "disk I/O
    error": the answer names the limit, `memory status` and `memory doctor` say writes are
    being refused (both said healthy), and the log has no "cannot rollback" noise."""
    proc = spawn(memoryd_home)
    with Client(memoryd_home / "memoryd.sock") as c:
        c.remember("a", "notes", "a first note so that the database exists")
    assert stop(proc) == 0
    size = (memoryd_home / "memoryd.db").stat().st_size
    log = memoryd_home / "limited.log"
    proc = spawn(memoryd_home, fsize=size + 64 * 1024, log=log)
    refused: list[str] = []
    try:
        with Client(memoryd_home / "memoryd.sock", timeout_s=30) as c:
            for i in range(150):
                try:
                    c.remember("a", "notes", f"note number {i} about the database limit: "
                               + " ".join(f"word{i}x{j}" for j in range(150)))
                except MemorydError as exc:
                    refused.append(exc.message)
                    if len(refused) == 3:
                        break
            assert refused, "the file size limit was never reached"
            assert all("file too large (a file-size limit?)" in m for m in refused), refused
            health = c.status()["health"]
            writes = next(check for check in health["checks"] if check["check"] == "writes")
            assert health["state"] == "problem"
            assert writes["detail"].startswith("3 writes were refused since ")
            assert writes["detail"].endswith(refused[-1]) and "ulimit -f" in writes["fix"]
        doctor = subprocess.run([sys.executable, "-m", "memoryd_client", "doctor", "--json"],
                                capture_output=True, text=True, timeout=120)
        checks = {c["check"]: c for c in json.loads(doctor.stdout)["checks"]}
        assert doctor.returncode == 1 and checks["writes"]["status"] == "problem"
    finally:
        stop(proc)
    assert "cannot rollback" not in log.read_text()


def test_status_tells_of_damaged_ledger_lines_found_at_start(memoryd_home, embedder) -> None:
    """A ledger line edited by hand (its checksum no longer matches) and another cut
    mid-line: `memory status` said healthy while doctor found the damage."""
    running = start_daemon(embedder)
    with Client(running.socket) as c:
        for text in FACTS[:5]:
            c.remember("a", "notes", text)
    running.stop()
    ledger = memoryd_home / "ledger" / "a.jsonl"
    lines = ledger.read_bytes().splitlines(keepends=True)
    lines[1] = lines[1].replace(b"Tests run with pytest -x", b"Tests run with pytest")
    ledger.write_bytes(b"".join(lines)[:-40])  # and the last line cut mid-line
    running = start_daemon(embedder)
    try:
        with Client(running.socket) as c:
            health = c.status()["health"]
    finally:
        running.stop()
    lines_check = next(check for check in health["checks"] if check["check"] == "ledger lines")
    assert health["state"] == "problem" and lines_check["status"] == "problem"
    assert lines_check["detail"].startswith("1 damaged ledger line found at start (")
    assert "a torn last line was set aside" in lines_check["detail"]
    assert "memory doctor" in lines_check["fix"]


def test_a_torn_tail_is_set_aside_and_the_next_write_survives_a_rebuild(
        memoryd_home, embedder) -> None:
    running = start_daemon(embedder)
    with Client(running.socket) as c:
        first = [c.remember("a", "notes", text)["entry"]["id"] for text in FACTS[:3]]
    running.stop()
    ledger = memoryd_home / "ledger" / "a.jsonl"
    fragment = b'{"entry": {"agent": "a", "text": "never acknow'
    with ledger.open("ab") as handle:  # a crash mid-append: half a line, no newline
        handle.write(fragment)
    running = start_daemon(embedder)
    with Client(running.socket) as c:
        after = [c.remember("a", "notes", text)["entry"]["id"] for text in FACTS[3:5]]
        health = c.status()["health"]
    running.stop()
    assert not ledger_problems(memoryd_home / "ledger")
    assert sorted(stored_texts(memoryd_home, "a")) == sorted(FACTS[:5])
    assert len(set(first + after)) == 5
    # the fragment is not destroyed: it is in a side file, out of the synced ledger directory,
    # which `memory status` names until it is deleted
    [aside] = (memoryd_home / "torn").iterdir()
    assert aside.name.startswith("ledger-a.jsonl.") and aside.read_bytes() == fragment
    lines = next(c for c in health["checks"] if c["check"] == "ledger lines")
    assert lines["status"] == "warning" and str(aside) in lines["detail"]


@pytest.mark.parametrize("count", [1, 20])
def test_a_whole_last_line_without_its_newline_is_kept(memoryd_home, embedder,
                                                       count: int) -> None:
    """A tool or an editor rewrote the ledger without its final newline: the last record is
    whole and its checksum valid, an acknowledged write. It was cut off as torn, at the next
    start and by `memoryd reindex`, and lost for good."""
    running = start_daemon(embedder)
    with Client(running.socket) as c:
        for i in range(count):
            c.remember("solo", "notes", f"fact {i}: the deploy key lives in vault path kv/{i}")
    running.stop()
    ledger = memoryd_home / "ledger" / "solo.jsonl"
    data = ledger.read_bytes()
    ledger.write_bytes(data[:-1])  # only the final newline dropped
    running = start_daemon(embedder)
    with Client(running.socket) as c:
        assert c.list_entries(agent="solo")["total"] == count
    running.stop()
    assert ledger.read_bytes() == data  # mended: the newline is back, nothing cut
    texts = stored_texts(memoryd_home, "solo")  # a rebuild from the ledger alone
    assert f"fact {count - 1}: the deploy key lives in vault path kv/{count - 1}" in texts
    assert len(texts) == count
    assert not (memoryd_home / "torn").exists()


def test_a_whole_last_line_without_its_newline_survives_a_reindex(memoryd_home,
                                                                  embedder) -> None:
    """The same, found by `memoryd reindex` before any start."""
    running = start_daemon(embedder)
    with Client(running.socket) as c:
        c.remember("solo", "notes", "The only fact: deploy key lives in vault path kv/solo")
    running.stop()
    ledger = memoryd_home / "ledger" / "solo.jsonl"
    ledger.write_bytes(ledger.read_bytes()[:-1])
    assert stored_texts(memoryd_home, "solo") == [
        "The only fact: deploy key lives in vault path kv/solo"]


def test_a_damaged_line_is_reported_and_hides_nothing_after_it(memoryd_home, embedder) -> None:
    running = start_daemon(embedder)
    with Client(running.socket) as c:
        for text in FACTS[:5]:
            assert c.remember("a", "notes", text)["stored"]
    running.stop()
    ledger = memoryd_home / "ledger" / "a.jsonl"
    lines = ledger.read_bytes().splitlines(keepends=True)
    lines[2] = lines[2].replace(b"Never force-push", b"Never force-pull")  # a damaged byte
    ledger.write_bytes(b"".join(lines))
    problems = ledger_problems(memoryd_home / "ledger")
    assert [(p.kind, p.offset) for p in problems] == [("checksum", len(lines[0]) + len(lines[1]))]
    assert sorted(stored_texts(memoryd_home, "a")) == sorted(FACTS[:2] + FACTS[3:5])
    assert "CRC-32 does not match" in run_memoryd("reindex", "--no-vectors").stderr  # logged


def test_a_write_glued_to_a_torn_fragment_by_an_older_version_is_recovered(memoryd_home) -> None:
    """What D1 left in existing ledgers: a fragment with the next acknowledged record after it."""
    entry = {"uid": "0000000000100000001", "agent": "a", "project": None, "kind": "note",
             "category": "notes", "key": None, "text": "the swallowed write", "hash": "h1",
             "confidence": 0.9, "tags": [], "status": "active", "created": 1.0, "updated": 1.0,
             "writer": "a", "via": "api", "session": None, "source": None, "line_start": None,
             "line_end": None, "message_id": None, "superseded_by": None, "polarity": None}
    record = json.dumps({"op": "remember", "ts": 1.0, "entry": entry}, sort_keys=True)
    (memoryd_home / "ledger").mkdir(mode=0o700)
    (memoryd_home / "ledger" / "a.jsonl").write_text('{"entry": {"agent": "a", "te' + record + "\n")
    assert stored_texts(memoryd_home, "a") == ["the swallowed write"]
    assert [p.kind for p in ledger_problems(memoryd_home / "ledger")] == ["recovered"]


def test_agent_names_differing_only_in_case_never_share_a_ledger(memoryd_home, embedder) -> None:
    running = start_daemon(embedder)
    try:
        with Client(running.socket) as c:
            c.remember("Bob", "notes", "Bob prefers tabs")
            with pytest.raises(MemorydError) as refused:
                c.remember("bob", "notes", "bob prefers spaces")
            assert refused.value.code == "bad_params" and "only in case" in refused.value.message
            assert c.remember("Bob", "notes", "Bob also likes vim")["stored"]
    finally:
        running.stop()
    assert sorted(p.name for p in (memoryd_home / "ledger").iterdir()) == ["Bob.jsonl"]


def test_a_ledger_shared_by_case_on_macos_replays_both_agents(memoryd_home, embedder) -> None:
    """Simulated APFS/HFS+: an older version wrote bob's records into the file Bob.jsonl."""
    running = start_daemon(embedder)
    with Client(running.socket) as c:
        c.remember("Bob", "notes", "Bob prefers tabs")
    running.stop()
    path = memoryd_home / "ledger" / "Bob.jsonl"
    record = json.loads(path.read_bytes().splitlines()[0])
    record["entry"].update(agent="bob", uid="0000000000200000002", text="bob prefers spaces",
                           hash="other", writer="bob")
    with path.open("ab") as handle:  # what "bob.jsonl" became on a case-insensitive filesystem
        handle.write(encode_record(record))
    assert stored_texts(memoryd_home, "bob") == ["bob prefers spaces"]
    assert stored_texts(memoryd_home, "Bob") == ["Bob prefers tabs"]
    assert [p.kind for p in ledger_problems(path.parent)] == ["shared"]


def test_two_ledgers_differing_in_case_from_an_older_version_stay_writable(
        memoryd_home, embedder) -> None:
    """On a case-sensitive filesystem an older version made both Bob.jsonl and bob.jsonl."""
    running = start_daemon(embedder)
    with Client(running.socket) as c:
        c.remember("Bob", "notes", "Bob prefers tabs")
    running.stop()
    ledger = memoryd_home / "ledger"
    record = json.loads((ledger / "Bob.jsonl").read_bytes().splitlines()[0])
    record["entry"].update(agent="bob", uid="0000000000300000003", text="bob prefers spaces",
                           hash="other", writer="bob")
    (ledger / "bob.jsonl").write_bytes(encode_record(record))
    running = start_daemon(embedder)
    try:
        with Client(running.socket) as c:
            assert c.remember("bob", "notes", "bob also uses emacs")["stored"]
            assert c.remember("Bob", "notes", "Bob also uses vim")["stored"]
            with pytest.raises(MemorydError):
                c.remember("BOB", "notes", "a third spelling")
    finally:
        running.stop()
