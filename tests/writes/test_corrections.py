"""A correction is stored beside what it corrects, not refused as its copy (DESIGN.md principle
7; N2 of the newcomer report of 2026-11-28), through the CLI, the API and MCP."""

from __future__ import annotations

import json

from memoryd_client import Client

from tests.client.test_mcp import mcp_session, text_of
from tests.conftest import run_cli, run_cli_at_terminal
from tests.passes.test_meaning import PAIRS


def test_a_dont_after_a_do_is_stored_and_corrects_it_undoably(daemon, client: Client) -> None:
    first = run_cli("store", "coder", "style", "Use tabs for indentation in Makefiles",
                    "--kind", "lesson", "--polarity", "positive")
    assert first.returncode == 0, first.stderr
    old = first.stdout.split()[1]
    # a person corrects it, at a terminal
    second = run_cli_at_terminal("store", "coder", "style",
                                 "Never use tabs for indentation in Makefiles",
                                 "--kind", "lesson", "--polarity", "negative")
    assert second.returncode == 0, second.stderr  # stored, not refused as a near duplicate
    new = second.stdout.split()[1]
    assert f"superseded {old}: Use tabs for indentation in Makefiles" in second.stdout
    assert client.get(old)["status"] == "superseded" and client.get(old)["superseded_by"] == new
    run = second.stdout.split("recorded as ")[1].split(":")[0]
    shown = client.pass_show(run)
    assert shown["pass"] == "correct"
    [change] = shown["changes"]
    assert change["target"] == old and "a \"do\" and a \"don't\"" in change["why"]
    # the person takes it back: both are kept, and the next consolidation puts them to them
    assert run_cli("undo", run).returncode == 0
    assert client.get(old)["status"] == "active" and client.get(new)["status"] == "active"
    assert client.pass_run("consolidate")["counts"].get("contradictions") == 1


def test_a_correction_from_a_script_is_stored_and_disputed(daemon, client: Client) -> None:
    """The `memory` command run by a script (or an agent's shell) is not a person's word:
    its correction is stored beside the rule, both disputed, nothing replaced."""
    first = run_cli("store", "coder", "style", "Use tabs for indentation in Makefiles",
                    "--kind", "lesson", "--polarity", "positive")
    old = first.stdout.split()[1]
    second = run_cli("store", "coder", "style", "Never use tabs for indentation in Makefiles",
                     "--kind", "lesson", "--polarity", "negative")
    assert second.returncode == 0, second.stderr
    new = second.stdout.split()[1]
    assert client.get(old)["status"] == "active" and client.get(new)["status"] == "active"
    disputed = {frozenset(c["ids"]) for c in client.status()["contradictions"]}
    assert frozenset((old, new)) in disputed


def test_an_agents_correction_over_mcp_is_stored_and_disputed(daemon, client: Client) -> None:
    session = mcp_session([
        ("memory_remember", {"text": "Use tabs for indentation in Makefiles", "kind": "lesson",
                             "category": "style", "polarity": "positive"}),
        ("memory_remember", {"text": "Never use tabs for indentation in Makefiles",
                             "kind": "lesson", "category": "style", "polarity": "negative"}),
        ("memory_remember", {"text": "Always use tabs for indentation in Makefiles",
                             "kind": "lesson", "category": "style", "polarity": "positive"}),
        ("memory_remember", {"text": "Use tabs for indentation in generated Makefiles",
                             "kind": "lesson", "category": "style", "polarity": "positive"}),
    ], agent="claude-code")
    do, dont, again, narrower = (json.loads(text_of(r)) for r in session["results"])
    # said otherwise, not contradicting: stored, and the agent told what it is kept beside
    assert narrower["stored"] and narrower["kept_beside"] == [
        {"id": do["id"], "text": do["text"]}]
    assert [c["id"] for c in narrower["contradicts"]] == [dont["id"]]
    assert do["stored"] and dont["stored"] and dont["id"] != do["id"]
    [contradicted] = dont["contradicts"]
    assert contradicted["id"] == do["id"] and contradicted["now"].startswith("disputed")
    # the same rule said again is the duplicate, of the rule that says it
    assert again == {"stored": False, "duplicate": "near",
                     "existing": {"id": do["id"], "text": do["text"]}}
    assert client.get(do["id"])["status"] == "active"  # an agent's write replaces nothing
    disputed = {frozenset(c["ids"]) for c in client.status()["contradictions"]}
    assert frozenset((do["id"], dont["id"])) in disputed
    block = client.context("claude-code", cwd="/")["text"]
    assert block.count("(disputed") == 3  # the narrower rule disputes the "don't" too


