"""The optional LLM extractor: a configured command reads :func:`llm_prompt` on stdin and
answers JSON on stdout; :func:`parse_llm_output` turns that into candidates, which then go
through the same decisions as the deterministic extractor's (:mod:`memoryd.sessions.candidates`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from memoryd.redact import redact
from memoryd.sessions.candidates import (
    KINDS,
    POLARITIES,
    Candidate,
    Message,
    category_of,
    sentence_case,
    value_of,
)
from memoryd.sessions.prose import prose_lines
from memoryd.text import kebab

MAX_LLM_TEXT_CHARS = 500
MAX_PROMPT_MESSAGE_CHARS = 2_000

LLM_INSTRUCTIONS = """\
You extract lasting memory from a finished coding session: the user's preferences and
corrections, in the user's own words. Read only the user messages below.

Extract:
- Lessons: rules the user stated or corrections they made ("don't ...", "never ...",
  "always ...", "I prefer X over Y", "we use X, not Y", "remember that ...").
  kind "lesson"; polarity "negative" for what to avoid, "positive" for what to do;
  text: the rule as one short sentence in the user's words ("Never force-push to main.").
- Facts: stable facts about the user, their tools and their projects. kind "fact"; key: a
  dotted lower-case key (pref.*, tool.*, user.*, project.*), e.g. pref.editor, tool.linter,
  user.name, project.language; text: the value only ("ruff").
- category: one short kebab-case topic: git, testing, style, tooling, database, deploy,
  security, communication, or general.
- message_id: the id of the message the entry comes from.

Do not extract (these are rejected anyway):
- file paths and project structure: they can be read from the project;
- git history: git log is authoritative;
- debugging recipes ("to debug X, run Y", "when error X, run Y");
- activity summaries ("today we worked on ...", "we fixed ...", "we deployed ...");
- the current task, ticket or branch;
- one-off instructions that hold only for this task ("for now", "this time", "not yet");
- anything the assistant said, suggested or did.
When in doubt, leave it out. If nothing qualifies, answer {"entries": []}.

Answer with JSON only, no prose, in this shape:
{"entries": [{"kind": "lesson", "text": "...", "polarity": "negative", "category": "git",
  "key": null, "message_id": "..."},
 {"kind": "fact", "text": "...", "polarity": null, "category": "tooling",
  "key": "tool.linter", "message_id": "..."}]}
"""


def llm_prompt(messages: Sequence[Message]) -> str:
    """The prompt sent on the LLM command's stdin: instructions, then the numbered messages
    (prose only, as :func:`prose_lines` keeps it, each cut to MAX_PROMPT_MESSAGE_CHARS)."""
    parts = [LLM_INSTRUCTIONS, "\nUser messages, in order:\n"]
    for number, message in enumerate(messages, 1):
        text = "\n".join(prose_lines(message.text)) or "(no prose)"
        if len(text) > MAX_PROMPT_MESSAGE_CHARS:
            text = text[:MAX_PROMPT_MESSAGE_CHARS] + " [...]"
        parts.append(f"\n[{number}] message_id={message.message_id}\n{text}\n")
    return "".join(parts)


_JSON_FENCE = re.compile(r"```(?:json|JSON)?[ \t]*\n(.*?)```", re.S)
_KEY = re.compile(r"^[a-z][a-z0-9_]*(?:\.[a-z0-9_]+)+$")
_NEGATIVE_START = re.compile(r"^(?:never|don't|dont|do not|avoid|stop)\b", re.I)


def parse_llm_output(stdout: str, messages: Sequence[Message]) -> list[Candidate]:
    """The LLM extractor's entries as candidates; never raises.

    The JSON is the whole output, else the first fenced block (```json), else the span from
    the first ``{`` to the last ``}``; a top-level list is taken as the entries. An item is
    dropped when it is not an object, its kind is not lesson/fact, its text is not a non-empty
    string of at most MAX_LLM_TEXT_CHARS, or it is a fact without a dotted lower-case key.
    A lesson's missing or unknown polarity is read from its text (never/don't/avoid/stop is
    negative, anything else positive); a lesson's key is dropped. A missing category is
    derived with :func:`category_of`. An unknown message_id gives provenance to the session
    only (message_id ""). The rule is 'llm'. The text, the category and the key are redacted
    (memoryd.redact): a model's answer may hold a secret (of its own context, or one made
    up), which the report, the filters and the store must not see.
    """
    data = _load_json(stdout if isinstance(stdout, str) else "")
    items = data.get("entries") if isinstance(data, dict) else data
    if not isinstance(items, list):
        return []
    sessions = {m.message_id: m.session_id for m in messages}
    default_session = messages[0].session_id if messages else ""
    out = []
    for item in items:
        candidate = _llm_candidate(item, sessions, default_session)
        if candidate is not None:
            out.append(candidate)
    return out


def _load_json(stdout: str) -> Any:
    attempts = [stdout.strip()]
    attempts += [m.group(1).strip() for m in _JSON_FENCE.finditer(stdout)]
    first, last = stdout.find("{"), stdout.rfind("}")
    if 0 <= first < last:
        attempts.append(stdout[first:last + 1])
    for attempt in attempts:
        try:
            return json.loads(attempt)
        except (ValueError, RecursionError):
            continue
    return None


def _llm_candidate(
    item: object, sessions: dict[str, str], default_session: str
) -> Candidate | None:
    if not isinstance(item, dict):
        return None
    kind, text = item.get("kind"), item.get("text")
    if kind not in KINDS or not isinstance(text, str):
        return None
    text = re.sub(r"\s+", " ", text).strip()
    if not text or len(text) > MAX_LLM_TEXT_CHARS:
        return None
    # redacted as it comes (before sentence_case, which upper-cases a token's first letter):
    # the report of `memory extract`, the duplicate filters and the store see it so
    text = redact(text)
    key = item.get("key")
    polarity = item.get("polarity")
    if kind == "fact":
        if not isinstance(key, str) or not _KEY.match(key.strip()):
            return None
        key, polarity, text = redact(key.strip()), None, value_of(text) or text
    else:
        key = None
        text = sentence_case(text)
        if polarity not in POLARITIES:
            negative = _NEGATIVE_START.match(text.replace("\u2019", "'"))
            polarity = "negative" if negative else "positive"
    category = item.get("category")
    # redacted before its kebab form, which lower-cases a secret the redactor then misses
    category = kebab(redact(category)) if isinstance(category, str) else ""
    message_id = item.get("message_id")
    if isinstance(message_id, (str, int)) and str(message_id) in sessions:
        message_id = str(message_id)
        session_id = sessions[message_id]
    else:
        message_id, session_id = "", default_session
    return Candidate(kind=kind, text=text, polarity=polarity,
                     category=category or category_of(text, key), key=key,
                     message_id=message_id, session_id=session_id, rule="llm")
