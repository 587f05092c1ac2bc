"""``memory hook install|uninstall claude-code|codex [--project DIR]``.

Adds memoryd's hook handlers to the agent's settings idempotently, keeping a backup of the file
it changes, and removes exactly the handlers it added (recognised by their command).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
import time
from pathlib import Path
from typing import Any

#: event → (matcher or None, handler extras)
CLAUDE_CODE_EVENTS: dict[str, tuple[str | None, dict[str, Any]]] = {
    "SessionStart": ("startup|resume|clear|compact", {"timeout": 10}),
    "UserPromptSubmit": (None, {"timeout": 5}),
    "PreCompact": (None, {"timeout": 10}),
    "PostCompact": (None, {"timeout": 10}),
    "Stop": (None, {"timeout": 10, "async": True}),
    "SubagentStop": (None, {"timeout": 10, "async": True}),
    "SessionEnd": (None, {"timeout": 5}),
}
CODEX_EVENTS: dict[str, tuple[str | None, dict[str, Any]]] = {
    "SessionStart": ("startup|resume|clear", {"timeout": 10}),
    "UserPromptSubmit": (None, {"timeout": 5}),
    "PreCompact": (None, {"timeout": 10}),
    "PostCompact": (None, {"timeout": 10}),
    "Stop": (None, {"timeout": 10}),
    "SessionEnd": (None, {"timeout": 3}),
}


def settings_path(harness: str, project: str | None) -> Path:
    base = Path(project).expanduser().resolve() if project else Path.home()
    if harness == "claude-code":
        return base / ".claude" / "settings.json"
    return base / ".codex" / "hooks.json"


def memory_command() -> list[str]:
    """An absolute command for `memory` (agents run hooks with a minimal PATH)."""
    beside = Path(sys.executable).parent / "memory"
    if beside.exists():
        return [str(beside)]
    found = shutil.which("memory")
    return [found] if found else [sys.executable, "-m", "memoryd_client"]


def is_ours(handler: Any, harness: str) -> bool:
    command = handler.get("command", "") if isinstance(handler, dict) else ""
    words = shlex.split(command) if command else []
    return len(words) >= 3 and words[-3] == "hook" and words[-2] == harness and \
        (words[0].endswith("memory") or words[-4:-3] == ["memoryd_client"])


def _load(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    data = json.loads(path.read_text("utf-8"))
    if not isinstance(data, dict):
        raise ValueError(f"{path} does not hold a JSON object")
    return data


def _save(path: Path, data: dict[str, Any], original: str | None) -> Path | None:
    path.parent.mkdir(parents=True, exist_ok=True)
    backup = None
    if original is not None:
        backup = path.with_name(f"{path.name}.memoryd-backup-{time.strftime('%Y%m%d-%H%M%S')}")
        backup.write_text(original, "utf-8")
    temporary = path.with_name(path.name + ".memoryd-tmp")
    temporary.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", "utf-8")
    os.replace(temporary, path)
    return backup


def _strip_ours(hooks: dict[str, Any], harness: str) -> int:
    removed = 0
    for event in list(hooks):
        groups = hooks[event] if isinstance(hooks[event], list) else []
        kept_groups = []
        for group in groups:
            handlers = group.get("hooks", []) if isinstance(group, dict) else []
            kept = [h for h in handlers if not is_ours(h, harness)]
            removed += len(handlers) - len(kept)
            if kept or not handlers:
                kept_groups.append({**group, "hooks": kept} if handlers else group)
        if kept_groups:
            hooks[event] = kept_groups
        else:
            del hooks[event]
    return removed


def install(harness: str, project: str | None = None) -> str:
    path = settings_path(harness, project)
    original = path.read_text("utf-8") if path.exists() else None
    data = _load(path)
    hooks = data.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise ValueError(f"{path}: 'hooks' is not an object")
    before = json.dumps(data, sort_keys=True)
    _strip_ours(hooks, harness)
    command = memory_command()
    events = CLAUDE_CODE_EVENTS if harness == "claude-code" else CODEX_EVENTS
    for event, (matcher, extras) in events.items():
        handler = {"type": "command", "command": shlex.join([*command, "hook", harness, event]),
                   **extras}
        group: dict[str, Any] = {"hooks": [handler]}
        if matcher:
            group = {"matcher": matcher, **group}
        hooks.setdefault(event, []).append(group)
    if json.dumps(data, sort_keys=True) == before:
        return f"{path}: memoryd hooks already installed"
    backup = _save(path, data, original)
    return f"{path}: installed {len(events)} memoryd hooks" + (f" (backup {backup})" if backup else "")


def uninstall(harness: str, project: str | None = None) -> str:
    path = settings_path(harness, project)
    if not path.exists():
        return f"{path}: nothing to remove"
    original = path.read_text("utf-8")
    data = _load(path)
    hooks = data.get("hooks")
    removed = _strip_ours(hooks, harness) if isinstance(hooks, dict) else 0
    if not removed:
        return f"{path}: no memoryd hooks found"
    if not hooks:
        del data["hooks"]
    backup = _save(path, data, original)
    return f"{path}: removed {removed} memoryd hooks (backup {backup})"
