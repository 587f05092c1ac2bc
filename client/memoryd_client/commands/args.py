"""Arguments that several commands take: an entry's id, the agent to act as, a time, and the
filters of search, list, recent and export."""

from __future__ import annotations

from memoryd_client.command_spec import Arg

ENTRY_ID = Arg("id", help="entry id or a unique prefix of it")
ACT_AS = Arg("--agent", help="act as this agent (must own the entry; default: the entry's own "
             "agent)")
TIME = ("epoch seconds, an ISO date or time (your local time unless it gives a zone), an age "
        "like 7d, today or yesterday")
#: The filters of search, list, recent and export.
TAGS = Arg("--tags", help="comma-separated tags; all must be present")
PROJECT = Arg("--project", metavar="DIR", help="only entries of DIR's project (the git repository "
              "DIR is in, or DIR outside git; DIR may be relative)")
HERE = Arg("--here", kind="flag", help="this repository's entries and the global ones (the "
           "entries its agents' blocks show); outside a git repository an error (exit 2)")
SINCE = Arg("--since", metavar="T", help=TIME)
UNTIL = Arg("--until", metavar="T", help=TIME + "; a date (today, yesterday) includes that "
            "whole day")
LIST_FILTERS = (
    Arg("--category", help="only this category"),
    Arg("--kind", help="comma-separated kinds (fact, lesson, feedback, note, turn, summary)"),
    TAGS, PROJECT, HERE, SINCE, UNTIL,
    Arg("--status", default="active",
        help="active (default), superseded, forgotten, archived, or any"))
