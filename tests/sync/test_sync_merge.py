"""The ledger merge driver's union (memoryd.sync.merge), on ledgers in the real format: the
merge that reads only what follows the lines both sides share gives the union the whole
three-way merge of sets gives, each record once, an entry's records after its remember."""

from __future__ import annotations

import json
import random

from memoryd.store.ledger import encode_record
from memoryd.sync.merge import _union, common_lines, ledger_lines, merge_ledgers


def remember(uid: str, ts: float, text: str) -> bytes:
    return encode_record({"op": "remember", "ts": ts, "entry": {
        "uid": uid, "agent": "designer", "category": "notes", "text": text, "kind": "note",
        "status": "active", "created": ts, "updated": ts}})


def status(uid: str, ts: float, value: str = "forgotten") -> bytes:
    return encode_record({"op": "status", "ts": ts, "id": uid, "status": value,
                          "actor": "test"})


def purge(ids: list[str], ts: float) -> bytes:
    return encode_record({"op": "purge", "ts": ts, "ids": ids, "actor": "test"})


def whole_union(base: bytes, ours: bytes, theirs: bytes) -> set[bytes]:
    """What the merge held before it read only the new part: every line of the three."""
    kept = _union(ledger_lines(base)[0], ledger_lines(ours)[0], ledger_lines(theirs)[0],
                  _report(), ledger=True)
    return set(kept)


def _report():  # type: ignore[no-untyped-def]
    from memoryd.sync.merge import MergeReport
    return MergeReport()


def lines(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True)


def assert_ordered(data: bytes) -> None:
    born: set[str] = set()
    for line in lines(data):
        record = json.loads(line)
        if record["op"] == "remember":
            born.add(record["entry"]["uid"])
        elif record["op"] == "status":
            assert record["id"] in born, f"a status before its entry: {line!r}"


def test_both_sides_appended_keeps_the_shared_start_and_the_union_after_it() -> None:
    base = b"".join(remember(f"b{i}", 100 + i, f"base note {i}") for i in range(50))
    ours = base + remember("o1", 200, "ours one") + status("b3", 201)
    theirs = base + remember("t1", 199, "theirs one") + status("t1", 202)
    merged, report = merge_ledgers(base, ours, theirs)
    assert merged.startswith(base)  # the shared start kept as it was
    assert lines(merged[len(base):]) == [remember("t1", 199, "theirs one"),
                                         remember("o1", 200, "ours one"), status("b3", 201),
                                         status("t1", 202)]
    assert set(lines(merged)) == whole_union(base, ours, theirs)
    assert (report.kept, report.ours_only, report.theirs_only) == (54, 2, 2)
    # either side merging gives the same bytes
    assert merge_ledgers(base, theirs, ours)[0] == merged


def test_a_purge_on_one_side_keeps_the_purged_records_out() -> None:
    records = [remember(f"b{i}", 100 + i, f"base note {i}") for i in range(20)]
    base = b"".join(records)
    # ours purged b5 (the purge rewrote its ledger) and says so; theirs wrote about b5
    ours = b"".join(r for i, r in enumerate(records) if i != 5) + purge(["b5"], 300)
    theirs = base + status("b5", 250) + remember("t1", 260, "theirs one")
    merged, _ = merge_ledgers(base, ours, theirs)
    assert b'"b5"' not in merged.replace(purge(["b5"], 300), b"")
    assert merged.count(purge(["b5"], 300)) == 1 and remember("t1", 260, "theirs one") in merged
    assert set(lines(merged)) == whole_union(base, ours, theirs)
    assert_ordered(merged)


def test_a_purge_record_whose_entry_both_sides_still_hold_drops_it_from_the_shared_start() -> None:
    base = b"".join(remember(f"b{i}", 100 + i, f"base note {i}") for i in range(10))
    ours = base + purge(["b2"], 300)  # a ledger an older version purged without rewriting
    theirs = base + status("b2", 250) + remember("t1", 260, "theirs one")
    merged, report = merge_ledgers(base, ours, theirs)
    assert b'"b2"' not in merged.replace(purge(["b2"], 300), b"")
    assert report.dropped_purged == 2
    assert set(lines(merged)) == whole_union(base, ours, theirs)
    # and a record about an entry purged in the shared start stays out
    later = merged + status("b2", 400)
    again, _ = merge_ledgers(merged, later, merged + remember("t2", 401, "two"))
    assert status("b2", 400) not in again and remember("t2", 401, "two") in again


