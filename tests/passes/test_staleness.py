"""The staleness pass: entries naming what their project no longer has are marked, and unmarked
when it is back. Real git repositories in tmp dirs, the real daemon, the real `memory` command."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from memoryd_client import Client

from memoryd.passes import staleness
from memoryd.passes.references import references
from memoryd.scheduling import paced
from tests.conftest import run_cli, spawn_daemon, wait_until

APP = '''\
import argparse


def frobnicate(text):
    return text.upper()


parser = argparse.ArgumentParser()
parser.add_argument("--dry-run", action="store_true")
'''


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=test", "-c", "user.email=test@localhost",
         "-c", "commit.gpgsign=false", "-C", str(repo), *args],
        check=True, capture_output=True, text=True).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "shop"
    (root / "src").mkdir(parents=True)
    (root / "src/app.py").write_text(APP)
    (root / "README.md").write_text("Set $SHOP_TOKEN before a release.\n")
    (root / ".gitignore").write_text(".env\n")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "start")
    return root


def staleness_run(client: Client, **options: object) -> dict:
    summary = client.pass_run("staleness", **options)
    assert summary["status"] == "done", summary
    return summary


def remember_parsing(client: Client, repo: Path) -> dict:
    return client.remember("coder", "layout", "Parsing lives in src/app.py.", cwd=str(repo))["entry"]


def stale(client: Client, entry_id: str) -> str | None:
    return client.get(entry_id)["stale"]


# -- what an entry names -----------------------------------------------------------------

@pytest.mark.parametrize(("text", "expected"), [
    ("The entry point is src/app.py; tests live in tests/.",
     ["path:src/app.py", "path:tests/"]),
    ("Edit `config/settings.toml`, `Makefile` and `.env`, see memoryd/store/database.py:120.",
     ["path:.env", "path:Makefile", "path:config/settings.toml",
      "path:memoryd/store/database.py"]),
    ("Call `Store.set_meta()` (or frobnicate()) and read `MAX_PARTS`.",
     ["word:MAX_PARTS", "word:Store", "word:frobnicate", "word:set_meta"]),
    ("Pass --dry-run, or `memory pass run staleness --agent coder`.",
     ["flag:--agent", "flag:--dry-run"]),
    ("Set $SHOP_TOKEN and `${SHOP_URL}`.", ["env:SHOP_TOKEN", "env:SHOP_URL"]),
    ("`pip install requests 'httpx>=0.27' -r requirements.txt` then pip install rich and go",
     ["package:httpx", "package:requests", "package:rich", "path:requirements.txt"]),
    ("`from memoryd.passes import staleness`", ["word:memoryd", "word:passes", "word:staleness"]),
])
def test_references_are_found(text: str, expected: list[str]) -> None:
    assert [ref.key for ref in references(text)] == expected


@pytest.mark.parametrize("text", [
    "Use the read/write lock and/or the client/server split.",  # English, not paths
    "See https://example.com/docs/app.py and write to ana@example.com.",
    "Globs like `*.py`, `src/**/*.ts`, `<name>.md`, `{agent}/notes.md` and `../up.py`.",
    "Numbers and versions: `0.9`, `v1.2.3`, 2024/01/02, e.g. this.",
    "```\nimport secret_module\nold/removed.py --gone-flag\n```",
    "$HOME and `$PATH` and ~/.bashrc belong to the system.",
    "We ran pip install -e . first, then `self` and `None` and `x` did nothing.",
])
def test_what_no_project_owns_is_left_alone(text: str) -> None:
    assert references(text) == []


# -- the working tree ----------------------------------------------------------------------

def test_the_tree_knows_paths_by_any_suffix_untracked_and_ignored_files(repo: Path) -> None:
    (repo / "backend/tests").mkdir(parents=True)
    (repo / "backend/tests/conftest.py").write_text("import pytest\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "backend")
    (repo / "notes.txt").write_text("new, not added yet\n")
    (repo / ".env").write_text("SHOP_TOKEN=1\n")  # ignored
    (repo / "README.md").unlink()  # deleted, not committed: gone all the same
    found = staleness.fingerprint(str(repo))
    assert found is not None
    tree = staleness.build_tree(found, skip=set())
    for there in ("src/app.py", "app.py", "src", "src/", "tests/conftest.py", "backend/tests",
                  "notes.txt", ".env", str(repo / "src/app.py")):
        assert tree.has_path(there) is True, there
    for gone in ("README.md", "src/main.py", "tests/app.py", "lib/"):
        assert tree.has_path(gone) is False, gone
    assert tree.has_path("/etc/hosts") is None  # outside the project: cannot tell
    assert str(repo / "README.md") not in tree.texts and str(repo / "notes.txt") in tree.texts


def test_listing_a_big_checkout_gives_way_to_searches_between_a_few_hundred_paths(
        repo: Path, monkeypatch) -> None:
    """Git's status and the checkout's listing (40 ms of pure Python for 5,000 files) are
    taken with pauses for the searches in flight between them; the tree is the same."""
    for number in range(20):
        (repo / f"src/module_{number}.py").write_text(f"def handle_{number}(): pass\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "modules")
    alone = staleness.build_tree(staleness.fingerprint(str(repo)), skip=set())
    monkeypatch.setattr(staleness, "GIVE_WAY_PATHS", 4)
    pauses: list[int] = []
    found = paced(lambda: pauses.append(1), staleness.fingerprint, str(repo))
    assert len(pauses) == 1  # before git's status
    tree = paced(lambda: pauses.append(1), staleness.build_tree, found, set())
    assert len(pauses) >= 1 + 23 // 4
    assert (tree.files, tree.dirs, sorted(tree.texts)) == \
        (alone.files, alone.dirs, sorted(alone.texts))
    assert tree.has_path("module_7.py") is True and len(tree.texts) == 23


def test_words_are_read_from_text_files_only(tmp_path: Path) -> None:
    (tmp_path / "cli.py").write_text('add_argument("--dry-run")\nrun_all()  # see tomli-w.\n')
    (tmp_path / "blob.bin").write_bytes(b"\0hidden_name")
    (tmp_path / "huge.js").write_text("huge_name " * 200_000)
    files = [str(tmp_path / n) for n in ("cli.py", "blob.bin", "huge.js")]
    wanted = {"dry-run", "run_all", "tomli-w", "run", "hidden_name", "huge_name", "argument"}
    assert staleness.read_words(files, wanted) == {"dry-run", "run_all", "tomli-w", "run"}


def test_the_fingerprint_changes_with_every_edit(repo: Path) -> None:
    first = staleness.fingerprint(str(repo))
    assert first is not None and staleness.fingerprint(str(repo)).digest == first.digest
    (repo / "src/app.py").write_text(APP + "\n# one\n")
    edited = staleness.fingerprint(str(repo))
    (repo / "src/app.py").write_text(APP + "\n# two, longer\n")  # `git status` says M twice
    assert len({first.digest, edited.digest, staleness.fingerprint(str(repo)).digest}) == 3
    assert staleness.fingerprint(str(repo.parent / "nowhere")) is None
    (repo.parent / "plain").mkdir()
    assert staleness.fingerprint(str(repo.parent / "plain")) is None  # no git work tree


def test_every_checkout_of_the_project_counts(repo: Path) -> None:
    feature = repo.parent / "shop-feature"
    git(repo, "worktree", "add", "-q", "-b", "feature", str(feature))
    (feature / "src/new.py").write_text("def fresh(): ...\n")
    git(feature, "add", "-A")
    git(feature, "commit", "-q", "-m", "feature")
    found = staleness.fingerprint(str(repo))
    assert found is not None and [c.path for c in found.checkouts] == [str(repo), str(feature)]
    tree = staleness.build_tree(found, skip=set())
    assert tree.has_path("src/new.py") and tree.has_path(str(feature / "src/new.py"))
    assert tree.texts.count(str(feature / "src/app.py")) == 0  # same content: read once
    git(feature, "commit", "-q", "--allow-empty", "-m", "more")
    assert staleness.fingerprint(str(repo)).digest != found.digest


# -- the pass, through the daemon ------------------------------------------------------------

def test_a_stale_mark_appears_when_a_named_file_is_deleted_and_goes_when_it_is_restored(
        client: Client, repo: Path) -> None:
    entry = client.remember("coder", "layout", "The CLI entry point is src/app.py; keep it thin.",
                            cwd=str(repo))["entry"]
    assert entry["project"] == str(repo)
    first = staleness_run(client)
    assert first["counts"]["entries checked"] == 1 and stale(client, entry["id"]) is None

    (repo / "src/app.py").unlink()
    marked = staleness_run(client)
    assert marked["counts"]["marked"] == 1
    assert stale(client, entry["id"]) == "gone: `src/app.py`"
    [hit] = client.search("CLI entry point", agent="coder")["hits"]
    assert hit["stale"] == "gone: `src/app.py`"
    shown = run_cli("get", entry["id"])
    assert shown.returncode == 0 and "[stale: gone: `src/app.py`]" in shown.stdout
    searched = run_cli("search", "coder", "-", "CLI entry point", "--all")
    assert "[stale: gone: `src/app.py`]" in searched.stdout
    change = client.pass_show(marked["run"])["changes"][0]
    assert (change["action"], change["before"], change["after"]) == \
        ("mark stale", {"stale": None}, {"stale": "gone: `src/app.py`"})

    git(repo, "checkout", "--", "src/app.py")
    lifted = staleness_run(client)
    assert lifted["counts"]["lifted"] == 1 and stale(client, entry["id"]) is None


def test_names_in_code_count_once_seen_and_memory_files_do_not_keep_them(
        client: Client, repo: Path) -> None:
    (repo / "CLAUDE.md").write_text("# Rules\n- `frobnicate()` upper-cases the input.\n")
    git(repo, "add", "CLAUDE.md")
    git(repo, "commit", "-q", "-m", "rules")
    assert run_cli("sources", "add", "--project", str(repo)).returncode == 0
    note = client.remember("coder", "cli", "Run with --dry-run first; `frobnicate()` does the "
                           "work; `later_helper` comes next week; $SHOP_TOKEN must be set.",
                           cwd=str(repo))["entry"]

    def rule() -> dict:
        hits = client.search("frobnicate upper-cases", agents=["*"])["hits"]
        found = [h for h in hits if h["source"] == str(repo / "CLAUDE.md")]
        assert found
        return found[0]

    wait_until(lambda: _succeeds(rule))
    staleness_run(client)
    assert stale(client, note["id"]) is None and rule()["stale"] is None

    (repo / "src/app.py").write_text(APP.replace("frobnicate", "shout").replace("dry-run", "x"))
    staleness_run(client)
    # CLAUDE.md still says frobnicate, but a memory file is no evidence for itself
    assert rule()["stale"] == "gone: `frobnicate`"
    assert stale(client, note["id"]) == "gone: `--dry-run`, `frobnicate`"  # never seen: not gone

    (repo / "README.md").write_text("Nothing about tokens.\n")
    git(repo, "checkout", "--", "src/app.py")
    staleness_run(client)
    assert rule()["stale"] is None and stale(client, note["id"]) == "gone: `$SHOP_TOKEN`"


def _succeeds(fn) -> bool:  # type: ignore[no-untyped-def]
    try:
        fn()
    except AssertionError:
        return False
    return True


def test_dry_run_changes_nothing(client: Client, repo: Path) -> None:
    entry = remember_parsing(client, repo)
    staleness_run(client)
    (repo / "src/app.py").unlink()
    preview = staleness_run(client, dry_run=True)
    assert preview["dry_run"] and preview["counts"]["preview"] == 1
    assert stale(client, entry["id"]) is None
    [change] = client.pass_show(preview["run"])["changes"]
    assert change["state"] == "preview" and change["after"] == {"stale": "gone: `src/app.py`"}
    assert staleness_run(client)["counts"]["marked"] == 1  # the preview did not count as checked


def test_undo_of_a_staleness_run_lifts_and_restores_its_marks(client: Client, repo: Path) -> None:
    entry = remember_parsing(client, repo)
    staleness_run(client)
    (repo / "src/app.py").unlink()
    marked = staleness_run(client)
    assert stale(client, entry["id"]) == "gone: `src/app.py`"

    git(repo, "checkout", "--", "src/app.py")
    lifted = staleness_run(client)
    assert stale(client, entry["id"]) is None
    undo = run_cli("undo", lifted["run"])
    assert undo.returncode == 0, undo.stderr
    assert stale(client, entry["id"]) == "gone: `src/app.py`"  # the mark is back
    again = staleness_run(client)  # an undone change is not made again for the same reason
    assert again["counts"].get("kept as undone") == 1
    assert stale(client, entry["id"]) == "gone: `src/app.py`"

    assert run_cli("undo", marked["run"]).returncode == 0
    assert stale(client, entry["id"]) is None


def test_an_unchanged_project_costs_a_fingerprint_and_new_entries_only(
        client: Client, repo: Path) -> None:
    client.remember("coder", "layout", "Parsing lives in src/app.py.", cwd=str(repo))
    assert staleness_run(client)["counts"]["entries checked"] == 1
    unchanged = staleness_run(client)["counts"]
    assert unchanged.get("projects unchanged") == 1 and "entries checked" not in unchanged
    newer = client.remember("coder", "release", "Set $SHOP_TOKEN before a release.",
                            cwd=str(repo))["entry"]
    counts = staleness_run(client)["counts"]
    assert counts["entries checked"] == 1 and counts["references"] == 1  # the new entry only

    (repo / "README.md").write_text("Releases need $SHOP_TOKEN.\n")  # modified: full check
    assert staleness_run(client)["counts"]["entries checked"] == 2
    (repo / "README.md").write_text("Releases need a token.\n")  # modified again, same status
    staleness_run(client)
    assert stale(client, newer["id"]) == "gone: `$SHOP_TOKEN`"


def test_a_full_run_checks_an_unchanged_project_again(client: Client, repo: Path) -> None:
    client.remember("coder", "layout", "Parsing lives in src/app.py.", cwd=str(repo))
    client.remember("coder", "release", "Set $SHOP_TOKEN before a release.", cwd=str(repo))
    assert staleness_run(client)["counts"]["entries checked"] == 2
    assert staleness_run(client)["counts"].get("projects unchanged") == 1
    full = staleness_run(client, full=True)["counts"]
    assert full["entries checked"] == 2 and full["references"] == 2
    assert "projects unchanged" not in full
    assert staleness_run(client)["counts"].get("projects unchanged") == 1  # recorded again


def test_a_project_and_an_agent_can_be_checked_alone(client: Client, repo: Path,
                                                     tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q")
    (other / "lib.py").write_text("x = 1\n")
    git(other, "add", "-A")
    git(other, "commit", "-q", "-m", "one")
    mine = remember_parsing(client, repo)
    theirs = client.remember("coder", "layout", "All of it is lib.py.", cwd=str(other))["entry"]
    tester = client.remember("tester", "layout", "Test src/app.py first.", cwd=str(repo))["entry"]
    staleness_run(client)
    (repo / "src/app.py").unlink()
    (other / "lib.py").unlink()
    assert staleness_run(client, project=str(other))["counts"]["projects"] == 1
    assert stale(client, theirs["id"]) == "gone: `lib.py`" and stale(client, mine["id"]) is None
    staleness_run(client, agent="tester")
    assert stale(client, tester["id"]) == "gone: `src/app.py`" and stale(client, mine["id"]) is None
    staleness_run(client)  # an agent's run did not count as the project's check
    assert stale(client, mine["id"]) == "gone: `src/app.py`"


def test_the_memory_block_shows_stale_entries_last_with_what_is_gone(
        client: Client, repo: Path) -> None:
    client.remember("claude-code", "release", "Tag releases with the date.", kind="lesson",
                    cwd=str(repo))
    client.remember("claude-code", "layout", "Never edit src/app.py by hand.", kind="lesson",
                    polarity="negative", cwd=str(repo))
    staleness_run(client)
    before = client.context("claude-code", cwd=str(repo))["text"]
    assert before.index("src/app.py") < before.index("Tag releases")  # newest first otherwise
    (repo / "src/app.py").unlink()
    staleness_run(client)
    text = client.context("claude-code", cwd=str(repo))["text"]
    assert "“Never edit src/app.py by hand.” [layout] (⚠ stale: gone: `src/app.py`; verify " \
           "before acting)" in text
    assert text.index("Tag releases") < text.index("Never edit src/app.py")
    small = client.context("claude-code", cwd=str(repo), budget=len(text) - 20)["text"]
    assert "Tag releases" in small and "Never edit" not in small  # dropped first


def test_old_entries_carry_their_age_in_search_and_get(client: Client) -> None:
    now = time.time()
    old = client.remember("coder", "deploy", "Deploys go through the blue pipeline.",
                          created=now - 100 * 86400)["entry"]
    aging = client.remember("coder", "deploy", "Staging resets every Sunday night.",
                            created=now - 40 * 86400)["entry"]
    fresh = client.remember("coder", "deploy", "The deploy bot is called Hermes.")["entry"]
    assert client.get(old["id"])["age_note"] == "100d old: verify before acting"
    assert client.get(aging["id"])["age_note"] == "40d old"
    assert client.get(fresh["id"])["age_note"] is None
    notes = {h["id"]: h["age_note"] for h in client.search("deploys pipeline staging bot",
                                                           agent="coder", limit=5)["hits"]}
    assert notes[old["id"]] == "100d old: verify before acting" and notes[fresh["id"]] is None
    shown = run_cli("get", old["id"]).stdout
    assert "(100d old: verify before acting)" in shown


def test_mcp_search_shows_stale_marks_and_age_notes(daemon, client: Client, repo: Path) -> None:
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    entry = client.remember("coder", "layout", "The CLI entry point is src/app.py.",
                            cwd=str(repo), created=time.time() - 100 * 86400)["entry"]
    staleness_run(client)
    (repo / "src/app.py").unlink()
    staleness_run(client)

    async def search() -> list[dict]:
        params = StdioServerParameters(command=sys.executable,
                                       args=["-m", "memoryd_client", "mcp", "--agent", "coder"],
                                       env=dict(os.environ), cwd=repo)  # the agent's workspace
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as mcp:
                await mcp.initialize()
                result = await mcp.call_tool("memory_search", {"query": "CLI entry point"})
                return [line for c in result.content for line in c.text.splitlines()]

    [hit] = [line for line in asyncio.run(search()) if entry["id"] in line]
    assert "(note/layout, 100d old: verify before acting, stale: gone: `src/app.py`; verify " \
           "before relying on it): The CLI entry point is src/app.py." in hit


def test_a_symlink_to_a_fifo_in_a_project_neither_hangs_the_pass_nor_the_stop(
        memoryd_home: Path, repo: Path) -> None:
    """R8 of the reliability report: an untracked symlink to a FIFO was opened with a blocking
    open(), so the pass never finished, every later pass waited behind it, and SIGTERM left
    the process running (a worker thread stuck in the open)."""
    os.mkfifo(repo / "a.fifo")
    (repo / "notes-link.txt").symlink_to(repo / "a.fifo")
    (repo / "src" / "pipe").symlink_to("/dev/zero")  # a device: never read either
    proc = spawn_daemon(memoryd_home)
    try:
        with Client(memoryd_home / "memoryd.sock", timeout_s=20) as client:
            entry = client.remember("coder", "layout", "Call `frobnicate()` in src/app.py.",
                                    cwd=str(repo))["entry"]
            checked = client.pass_run("staleness", full=True)
            assert checked["status"] == "done" and checked["counts"]["entries checked"] == 1
            assert stale(client, entry["id"]) is None
            # the words are still read from the other files: a name that goes is marked
            (repo / "src/app.py").write_text(APP.replace("frobnicate", "shout"))
            assert client.pass_run("staleness", full=True)["status"] == "done"
            assert stale(client, entry["id"]) == "gone: `frobnicate`"
            assert client.pass_run("notebooks")["status"] == "done"  # nothing waits behind it
        stopped = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=15) == 0
        assert time.monotonic() - stopped < 15
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