def test_no_second_statement_of_the_reports_distinct_pairs_is_refused(client: Client) -> None:
    """R3/N2: 10 of the report's 18 second statements were refused as near duplicates."""
    refused = []
    for pair in PAIRS:
        if pair.get("source") not in ("R3", "N2"):
            continue
        category = f"pair-{pair['id']}"
        assert client.remember("coder", category, pair["a"], kind=pair["kind"])["stored"]
        reply = client.remember("coder", category, pair["b"], kind=pair["kind"])
        if not reply["stored"]:
            refused.append(pair["b"])
    assert refused == []
    # the same thing said again still is a duplicate
    client.remember("coder", "git", "Use conventional commits", kind="lesson")
    again = client.remember("coder", "git", "Always use conventional commits", kind="lesson")
    assert again["stored"] is False and again["duplicate"] == "near"


def test_x_not_y_after_y_not_x_is_stored_as_a_correction(daemon, client: Client) -> None:
    """"Use spaces, not tabs" after "Use tabs, not spaces": the same words around a "not" in
    another order say the opposite; it was refused as a near duplicate (cosine 0.97)."""
    first = client.remember("coder", "style", "We lint with ruff, never flake8", kind="lesson")
    second = client.remember("coder", "style", "We lint with flake8, never ruff", kind="lesson")
    assert second["stored"], second
    [correction] = second["corrects"]
    assert correction["entry"]["id"] == first["entry"]["id"]
    assert "another order" in correction["why"]


def test_a_fact_said_again_otherwise_is_found_the_newest_first(client: Client) -> None:
    """"Staging runs Postgres 14", later "Staging runs Postgres 16": neither contradicts the
    other (a version is not a quantity), so both are kept. Each was the other's rival: asked
    which Postgres staging runs, search said no match, and ranked the old one first."""
    old = client.remember("coder", "infra", "Staging runs Postgres 14")["entry"]["id"]
    for text in ("CI runs on GitHub Actions for every push", "We lint with ruff, not flake8",
                 "Deploys go through fly.io from main"):
        client.remember("coder", "infra", text)
    new = client.remember("coder", "infra", "Staging runs Postgres 16")["entry"]["id"]
    hits = client.search("which postgres version does staging run", agent="coder")["hits"]
    assert [h["id"] for h in hits[:2]] == [new, old] and hits[0]["match"] and hits[1]["match"]
    assert "newer" not in hits[0] and hits[1]["newer"] == new
    # a question naming the older one's detail tells them apart: the older first, and it
    # says a newer version of it exists (it said nothing: it looked like the latest word)
    asked = client.search("is staging still on postgres 14", agent="coder")["hits"]
    assert asked[0]["id"] == old and asked[0]["newer"] == new
    shown = run_cli("search", "coder", "-", "is staging still on postgres 14")
    assert shown.stdout.splitlines()[0].endswith(
        f"[earlier version of {new}]: Staging runs Postgres 14"), shown.stdout
    # the block given with a prompt: the newer first, the older said to be earlier
    block = client.context("coder", cwd="/", prompt="which postgres version does staging run?")
    lines = block["text"].splitlines()
    [newer] = [i for i, line in enumerate(lines) if "Postgres 16" in line]
    [earlier] = [i for i, line in enumerate(lines) if "Postgres 14" in line]
    assert newer < earlier and "newer memory here says it otherwise" in lines[earlier]
    shown = run_cli("search", "coder", "-", "which postgres version does staging run")
    assert shown.returncode == 0 and f"[earlier version of {new}]" in shown.stdout
    # at a session's start (no question): both, the older last and marked
    lines = client.context("coder", cwd="/")["text"].splitlines()
    [newer] = [i for i, line in enumerate(lines) if "Postgres 16" in line]
    [earlier] = [i for i, line in enumerate(lines) if "Postgres 14" in line]
    assert newer < earlier and "newer memory here says it otherwise" in lines[earlier]
    assert "says it otherwise" not in lines[newer]
    # a copy of the newer one (another agent's) is not an earlier version of it
    copy = client.remember("ops", "infra", "Staging runs Postgres 16")["entry"]["id"]
    hits = client.search("which postgres version does staging run", agents=["*"])["hits"]
    said = {h["id"]: h.get("newer") for h in hits if "Postgres" in h["text"]}
    assert said == {copy: None, new: None, old: copy}
    # two notes of one topic are not versions of one: neither is ranked as the other
    for text in ("Reading group moved to Thursday 16:00 this week, same room.",
                 "Booked the small meeting room for the reading group, Thursdays 16:00-17:00, "
                 "for the next four weeks."):
        client.remember("coder", "calendar", text)
    hits = client.search("when does the reading group meet", agent="coder",
                         category="calendar")["hits"]
    assert len(hits) == 2 and not any("newer" in h for h in hits)


