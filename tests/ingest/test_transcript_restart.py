"""Transcripts appended to after a daemon restart: the lines written then belong to the
session (and the project) the file's first lines named, as those written before it do."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from memoryd_client import Client

from tests.conftest import run_cli, start_daemon, wait_until

CODEX_SESSION = "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"


def append(path: Path, records: list[dict[str, Any]]) -> None:
    with path.open("a") as handle:
        handle.write("".join(json.dumps(record) + "\n" for record in records))


def codex_pair(minute: int, question: str, answer: str) -> list[dict[str, Any]]:
    at = f"2025-09-01T10:{minute:02d}:00Z"
    return [{"timestamp": at, "type": "event_msg",
             "payload": {"type": "user_message", "message": question, "images": []}},
            {"timestamp": at, "type": "response_item",
             "payload": {"type": "message", "role": "assistant",
                         "content": [{"type": "output_text", "text": answer}]}}]


def hits(client: Client, word: str) -> list[dict[str, Any]]:
    return client.search(word, agents=["*"], match=True)["hits"]


def test_a_codex_rollout_resumed_after_a_restart_keeps_its_session_and_project(
        memoryd_home: Path, embedder) -> None:
    """`codex resume` appends to the rollout it resumes: what it appends after memoryd
    restarted had no session and no project, so a search of the project missed it and
    `memory sessions` kept the old count."""
    home = memoryd_home / "user"
    repo = home / "src/shop"
    (repo / ".git").mkdir(parents=True)
    day = home / ".codex/sessions/2025/09/01"
    day.mkdir(parents=True)
    rollout = day / f"rollout-2025-09-01T10-00-00-{CODEX_SESSION}.jsonl"
    append(rollout, [{"timestamp": "2025-09-01T10:00:00Z", "type": "session_meta",
                      "payload": {"id": CODEX_SESSION, "timestamp": "2025-09-01T10:00:00Z",
                                  "cwd": str(repo), "originator": "codex_cli_rs",
                                  "cli_version": "0.98.0", "source": "cli"}},
                     *codex_pair(1, "why does the importer skip rows", "Blank SKUs.")])

    def session(client: Client) -> dict[str, Any]:
        return {s["id"]: s for s in client.call("sessions", {})["sessions"]}[CODEX_SESSION]

    running = start_daemon(embedder)
    try:
        with Client(running.socket) as client:
            wait_until(lambda: len(hits(client, "importer")) == 1)
            append(rollout, codex_pair(2, "and the pricing column", "It rounds half up."))
            wait_until(lambda: len(hits(client, "pricing")) == 1)
        running.stop()
        running = start_daemon(embedder)
        with Client(running.socket) as client:
            append(rollout, codex_pair(3, "what about the zanzibar warehouse",
                                       "It ships from Dar es Salaam."))
            wait_until(lambda: len(hits(client, "zanzibar")) == 1)
            [hit] = hits(client, "zanzibar")
            assert (hit["session"], hit["project"]) == (CODEX_SESSION, str(repo))
            found = run_cli("search", "codex", "-", "zanzibar warehouse", "--project", str(repo))
            assert "Dar es Salaam" in found.stdout, found.stdout + found.stderr
            wait_until(lambda: session(client)["user_messages"] == 3)
            assert session(client)["last_seen"] == 1756720980.0  # 10:03, the last pair
    finally:
        running.stop()


PI_SESSION = "0194f2a1-7c3e-7b21-9d4e-1a2b3c4d5e6f"


def pi_pair(n: int, question: str, answer: str) -> list[dict[str, Any]]:
    at = f"2026-03-02T09:{n:02d}:00Z"
    return [{"type": "message", "id": f"a00000{n:02d}", "parentId": None, "timestamp": at,
             "message": {"role": "user", "content": [{"type": "text", "text": question}]}},
            {"type": "message", "id": f"b00000{n:02d}", "parentId": f"a00000{n:02d}",
             "timestamp": at,
             "message": {"role": "assistant", "content": [{"type": "text", "text": answer}]}}]


def test_a_pi_session_appended_after_a_restart_stays_one_session(
        memoryd_home: Path, embedder) -> None:
    """pi names its session once, in the header line: the lines appended after a restart
    became a session of their own (named by the file, with no project), and a rewrite of the
    file then stored their exchange twice, once in each session."""
    home = memoryd_home / "user"
    repo = home / "src/shop"
    (repo / ".git").mkdir(parents=True)
    folder = home / ".pi/agent/sessions/--src-shop--"
    folder.mkdir(parents=True)
    chat = folder / "2026-03-02T09-00-00-000Z_1a2b.jsonl"
    append(chat, [{"type": "session", "version": 3, "id": PI_SESSION,
                   "timestamp": "2026-03-02T09:00:00Z", "cwd": str(repo)},
                  *pi_pair(1, "list the shop routes", "There are four.")])

    def sessions(client: Client) -> dict[str, int]:
        return {s["id"]: s["user_messages"] for s in client.call("sessions", {})["sessions"]}

    running = start_daemon(embedder)
    try:
        with Client(running.socket) as client:
            wait_until(lambda: len(hits(client, "routes")) == 1)
        running.stop()
        running = start_daemon(embedder)
        with Client(running.socket) as client:
            append(chat, pi_pair(2, "which route serves the okapi catalogue",
                                 "GET /catalogue/okapi."))
            wait_until(lambda: len(hits(client, "okapi")) == 1)
            [hit] = hits(client, "okapi")
            assert (hit["session"], hit["project"]) == (PI_SESSION, str(repo))
            wait_until(lambda: sessions(client) == {PI_SESSION: 2})
            scratch = folder / "copy.tmp"  # written again whole: another inode
            scratch.write_bytes(chat.read_bytes())
            scratch.rename(chat)
            append(chat, pi_pair(3, "and the quokka one", "GET /catalogue/quokka."))
            wait_until(lambda: len(hits(client, "quokka")) == 1)
            assert len(hits(client, "okapi")) == 1
            assert sessions(client) == {PI_SESSION: 3}
    finally:
        running.stop()