def test_a_damaged_line_of_theirs_is_not_taken_and_ours_is_kept() -> None:
    base = b"".join(remember(f"b{i}", 100 + i, f"note {i}") for i in range(5))
    bad = remember("t9", 300, "flipped").replace(b"flipped", b"flopped")
    ours_bad = remember("o9", 301, "mine").replace(b"mine", b"mien")
    merged, report = merge_ledgers(base, base + ours_bad, base + bad + remember("t1", 302, "ok"))
    assert bad not in merged and remember("t1", 302, "ok") in merged
    assert merged.endswith(ours_bad)  # ours, damaged, kept where the reader skips it
    assert len(report.damaged) == 2


def test_random_histories_merge_to_the_whole_union() -> None:
    rng = random.Random(5)
    for _ in range(60):
        uids = [f"u{n}" for n in range(rng.randint(0, 40))]
        base_records = [remember(u, 100 + n, f"note {u}") for n, u in enumerate(uids)]
        base = b"".join(base_records)

        def side(name: str, uids: list[str] = uids,
                 base_records: list[bytes] = base_records) -> bytes:
            kept = list(base_records)
            extra: list[bytes] = []
            if uids and rng.random() < 0.3:  # a purge that rewrote the ledger
                gone = rng.choice(uids)
                kept = [r for r in kept if f'"{gone}"'.encode() not in r]
                extra.append(purge([gone], 500 + rng.random()))
            for n in range(rng.randint(0, 8)):
                uid = f"{name}{n}"
                extra.append(remember(uid, 200 + rng.random() * 100, f"{name} {n}"))
                if rng.random() < 0.5:
                    extra.append(status(uid, 400 + rng.random()))
            if uids and rng.random() < 0.5:
                extra.append(status(rng.choice(uids), 300 + rng.random()))
            return b"".join(kept + extra)

        ours, theirs = side("o"), side("t")
        merged, _ = merge_ledgers(base, ours, theirs)
        assert set(lines(merged)) == whole_union(base, ours, theirs)
        assert len(lines(merged)) == len(set(lines(merged)))  # each record once
        assert_ordered(merged)


def test_common_lines_stops_at_the_last_whole_line_both_share() -> None:
    a = b"one\ntwo\nthree\n" * 30_000
    assert common_lines(a, a) == len(a)
    assert common_lines(a, a + b"four\n") == len(a)
    changed = a[:200_001] + b"X" + a[200_002:]
    cut = common_lines(a, changed)
    assert a[:cut] == changed[:cut] and a[cut - 1:cut] == b"\n"
    assert cut <= 200_001 < cut + len(b"three\n") + 1
    assert common_lines(b"", a) == 0 and common_lines(b"abc", b"abd") == 0


def test_a_line_one_copy_lost_without_a_purge_is_kept_and_counted() -> None:
    """Only a purge takes a line out of a ledger: a copy that lost one (deleted by hand, or
    damaged: a word changed, so its checksum fails) gives no reason to drop it. The merge took
    "the ancestor held it, one side no longer does" for a purge."""
    base = b"".join(remember(f"b{i}", 100 + i, f"note {i}") for i in range(10))
    ours = base + remember("o1", 200, "ours one")
    lost = base.replace(remember("b4", 104, "note 4"), b"")
    damaged = base.replace(b"note 4", b"note 5")
    for theirs in (lost + remember("t1", 201, "theirs one"),
                   damaged + remember("t1", 201, "theirs one")):
        merged, report = merge_ledgers(base, ours, theirs)
        assert remember("b4", 104, "note 4") in merged
        assert b"note 5" not in merged.replace(remember("b5", 105, "note 5"), b"")
        assert remember("t1", 201, "theirs one") in merged
        assert (report.lacking_theirs, report.lacking_ours) == (1, 0)
        assert report.refused == (1 if theirs.startswith(damaged) else 0)
        # the other way round, the same union, and the count on our side
        again, other = merge_ledgers(base, theirs, ours)
        assert set(lines(again)) - set(lines(theirs)) >= {remember("b4", 104, "note 4")}
        assert other.lacking_ours == 1