def test_a_store_says_what_it_is_kept_beside(daemon) -> None:
    """A text said otherwise, without contradicting the entry most like it, is stored beside
    it; the person is told, so the old one is not left to hold by surprise."""
    first = run_cli("store", "coder", "infra", "Staging runs Postgres 14")
    old = first.stdout.split()[1]
    second = run_cli("store", "coder", "infra", "Staging runs Postgres 16")
    assert second.returncode == 0, second.stderr
    assert f"kept beside {old}: Staging runs Postgres 14 (`memory forget {old}`" \
        in second.stdout
    other = run_cli("store", "coder", "infra", "CI runs on GitHub Actions for every push")
    assert "kept beside" not in other.stdout


def test_a_correction_said_as_one_is_a_newer_version(client: Client) -> None:
    """"correction: the deploy target is prod" after "The deploy target is staging": the
    word that says it is a correction made it one word too many apart, so both were in the
    block with no mark, the stale one first."""
    client.remember("term", "deploy", "The deploy target is staging")
    client.remember("term", "deploy", "correction: the deploy target is prod")
    lines = client.context("term", cwd="/")["text"].splitlines()
    [newer] = [i for i, line in enumerate(lines) if "target is prod" in line]
    [earlier] = [i for i, line in enumerate(lines) if "target is staging" in line]
    assert newer < earlier and "newer memory here says it otherwise" in lines[earlier]


def test_memories_alike_in_words_are_no_versions_of_one(client: Client, tmp_path) -> None:
    """Two statements that change two details (who and which service), or are said in two
    projects, are different memories: the older was marked an earlier version of the newer,
    "said earlier" in the block, put last and dropped over budget. A detail changed is still
    one version of another."""
    shop, other = tmp_path / "shop", tmp_path / "other"
    for repo in (shop, other):
        (repo / ".git").mkdir(parents=True)
    different = [  # the tester's pairs (2026-12-01), each stored in this order
        ("people", "note", "Ask Alice before changing the billing service", None),
        ("people", "note", "Ask Bob before changing the search service", None),
        ("ci", "lesson", "Run the full integration suite before merging changes to the "
         "payments service", None),
        ("ci", "lesson", "Run the full integration suite before merging changes to the "
         "email templates", None),
        ("infra", "note", "The Redis cluster breaks when daylight saving time changes", shop),
        ("infra", "note", "The passport renewal breaks when daylight saving time changes",
         other),
        ("infra", "fact", "Staging runs Postgres 14", shop),  # each project's staging
        ("infra", "fact", "Staging runs Postgres 16", other),
    ]
    for category, kind, text, cwd in different:
        client.remember("coder", category, text, kind=kind, cwd=str(cwd) if cwd else None)
    for question in ("who should I ask before changing how invoices are charged?",
                     "what do I run before merging changes?",
                     "what breaks when daylight saving time changes?",
                     "which postgres does staging run?"):
        hits = client.search(question, agents=["*"])["hits"]
        assert len(hits) >= 2, question
        assert [hit["text"] for hit in hits if "newer" in hit] == [], question
    shown = run_cli("search", "coder", "-", "who should I ask before changing how invoices "
                    "are charged?", "--all")
    assert "earlier version" not in shown.stdout, shown.stdout
    for where in (tmp_path, shop, other):
        text = client.context("coder", cwd=str(where))["text"]
        assert "Ask Alice" in text and "says it otherwise" not in text, text
    # a detail changed, in one scope: a version of it, the older marked in the block
    corrections = [("The deploy script lives in ops/deploy.sh",
                    "The deploy script lives in ops/release.sh now"),
                   ("Deploy the web app with fly.io", "Deploy the web app with Heroku")]
    for before, after in corrections:
        client.remember("ops", "deploy", before, cwd=str(shop))
        client.remember("ops", "deploy", after, cwd=str(shop))
    lines = client.context("ops", cwd=str(shop))["text"].splitlines()
    for before, after in corrections:
        [newer] = [i for i, line in enumerate(lines) if after in line]
        [earlier] = [i for i, line in enumerate(lines) if before in line]
        assert newer < earlier and "newer memory here says it otherwise" in lines[earlier]
        assert "says it otherwise" not in lines[newer]


