"""The commands on memory as files: the memory tools on an agent's memory directory (file),
memoryd's durable files synced with a git remote (sync), an entry copied into a team's
repository (share)."""

from __future__ import annotations

import sys

from memoryd_client import views
from memoryd_client.command_spec import FAILED, Arg, Command, later, plain
from memoryd_client.commands.args import ENTRY_ID
from memoryd_client.errors import UsageError

TYPE_CHECKING = False  # see memoryd_client/__init__.py
if TYPE_CHECKING:
    from typing import Any

    from memoryd_client.client import Client
    from memoryd_client.command_spec import Args, Request, Show

FILE_PATH = Arg("path", help="relative to the agent's memory directory")
FILE_TEXT = Arg("--text", help="default: read standard input")


def _file(help: str, args: tuple[Arg, ...], show: Show, request: Request, exits: str,
          example: str) -> Command:
    """An action of `memory file`: the memory tools on an agent's memory directory."""
    return Command(help=help, args=(Arg("--agent", required=True, help="whose memory directory"),
                                    *args), request=request, show=show,
                   examples=(example,), exits=exits)


def _text(args: Args) -> str:
    return args.text if args.text is not None else sys.stdin.read()


def _sync(args: Args, client: Client) -> Any:
    if args.action is None:
        if args.first is not None:
            raise UsageError(f"memory sync: unknown action {args.first!r} (init, add-shared, "
                             "remove-shared)")
        return client.sync()
    if args.action == "init":
        if args.first is None or args.second is not None:
            raise UsageError("memory sync init: give the remote (memory sync init REMOTE)")
        return client.sync_init(args.first)
    if args.action == "remove-shared":
        if args.first is None or args.second is not None:
            raise UsageError("memory sync remove-shared: give the team's name (memory sync "
                             "remove-shared NAME)")
        return client.sync_remove_shared(args.first)
    if args.first is None or args.second is None:
        raise UsageError("memory sync add-shared: give a name and the team's remote "
                         "(memory sync add-shared NAME REMOTE)")
    return client.sync_add_shared(args.first, args.second)


COMMANDS: dict[str, Command] = {
    "file": Command(
        help="the memory tools: list, read, write, replace, insert files in an agent's memory "
        "directory",
        description="The memory tools on an agent's memory directory (tools.memory_dir). Writes "
        "are atomic, each kept in the file's history; paths leaving the directory are refused.",
        refusal_exit=FAILED, examples=("memory file list --agent designer",),
        exits="0 done; 1 refused", actions={
            "list": _file(
                "the agent's memory files", (), plain(views.print_files),
                lambda a, c: c.file("list", a.agent), "0 done; 1 refused",
                "memory file list --agent designer"),
            "read": _file(
                "print a file", (FILE_PATH,), plain(views.print_file_text),
                lambda a, c: c.file("read", a.agent, a.path),
                "0 done; 1 refused (no such file, a path outside the directory)",
                "memory file read --agent designer notes.md"),
            "write": _file(
                "write a whole file (text from --text or stdin)",
                (FILE_PATH, FILE_TEXT), views.show_file_written,
                lambda a, c: c.file("write", a.agent, a.path, text=_text(a)),
                "0 written; 1 refused (a path outside the directory, too long)",
                "echo '# Notes' | memory file write --agent designer notes.md"),
            "replace": _file(
                "replace the one match of --old with --new",
                (FILE_PATH,
                 Arg("--old", required=True, help="text that must occur exactly once"),
                 Arg("--new", required=True, help="its replacement")),
                views.show_file_written,
                lambda a, c: c.file("replace", a.agent, a.path, old=a.old, new=a.new),
                "0 replaced; 1 refused (the old text matched 0 or 2+ times, no such file, a "
                "path outside the directory)",
                "memory file replace --agent designer notes.md --old 'tabs' --new 'spaces'"),
            "insert": _file(
                "insert --text before --line (0: at the top)",
                (FILE_PATH, FILE_TEXT,
                 Arg("--line", kind="int", required=True, help="0 inserts at the top")),
                views.show_file_written,
                lambda a, c: c.file("insert", a.agent, a.path, text=_text(a), line=a.line),
                "0 inserted; 1 refused (line out of range, no such file)",
                "memory file insert --agent designer notes.md --line 0 --text '- new'")}),
    "sync": Command(
        help="sync memory with a git remote: every machine holds the union", progress=True,
        description="memoryd's durable files (ledgers, the memory tools' directory, the "
        "transcript archives; the memory tools' files as written, secrets included; never the "
        "database or the configuration) are a git repository. `memory sync init REMOTE` sets "
        "it up (any git remote: a bare repository on "
        "a disk or a NAS, ssh, https); `memory sync` commits what changed, fetches, merges and "
        "pushes, never with force, and applies what the merge brought to this machine's index. "
        "Ledgers merge as the union of their records; a markdown file changed on both machines "
        "keeps both versions (a conflict copy beside it). `memory sync add-shared NAME REMOTE` "
        "follows a team's repository read-only (its entries: the namespace team.NAME, in the "
        "memory block under a Team heading); `memory sync remove-shared NAME` stops following "
        "it (its entries leave this machine's index; its clone is deleted, or kept while it "
        "holds shares not pushed yet). Needs git (docs/sync.md).",
        args=(Arg("action", optional=True, kind=("init", "add-shared", "remove-shared"),
                  help="init REMOTE, add-shared NAME REMOTE, remove-shared NAME; none: sync "
                  "now"),
              Arg("first", optional=True, metavar="REMOTE|NAME", help="init: the remote; "
                  "add-shared, remove-shared: the team's name"),
              Arg("second", optional=True, metavar="REMOTE", help="add-shared: the team's "
                  "remote")),
        request=_sync, show=plain(later("sync_view", "print_sync")),
        examples=("memory sync init git@github.com:me/memory.git", "memory sync",
                  "memory sync add-shared acme git@github.com:acme/lessons.git",
                  "memory sync remove-shared acme"),
        exits="0 synced (a conflict copy, or a line of the remote's copy refused, is reported, "
        "not a failure); 1 failed (git's error: the remote unreachable, not set up; the "
        "remote's history rewritten: set this machine up again, docs/sync.md; remove-shared: "
        "no such team followed)"),
    "share": Command(
        help="copy an entry into a team's shared repository (commit and push)", progress=True,
        description="The one way to write a team namespace: the entry is copied (the original "
        "stays yours) into the team's repository followed with `memory sync add-shared`, "
        "committed and pushed; every member's next sync brings it. Only an active entry is "
        "shared: a forgotten, superseded (its current version is named) or quarantined one is "
        "refused.",
        args=(ENTRY_ID, Arg("name", help="the team (as added with memory sync add-shared)")),
        request=lambda a, c: c.share(a.id, a.name), show=plain(later("sync_view", "print_share")),
        exit=later("sync_view", "share_exit"),
        examples=("memory share 3f2a9c acme",),
        exits="0 shared and pushed; 1 not found, no such team, already shared, refused (not "
        "active, quarantined), or not pushed (the share is kept; the next memory sync pushes "
        "it)"),
}
