"""The options of `memory search`, `list`, `recent` and `export` as a user types them, and what
they say back: times, --here and --project, empty lists, --min-score with --all, and the
messages of a mistake (a tester's findings, 2026-12-01)."""

from __future__ import annotations

import json
import subprocess
import time

from memoryd_client import Client

from tests.conftest import RunningDaemon, run_cli


def _remember(daemon: RunningDaemon, *texts: str, **extra: object) -> list[str]:
    with Client(daemon.socket, timeout_s=30) as client:
        return [client.remember("coder", "notes", text, **extra)["entry"]["id"]
                for text in texts]


def test_a_time_in_epoch_seconds_is_taken_from_the_command_line(keyword_daemon) -> None:
    """`--since 1796000000` was "not a time (epoch seconds, …)": the command line sends text,
    and only a JSON number was read as epoch seconds."""
    (uid,) = _remember(keyword_daemon, "the refund service restarts nightly")
    now = int(time.time())
    for command in (("list",), ("recent",), ("export",)):
        before = run_cli(*command, "--since", str(now - 3600))
        assert before.returncode == 0, before.stderr
        assert uid in before.stdout
        after = run_cli(*command, "--since", str(now + 3600))
        assert after.returncode == 0, after.stderr
        assert uid not in after.stdout
        assert uid in run_cli(*command, "--since", "0", "--until", str(now + 60)).stdout
    searched = run_cli("search", "*", "-", "refund", "--since", "0", "--all")
    assert searched.returncode == 0, searched.stderr
    assert uid in searched.stdout
    # eight digits are still a date, as ISO writes one without its dashes
    assert uid not in run_cli("list", "--until", "20000101").stdout


def test_all_lists_the_ranked_hits_under_a_min_score_too(daemon, client) -> None:
    """`--min-score 0.85 --all` printed the matches only, and `--min-score 1 --all` said
    "no match (nothing ranked)" though hits were ranked: a min score sets what a match is,
    --all still lists the rest."""
    for n in range(6):
        client.remember("ops", "incidents", f"the refund service restarted after outage {n}",
                        force=True)
    client.remember("ops", "incidents", "the billing cron job was restarted by hand")
    plain = run_cli("search", "*", "-", "refund service restarted", "--all", "--json")
    scores = sorted(hit["score"]["relevance"] for hit in json.loads(plain.stdout)["hits"])
    assert len(scores) > 1, plain.stderr
    gap, middle = max((high - low, (low + high) / 2) for low, high in zip(scores, scores[1:]))
    assert gap > 0
    some = run_cli("search", "*", "-", "refund service restarted", "--min-score", f"{middle}",
                   "--all")
    assert some.returncode == 0, some.stderr
    lines = some.stdout.splitlines()
    assert len(lines) == len(scores)  # the ranked hits, those above the min score marked *
    assert sum(line.startswith("*") for line in lines) == sum(s >= middle for s in scores)
    assert not run_cli("search", "*", "-", "refund service restarted", "--min-score",
                       f"{middle}").stdout.startswith(" ")  # without --all: the matches
    none = run_cli("search", "*", "-", "refund service restarted", "--min-score", "1", "--all")
    assert none.returncode == 1
    assert len(none.stdout.splitlines()) == len(scores)
    said = none.stderr.splitlines()[-1]
    assert said.startswith("no match (none at or above --min-score 1; best: "), said
    assert "--all lists" not in said  # it was given
    alone = run_cli("search", "*", "-", "refund service restarted", "--min-score", "1")
    assert alone.stdout == "" and "--all lists the ranked hits" in alone.stderr
    nothing = run_cli("search", "nobody", "-", "refund", "--min-score", "1", "--all")
    assert "no match (nothing ranked)" in nothing.stderr


def test_here_with_project_is_a_usage_error(keyword_daemon, tmp_path) -> None:
    """`--here --project DIR` was taken, and --project silently dropped: each names the entries
    wanted (the docs write [--project DIR | --here])."""
    _remember(keyword_daemon, "the refund service restarts nightly")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    for command in (("search", "*", "-", "refund"), ("list",), ("recent",), ("export",)):
        both = run_cli(*command, "--here", "--project", str(tmp_path), cwd=str(tmp_path))
        assert both.returncode == 2, (command, both.stderr)
        assert both.stdout == ""
        assert both.stderr.startswith(f"--here and --project {tmp_path}: give one of them"), \
            both.stderr
        assert "stopped after" not in both.stderr  # export wrote nothing: nothing is cut short


def test_a_filter_list_naming_nothing_is_a_usage_error(keyword_daemon) -> None:
    """`--kind ''` matched nothing ("no entries") while `--tags ''` applied no filter: a list
    that names nothing (an unset variable) is refused, naming its option."""
    _remember(keyword_daemon, "the refund service restarts nightly", tags=["ops"])
    for option, value in (("--kind", ""), ("--kind", ","), ("--tags", ""), ("--tags", " , "),
                          ("--status", "")):
        for command in (("search", "*", "-", "refund"), ("list",), ("export",)):
            refused = run_cli(*command, option, value)
            assert refused.returncode == 2, (command, option, value, refused.stderr)
            assert refused.stdout == ""
            assert refused.stderr.startswith(f"Error: {command[0]}: {option} {value!r} names "
                                             "no "), refused.stderr
    assert run_cli("list", "--kind", "note,", "--tags", "ops").returncode == 0


