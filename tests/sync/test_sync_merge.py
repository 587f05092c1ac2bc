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
