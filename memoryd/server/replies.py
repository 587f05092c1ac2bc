"""An entry on the wire: below the server, entries are
:class:`~memoryd.store.records.StoredEntry` records; a reply shows each as the map
:func:`entry_reply` makes, without its ``rowid`` (the index's own row number, which changes when
the index is rebuilt and which no method takes). ``get`` and ``list`` add the ``age_note`` an old
entry carries (:func:`public_entry`, :mod:`memoryd.retrieval.age`); ``search`` shapes its hits
with :func:`search_reply`, ``purge`` its report with :func:`purge_reply`. Every reply goes through
:func:`without_rowids` on its way out, which turns the entries a reply still holds into their
maps, so this module is the one place that does."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from memoryd.maintenance.purge_records import PurgedEntry, PurgeReport
from memoryd.retrieval.age import age_note, format_age
from memoryd.retrieval.records import Explanation, Hit, SearchResult
from memoryd.sessions.explain import evidence_words
from memoryd.store.records import Remembered, StoredEntry
from memoryd.store.usage import UsageRecord


def entry_reply(entry: StoredEntry) -> dict[str, Any]:
    """An entry as clients see it: its fields, ``id`` last, no ``rowid``."""
    shown = entry.as_dict()
    del shown["rowid"]
    return shown


def public_entry(entry: StoredEntry, now: float, usage: UsageRecord | None = None
                 ) -> dict[str, Any]:
    """An entry as ``get`` (with its ``usage``) and ``list`` show it: with its
    ``age_note``."""
    shown = entry_reply(entry)
    if usage is not None:
        shown["usage"] = usage.as_dict()
    shown["age_note"] = age_note(entry.created, now)
    return shown


def remember_reply(written: Remembered, run: str | None = None) -> dict[str, Any]:
    """A remember's reply (each of remember_many's ``results``): ``stored``, the ``entry``
    (the new one, or the one a duplicate repeats), and what the write did to others; ``run``:
    the ``correct`` run that recorded its corrections (memoryd.passes.corrections)."""
    if not written.stored:
        reply: dict[str, Any] = {"stored": False, "duplicate": written.duplicate,
                                 "entry": written.entry}
        if written.cosine is not None:
            reply["cosine"] = written.cosine
        return reply
    reply = {"stored": True, "entry": written.entry, "superseded": list(written.superseded)}
    if written.similar is not None:
        reply["similar"] = {"entry": written.similar, "cosine": written.cosine}
    if written.corrects:
        reply["corrects"] = [{"entry": c.entry, "why": c.why, "action": c.action}
                             for c in written.corrects]
    if written.resembles:
        reply["resembles"] = list(written.resembles)
    if run is not None:
        reply["run"] = run
    return reply


def remember_many_result(written: Remembered, run: str | None = None) -> dict[str, Any]:
    """One of remember_many's ``results``: what became of the entry, by ids, without texts
    (a batch of long entries answered with every entry it stored, and the entries each was
    near or corrected, was five times the size of the request: past the frame limit after
    the batch was stored). ``id`` is the new entry (``status``: its own, ``superseded`` when
    a newer value of its key was there already), or the one a duplicate repeats; the others
    are :func:`remember_reply`'s, each entry by its id."""
    if not written.stored:
        result: dict[str, Any] = {"stored": False, "id": written.entry.uid,
                                  "duplicate": written.duplicate}
        if written.cosine is not None:
            result["cosine"] = written.cosine
        return result
    result = {"stored": True, "id": written.entry.uid, "status": written.entry.status,
              "superseded": [entry.uid for entry in written.superseded]}
    if written.similar is not None:
        result["similar"] = {"id": written.similar.uid, "cosine": written.cosine}
    if written.corrects:
        result["corrects"] = [{"id": c.entry.uid, "why": c.why, "action": c.action}
                              for c in written.corrects]
    if written.resembles:
        result["resembles"] = [entry.uid for entry in written.resembles]
    if run is not None:
        result["run"] = run
    return result


