"""The memory block: the right memories in the right project, shared between the harnesses, with
the notes a session should start with."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from memoryd_client import Client

from memoryd.sessions.context import auto_memory_project
from tests.conftest import run_cli, start_daemon, wait_until


@pytest.fixture
def repos(tmp_path: Path) -> tuple[Path, Path]:
    shop, other = tmp_path / "shop", tmp_path / "other"
    for repo in (shop, other):
        (repo / ".git").mkdir(parents=True)
        (repo / "src").mkdir()
    return shop, other


def block(client: Client, agent: str, cwd: Path, prompt: str | None = None) -> str:
    return client.context(agent, cwd=str(cwd), prompt=prompt)["text"]


def test_project_lessons_stay_in_their_project(client: Client, repos) -> None:
    shop, other = repos
    client.remember("claude-code", "testing", "Don't use unittest.TestCase classes in this repo.",
                    kind="lesson", polarity="negative", cwd=str(shop / "src"))
    client.remember("claude-code", "git", "Never force-push to main.", kind="lesson",
                    polarity="negative")  # no working directory: global
    in_shop, elsewhere = block(client, "claude-code", shop), block(client, "claude-code", other)
    assert "unittest.TestCase" in in_shop and "unittest.TestCase" not in elsewhere
    assert "Never force-push to main" in in_shop and "Never force-push to main" in elsewhere


def test_written_outside_git_is_global(client: Client, repos, tmp_path: Path) -> None:
    shop, _ = repos
    plain = tmp_path / "notes"
    plain.mkdir()
    stored = client.remember("claude-code", "prefs", "Answer in British English.",
                             kind="lesson", cwd=str(plain))["entry"]
    assert stored["project"] is None
    assert "British English" in block(client, "claude-code", shop)


def test_harnesses_share_what_they_learned_in_a_project(client: Client, repos) -> None:
    shop, other = repos
    client.remember("claude-code", "database", "The staging database is Postgres 16, not MySQL.",
                    kind="fact", cwd=str(shop))
    client.remember("designer", "rejected-designs", "Floating speech bubble on the cat sticker.")
    codex_in_shop = block(client, "codex", shop)
    assert "Postgres 16" in codex_in_shop
    assert "Postgres 16" not in block(client, "codex", other)
    assert "speech bubble" not in codex_in_shop  # a role agent's namespace is its own
    assert "Postgres 16" not in block(client, "designer", shop)
    prompted = block(client, "codex", shop, prompt="which database does staging run?")
    assert "Postgres 16" in prompted


def test_session_start_carries_notes_and_preferences(client: Client, repos) -> None:
    shop, _ = repos
    client.remember("claude-code", "prefs", "I prefer tabs over spaces in Makefiles.")
    client.remember("claude-code", "prefs", "Commit messages in the imperative mood",
                    key="pref.commit_style")
    text = block(client, "claude-code", shop)
    # written through the API: an agent's words, quoted (memoryd.provenance)
    assert "## Notes\n- “I prefer tabs over spaces in Makefiles.”" in text
    assert "- pref.commit_style: “Commit messages in the imperative mood”" in text


def test_a_note_says_what_it_was_filed_under(client: Client, repos) -> None:
    """A rejected design in the block is not a suggestion: it carries its category; a
    category that says nothing (general) is left out."""
    shop, _ = repos
    client.remember("designer", "rejected-designs", "Floating speech bubble on the cat sticker.")
    client.remember("designer", "general", "The shop's palette has five colours.")
    text = block(client, "designer", shop)
    assert "- “Floating speech bubble on the cat sticker.” [rejected-designs]\n" in text
    assert "- “The shop's palette has five colours.”\n" in text


def test_rules_read_as_rules(client: Client, repos) -> None:
    shop, _ = repos
    client.remember("claude-code", "testing", "Don't mock the database in integration tests",
                    kind="lesson", polarity="negative")
    client.remember("claude-code", "style", "Four spaces in YAML files", kind="lesson",
                    polarity="positive")
    text = block(client, "claude-code", shop)
    assert "- “Don't mock the database in integration tests” [testing]" in text
    assert "Don't: “Don't" not in text
    assert "- Do: “Four spaces in YAML files” [style]" in text


def test_prompt_injects_what_matches_in_its_section(client: Client, repos) -> None:
    # the newcomer report's case: "write a test for the refund endpoint" injected nothing
    shop, _ = repos
    client.remember("claude-code", "testing", "Use pytest, not unittest, for every new test.",
                    kind="lesson", polarity="positive", cwd=str(shop))
    client.remember("claude-code", "payments", "Refunds go through payments/refunds.py",
                    cwd=str(shop))
    client.remember("claude-code", "cooking", "The sourdough starter needs feeding on Sundays.")
    text = block(client, "claude-code", shop, prompt="write a test for the refund endpoint")
    assert "## Lessons\n- “Use pytest, not unittest, for every new test.” [testing]" in text
    assert "Refunds go through payments/refunds.py" in text
    assert "sourdough" not in text
    assert block(client, "claude-code", shop, prompt="what is the capital of Mongolia") == ""


def test_a_long_prompt_still_gets_its_memory_block(client: Client, repos) -> None:
    # a prompt longer than a search query may be (a pasted file) was refused, and the hook
    # showed nothing; its beginning and its end are what the block's search asks now
    shop, _ = repos
    client.remember("claude-code", "payments", "Refunds go through payments/refunds.py",
                    cwd=str(shop))
    pasted = "\n".join([" " * 79] * 180)  # blank, so that only the length differs
    assert 10_000 < len(pasted) < 20_000
    text = block(client, "claude-code", shop,
                 prompt=f"Why does the refund endpoint fail?\n{pasted}\nThanks!")
    assert "Refunds go through payments/refunds.py" in text


def test_a_key_pasted_into_a_prompt_is_no_part_of_its_question(client: Client, repos) -> None:
    # a prompt that held a redaction mark (a key pasted, as an agent's text shows it) found
    # nothing at all beside a stored entry with the same mark: the mark's words led the search
    shop, _ = repos
    client.remember("claude-code", "tooling", "Always use pnpm", kind="lesson", cwd=str(shop))
    client.remember("claude-code", "ops", "rotate the api key monthly", cwd=str(shop))
    key = "sk-proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb7cDe0fGh3iJk"
    client.remember("claude-code", "ops", f"the openai key is {key[:-3]}Zz9", cwd=str(shop))
    for pasted in (f"my key is {key}", "my key is [REDACTED:openai-api-key]"):
        text = block(client, "claude-code", shop, prompt=f"should I use pnpm or npm? {pasted}")
        assert "Always use pnpm" in text, pasted
    assert block(client, "claude-code", shop, prompt=key) == ""  # a key alone asks nothing


def test_a_key_two_sharing_agents_hold_says_whose_each_value_is(client: Client, repos) -> None:
    # the block showed `pref.editor: "emacs"` and `pref.editor: "vim"` side by side: which
    # is this agent's own was not said
    shop, _ = repos
    client.remember("codex", "prefs", "emacs", key="pref.editor")
    client.remember("claude-code", "prefs", "vim", key="pref.editor")
    client.remember("codex", "prefs", "tabs", key="pref.indent")
    lines = block(client, "claude-code", shop).splitlines()
    mine = [line for line in lines if line.startswith("- pref.editor:") and "vim" in line]
    theirs = [line for line in lines if line.startswith("- pref.editor:") and "emacs" in line]
    assert mine and "(codex's)" not in mine[0]
    assert theirs and "(codex's)" in theirs[0]
    assert any("pref.indent" in line and "(codex's)" not in line for line in lines)


def test_listing_leaves_out_other_projects_and_what_the_agent_loads_itself(
        daemon, client: Client, repos) -> None:
    shop, other = repos
    home = Path.home()
    for repo, name in ((shop, "shop-notes.md"), (other, "other-notes.md")):
        # Claude Code names a project's directory after its path, non-alphanumerics as dashes
        memory = home / ".claude" / "projects" / re.sub(r"[^A-Za-z0-9]", "-", str(repo)) / "memory"
        memory.mkdir(parents=True)
        (memory / "MEMORY.md").write_text("- index of what Claude remembers\n")
        (memory / name).write_text("---\ndescription: notes of this repo\n---\n- a note\n")
        (memory / "blob.md").write_bytes(b"\0\1binary")
    (home / ".claude" / "CLAUDE.md").write_text("- Answer briefly.\n")
    (home / ".claude" / "rules").mkdir()  # the user's rules: Claude Code loads them itself
    (home / ".claude" / "rules" / "commits.md").write_text(
        "---\ndescription: how to commit\n---\n- Sign every commit with the team key\n")
    wait_until(lambda: "shop-notes.md" in block(client, "claude-code", shop)
               and client.search("sign commits team key", agents=["claude-code"])["hits"])
    text = block(client, "claude-code", shop)
    assert "shop-notes.md: notes of this repo" in text
    assert "other-notes.md" not in text and "blob.md" not in text
    assert "MEMORY.md" not in text and ".claude/CLAUDE.md" not in text
    assert "commits.md" not in text


def test_auto_memory_is_told_apart_where_claude_code_keeps_it() -> None:
    """The auto-memory of another project stays out of a block: found in ~/.claude, and in
    $CLAUDE_CONFIG_DIR when Claude Code keeps its files there."""
    claude = "/srv/claude"
    assert auto_memory_project("/srv/claude/projects/-srv-shop/memory/notes.md", claude) == \
        "-srv-shop"
    assert auto_memory_project("/home/ana/.claude/projects/-a/memory/MEMORY.md", claude) == "-a"
    assert auto_memory_project("/srv/claude/agent-memory/designer/notes.md", claude) is None
    assert auto_memory_project("/elsewhere/srv/claude/projects/-x/memory/a.md", claude) is None


def test_in_claude_config_dir_the_block_lists_neither_rules_nor_other_projects(
        repos, embedder, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """With Claude Code's files in $CLAUDE_CONFIG_DIR: its user rules and another project's
    auto-memory are indexed there, and the block lists neither (Claude Code loads the rules
    itself; the other project's notes are not this one's), but this project's notes."""
    shop, other = repos
    claude = tmp_path / "claude-config"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude))
    (claude / "rules").mkdir(parents=True)
    (claude / "rules" / "commits.md").write_text(
        "---\ndescription: how to commit\n---\n- Sign every commit with the team key\n")
    for repo, name in ((shop, "shop-notes.md"), (other, "other-notes.md")):
        memory = claude / "projects" / re.sub(r"[^A-Za-z0-9]", "-", str(repo)) / "memory"
        memory.mkdir(parents=True)
        (memory / name).write_text("---\ndescription: notes of this repo\n---\n- a note\n")
    running = start_daemon(embedder)
    try:
        with Client(running.socket, timeout_s=30) as client:
            wait_until(lambda: "shop-notes.md" in block(client, "claude-code", shop)
                       and client.search("sign commits team key", agents=["claude-code"])["hits"])
            text = block(client, "claude-code", shop)
            assert "other-notes.md" not in text and "commits.md" not in text, text
    finally:
        running.stop()


