"""How `memory sync` and `memory share` print their replies (docs/sync.md). Their arguments
and exit rules are in the table (memoryd_client.commands)."""

from __future__ import annotations

TYPE_CHECKING = False  # see memoryd_client/__init__.py

if TYPE_CHECKING:
    from typing import Any


def unpushed(team: dict[str, Any]) -> str:
    from memoryd_client.status_view import unpushed as said

    return said(team)


def print_sync(result: dict[str, Any]) -> None:
    from memoryd_client.views import count

    if "root" in result:  # sync init
        print(f"{result['root']} is {'a new' if result.get('created') else 'already a'} git "
              f"repository of memoryd's durable files; remote {result['remote']}")
        if result.get("reachable"):
            print("the remote answers; run `memory sync` to sync now (and the sync pass runs "
                  "on its schedule)")
        else:
            print(f"the remote does not answer yet: {result.get('remote_problem')}")
        return
    if "shared" in result:  # sync add-shared
        print(f"following {result['remote']} as the team namespace {result['agent']} "
              f"({count(result['entries'], 'entry', 'entries')})")
        return
    if "unfollowed" in result:  # sync remove-shared
        print(f"no longer following {result['remote']}: "
              f"{count(result['entries'], 'entry', 'entries')} of {result['agent']} left this "
              "machine's index (the team's repository keeps them)")
        if result.get("kept"):
            print(f"kept {result['clone']}: it holds {count(result['unpushed'], 'share')} not "
                  "pushed yet (`memory sync add-shared` again pushes them at the next sync; "
                  "or delete it)")
        return
    applied = result["applied"]
    if result.get("own") is False:  # a machine that follows teams and syncs nothing of its own
        print("this machine's own memory is not synced (`memory sync init REMOTE` sets that "
              "up); the teams it follows:")
    else:
        pulled = applied.get("pulled", applied["records"])  # what came, applied or overtaken
        parts = [("committed local changes" if result["committed"] else "nothing new here"),
                 (f"pulled: {count(pulled, 'ledger record')}, "
                  f"{count(applied['restored'], 'transcript turn')}, {applied['purged']} purged"
                  if result["pulled"]
                  else "nothing to pull"),
                 ("pushed" if result["pushed"] else "nothing to push")]
        print("; ".join(parts) + f" ({result['seconds']:.1f} s)")
    for name, team in (result.get("teams") or {}).items():
        print(f"team {name}: {_followed(team)}")
    _print_refused(result)
    for decided in result.get("decided") or []:
        print(f"{decided['id']}: changed on two machines before they met: "
              f"{_status(decided['holds'])} (the later) holds over {_status(decided['over'])}; "
              f"`memory history {decided['id']}` shows both")
    new = result.get("new_conflicts") or []
    for copy in new:
        print(f"conflict: both versions kept; the other machine's is {copy}")
    waiting = [c for c in result.get("conflicts") or [] if c not in new]
    if waiting:
        print(f"{count(len(waiting), 'older conflict copy', 'older conflict copies')} "
              f"wait{'s' if len(waiting) == 1 else ''}: {', '.join(waiting)}")
    if new or waiting:
        print("merge what you want to keep into the file, delete the copy, then `memory sync`")


def _print_refused(result: dict[str, Any]) -> None:
    """What the merge kept that the remote's copy lacked, and the damaged lines it did not
    take (docs/sync.md, "How files merge")."""
    refused = result.get("refused") or []
    for said in refused:
        print(f"refused: {said}")
    if refused:
        print("the merge holds this machine's records: "
              + ("the push gave them back to the remote" if result.get("pushed")
                 else "the next push gives them back to the remote"))


def _followed(team: dict[str, Any]) -> str:
    """What following a team did (`memory sync`'s line for it)."""
    from memoryd_client.views import count

    if team.get("error"):
        return f"not followed this time: {team['error']}"
    said = [count(team.get("entries", 0), "new entry", "new entries")]
    if team.get("removed"):
        said.append(f"{team['removed']} removed (their lines left the team's file)")
    if team.get("skipped"):
        said.append(f"{count(team['skipped'], 'line')} skipped (no entry memoryd can "
                    "apply; the daemon's log names each)")
    if team.get("pushed"):
        said.append(f"{count(team['pushed'], 'share')} pushed (not pushed before)")
    if team.get("unpushed"):
        said.append(unpushed(team))
    return ", ".join(said)


def _status(side: dict[str, Any]) -> str:
    by = side.get("superseded_by")
    return f"{side['status']} by {by}" if side["status"] == "superseded" and by else \
        str(side["status"])


def print_share(result: dict[str, Any]) -> None:
    print(f"shared {result['id']} with team {result['name']} as {result['shared_id']}"
          + (" (pushed)" if result.get("pushed") else f"; {unpushed(result)}"))


def share_exit(result: dict[str, Any], args: Any) -> int:
    """`memory share` exits 1 when the share is not pushed yet (the team does not have it)."""
    return 0 if result.get("pushed") else 1