def purge_reply(report: PurgeReport) -> dict[str, Any]:
    """A purge's reply: what it removed (or would), what it scrubbed, and the files that still
    hold what it removed."""
    return {"agent": report.agent, "dry_run": report.dry_run,
            "entries": [purged_entry_reply(entry) for entry in report.entries],
            "mentions": [{"id": m.what, "where": m.where} for m in report.mentions],
            "events": report.events, "changes": report.changes,
            "ledger_records": report.ledger_records, "archive_records": report.archive_records,
            "files_still_holding": list(report.files_still_holding),
            "transcripts_still_holding": list(report.transcripts_still_holding),
            "torn": list(report.torn), "sealed": list(report.sealed),
            "backups": list(report.backups), "damaged_copies": list(report.damaged_copies)}


def purged_entry_reply(entry: PurgedEntry) -> dict[str, Any]:
    """A purged entry as the reply lists it: without its ``rowid`` and ``hash`` (the purge's
    own, for the rows and marks it deletes), with ``where`` when the index did not hold it."""
    shown: dict[str, Any] = {"id": entry.uid, "kind": entry.kind, "category": entry.category,
                             "created": entry.created, "via": entry.via,
                             "source": entry.source}
    if entry.where is not None:
        shown["where"] = entry.where
    return shown


def without_rowids(value: Any) -> Any:
    """A reply with every entry as its map (:func:`entry_reply`), and every other map of an
    entry (one with ``id`` and ``rowid``: an event's snapshot) stripped of ``rowid``."""
    if isinstance(value, StoredEntry):
        return entry_reply(value)
    if isinstance(value, dict):
        return {k: without_rowids(v) for k, v in value.items()
                if not (k == "rowid" and "id" in value)}
    if isinstance(value, list):
        return [without_rowids(v) for v in value]
    return value


def search_reply(result: SearchResult, now: float, *, why: bool = False) -> dict[str, Any]:
    """A search's reply: its hits, best first, and what it says of them. ``why``: each hit's
    evidence in words too (the viewer's, for a search with ``explain``)."""
    reply: dict[str, Any] = {"hits": [hit_reply(hit, now, why=why) for hit in result.hits],
                             "degraded": result.degraded, "threshold": result.threshold}
    if result.degraded_reason is not None:
        reply["degraded_reason"] = result.degraded_reason
    if result.unknown_agents:
        reply["unknown_agents"] = list(result.unknown_agents)
    if result.unknown_category is not None:
        reply["unknown_category"] = result.unknown_category
    if result.background is not None:
        reply["background"] = {"mean": round(result.background.mean, 4),
                               "spread": round(result.background.spread, 4),
                               "candidates": result.background.candidates}
    if result.window is not None:
        reply["window"] = {"first": result.window.first.isoformat(),
                           "last": result.window.last.isoformat(),
                           "phrase": result.window.phrase}
    return reply


def hit_reply(hit: Hit, now: float, *, why: bool = False) -> dict[str, Any]:
    """A hit as clients see it: the entry's fields (its passage's text and records in place of
    its own), its score, evidence and match, its age, and the passage's turns, the hit's
    explanation and its newer version (``newer``: an id) when it has them."""
    shown = hit.entry.as_dict()
    passage = hit.passage
    if passage is not None:
        shown["text"] = passage.text
        if passage.records is not None:
            shown["records"] = list(passage.records)
    score = hit.score
    shown.update({
        "score": {"relevance": score.relevance, "keyword": score.keyword,
                  "vector": score.vector, "part": score.part, "coverage": score.coverage},
        "evidence": dict(hit.evidence),
        "match": hit.match})
    if hit.scored_without is not None:
        shown["scored_without"] = list(hit.scored_without)
    created = shown["created"]
    shown.update({"age_s": round(now - created, 1), "age": format_age(now - created),
                  "age_note": age_note(created, now)})
    if passage is not None:
        shown["context"] = {"before": list(passage.before), "after": list(passage.after)}
    if hit.explanation is not None:
        shown["explain"] = explained(hit.explanation)
    if hit.newer is not None:
        shown["newer"] = hit.newer
    if why:
        shown["why"] = evidence_words(hit.evidence, asked="query", found=shown.get("explain"))
    return shown


def explained(explanation: Explanation) -> dict[str, Any]:
    """A hit's ``explain`` field."""
    sentence = explanation.sentence
    return {"words": list(explanation.words), "held": list(explanation.held),
            "sentence": {**asdict(sentence), "cosine": round(sentence.cosine, 4)}
            if sentence is not None else None}