def test_gemini_memories_saved_under_a_configured_name_are_indexed_and_not_listed(
        daemon, client: Client, repos) -> None:
    """With ``context.fileName`` ["AGENTS.md", "GEMINI.md"] in Gemini CLI's settings, its
    save_memory writes to ~/.gemini/AGENTS.md: memoryd indexes it as Gemini's, and the block
    does not list it (Gemini loads it itself), while it lists Gemini's other notes."""
    shop, _ = repos
    gemini = Path.home() / ".gemini"
    gemini.mkdir()
    (gemini / "settings.json").write_text('{"context": {"fileName": ["AGENTS.md", "GEMINI.md"]}}')
    (gemini / "AGENTS.md").write_text("---\ndescription: what Gemini saved\n---\n"
                                      "## Gemini Added Memories\n- The staging cluster is "
                                      "called heron-west\n")
    _indexed_not_listed(client, shop, "gemini", "staging cluster heron-west", gemini / "AGENTS.md",
                        *_other_notes("gemini"))


def test_codexs_fallback_instructions_are_indexed_and_not_listed(
        daemon, client: Client, repos) -> None:
    """Codex reads ``project_doc_fallback_filenames`` (config.toml) where a project has no
    AGENTS.md: such a file in a project root is indexed as Codex's, and the block does not
    list it (Codex loads it itself), while it lists Codex's other notes."""
    shop, _ = repos
    codex = Path.home() / ".codex"
    (codex / "memories").mkdir(parents=True)
    (codex / "config.toml").write_text('project_doc_fallback_filenames = ["TEAM_GUIDE.md"]\n')
    (codex / "memories" / "infra.md").write_text("---\ndescription: the infrastructure\n---\n"
                                                 "- Backups run at 02:00 UTC\n")
    (shop / "TEAM_GUIDE.md").write_text("---\ndescription: how the team works\n---\n"
                                        "- Releases are cut on Thursdays\n")
    _indexed_not_listed(client, shop, "codex", "releases cut thursdays", shop / "TEAM_GUIDE.md",
                        "sources", "add", "--project", str(shop))


