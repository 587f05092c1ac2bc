"""What `memory hook install` writes for each agent: the events it hooks, on which tools, with
which timeouts, how each agent's settings file lays its handlers out, and the agents memoryd
knows that have no hooks (docs/harnesses.md)."""

from __future__ import annotations

from typing import Any

#: The tools the PreToolUse hook reads (memoryd.sessions.tool_lessons): the hook runs for
#: no other tool call.
CLAUDE_CODE_TOOLS = "Bash|Edit|Write|MultiEdit|NotebookEdit"
CODEX_TOOLS = "Bash|apply_patch"
#: event → (matcher or None, handler extras)
CLAUDE_CODE_EVENTS: dict[str, tuple[str | None, dict[str, Any]]] = {
    "SessionStart": ("startup|resume|clear|compact|fork", {"timeout": 10}),
    "UserPromptSubmit": (None, {"timeout": 5}),
    "PreToolUse": (CLAUDE_CODE_TOOLS, {"timeout": 5}),
    "PreCompact": (None, {"timeout": 10}),
    "PostCompact": (None, {"timeout": 10}),
    "Stop": (None, {"timeout": 10, "async": True}),
    "SubagentStop": (None, {"timeout": 10, "async": True}),
    "SessionEnd": (None, {"timeout": 5}),
}
#: Codex's SessionStart sources: ``compact`` once it has compacted the context (the block is
#: gone from it then); a version without it never sends it.
CODEX_EVENTS: dict[str, tuple[str | None, dict[str, Any]]] = {
    "SessionStart": ("startup|resume|clear|compact", {"timeout": 10}),
    "UserPromptSubmit": (None, {"timeout": 5}),
    "PreToolUse": (CODEX_TOOLS, {"timeout": 5}),
    "PreCompact": (None, {"timeout": 10}),
    "PostCompact": (None, {"timeout": 10}),
    "Stop": (None, {"timeout": 10}),
    "SessionEnd": (None, {"timeout": 3}),
}
#: Gemini CLI: its tools (a regular expression, tested unanchored: anchored here), and
#: ``timeout`` in milliseconds. No matcher on SessionStart: Gemini compares a lifecycle event's
#: matcher with its source as an exact string.
GEMINI_TOOLS = "^(run_shell_command|write_file|replace)$"
GEMINI_EVENTS: dict[str, tuple[str | None, dict[str, Any]]] = {
    "SessionStart": (None, {"timeout": 10_000}),
    "BeforeAgent": (None, {"timeout": 5_000}),
    "BeforeTool": (GEMINI_TOOLS, {"timeout": 5_000}),
    "AfterTool": (GEMINI_TOOLS, {"timeout": 5_000}),
    "AfterAgent": (None, {"timeout": 10_000}),
    "SessionEnd": (None, {"timeout": 5_000}),
}
#: Cursor: a flat list of handlers per event (no groups, no timeout: memoryd's own deadlines
#: hold).
CURSOR_EVENTS: dict[str, tuple[str | None, dict[str, Any]]] = {
    "sessionStart": (None, {}),
    "beforeShellExecution": (None, {}),
    "stop": (None, {}),
    "sessionEnd": (None, {}),
}
#: GitHub Copilot CLI: a flat list of handlers per event, its shell command in ``bash`` (every
#: version has it), a ``matcher`` (a regular expression Copilot anchors) on its tools, and
#: ``timeoutSec``. userPromptSubmitted is not installed: Copilot drops its output.
COPILOT_TOOLS = "bash|edit|create"
COPILOT_EVENTS: dict[str, tuple[str | None, dict[str, Any]]] = {
    "sessionStart": (None, {"timeoutSec": 10}),
    "preToolUse": (COPILOT_TOOLS, {"timeoutSec": 5}),
    "postToolUse": (COPILOT_TOOLS, {"timeoutSec": 5}),
    "agentStop": (None, {"timeoutSec": 10}),
    "sessionEnd": (None, {"timeoutSec": 5}),
}
HARNESS_EVENTS = {"claude-code": CLAUDE_CODE_EVENTS, "codex": CODEX_EVENTS,
                  "gemini": GEMINI_EVENTS, "cursor": CURSOR_EVENTS, "copilot": COPILOT_EVENTS}
#: The agents memoryd knows that have no hooks to install, and what memoryd does for each
#: instead (docs/harnesses.md): `memory hook install aider` says so, a usage error.
NO_HOOKS = {
    "aider": "Aider has no hooks, so memoryd installs nothing for it. memoryd reads Aider's "
             "files where they are: its chat history (.aider.chat.history.md) and its "
             "conventions (CONVENTIONS.md, the notes `read` names in .aider.conf.yml), in each "
             "project root memoryd is given (memory sources add --project DIR); a session is "
             "extracted once it has been quiet",
    "windsurf": "memoryd has no hooks for Windsurf, so it installs nothing there. memoryd reads "
                "Windsurf's rules (~/.codeium/windsurf/memories/global_rules.md, a project's "
                ".windsurf/rules/ and .windsurfrules), and Windsurf reaches memory through MCP: "
                "add `memory mcp --agent windsurf` to its MCP servers (docs/agents.md, MCP)",
    "roo": "Roo Code has no hooks, so memoryd installs nothing for it. memoryd reads its rules "
           "(~/.roo/rules*/, a project's .roorules* and .roo/rules*/) and its tasks (each "
           "extracted once it has been quiet; `memory import-history roo` for older ones), and "
           "Roo Code reaches memory through MCP: add `memory mcp --agent roo` to its MCP "
           "servers (mcp_settings.json, or a project's .roo/mcp.json)",
    "kilo": "Kilo Code has no hooks, so memoryd installs nothing for it. memoryd reads its "
            "tasks as Roo Code's (each extracted once it has been quiet; `memory "
            "import-history kilo` for older ones), and Kilo Code reaches memory through MCP: "
            "add `memory mcp --agent kilo` to its MCP servers (mcp_settings.json, or a "
            "project's .kilocode/mcp.json)",
    "pi": "pi has extensions, not hooks, so memoryd installs nothing for it. memoryd reads its "
          "notebook (~/.pi/agent/AGENTS.md) and its sessions (~/.pi/agent/sessions/); a "
          "session is extracted once it has been quiet",
}
#: Harnesses whose event lists hold handlers directly, rather than groups of them.
FLAT = ("cursor", "copilot")
#: What a settings file of the harness starts with besides ``hooks``.
HEAD: dict[str, dict[str, Any]] = {"cursor": {"version": 1}, "copilot": {"version": 1}}
#: The key of a handler's command line: Copilot CLI's shell command is ``bash``.
COMMAND_KEY = {"copilot": "bash"}
#: What a flat handler starts with (Copilot CLI's names its type).
HANDLER_TYPE: dict[str, dict[str, str]] = {"copilot": {"type": "command"}}
