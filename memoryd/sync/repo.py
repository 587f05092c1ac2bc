"""The sync repository: the state dir as a git worktree (docs/sync.md).

What is in it is what a rebuild of the index starts from, and nothing else (``.gitignore``
lists what is tracked, not what is left out, so a file memoryd adds later is never synced by
mistake): ``ledger/``, ``agents/`` (the memory tools' directory, when ``[tools] memory_dir``
is left at its default), ``transcripts/`` and ``history/``. Never the database, the socket, the
logs, the configuration or ``sources.toml`` (paths of this machine), nor ``passes.jsonl``
(the passes' run log numbers its runs and changes per machine; the changes a pass made to an
entry travel as ledger records).

A merge is made off the worktree (:meth:`SyncRepo.merge_off`: ``git merge-tree
--write-tree``, git 2.38 or newer), on a worker thread while searches and writes go on: it
reads commits and writes git objects, never a file of the state dir. Only moving the worktree
to the merge (:meth:`SyncRepo.advance`, a fast-forward) runs on the database thread, where
nothing writes the files meanwhile. With an older git, :meth:`SyncRepo.merge` merges in the
worktree, on the database thread. Either is put back whole when it fails: the worktree is at
the merged commit or at the commit before it, never half-merged. A conflict in a markdown
file keeps both versions: ours in the file, theirs in a conflict copy beside it
(:func:`conflict_copy_name`).

git merges a file only when both sides changed it: one changed on their side alone is taken
as it is, a fast-forward takes all of theirs, and memoryd's driver never sees it. So before
either merge, every ledger and archive that git would take so is merged by memoryd
(:meth:`SyncRepo.guard`), and where that keeps a line their copy lacks, or leaves out a
damaged line of theirs, the merge holds memoryd's result (a merge commit, not a
fast-forward): a copy that lost lines never takes them from this machine, and the next push
gives them back. What was kept back or refused is said (:attr:`Merged.refused`).

A remote whose branch no longer holds the commit this machine last synced with was rewritten
(force-pushed, to take a secret out of its history): a sync refuses to merge with it
(:meth:`SyncRepo.rewritten`), since this machine's history would bring back what the rewrite
took out.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memoryd.store.durable import replace_file
from memoryd.sync import git
from memoryd.sync.driver import REPORT_ENV
from memoryd.sync.git import SyncError
from memoryd.sync.merge import appended, merge_file

BRANCH = "main"
REMOTE = "origin"
#: The directories of the state dir that are synced.
SYNCED = ("ledger", "agents", "transcripts", "history")
GITIGNORE = """\
# memoryd sync (docs/sync.md): only the durable files are tracked; the database, the socket,
# the logs, the configuration and this machine's run log of the passes never are.
/*
!/.gitignore
!/.gitattributes
!/ledger/
!/agents/
!/transcripts/
!/history/
*.tmp
.*.tmp
"""
GITATTRIBUTES = """\
# memoryd's merge drivers (docs/sync.md): ledgers and archives merge as the union of their
# records; markdown merges line by line, and a conflict keeps both versions.
/ledger/*.jsonl merge=memoryd-ledger -text
/transcripts/*.jsonl.gz merge=memoryd-archive -text -diff
/history/*.jsonl.gz merge=memoryd-archive -text -diff
"""
#: What git says when a push was refused because another push got there first: its branch
#: moved, or was locked while another push updated it ("cannot lock ref … is at X but
#: expected Y"), which the next round, fetched and merged again, gets past.
PUSHED_FIRST = ("[rejected]", "non-fast-forward", "fetch first", "cannot lock ref",
                "(failed to update ref)")
CONFLICT_MARK = ".sync-conflict-"
STATE_FILE = "memoryd-sync.json"
#: Where the merge driver says what it kept back or refused, during one merge.
REPORT_FILE = "memoryd-merge-report.jsonl"
#: The state's key for the commit this machine last synced with (the remote's branch then).
SYNCED_KEY = "synced"


def merged_kind(path: str) -> str | None:
    """Which of memoryd's merges a synced file takes: ``ledger``, ``archive``, or None (git's
    own, line by line)."""
    top, _, name = path.partition("/")
    if "/" in name:
        return None
    if top == "ledger" and name.endswith(".jsonl"):
        return "ledger"
    if top in ("transcripts", "history") and name.endswith(".jsonl.gz"):
        return "archive"
    return None


def conflict_copy_name(path: str, theirs: str, now: float) -> str:
    """Where the other side's version of a conflicting file goes: beside it, under a name the
    watcher does not index (``notes.md.sync-conflict-20261130T101500Z-1a2b3c4``)."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now))
    return f"{path}{CONFLICT_MARK}{stamp}-{theirs[:7]}"


def refusal(path: str, counts: dict[str, int]) -> str:
    """What a merge kept back or refused in one file, as ``memory sync`` says it."""
    archive = merged_kind(path) == "archive"
    unit = "record" if archive else "line"
    why = " (that copy is damaged)" if archive else " (only a purge record takes one out)"

    def some(n: int, what: str, rest: str) -> str:
        return f"{n} {what}{'' if n == 1 else 's'} {rest.format('is' if n == 1 else 'are')}"

    said = []
    if counts.get("lacking_theirs"):
        said.append(some(counts["lacking_theirs"], unit, "this machine holds that the remote's "
                         "copy lacks {} kept") + why)
    if counts.get("lacking_ours"):
        said.append(some(counts["lacking_ours"], unit, "the remote holds that this machine's "
                         "copy lacks {} kept") + why)
    if counts.get("refused"):
        said.append(some(counts["refused"], f"damaged {unit}", "of the remote's copy {} not "
                         "taken"))
    if counts.get("deleted"):
        said.append("the remote's copy was deleted; this machine's is kept")
    return f"{path}: {'; '.join(said)}"


@dataclass(frozen=True)
class Merged:
    """What a merge did: the commit before it and after it, the conflict copies it wrote
    (paths relative to the state dir), and what it kept back or refused (:func:`refusal`)."""

    before: str
    after: str
    conflicts: tuple[str, ...] = ()
    refused: tuple[str, ...] = ()


@dataclass(frozen=True)
class Guard:
    """What memoryd's merge changes in a merge git would make (:meth:`SyncRepo.guard`): the
    blob each of those files holds instead, and what was kept back or refused."""

    replace: dict[str, str]
    said: tuple[str, ...] = ()


class SyncRepo:
    """The git repository of one state dir."""

    def __init__(self, root: Path) -> None:
        self.root = root
        #: what git said when :meth:`push` last returned False
        self.refused: str | None = None

    @property
    def git_dir(self) -> Path:
        return self.root / ".git"

    @property
    def state_path(self) -> Path:
        return self.git_dir / STATE_FILE

    @property
    def initialized(self) -> bool:
        return self.state_path.exists()

    def state(self) -> dict[str, Any]:
        """What the last syncs left: remote, last sync, last error, conflict copies."""
        try:
            return dict(json.loads(self.state_path.read_text()))
        except (OSError, ValueError):
            return {}

    def save_state(self, **changes: Any) -> dict[str, Any]:
        state = {**self.state(), **changes}
        replace_file(self.state_path, json.dumps(state, indent=1, sort_keys=True).encode())
        return state

    def git(self, *args: str, check: bool = True,
            timeout: float = git.LOCAL_TIMEOUT_S) -> str:
        return git.run(self.root, *args, check=check, timeout=timeout).stdout.decode(
            "utf-8", "replace").strip()

    # -- init ---------------------------------------------------------------------------

    def init(self, remote: str) -> dict[str, Any]:
        """Make the state dir a repository with ``remote`` as origin (again: change the
        remote). Commits nothing: the caller commits on the database thread."""
        if self.git_dir.exists() and not self.initialized:
            raise SyncError(f"{self.git_dir} exists and is not memoryd's sync repository; "
                            "move it away first")
        self.root.mkdir(parents=True, mode=0o700, exist_ok=True)
        created = not self.git_dir.exists()
        if created:
            self.git("init", "--quiet", f"--initial-branch={BRANCH}")
        for name, text in ((".gitignore", GITIGNORE), (".gitattributes", GITATTRIBUTES)):
            path = self.root / name
            if not path.exists() or path.read_text() != text:
                replace_file(path, text.encode(), 0o600)
        self.configure()
        if self.git("remote", check=False).splitlines().count(REMOTE):
            if self.state().get("remote") != remote:  # another remote: its own history
                git.run(self.root, "update-ref", "-d", f"refs/remotes/{REMOTE}/{BRANCH}",
                        check=False)
                self.save_state(**{SYNCED_KEY: None})
            self.git("remote", "set-url", REMOTE, remote)
        else:
            self.git("remote", "add", REMOTE, remote)
        self.save_state(remote=remote, initialized=self.state().get("initialized", time.time()),
                        host=socket.gethostname())
        return {"root": str(self.root), "remote": remote, "created": created}

    def configure(self) -> None:
        """The merge drivers, in the repository's own config (run again at every sync: the
        Python that runs memoryd may have moved)."""
        command = f"{sys.executable} -m memoryd.sync.driver"
        for kind in ("ledger", "archive"):
            self.git("config", f"merge.memoryd-{kind}.name", f"memoryd {kind} union")
            self.git("config", f"merge.memoryd-{kind}.driver",
                     f"{command} {kind} %O %A %B %P")
        self.git("config", "gc.auto", "256")

    # -- the steps of a sync ------------------------------------------------------------

    def commit(self, message: str) -> bool:
        """Commit every change to the synced files; False when there was none. Runs on the
        database thread: no write is half-appended while git reads the files."""
        self.git("add", "--all", "--", ".gitignore", ".gitattributes",
                 *[name for name in SYNCED if (self.root / name).exists()])
        if git.run(self.root, "diff", "--cached", "--quiet", check=False).returncode == 0 \
                and self.head() is not None:
            return False
        self.git("commit", "--quiet", "--no-verify", "--allow-empty", "-m", message)
        return True

    def head(self) -> str | None:
        done = git.run(self.root, "rev-parse", "--verify", "--quiet", "HEAD", check=False)
        return done.stdout.decode().strip() or None

    def fetch(self) -> str | None:
        """The remote's branch (fetched), or None when the remote has none yet."""
        listed = self.git("ls-remote", REMOTE, f"refs/heads/{BRANCH}",
                          timeout=git.NETWORK_TIMEOUT_S)
        if not listed:
            return None
        self.git("fetch", "--quiet", "--no-tags", REMOTE,
                 f"+refs/heads/{BRANCH}:refs/remotes/{REMOTE}/{BRANCH}",
                 timeout=git.NETWORK_TIMEOUT_S)
        return self.git("rev-parse", f"refs/remotes/{REMOTE}/{BRANCH}")

    def contains(self, commit: str) -> bool:
        """Whether HEAD already holds ``commit``."""
        return git.run(self.root, "merge-base", "--is-ancestor", commit, "HEAD",
                       check=False).returncode == 0

    def last_synced(self) -> str | None:
        """The commit this machine last synced with: the remote's branch as the last sync left
        it (for a repository synced before memoryd kept it, the remote's branch as last
        fetched or pushed). Read it before fetching."""
        found = self.state().get(SYNCED_KEY)
        if found:
            return str(found)
        done = git.run(self.root, "rev-parse", "--verify", "--quiet",
                       f"refs/remotes/{REMOTE}/{BRANCH}", check=False)
        return done.stdout.decode().strip() or None

    def rewritten(self, known: str | None, theirs: str | None) -> str | None:
        """Why the remote's branch (``theirs``, fetched; None: it has none) must not be synced
        with: it no longer holds ``known``, the commit this machine last synced with, which
        HEAD still holds, so the remote's history was rewritten (a force-push, to take a
        secret out of it) or the remote emptied, and merging would push the old history
        back. None when it holds it, or when HEAD no longer does (this repository's history
        was rewritten as well: the machine the rewrite was made on). A refusal keeps
        ``known``, so the next sync refuses too."""
        if known is None or (theirs is not None and self._ancestor(known, theirs)) \
                or not self._ancestor(known, "HEAD"):
            return None
        self.save_state(**{SYNCED_KEY: known})
        remote = self.state().get("remote") or REMOTE
        what = (f"the remote's branch {BRANCH} is gone" if theirs is None else
                f"the remote's branch {BRANCH} no longer holds {known[:12]}")
        return (f"{what}, the last commit this machine synced with: the remote's history was "
                "rewritten (force-pushed, as it is to take a secret out of it) or the remote "
                "was emptied. Nothing was merged or pushed: this machine's history would bring "
                "back what the rewrite took out. To sync with the remote as it is now, set "
                f"this machine up again: `mv {self.git_dir} {self.root}/.git.before-rewrite`, "
                f"then `memory sync init {remote}` and `memory sync` (docs/sync.md, \"Purge "
                "and the history\")")

    def _ancestor(self, commit: str, of: str) -> bool:
        return git.run(self.root, "merge-base", "--is-ancestor", commit, of,
                       check=False).returncode == 0

    def push(self) -> bool:
        """Push HEAD; False when the remote moved meanwhile, or another push held its branch
        locked (fetch and merge again). Never forced."""
        done = git.run(self.root, "push", "--quiet", "--porcelain", REMOTE,
                       f"HEAD:refs/heads/{BRANCH}", check=False, timeout=git.NETWORK_TIMEOUT_S)
        if done.returncode == 0:
            return True
        said = (done.stdout + done.stderr).decode("utf-8", "replace")
        if any(sign in said for sign in PUSHED_FIRST):
            self.refused = said.strip()[-600:]
            return False
        raise SyncError(f"git push failed: {said.strip()[-600:]}")

    def merge(self, theirs: str) -> Merged:
        """Merge ``theirs`` into HEAD in the worktree (database thread: for a git older than
        2.38, and for a team's repository, which only shares write). Ledgers and archives go through
        memoryd's drivers, and those git would take from theirs as they are through
        :meth:`guard`; a markdown conflict keeps ours in the file and theirs beside it.
        Anything else that fails puts the worktree back as it was."""
        before = self.head()
        assert before is not None, "commit before merging"
        guard = self.guard(before, theirs)
        report = self._report_file()
        done = git.run(self.root, "merge", "--quiet", "--no-edit", "--allow-unrelated-histories",
                       *(("--no-ff", "--no-commit") if guard.replace else ()),
                       "-m", f"memoryd sync: merge into {socket.gethostname()}", theirs,
                       check=False, env={REPORT_ENV: str(report)})
        conflicts: list[str] = []
        try:
            if done.returncode != 0:
                conflicts = self._keep_both(theirs)
                if not conflicts and not (self.git_dir / "MERGE_HEAD").exists():
                    told = (done.stderr or done.stdout).decode("utf-8", "replace").strip()
                    raise SyncError(f"git merge failed: {told[-600:]}")
            for path, blob in guard.replace.items():
                (self.root / path).parent.mkdir(parents=True, exist_ok=True)
                replace_file(self.root / path, self._blob(blob))
                self.git("add", "--", path)
            if (self.git_dir / "MERGE_HEAD").exists():
                self.git("commit", "--quiet", "--no-verify", "--no-edit")
        except BaseException:
            self.put_back(before)
            raise
        finally:
            said = self._driver_said(report)
        after = self.head()
        assert after is not None
        return Merged(before, after, tuple(conflicts), guard.said + said)

    def merge_off(self, ours: str, theirs: str) -> Merged:
        """Merge ``theirs`` into the commit ``ours`` as a new commit, without touching the
        worktree, the index or HEAD (any thread: writes go on meanwhile; git ≥ 2.38). Ledgers
        and archives go through memoryd's drivers, and those git would take from theirs as
        they are through :meth:`guard`; an unmerged file keeps ours in the file and theirs in
        a conflict copy, as :meth:`merge` does. Returns the commit, not yet checked out
        (:meth:`advance`). When ``ours`` is behind ``theirs`` and the guard changes nothing,
        that is all: it is ``theirs`` (a fast-forward, as ``git merge`` makes it)."""
        guard = self.guard(ours, theirs)
        if not guard.replace and git.run(self.root, "merge-base", "--is-ancestor", ours,
                                         theirs, check=False).returncode == 0:
            return Merged(ours, theirs)
        report = self._report_file()
        try:
            done = git.run(self.root, "merge-tree", "--write-tree", "--no-messages", "-z",
                           "--allow-unrelated-histories", ours, theirs, check=False,
                           env={REPORT_ENV: str(report)})
        finally:
            said = self._driver_said(report)
        fields = done.stdout.split(b"\0")
        if done.returncode not in (0, 1) or not fields[0]:
            told = (done.stderr or done.stdout).decode("utf-8", "replace").strip()
            raise SyncError(f"git merge-tree failed: {told[-600:] or done.returncode}")
        tree = fields[0].decode()
        copies: list[str] = []
        if done.returncode == 1:
            stages: dict[str, dict[int, tuple[str, str]]] = {}
            for item in fields[1:]:
                if not item:
                    break
                info, _, path = item.decode("utf-8", "surrogateescape").partition("\t")
                mode, blob, stage = info.split()
                stages.setdefault(path, {})[int(stage)] = (mode, blob)
            if not stages:
                raise SyncError("git merge-tree found a conflict it did not name")
            tree, copies = self._keep_both_tree(tree, stages, theirs)
        if guard.replace:
            tree = self._edit_tree(tree, [f"100644 {blob}\t{path}"
                                          for path, blob in sorted(guard.replace.items())])
        commit = self.git("commit-tree", tree, "-p", ours, "-p", theirs, "-m",
                          f"memoryd sync: merge into {socket.gethostname()}")
        return Merged(ours, commit, tuple(copies), guard.said + said)

    def guard(self, ours: str, theirs: str) -> Guard:
        """The ledgers and archives git would take from ``theirs`` as they are, without
        memoryd's driver: those only their side changed since the common ancestor (all of
        them, in a fast-forward), added or deleted. Each is merged as the driver merges it;
        where that keeps a record their copy lacks or leaves out a damaged line of theirs,
        the merge must hold memoryd's result (ours as it is, when it holds the same lines),
        and a file they deleted keeps ours. Reads git only (any thread)."""
        found = git.run(self.root, "merge-base", ours, theirs, check=False)
        base = found.stdout.decode().strip() if found.returncode == 0 else None
        old, mine, other = (self._tracked(commit) for commit in (base, ours, theirs))
        replace: dict[str, str] = {}
        said: list[str] = []
        for path in sorted(set(mine) | set(other)):
            kind = merged_kind(path)
            ours_blob, theirs_blob, base_blob = mine.get(path), other.get(path), old.get(path)
            if kind is None or ours_blob == theirs_blob or theirs_blob == base_blob \
                    or ours_blob != base_blob:
                continue  # not theirs alone: the same, ours alone, or both (git's driver)
            if theirs_blob is None:
                assert ours_blob is not None
                replace[path] = ours_blob
                said.append(refusal(path, {"deleted": 1}))
                continue
            ours_data = self._blob(ours_blob) if ours_blob is not None else b""
            theirs_data = self._blob(theirs_blob)
            if appended(kind, ours_data, theirs_data):
                continue  # theirs grew from ours: what git takes is the merge
            merged, report = merge_file(kind, path, ours_data, ours_data, theirs_data)
            if not report.said():
                continue
            same = kind == "ledger" and ours_blob is not None and \
                set(merged.splitlines()) == set(ours_data.splitlines())
            replace[path] = ours_blob if same and ours_blob is not None else \
                git.run(self.root, "hash-object", "-w", "--stdin",
                        data=merged).stdout.decode().strip()
            said.append(refusal(path, report.said()))
        return Guard(replace, tuple(said))

    def _tracked(self, commit: str | None) -> dict[str, str]:
        """The blobs of the synced files ``commit`` holds, by path ({} for None)."""
        if commit is None:
            return {}
        listed = git.run(self.root, "ls-tree", "-r", "-z", commit, "--", *SYNCED).stdout
        found: dict[str, str] = {}
        for item in listed.decode("utf-8", "surrogateescape").split("\0"):
            info, _, path = item.partition("\t")
            if path and merged_kind(path) is not None:
                found[path] = info.split()[2]
        return found

    def _report_file(self) -> Path:
        """A file for the merge driver to say what it kept back or refused, empty."""
        path = self.git_dir / REPORT_FILE
        path.unlink(missing_ok=True)
        return path

    def _driver_said(self, path: Path) -> tuple[str, ...]:
        """What the merge driver said it kept back or refused (:func:`refusal`), the file
        removed."""
        try:
            lines = path.read_text("utf-8").splitlines()
        except OSError:
            return ()
        path.unlink(missing_ok=True)
        said = []
        for line in lines:
            try:
                item = json.loads(line)
            except ValueError:
                continue
            counts = {k: v for k, v in item.items() if isinstance(v, int)}
            said.append(refusal(str(item.get("path") or "a ledger"), counts))
        return tuple(said)

    def _keep_both_tree(self, tree: str, stages: dict[str, dict[int, tuple[str, str]]],
                        theirs: str) -> tuple[str, list[str]]:
        """``tree`` with every unmerged path resolved by keeping both versions, made in an
        index of its own (the worktree's is not touched); returns it and the copies made."""
        entries: list[str] = []
        copies: list[str] = []
        now = time.time()
        for path, blobs in sorted(stages.items()):
            ours, other = blobs.get(2), blobs.get(3)
            if ours is not None:
                entries.append(f"{ours[0]} {ours[1]}\t{path}")
                if other is not None:
                    copy = conflict_copy_name(path, theirs, now)
                    entries.append(f"{other[0]} {other[1]}\t{copy}")
                    copies.append(copy)
            elif other is not None:  # we deleted it, they changed it: theirs is kept
                entries.append(f"{other[0]} {other[1]}\t{path}")
            else:
                base = blobs[min(blobs)]
                entries.append(f"0 {'0' * len(base[1])}\t{path}")
        return self._edit_tree(tree, entries), copies

    def _edit_tree(self, tree: str, entries: list[str]) -> str:
        """``tree`` with ``entries`` (``MODE BLOB\tPATH``; mode 0: the path removed), made in
        an index of its own (the worktree's is not touched)."""
        index = self.git_dir / "memoryd-merge.index"
        env = {"GIT_INDEX_FILE": str(index)}
        index.unlink(missing_ok=True)
        try:
            git.run(self.root, "read-tree", tree, env=env)
            git.run(self.root, "update-index", "-z", "--index-info",
                    data="".join(f"{e}\0" for e in entries).encode("utf-8", "surrogateescape"),
                    env=env)
            return git.run(self.root, "write-tree", env=env).stdout.decode().strip()
        finally:
            index.unlink(missing_ok=True)

    def advance(self, before: str, after: str) -> None:
        """Move the worktree, the index and HEAD from ``before`` to its descendant ``after``
        (database thread: nothing writes the files meanwhile; every local change is
        committed). Git writes only the files that differ. Put back when it fails."""
        if self.head() != before:
            raise SyncError("the repository moved during the sync; run `memory sync` again")
        done = git.run(self.root, "merge", "--ff-only", "--quiet", after, check=False)
        if done.returncode != 0:
            said = (done.stderr or done.stdout).decode("utf-8", "replace").strip()
            self.put_back(before)
            raise SyncError(f"git merge --ff-only failed: {said[-600:]}")

    def _keep_both(self, theirs: str) -> list[str]:
        """Resolve every unmerged path by keeping both versions; returns the copies made."""
        stages: dict[str, dict[int, str]] = {}
        for line in self.git("ls-files", "--unmerged", "-z").split("\0"):
            if not line:
                continue
            info, _, path = line.partition("\t")
            _, blob, stage = info.split()
            stages.setdefault(path, {})[int(stage)] = blob
        copies: list[str] = []
        now = time.time()
        for path, blobs in sorted(stages.items()):
            ours, other = blobs.get(2), blobs.get(3)
            target = self.root / path
            if ours is not None:
                replace_file(target, self._blob(ours))
                if other is not None:
                    copy = conflict_copy_name(path, theirs, now)
                    replace_file(self.root / copy, self._blob(other))
                    copies.append(copy)
                    self.git("add", "--", copy)
            elif other is not None:  # we deleted it, they changed it: theirs is kept
                target.parent.mkdir(parents=True, exist_ok=True)
                replace_file(target, self._blob(other))
            self.git("add", "--all", "--", path)
        return copies

    def _blob(self, blob: str) -> bytes:
        return git.run(self.root, "cat-file", "blob", blob).stdout

    def put_back(self, before: str) -> None:
        """Undo a merge that did not finish (it failed, or the daemon was killed during it):
        the worktree and HEAD as they were at ``before``, where every local change had been
        committed. Call it only before anything is written again (at start, or at once)."""
        (self.git_dir / "index.lock").unlink(missing_ok=True)
        if (self.git_dir / "MERGE_HEAD").exists():
            git.run(self.root, "merge", "--abort", check=False)
        if self.head() == before:
            self.git("reset", "--quiet", "--hard", before)
            git.run(self.root, "clean", "--quiet", "-f", "--",
                    f":(glob)**/*{CONFLICT_MARK}*", check=False)

    def read_at(self, commit: str, path: str) -> bytes:
        """A file as it was in ``commit`` (b"" where it did not exist)."""
        done = git.run(self.root, "cat-file", "blob", f"{commit}:{path}", check=False)
        return done.stdout if done.returncode == 0 else b""

    def changed(self, before: str, after: str) -> list[str]:
        """The synced files that differ between two commits."""
        names = self.git("diff", "--name-only", "-z", "--no-renames", before, after, "--",
                         *SYNCED)
        return [name for name in names.split("\0") if name]

    def conflict_copies(self) -> list[str]:
        """The conflict copies waiting in the worktree (a person merges and deletes them)."""
        found = []
        for directory in SYNCED:
            top = self.root / directory
            if top.is_dir():
                found += [str(p.relative_to(self.root)) for p in top.rglob(f"*{CONFLICT_MARK}*")
                          if p.is_file()]
        return sorted(found)


def reachable(root: Path) -> str | None:
    """Why the remote cannot be reached, or None (``memory doctor``)."""
    done = git.run(root, "ls-remote", "--heads", REMOTE, check=False,
                   timeout=git.NETWORK_TIMEOUT_S)
    if done.returncode == 0:
        return None
    said = (done.stderr or done.stdout).decode("utf-8", "replace").strip()[-300:]
    return git.explained(said) or "no answer"


def host() -> str:
    return os.environ.get("MEMORYD_SYNC_HOST") or socket.gethostname()