def test_notes_a_claude_md_imports_are_indexed_and_not_listed(
        daemon, client: Client, repos) -> None:
    """A project's CLAUDE.md imports a note (``@docs/release.md``): memoryd indexes it as
    Claude Code's, and the block does not list it (Claude Code loads it with CLAUDE.md), while
    it lists Claude Code's other notes."""
    shop, _ = repos
    (shop / "docs").mkdir()
    (shop / "docs/release.md").write_text("- Releases are tagged by the duty engineer on "
                                          "Thursdays\n")
    (shop / "CLAUDE.md").write_text("# Shop\n- Release steps: @docs/release.md\n")
    assert run_cli("sources", "add", "--project", str(shop)).returncode == 0
    _indexed_not_listed(client, shop, "claude-code", "releases tagged duty engineer",
                        shop / "docs/release.md", *_other_notes("claude-code"))


def test_notes_a_subdirectorys_claude_md_imports_are_indexed_and_not_listed(
        daemon, client: Client, repos) -> None:
    """In a monorepo, ``packages/api/CLAUDE.md`` imports a note (``@docs/errors.md``): memoryd
    indexes both as Claude Code's, and the block does not list the note (Claude Code loads it
    with the CLAUDE.md of the directory it works in)."""
    shop, _ = repos
    api = shop / "packages/api"
    (api / "docs").mkdir(parents=True)
    (api / "docs/errors.md").write_text("- Every error carries a stable code like E1042\n")
    (api / "CLAUDE.md").write_text("# API\n- Errors: @docs/errors.md\n")
    assert run_cli("sources", "add", "--project", str(shop)).returncode == 0
    _indexed_not_listed(client, shop, "claude-code", "error stable code", api / "docs/errors.md",
                        *_other_notes("claude-code"))