def test_a_purge_that_rewrote_a_reason_takes_the_old_line_out() -> None:
    """A purge keeps a forget whose reason held the text, with the text replaced: the line it
    rewrote goes on the other side too, the entry's records with it."""
    from memoryd.maintenance.purge import PURGED
    from memoryd.sync.merge import SCRUBBED
    assert SCRUBBED == PURGED

    def forget(uid: str, ts: float, reason: str) -> bytes:
        return encode_record({"op": "status", "ts": ts, "id": uid, "status": "forgotten",
                              "reason": reason, "actor": "test"})

    base = b"".join(remember(f"b{i}", 100 + i, f"note {i}") for i in range(5)) + \
        remember("s1", 110, "the key is hunter2") + forget("b2", 120, "hunter2 said so")
    ours = base.replace(remember("s1", 110, "the key is hunter2"), b"").replace(
        forget("b2", 120, "hunter2 said so"), forget("b2", 120, f"{PURGED} said so")) + \
        purge(["s1"], 300)
    for merged, report in (merge_ledgers(base, ours, base), merge_ledgers(base, base, ours),
                           merge_ledgers(base, ours, base + remember("t1", 130, "new"))):
        assert b"hunter2" not in merged
        assert forget("b2", 120, f"{PURGED} said so") in merged
        assert report.said() == {}


def test_a_reviewed_file_loses_the_lines_a_side_took_out() -> None:
    """A team's file is edited in review (memoryd.sync.shared): a line a reviewer took out
    stays out when a share merges with it; the driver tells it by its path."""
    from memoryd.sync.merge import merge_file
    base = b"".join(remember(f"b{i}", 100 + i, f"lesson {i}") for i in range(4))
    reviewed = base.replace(remember("b1", 101, "lesson 1"), b"")
    shared = base + remember("s1", 200, "shared")
    merged, _ = merge_file("ledger", "entries.jsonl", base, shared, reviewed)
    assert remember("b1", 101, "lesson 1") not in merged and remember("s1", 200, "shared") \
        in merged
    kept, _ = merge_file("ledger", "ledger/designer.jsonl", base, shared, reviewed)
    assert remember("b1", 101, "lesson 1") in kept
    assert merge_file("ledger", None, base, shared, reviewed)[0] == kept


def test_a_damaged_archive_takes_no_record_out() -> None:
    """An archive's records leave by a purge (which writes no record there): a copy whose
    reading ends at a corrupt member does not take the records after it out."""
    from memoryd.store.archive import MemberWriter
    from memoryd.sync.merge import merge_archives

    def archive(*members: list[int]) -> bytes:
        data = b""
        for member in members:
            writer = MemberWriter()
            writer.add([json.dumps({"entry": {"uid": f"t{i}", "updated": i}},
                                   sort_keys=True).encode() + b"\n" for i in member])
            data += writer.data()
        return data

    def uids(data: bytes) -> set[str]:
        from memoryd.sync.merge import archive_lines
        return {json.loads(line.data)["entry"]["uid"] for line in archive_lines(data)}

    base = archive([1, 2], [3, 4])
    ours = archive([1, 2], [3, 4], [5])
    purged = archive([1], [3, 4])  # a purge took t2 out
    assert uids(merge_archives(base, ours, purged)[0]) == {"t1", "t3", "t4", "t5"}
    broken = archive([1, 2]) + b"\x1f\x8b\x08\x00garbage" + archive([6])
    merged, report = merge_archives(base, ours, broken)
    assert uids(merged) == {"t1", "t2", "t3", "t4", "t5"}
    assert report.refused == 1 and report.lacking_theirs == 2


def test_the_driver_says_what_it_kept_back(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """git runs the driver with the file's path (%P); what it kept back or refused is written
    where ``memory sync`` reads it."""
    from memoryd.sync import driver
    base = b"".join(remember(f"b{i}", 100 + i, f"note {i}") for i in range(3))
    files = {"base": base, "ours": base + remember("o1", 200, "mine"),
             "theirs": base.replace(remember("b1", 101, "note 1"), b"") + b"not json\n"}
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    report = tmp_path / "report.jsonl"
    monkeypatch.setenv(driver.REPORT_ENV, str(report))
    assert driver.main(["ledger", *(str(tmp_path / n) for n in files),
                        "ledger/designer.jsonl"]) == 0
    assert remember("b1", 101, "note 1") in (tmp_path / "ours").read_bytes()
    assert json.loads(report.read_text()) == {"path": "ledger/designer.jsonl",
                                              "lacking_theirs": 1, "refused": 1}
