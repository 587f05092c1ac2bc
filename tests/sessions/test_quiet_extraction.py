"""Sessions that end without saying so (Cline's, Aider's, an agent's without memoryd's hooks)
are extracted once they have been quiet for ``outcomes.idle_s``, as at a session end; the
history found on disk is not (memoryd.sessions.quiet)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from memoryd_client import Client

from tests.conftest import start_daemon, wait_until

TASKS = ".config/Code/User/globalStorage/saoudrizwan.claude-dev/tasks"


def write_task(home: Path, task: str, start_ms: int, said: list[str]) -> None:
    """A Cline task log: the task, then the user's replies, an answer after each."""
    messages = [{"ts": start_ms, "type": "say", "say": "task", "text": said[0]},
                {"ts": start_ms + 1, "type": "say", "say": "api_req_started", "text": "{}"}]
    for number, text in enumerate(said[1:], 1):
        messages += [{"ts": start_ms + 10 * number, "type": "say", "say": "text",
                      "text": f"Done, step {number}."},
                     {"ts": start_ms + 10 * number + 5, "type": "say", "say": "user_feedback",
                      "text": text}]
    path = home / TASKS / task / "ui_messages.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(messages))


def lessons(client: Client, session: str) -> list[str]:
    return lessons_of(client, "cline", session)


def lessons_of(client: Client, agent: str, session: str) -> list[str]:
    return [e["text"] for e in client.list_entries(agent=agent, status="any")["entries"]
            if e.get("session") == session and e["kind"] in ("lesson", "fact")]


AIDER = """
# aider chat started at {start}

#### set up the invoice export

Added the export command.

#### no, don't write CSV by hand. Always use the csv module, never join strings with commas.

Switched to the csv module.

#### and the amounts go out in integer cents

Done.
"""


NEW_TASK = ["Add a date picker to the booking form",
            "No, don't use npm in this repo. Always use pnpm, never npm.",
            "Show the dates in the venue's time zone", "Thanks, looks good"]


def quiet_daemon(memoryd_home: Path, embedder, project: Path | None = None):  # type: ignore[no-untyped-def]
    """A daemon whose sessions are quiet after 10 s (``outcomes.idle_s``'s least)."""
    (memoryd_home / "config.toml").write_text("[outcomes]\nidle_s = 10\n")
    if project is not None:
        (project / ".git").mkdir(parents=True)
        (memoryd_home / "sources.toml").write_text(
            f"project_roots = [{json.dumps(str(project))}]\n")
    return start_daemon(embedder)


def test_a_task_gone_quiet_is_extracted_and_the_history_found_at_start_is_not(
        memoryd_home: Path, tmp_path: Path, embedder) -> None:
    """Cline's task is extracted once quiet; Aider's session too, though it dates its turns by
    its start, before memoryd's: its file was written since; a task of a month ago is not."""
    home, project = memoryd_home / "user", tmp_path / "shop"
    write_task(home, "old", int((time.time() - 30 * 86400) * 1000),  # a month ago: history
               ["Set up the release script", "Never tag a release from a dirty tree",
                "Always sign the tags with the release key", "Thanks"])
    daemon = quiet_daemon(memoryd_home, embedder, project)
    try:
        with Client(daemon.socket, timeout_s=30) as client:
            started = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(time.time() - 1200))
            (project / ".aider.chat.history.md").write_text(AIDER.format(start=started))
            write_task(home, "new", int(time.time() * 1000), NEW_TASK)
            wait_until(lambda: {"old", "new"} <= {s["id"] for s in client.sessions()["sessions"]},
                       timeout_s=30)
            assert lessons(client, "new") == []  # not while the task may go on
            wait_until(lambda: any("pnpm" in text for text in lessons(client, "new")),
                       timeout_s=60)
            shown = client.call("session", {"id": "new"})
            assert shown["entries"]  # what `memory session show` lists as its entries
            assert lessons(client, "old") == []  # history: `memory import-history`'s
            [aider] = [s["id"] for s in client.sessions()["sessions"] if s["harness"] == "aider"]
            wait_until(lambda: any("csv module" in t for t in lessons_of(client, "aider", aider)),
                       timeout_s=30)
    finally:
        daemon.stop()


@pytest.mark.slow  # two quiet periods of 10 s
def test_a_quiet_task_that_goes_on_is_read_again_and_nothing_counted_twice(
        memoryd_home: Path, embedder) -> None:
    home = memoryd_home / "user"
    daemon = quiet_daemon(memoryd_home, embedder)
    try:
        with Client(daemon.socket, timeout_s=30) as client:
            write_task(home, "new", int(time.time() * 1000), NEW_TASK)
            wait_until(lambda: any("pnpm" in text for text in lessons(client, "new")),
                       timeout_s=60)
            first = lessons(client, "new")
            # the task goes on (resumed): read again once quiet again
            log = home / TASKS / "new/ui_messages.json"
            messages = json.loads(log.read_text())
            messages.append({"ts": int(time.time() * 1000), "type": "say",
                             "say": "user_feedback", "text": "Never commit the .env file."})
            log.write_text(json.dumps(messages))
            wait_until(lambda: any(".env" in text for text in lessons(client, "new")),
                       timeout_s=60)
            again = lessons(client, "new")  # every status: a second sighting would show
            assert set(first) <= set(again) and len(again) == len(set(again)), again
    finally:
        daemon.stop()