def test_files_opencodes_instructions_name_are_indexed_and_not_listed(
        daemon, client: Client, repos) -> None:
    """A project's opencode.json names ``docs/*.md`` in ``instructions``: memoryd indexes them
    as OpenCode's, and the block does not list them (OpenCode loads them itself), while it
    lists OpenCode's other notes."""
    shop, _ = repos
    (shop / "docs").mkdir()
    (shop / "docs/ops.md").write_text("---\ndescription: operations\n---\n"
                                      "- The pager rotation changes hands weekly\n")
    (shop / "opencode.json").write_text('{"instructions": ["docs/*.md"]}')
    assert run_cli("sources", "add", "--project", str(shop)).returncode == 0
    _indexed_not_listed(client, shop, "opencode", "pager rotation changes hands",
                        shop / "docs/ops.md", *_other_notes("opencode"))


def test_notes_a_gemini_md_imports_are_indexed_and_not_listed(
        daemon, client: Client, repos) -> None:
    """~/.gemini/GEMINI.md imports a note (``@./team.md``): memoryd indexes it as Gemini's,
    and the block does not list it (Gemini loads it with GEMINI.md)."""
    shop, _ = repos
    gemini = Path.home() / ".gemini"
    gemini.mkdir()
    (gemini / "team.md").write_text("- The on-call rota changes hands on Tuesdays at noon\n")
    (gemini / "GEMINI.md").write_text("## Gemini Added Memories\n- Prefers tabs\n@./team.md\n")
    _indexed_not_listed(client, shop, "gemini", "on-call rota changes hands", gemini / "team.md",
                        *_other_notes("gemini"))


def test_copilots_instructions_are_indexed_and_not_listed_where_copilot_home_moves_them(
        memoryd_home, embedder, monkeypatch, tmp_path, repos) -> None:
    """Copilot CLI's instructions for every repository, in ``$COPILOT_HOME``: memoryd indexes
    them as Copilot's, and the block does not list them (Copilot loads them itself), while it
    lists Copilot's other notes."""
    from tests.conftest import start_daemon

    shop, _ = repos
    copilot = tmp_path / "copilot-home"
    (copilot / "instructions").mkdir(parents=True)
    (copilot / "instructions/sql.instructions.md").write_text(
        "---\napplyTo: \"**/*.sql\"\n---\n- Every migration has a down step\n")
    monkeypatch.setenv("COPILOT_HOME", str(copilot))
    running = start_daemon(embedder)
    try:
        with Client(running.socket, timeout_s=30) as client:
            _indexed_not_listed(client, shop, "copilot", "migration down step",
                                copilot / "instructions/sql.instructions.md",
                                *_other_notes("copilot"))
    finally:
        running.stop()


