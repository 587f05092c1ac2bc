"""The memory block injected into an agent's context at session start and per prompt.

Contents, by priority (the block never exceeds its character budget; the lowest-ranked items
are dropped first):

1. pinned files (``CONTEXT.md``, files under ``system/``) in full;
2. feedback, in the user's own words;
3. lessons, as "Don't:" / "Do:" lines with their category;
4. facts relevant to the prompt (hybrid search) and to the project of the working directory,
   or without a prompt the top facts by key prefix (``pref.``, ``project.``, ``tool.``, ``user.``);
5. a listing of the agent's other memory files with their frontmatter descriptions.

Items older than 30 days carry their age; older than 90 days a "verify before acting" warning.
The block starts with memoryd's marker line (ingestion drops anything carrying it) and ends with
a short drift caveat. It is phrased as facts, not commands.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memoryd_client.wire import INJECTION_MARKER

from memoryd.params import Params
from memoryd.retrieval.search import Search, format_age
from memoryd.store.database import SELECT_ENTRY, Store, row_to_entry

DEFAULT_BUDGET_CHARS = 8000
PROMPT_BUDGET_CHARS = 2000
AGE_NOTE_DAYS = 30
STALE_DAYS = 90
FACT_PREFIXES = ("pref.", "project.", "tool.", "user.")
DRIFT_CAVEAT = (
    "Memory can be stale: if an item names a file, function or flag, check that it still "
    "exists before relying on it."
)
SECTION_TITLES = {
    "pinned": None,
    "feedback": "## Feedback (the user's words)",
    "lessons": "## Lessons",
    "facts": "## Facts",
    "files": "## Other memory files (read them when relevant)",
}


@dataclass
class Item:
    section: str
    text: str
    rank: float  # lower is more important
    entry_id: str | None = None
    score: float | None = None
    path: str | None = None


@dataclass
class Block:
    text: str
    items: list[Item] = field(default_factory=list)
    dropped: list[Item] = field(default_factory=list)

    def explain(self) -> list[dict[str, Any]]:
        return [{"section": i.section, "id": i.entry_id, "path": i.path, "score": i.score,
                 "chars": len(i.text), "included": i not in self.dropped}
                for i in self.items + self.dropped]


def age_suffix(created: float, now: float) -> str:
    days = (now - created) / 86400
    if days > STALE_DAYS:
        return f" (⚠ {format_age(now - created)} old: verify before acting)"
    if days > AGE_NOTE_DAYS:
        return f" ({format_age(now - created)} old)"
    return ""


def one_line(text: str, limit: int = 400) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


class ContextBuilder:
    """Runs on the database thread; ``prompt_vector`` comes from the embedding thread."""

    def __init__(self, search: Search, store: Store) -> None:
        self.search = search
        self.store = store

    def _entries(self, where: str, params: list[Any], limit: int) -> list[dict[str, Any]]:
        rows = self.store.db.execute(
            SELECT_ENTRY + f" WHERE status='active' AND {where} ORDER BY created DESC LIMIT ?",
            [*params, limit])
        return [row_to_entry(r) for r in rows]

    def build(self, agent: str, *, cwd: str | None, prompt: str | None, prompt_vector: Any,
              budget: int, only_relevant: bool = False) -> Block:
        now = time.time()
        items: list[Item] = []
        if only_relevant:
            items += self._facts(agent, cwd, prompt, prompt_vector, now, only_matches=True)
        else:
            items += self._pinned(agent)
            items += self._by_kind(agent, "feedback", now)
            items += self._lessons(agent, now)
            items += self._facts(agent, cwd, prompt, prompt_vector, now, only_matches=False)
            items += self._files(agent)
        return self._fit(items, budget)

    # -- sections ---------------------------------------------------------------------

    def _pinned(self, agent: str) -> list[Item]:
        items = []
        for path, in self.store.db.execute(
                "SELECT path FROM files WHERE agent=? AND pinned=1 ORDER BY path", (agent,)):
            try:
                text = Path(path).read_text("utf-8", errors="replace").strip()
            except OSError:
                continue
            if text:
                items.append(Item("pinned", f"### {Path(path).name}\n{text}", 0, path=path))
        return items

    def _by_kind(self, agent: str, kind: str, now: float) -> list[Item]:
        return [Item(kind, f"- {one_line(e['text'])}{age_suffix(e['created'], now)}", 100 + i,
                     entry_id=e["id"])
                for i, e in enumerate(self._entries("agent=? AND kind=?", [agent, kind], 50))]

    def _lessons(self, agent: str, now: float) -> list[Item]:
        items = []
        for i, e in enumerate(self._entries("agent=? AND kind='lesson'", [agent], 80)):
            verb = "Don't" if e.get("polarity") == "negative" else "Do"
            category = f" [{e['category']}]" if e["category"] else ""
            items.append(Item("lessons", f"- {verb}: {one_line(e['text'])}{category}"
                                         f"{age_suffix(e['created'], now)}", 200 + i,
                              entry_id=e["id"]))
        return items

    def _facts(self, agent: str, cwd: str | None, prompt: str | None, prompt_vector: Any,
               now: float, *, only_matches: bool) -> list[Item]:
        chosen: dict[str, tuple[dict[str, Any], float | None]] = {}
        if prompt:
            result = self.search.search(
                Params("context", {"query": prompt, "agent": agent, "limit": 15,
                                   "kind": ["fact", "note", "lesson", "feedback", "summary"],
                                   "match": only_matches}), prompt_vector)
            for hit in result["hits"]:
                chosen.setdefault(hit["id"], (hit, hit["score"]["relevance"]))
        if cwd and not only_matches:
            project = self.memory_project(cwd)
            for e in self._entries("agent=? AND kind='fact' AND project=?", [agent, project], 20):
                chosen.setdefault(e["id"], (e, None))
        if not prompt and not only_matches:
            like = " OR ".join("key LIKE ?" for _ in FACT_PREFIXES)
            for e in self._entries(f"agent=? AND kind='fact' AND ({like})",
                                   [agent, *(p + "%" for p in FACT_PREFIXES)], 40):
                chosen.setdefault(e["id"], (e, None))
        items = []
        for i, (e, score) in enumerate(chosen.values()):
            label = f"{e['key']}: " if e.get("key") else ""
            items.append(Item("facts", f"- {label}{one_line(e['text'])}{age_suffix(e['created'], now)}",
                              300 + i, entry_id=e["id"], score=score))
        return items

    def memory_project(self, cwd: str) -> str:
        from memoryd.project import project_of

        return project_of(cwd)

    def _files(self, agent: str) -> list[Item]:
        items = []
        for i, (path, description) in enumerate(self.store.db.execute(
                "SELECT path, description FROM files WHERE agent=? AND kind='memory' AND pinned=0 "
                "ORDER BY path LIMIT 100", (agent,))):
            about = f": {one_line(description, 200)}" if description else ""
            items.append(Item("files", f"- {path}{about}", 400 + i, path=path))
        return items

    # -- budget -----------------------------------------------------------------------

    def _fit(self, items: list[Item], budget: int) -> Block:
        """Keep the best-ranked items that fit; a pinned file too big alone is truncated."""
        fixed = len(INJECTION_MARKER) + 1 + len(DRIFT_CAVEAT) + 2
        kept: list[Item] = []
        dropped: list[Item] = []
        used = fixed
        for item in sorted(items, key=lambda i: i.rank):
            heading = SECTION_TITLES[item.section]
            extra = len(item.text) + 1
            if heading and not any(k.section == item.section for k in kept):
                extra += len(heading) + 2
            if used + extra <= budget:
                kept.append(item)
                used += extra
            elif item.section == "pinned" and budget - used > 200:
                room = budget - used - len("\n…(truncated)") - 1
                item.text = item.text[:room] + "\n…(truncated)"
                kept.append(item)
                used += len(item.text) + 1
            else:
                dropped.append(item)
        if not kept:
            return Block("", [], dropped)
        parts = [INJECTION_MARKER]
        for section, heading in SECTION_TITLES.items():
            section_items = [i for i in kept if i.section == section]
            if not section_items:
                continue
            if heading:
                parts.append("\n" + heading)
            parts.extend(i.text for i in section_items)
        parts.append("\n" + DRIFT_CAVEAT)
        text = "\n".join(parts)
        assert len(text) <= budget, (len(text), budget)
        return Block(text, kept, dropped)