def test_a_version_of_a_version_is_no_newer_version(client: Client) -> None:
    """"… owned by Marta", then "… owned by Sven" (a correction of it), then "… was last
    touched by Marta" (a version of the first, by its words): the second is no version of the
    third, which changes two of its details, yet was marked "said earlier" in the block, the
    three being one group."""
    for text in ("The nightly backup job is owned by Marta",
                 "The nightly backup job is owned by Sven",
                 "The nightly backup job was last touched by Marta"):
        client.remember("coder", "ops", text)
    lines = client.context("coder", cwd="/")["text"].splitlines()
    [sven] = [line for line in lines if "owned by Sven" in line]
    assert "says it otherwise" not in sven, lines
    [marta] = [line for line in lines if "owned by Marta" in line]
    assert "says it otherwise" in marta
    hits = client.search("who owns the nightly backup job", agent="coder")["hits"]
    assert [hit.get("newer") for hit in hits if "owned by Sven" in hit["text"]] == [None]


def test_a_tense_or_a_mood_changed_is_stored_beside_the_old_memory(daemon) -> None:
    """A month's tester (2026-12-01) typed "Alice used to own the billing service" after
    "Alice owns the billing service": refused as a near duplicate (cosine 0.96), as were "Jenkins
    was our CI server" after "… is …" and a "should" after a "must": the words that say when
    a statement holds, and how strongly a rule binds, were stop words and filler. Each is a
    memory of its own, stored beside the other; asked, the newer comes first and the older says
    a newer version of it exists."""
    for before, after in (("Alice owns the billing service",
                           "Alice used to own the billing service"),
                          ("Jenkins is our CI server", "Jenkins was our CI server"),
                          ("Tests must pass before merging", "Tests should pass before merging")):
        first = run_cli("store", "qa5", "team", before)
        assert first.returncode == 0, first.stderr
        old = first.stdout.split()[1]
        second = run_cli_at_terminal("store", "qa5", "team", after)
        assert second.returncode == 0, second.stdout + second.stderr
        assert "near duplicate" not in second.stdout + second.stderr
        assert f"kept beside {old}: {before}" in second.stdout
    shown = run_cli("search", "qa5", "-", "is Jenkins still our CI server")
    lines = shown.stdout.splitlines()
    assert lines[0].endswith("Jenkins was our CI server"), shown.stdout
    assert "[earlier version of" in lines[1] and lines[1].endswith("Jenkins is our CI server")


def test_a_correction_that_says_moved_to_is_a_newer_version(client: Client) -> None:
    """"Correction: production moved to Postgres 16" after "Production runs Postgres 15": the
    two shared two words and each changed two ("runs" and 15, "moved" and 16), so they were no
    versions; asked which Postgres production runs, the old one came first (0.47) and the
    correction last (0.01), with no "[earlier version of". Its "moved to" stands for "runs"."""
    old = client.remember("qa", "infra", "Production runs Postgres 15")["entry"]["id"]
    new = client.remember("qa", "infra",
                          "Correction: production moved to Postgres 16")["entry"]["id"]
    hits = client.search("which Postgres version does production run", agent="qa")["hits"]
    assert [h["id"] for h in hits[:2]] == [new, old] and hits[0]["match"] and hits[1]["match"]
    assert "newer" not in hits[0] and hits[1]["newer"] == new
    shown = run_cli("search", "qa", "-", "which Postgres version does production run")
    assert f"[earlier version of {new}]: Production runs Postgres 15" in shown.stdout
    # a question naming the old detail tells them apart: the old one first, marked
    asked = client.search("does production still run Postgres 15", agent="qa")["hits"]
    assert asked[0]["id"] == old and asked[0]["newer"] == new
    # a newer memory that keeps every detail of the correction and says more does not say it
    # otherwise: the correction was marked "said earlier" against it, the stale 15 not at all
    client.remember("qa", "infra", "Production uses Postgres 16 for the main database")
    lines = client.context("qa", cwd="/")["text"].splitlines()
    [stale] = [line for line in lines if "Postgres 15" in line]
    [moved] = [line for line in lines if "moved to Postgres 16" in line]
    assert "newer memory here says it otherwise" in stale
    assert "says it otherwise" not in moved, lines