def test_a_window_ending_before_it_begins_names_both_options(keyword_daemon) -> None:
    """`--since 10d --until 30d` said "… is not before until (30d)": both are options."""
    for command in (("search", "*", "-", "refund"), ("list",), ("recent",)):
        refused = run_cli(*command, "--since", "10d", "--until", "30d")
        assert refused.returncode == 2
        assert refused.stderr.startswith(f"Error: {command[0]}: --since (10d) is not before "
                                         "--until (30d): nothing could match"), refused.stderr


def test_a_query_starting_with_a_dash_is_told_to_follow_two_dashes(keyword_daemon) -> None:
    """`memory search '*' - '-refund'` said only "the following arguments are required:
    query": the query had been read as an unknown option."""
    _remember(keyword_daemon, "-refund is the flag that reverses a payment")
    dashed = run_cli("search", "*", "-", "-refund")
    assert dashed.returncode == 2
    assert "the following arguments are required: query" in dashed.stderr
    assert "note: -refund was read as an option" in dashed.stderr
    assert "put -- before it" in dashed.stderr and "-- -refund" in dashed.stderr
    after = run_cli("search", "*", "-", "--all", "--", "-refund")  # as the note says
    assert after.returncode in (0, 1) and "reverses a payment" in after.stdout, after.stderr
    missing = run_cli("search", "*", "--limit", "3", "refund")  # no stray word: no note
    assert missing.returncode == 2 and "note:" not in missing.stderr


def test_an_id_in_upper_case_is_the_same_id(keyword_daemon) -> None:
    """`memory get 39A5822539AD1220D9C`, an existing id in upper case, said "no entry with
    id": ids are hex, and a tool may show them in upper case."""
    old, other = _remember(keyword_daemon, "the refund service restarts nightly",
                           "the billing job runs hourly")
    for given in (old.upper(), old[:8].upper()):
        got = run_cli("get", given)
        assert got.returncode == 0, got.stderr
        assert got.stdout.startswith(old)
    newer = run_cli("supersede", old.upper(), "the refund service restarts at 2am")
    assert newer.returncode == 0, newer.stderr
    assert old in run_cli("history", old.upper()).stdout
    forgotten = run_cli("forget", other.upper())
    assert forgotten.returncode == 0 and f"forgotten {other}" in forgotten.stdout
    assert run_cli("get", "ZZZZ" + old[4:]).returncode == 1  # not hex: still no such id


def test_an_entrys_id_given_for_a_session_says_whose_it_is(keyword_daemon) -> None:
    """`memory explain ID` of an entry's id said "no session with id …", no more."""
    (uid,) = _remember(keyword_daemon, "the refund service restarts nightly")
    for command in (("explain", uid), ("explain", uid[:8].upper()), ("session", "show", uid)):
        told = run_cli(*command)
        assert told.returncode == 1
        assert "it is an entry's id" in told.stderr, told.stderr
        assert f"`memory get {command[-1]}` shows the entry" in told.stderr
        assert f"`memory history {command[-1]}` its versions" in told.stderr
    assert "an entry's id" not in run_cli("explain", "abcdef12").stderr


def test_a_socket_given_is_named_as_the_one_that_was_tried(memoryd_home, tmp_path) -> None:
    """`memory --socket /nope.sock …` said "this shell's socket comes from MEMORYD_HOME",
    though the socket had been given on the command line."""
    nope = str(tmp_path / "nope.sock")
    told = run_cli("--socket", nope, "status")
    assert told.returncode == 3
    assert f"(the socket given, --socket {nope}, is not this shell's" in told.stderr, told.stderr
    assert "comes from MEMORYD_HOME" not in told.stderr
    assert "comes from MEMORYD_HOME" in run_cli("status").stderr  # the shell's, without it


def test_an_export_into_a_closed_pipe_stops_quietly(keyword_daemon) -> None:
    """`memory export | head -c 10` exited 0 but said "memory export: stopped after 1 entries;
    the output is incomplete": the reader wanted no more (the docs say it stops quietly)."""
    from tests.client.test_cli import into_a_closed_pipe

    _remember(keyword_daemon, "the refund service restarts nightly")
    assert "exported 1 entry\n" in run_cli("export").stderr  # not "1 entries"
    with Client(keyword_daemon.socket, timeout_s=30) as client:  # more than a buffer's worth
        client.remember_many([{"agent": "coder", "category": "notes",
                               "text": f"outage {n}: the refund service restarted " + "x" * 200}
                              for n in range(60)])
    for buffered in (False, True):
        cut = into_a_closed_pipe("export", buffered=buffered)
        assert (cut.returncode, cut.stderr) == (0, ""), (buffered, cut.stderr)


def test_a_superseded_entry_names_its_successor(keyword_daemon) -> None:
    """A superseded entry (--status any) carried "[superseded]" but not which entry holds
    over it, as an earlier version's search line names the newer one."""
    (old,) = _remember(keyword_daemon, "the refund service restarts nightly")
    with Client(keyword_daemon.socket, timeout_s=30) as client:
        new = client.supersede(old, "the refund service restarts at 2am")["entry"]["id"]
    for command in (("list", "--status", "any"), ("search", "*", "-", "refund service restarts",
                                                  "--status", "any", "--all"), ("get", old)):
        shown = run_cli(*command).stdout
        line = next(line for line in shown.splitlines() if old in line)
        assert f"[superseded by {new}]: the refund service restarts nightly" in line, line
        assert "earlier version of" not in line  # named once
