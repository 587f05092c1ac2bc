"""The evaluation set as data: items, queries and filler read from ``items/*.toml`` and
``filler/*.toml`` (see README.md), validated, with dates resolved against a "today"."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
WHERES = ("claude-code", "codex", "assistant", "claude-md", "agents-md", "user-claude-md",
          "notebook", "fact", "note")
TRANSCRIPT_WHERES = ("claude-code", "codex", "assistant")
TEXT_WHERES = ("claude-md", "agents-md", "user-claude-md", "notebook", "fact", "note")
PROJECTS = ("shop", "atlas", "infra", "none")
SECTIONS = ("Mistakes", "Learnings", "Shareholder Feedback", "Session Log")
QUERY_TYPES = ("lexical", "paraphrase", "temporal", "multi-hop", "no-answer")
DEFAULT_AGENT = {"claude-code": "claude-code", "codex": "codex", "assistant": "assistant",
                 "claude-md": "claude-code", "agents-md": "codex", "user-claude-md": "claude-code"}
MAX_DAY = 120

# Stop words for the paraphrase check: function words, question words, and the verbs every
# question uses. A paraphrase may share these with its answer, nothing else.
STOPWORDS = frozenset("""
a about above after again against all also am an and any are aren't as at be because been before
being below between both but by can can't cannot could couldn't did didn't do does doesn't doing
don't down during each few for from further get gets got had hadn't has hasn't have haven't having
he her here hers herself him himself his how i i'd i'll i'm i've if in into is isn't it it's its
itself just let's me more most mustn't my myself no nor not now of off on once only or other ought
our ours ourselves out over own same shan't she should shouldn't so some such than that that's the
their theirs them themselves then there there's these they they're this those through to too under
until up us very was wasn't we we'd we'll we're we've were weren't what what's when where which while
who whom why will with won't would wouldn't you you'd you'll you're you've your yours yourself
yourselves remind tell know again ever still back one thing things way make made use used using
""".split())
_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_SUFFIXES = ("ational", "ization", "fulness", "iveness", "ations", "ation", "ments", "ment",
             "ness", "ings", "ing", "ies", "ied", "ers", "er", "ed", "es", "ly", "s")


def stem(word: str) -> str:
    """A crude suffix stripper: enough to see that "deploys" and "deployment" share a word."""
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def content_stems(text: str) -> set[str]:
    return {stem(w) for w in _WORD.findall(text.lower().replace("\u2019", "'"))
            if w not in STOPWORDS and len(w) > 1}


def shared_words(a: str, b: str) -> set[str]:
    """Content words two texts share (by stem, or one stem a prefix of the other's, 4+ long)."""
    sa, sb = content_stems(a), content_stems(b)
    shared = sa & sb
    for x in sa:
        for y in sb:
            if len(x) >= 4 and len(y) >= 4 and (x.startswith(y) or y.startswith(x)):
                shared.add(min(x, y, key=len))
    return shared


@dataclass
class Query:
    q: str
    type: str
    answers: list[str]
    agents: list[str]
    origin: str  # file:id

    def render(self, when: dict[str, str]) -> str:
        text = self.q
        for name, value in when.items():
            text = text.replace("{" + name + "}", value)
        return text


@dataclass
class Item:
    id: str
    where: str
    project: str
    day: int
    agent: str
    text: str  # the stored text (transcripts: the user message, then the answer)
    span: str
    user: str | None = None
    assistant: str | None = None
    section: str | None = None
    key: str | None = None
    queries: list[Query] = field(default_factory=list)

    def date(self, today: date) -> date:
        return today - timedelta(days=self.day)


@dataclass
class Dataset:
    items: dict[str, Item]
    queries: list[Query]
    filler: dict[str, Any]
    problems: list[str]


def when_words(day: date, today: date) -> dict[str, str]:
    """How a question names the item's day."""
    delta = (today - day).days
    if delta == 1:
        when = "yesterday"
    elif delta < 7:
        when = f"on {day.strftime('%A')}"
    elif delta < 14:
        when = "last week"
    elif delta < 21:
        when = "two weeks ago"
    elif delta < 28:
        when = "three weeks ago"
    elif day.month == today.month and day.year == today.year:
        when = "earlier this month"
    else:
        when = f"in {day.strftime('%B')}"
    return {"when": when, "date": day.isoformat(), "month": day.strftime("%B"),
            "weekday": day.strftime("%A"), "day_month": f"{day.day} {day.strftime('%B')}"}


def _text_of(raw: dict[str, Any]) -> str:
    if raw.get("where") in TRANSCRIPT_WHERES:
        return f"{raw.get('user', '')}\n\n{raw.get('assistant', '')}"
    return str(raw.get("text", ""))


def load(directory: Path = HERE) -> Dataset:
    items: dict[str, Item] = {}
    queries: list[Query] = []
    problems: list[str] = []
    for path in sorted((directory / "items").glob("*.toml")):
        data = tomllib.loads(path.read_text("utf-8"))
        for raw in data.get("item", []):
            item = _item(raw, path.name, problems)
            if item is None:
                continue
            if item.id in items:
                problems.append(f"{path.name}: duplicate item id {item.id}")
                continue
            items[item.id] = item
            queries.extend(item.queries)
        for raw in data.get("query", []):
            query = _query(raw, f"{path.name}:query", None, problems)
            if query is not None:
                queries.append(query)
    for query in queries:
        problems.extend(_query_problems(query, items))
    return Dataset(items, queries, _filler(directory), problems)


def _query_problems(query: Query, items: dict[str, Item]) -> list[str]:
    problems = [f"{query.origin}: unknown answer {answer!r}"
                for answer in query.answers if answer not in items]
    if query.type == "multi-hop" and len(query.answers) < 2:
        problems.append(f"{query.origin}: multi-hop needs 2+ answers")
    if query.type == "no-answer" and query.answers:
        problems.append(f"{query.origin}: no-answer with answers")
    if query.type not in ("no-answer", "multi-hop") and len(query.answers) != 1:
        problems.append(f"{query.origin}: needs exactly one answer")
    if query.type == "paraphrase":
        for answer in query.answers:
            shared = shared_words(query.q, items[answer].text) if answer in items else None
            if shared:
                problems.append(f"{query.origin}: paraphrase shares {sorted(shared)} "
                                f"with its answer: {query.q!r}")
    words = len(query.q.split())
    if not 3 <= words <= 20:
        problems.append(f"{query.origin}: {words} words: {query.q!r}")
    return problems


def _filler(directory: Path) -> dict[str, Any]:
    filler: dict[str, Any] = {"slots": {}, "exchange": [], "chat": [], "bullet": [], "note": []}
    for path in sorted((directory / "filler").glob("*.toml")):
        data = tomllib.loads(path.read_text("utf-8"))
        for name, values in data.get("slots", {}).items():
            filler["slots"].setdefault(name, []).extend(values)
        for kind in ("exchange", "chat", "bullet", "note"):
            filler[kind].extend(data.get(kind, []))
    return filler


def _item(raw: dict[str, Any], origin: str, problems: list[str]) -> Item | None:
    where = raw.get("where")
    ident = raw.get("id")
    label = f"{origin}:{ident}"
    if not isinstance(ident, str) or not re.fullmatch(r"[a-z0-9][a-z0-9-]*", ident):
        problems.append(f"{label}: bad id")
        return None
    if where not in WHERES:
        problems.append(f"{label}: where must be one of {WHERES}")
        return None
    project = raw.get("project", "none")
    if project not in PROJECTS:
        problems.append(f"{label}: project must be one of {PROJECTS}")
    day = raw.get("day")
    if not isinstance(day, int) or not 1 <= day <= MAX_DAY:
        problems.append(f"{label}: day must be 1..{MAX_DAY}")
        day = 1
    agent = raw.get("agent") or DEFAULT_AGENT.get(where)
    if not agent:
        problems.append(f"{label}: {where} needs agent")
        agent = "unknown"
    problems.extend(_content_problems(raw, where, label))
    text = _text_of(raw)
    span = raw.get("span") or raw.get("text") or ""
    if span not in text:
        problems.append(f"{label}: span {span!r} not in its text")
    item = Item(ident, where, project, day, agent, text, span, raw.get("user"),
                raw.get("assistant"), raw.get("section"), raw.get("key"))
    for number, raw_query in enumerate(raw.get("query", [])):
        query = _query({**raw_query, "answers": [ident]}, f"{label}#{number}", agent, problems)
        if query is not None:
            item.queries.append(query)
    if not item.queries:
        problems.append(f"{label}: no queries")
    return item


def _content_problems(raw: dict[str, Any], where: str, label: str) -> list[str]:
    """What an item of this kind of place lacks."""
    problems = []
    if where in TRANSCRIPT_WHERES:
        if not raw.get("user") or not raw.get("assistant"):
            problems.append(f"{label}: {where} needs user and assistant")
    elif not raw.get("text"):
        problems.append(f"{label}: {where} needs text")
    if where == "notebook" and raw.get("section") not in SECTIONS:
        problems.append(f"{label}: notebook needs section among {SECTIONS}")
    if where == "fact" and not raw.get("key"):
        problems.append(f"{label}: fact needs key")
    return problems


def _query(raw: dict[str, Any], origin: str, agent: str | None, problems: list[str]) -> Query | None:
    q, kind = raw.get("q"), raw.get("type")
    if not isinstance(q, str) or kind not in QUERY_TYPES:
        problems.append(f"{origin}: needs q and a type among {QUERY_TYPES}")
        return None
    agents = raw.get("agents") or ([agent] if agent else None)
    if not agents:
        problems.append(f"{origin}: needs agents")
        return None
    return Query(q, kind, list(raw.get("answers", [])), list(agents), origin)
