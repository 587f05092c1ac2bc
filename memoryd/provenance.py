"""Who wrote an entry — a person, or an agent through one of memoryd's integrations — and what
only a person may change.

The daemon records each write's channel in the entry's ``writer`` (memoryd.server.binding):
``designer`` (the library), ``designer (mcp)``, ``claude-code (hook)``, ``designer (cli)`` (the
`memory` command from a script or an agent's shell), ``designer (terminal)`` (the `memory`
command typed by a person). A person's words are what they typed at a terminal, the lines of
their memory files, and what memoryd extracted from their own messages; an agent's words are
everything written through the API, MCP, hooks and scripts, and the lines of a memory file
that an agent's memory tools wrote (the memory-tool journal names the writer:
memoryd.store.file_journal.tool_written).

What an agent wrote is shown by the memory block as quoted data (memoryd.sessions.context) and
never becomes a rule of a governance file without a person's accept (memoryd.passes.promote).
What only a person writes — :data:`PERSON_KINDS`, the user's feedback — only a person changes:
an agent's channel can neither supersede nor forget it, nor rewrite or remove its lines through
the memory tools (:func:`person_only_refusal`, the one rule all those paths ask).
"""

from __future__ import annotations

import os
from collections.abc import Container, Mapping
from typing import Any

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


def agent_wrote(entry: Mapping[str, Any], tool_files: Container[str] = ()) -> bool:
    """Whether an agent wrote ``entry`` (see the module's docstring); ``tool_files``: the
    memory files (normalised paths) an agent's memory tools wrote."""
    via = entry.get("via")
    if via == "watch":
        source = entry.get("source")
        return bool(source) and os.path.normpath(str(source)) in tool_files
    if via in _PERSON_VIAS:
        return False
    return not typed_by_person(entry.get("writer"))


#: What a refused action does to an entry, in its refusal.
_VERBS = {"forget": "removes", "supersede": "replaces"}


def person_only_refusal(entry: Mapping[str, Any], action: str, human: bool) -> str | None:
    """Why ``action`` (``forget`` or ``supersede``) of ``entry`` is refused to a caller who
    is not a person, or None. The memory tools ask :func:`person_only` of each entry a write
    would change or remove."""
    if human or not person_only(entry):
        return None
    verb = _VERBS.get(action, "changes")
    return (f"{action}: entry {entry.get('id', '')} is the user's {entry['kind']}; only a "
            f"person {verb} it (`memory {action}` typed at a terminal, or an edit of the file)")


def person_only(entry: Mapping[str, Any]) -> bool:
    """Whether only a person may change or remove ``entry`` (its kind is a person's)."""
    return entry.get("kind") in PERSON_KINDS