def _other_notes(agent: str) -> tuple[str, ...]:
    """A note of the agent's that it does not load itself (``~/<agent>-notes/infra.md``), and
    the ``memory`` command that makes it a source."""
    notes = Path.home() / f"{agent}-notes"
    notes.mkdir()
    (notes / "infra.md").write_text("---\ndescription: the infrastructure\n---\n"
                                    "- Backups run at 02:00 UTC\n")
    return ("sources", "add", f"{agent}-notes", f"~/{agent}-notes/*.md", "--kind", "memory",
            "--agent", agent)


def _indexed_not_listed(client: Client, shop: Path, agent: str, query: str, loaded: Path,
                        *command: str) -> None:
    """After ``memory COMMAND``: ``loaded`` (a file the agent loads itself) is searchable as
    the agent's and not listed in its block, which lists its notes ``infra.md``."""
    added = run_cli(*command)
    assert added.returncode == 0, added.stderr
    wait_until(lambda: [hit for hit in client.search(query, agents=[agent])["hits"]
                        if hit["source"] == str(loaded)]
               and "infra.md" in block(client, agent, shop))
    text = block(client, agent, shop)
    assert "infra.md: the infrastructure" in text and loaded.name not in text, text


def test_pinned_learnings_are_not_repeated_as_lessons(daemon, client: Client, repos) -> None:
    shop, _ = repos
    memory = Path(daemon.config.memory_dir.replace("{agent}", "designer"))
    memory.mkdir(parents=True)
    (memory / "CONTEXT.md").write_text("# Designer\n\n## Learnings\n- Die-cut needs one shape.\n")
    wait_until(lambda: "Die-cut" in block(client, "designer", shop))
    assert block(client, "designer", shop).count("Die-cut needs one shape") == 1


def test_a_keyed_fact_is_the_projects_own(client: Client, repos) -> None:
    """The same key in two repositories holds each one's value; a newer value in the same
    repository replaces the older; a global value is shown where no project value is."""
    shop, other = repos
    first = client.remember("claude-code", "build", "Tests run with pytest -x.",
                            key="project.test_command", cwd=str(shop))["entry"]
    second = client.remember("claude-code", "build", "Tests run with cargo test.",
                             key="project.test_command", cwd=str(other))
    assert second["stored"] and not second["superseded"]
    assert client.get(first["id"])["status"] == "active"
    assert "pytest -x" in block(client, "claude-code", shop)
    assert "cargo test" not in block(client, "claude-code", shop)
    assert "cargo test" in block(client, "claude-code", other)
    newer = client.remember("claude-code", "build", "Tests run with pytest -n auto.",
                            key="project.test_command", cwd=str(shop))
    assert [e["id"] for e in newer["superseded"]] == [first["id"]]
    assert client.get(second["entry"]["id"])["status"] == "active"
    client.remember("claude-code", "build", "Tests run with make test.",
                    key="project.test_command", cwd="/")  # global
    assert "make test" not in block(client, "claude-code", shop)  # the project's own wins
    assert "pytest -n auto" in block(client, "claude-code", shop)
    plain = repos[0].parent / "plain"
    plain.mkdir()
    assert "make test" in block(client, "claude-code", plain)


def test_the_same_lesson_in_two_projects_is_stored_for_each(client: Client, repos) -> None:
    shop, other = repos
    text = "Run the migrations before the test suite."
    first = client.remember("claude-code", "testing", text, kind="lesson", cwd=str(shop))
    second = client.remember("claude-code", "testing", text, kind="lesson", cwd=str(other))
    assert first["stored"] and second["stored"], second
    assert text in block(client, "claude-code", other)
    again = client.remember("claude-code", "testing", text + "!", kind="lesson", cwd=str(other))
    assert not again["stored"] and again["entry"]["id"] == second["entry"]["id"]  # near, here
    everywhere = client.remember("claude-code", "git", "Never force-push to main.", kind="lesson")
    assert everywhere["entry"]["project"] is None
    in_shop = client.remember("claude-code", "git", "Never force-push to main.", kind="lesson",
                              cwd=str(shop))
    assert in_shop["duplicate"] == "exact"  # the global one is shown in the project already
    later = client.remember("claude-code", "testing", text, kind="lesson")  # now global too
    assert later["stored"] and later["entry"]["project"] is None
    assert block(client, "claude-code", shop).count(text) == 1
