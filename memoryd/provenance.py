"""Who wrote an entry — a person, or an agent through one of memoryd's integrations — and what
only a person may change.

The daemon records each write's channel in the entry's ``writer`` (memoryd.server.binding):
``designer`` (the library), ``designer (mcp)``, ``claude-code (hook)``, ``designer (cli)`` (the
`memory` command from a script or an agent's shell), ``designer (terminal)`` (the `memory`
command typed by a person). A person's words are what they typed at a terminal, the lines of
their memory files, and what memoryd extracted from their own messages; an agent's words are
everything written through the API, MCP, hooks and scripts, and the lines of a memory file
that an agent's memory tools wrote (the memory tools' file versions name the writer:
memoryd.store.file_versions.tool_written).

What an agent wrote is shown by the memory block as quoted data (memoryd.sessions.context) and
never becomes a rule of a governance file without a person's accept (memoryd.passes.promote).
What only a person writes — :data:`PERSON_KINDS`, the user's feedback — only a person changes:
an agent's channel can neither supersede nor forget it, nor rewrite or remove its lines through
the memory tools (:func:`person_only_refusal`, the one rule all those paths ask).
"""

from __future__ import annotations

import os
from collections.abc import Container
from typing import Protocol

#: How the daemon marks a write typed by a person (memoryd_client.wire.HUMAN_CHANNELS).
PERSON_CHANNEL = "terminal"
#: Kinds only a person creates, and so only a person replaces or removes.
PERSON_KINDS = frozenset({"feedback"})
#: Ways an entry is written that are a person's words, whoever's connection stored them: a
#: memory file (unless an agent's tools wrote it), memoryd's extraction from the user's own
#: messages (``via`` is the daemon's to set, never a request's).
_PERSON_VIAS = frozenset({"watch", "extract"})


def typed_by_person(writer: str | None) -> bool:
    """Whether a ``writer`` is a person at a terminal (``designer (terminal)``)."""
    return bool(writer) and str(writer).endswith(f" ({PERSON_CHANNEL})")


class Written(Protocol):
    """What says who wrote an entry (an entry to write or one stored:
    memoryd.store.records)."""

    @property
    def via(self) -> str: ...

    @property
    def source(self) -> str | None: ...

    @property
    def writer(self) -> str | None: ...


def agent_wrote(entry: Written, tool_files: Container[str] = ()) -> bool:
    """Whether an agent wrote ``entry`` (see the module's docstring); ``tool_files``: the
    memory files (normalised paths) an agent's memory tools wrote."""
    if entry.via == "watch":
        return bool(entry.source) and os.path.normpath(str(entry.source)) in tool_files
    if entry.via in _PERSON_VIAS:
        return False
    return not typed_by_person(entry.writer)


#: What a refused action does to an entry, in its refusal.
_VERBS = {"forget": "removes", "supersede": "replaces"}


def person_only_refusal(uid: str, kind: str, action: str, human: bool) -> str | None:
    """Why ``action`` (``forget`` or ``supersede``) of the entry ``uid`` of this kind is
    refused to a caller who is not a person, or None. The memory tools ask
    :func:`person_only` of each entry a write would change or remove."""
    if human or not person_only(kind):
        return None
    verb = _VERBS.get(action, "changes")
    return (f"{action}: entry {uid} is the user's {kind}; only a "
            f"person {verb} it (`memory {action}` typed at a terminal, or an edit of the file)")


def person_only(kind: str | None) -> bool:
    """Whether only a person may change or remove an entry of this kind (a person's)."""
    return kind in PERSON_KINDS
