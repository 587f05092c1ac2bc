"""The checks of what this daemon runs (`memory doctor`, the health line of `memory status`):
the code on disk against the code it started with, the embedding model it loaded, onnxruntime's
telemetry; and, as the service manager started it, where its log goes and how to restart it.
memoryd.server.health runs the checks.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

from memoryd_client.wire import REVISION

from memoryd.embedding.model import DEFAULT_MODEL_ID, DEFAULT_MODEL_SHA256
from memoryd.server.health_words import OK, PROBLEM, WARNING, check
from memoryd.server.installed import InstalledCode
from memoryd.server.parts import Parts
from memoryd.settings import Settings

RESTART = "restart memoryd (`memoryd service stop && memoryd service start`, or stop and run " \
    "`memoryd serve` again)"


def log_location() -> str:
    """Where this daemon's log goes, as the service manager set it up."""
    if os.environ.get("JOURNAL_STREAM"):
        return "the user journal: memoryd service logs (journalctl --user -u memoryd)"
    if os.environ.get("XPC_SERVICE_NAME") == "dev.memoryd.agent":
        return str(Path.home() / "Library" / "Logs" / "memoryd" / "memoryd.log")
    return f"standard error of the memoryd process (pid {os.getpid()})"


def restart_command() -> str:
    """How to restart this daemon, as the service manager started it."""
    if os.environ.get("JOURNAL_STREAM"):
        return "`systemctl --user restart memoryd`"
    if os.environ.get("XPC_SERVICE_NAME") == "dev.memoryd.agent":
        return "`memoryd service stop && memoryd service start`"
    return f"stop this memoryd (pid {os.getpid()}) and start `memoryd serve` again"


class CodeChecks:
    def __init__(self, settings: Settings, started: float, parts: Parts,
                 code: InstalledCode) -> None:
        """``started``: when the daemon started; ``parts``: where the model runs; ``code``:
        its packages on disk."""
        self.settings = settings
        self.started = started
        self.parts = parts
        self.installed = code

    def code(self, look: bool = False) -> dict[str, Any]:
        """Whether the code on disk is what this daemon runs: an upgrade since it started
        changed the `memory` command and the hooks at once, not the daemon (a look at most
        every memoryd.server.installed.LOOK_EVERY_S; ``look``: now, for doctor)."""
        changed = self.installed.changed(look)
        if changed is None:
            return check("code", OK, f"memoryd runs the code installed (wire revision "
                         f"{REVISION})")
        at, started = (time.strftime("%Y-%m-%d %H:%M", time.localtime(t))
                       for t in (changed.at, self.started))
        restart = restart_command()
        return check("code", WARNING, f"memoryd runs older code than the installed one: "
                     f"{changed.path} changed at {at}, after memoryd started ({started}); the "
                     f"hooks and `memory` run the new code already: restart it ({restart})",
                     f"restart memoryd so that it runs the installed code: {restart}")

    def model(self) -> dict[str, Any]:
        embedder = self.parts.threads.embedder
        if embedder is not None:
            if embedder.model_id == DEFAULT_MODEL_ID:
                same = embedder.sha256 == DEFAULT_MODEL_SHA256
                return check("model", OK if same else PROBLEM,
                             f"{embedder.model_id} loaded ({embedder.dim} dims), sha256 "
                             f"{embedder.sha256[:12]}… " + (
                                 "as shipped" if same
                                 else f"≠ shipped {DEFAULT_MODEL_SHA256[:12]}…"),
                             None if same else "reinstall memoryd, then " + RESTART)
            if getattr(embedder, "pinned", False):  # a named model: checked at load
                return check("model", OK, f"{embedder.model_id} loaded ({embedder.dim} dims) "
                             f"from embed.model, sha256 {embedder.sha256[:12]}… as derived")
            return check("model", OK, f"{embedder.model_id} loaded ({embedder.dim} dims) from "
                         f"embed.model, sha256 {embedder.sha256[:12]}… (a model of your own: "
                         "not checked against a known hash)")
        if self.parts.threads.is_loading:
            return check("model", OK, "loading (search is by keyword until it is ready)")
        return check("model", PROBLEM,
                     "not loaded, search is keyword-only: "
                     f"{self.parts.loading.reason or 'unknown'}",
                     "fix what the reason names (reinstall memoryd, or embed.model in "
                     f"{self.settings.config.config_file}), then " + RESTART)

    def telemetry(self) -> dict[str, Any]:
        """onnxruntime's telemetry: memoryd sets ORT_DISABLE_TELEMETRY=1 before importing it
        and calls disable_telemetry_events() (memoryd.embedding.model.import_onnxruntime)."""
        loaded = "onnxruntime" in sys.modules
        off = os.environ.get("ORT_DISABLE_TELEMETRY") == "1"
        if not loaded:
            return check("telemetry", OK, "onnxruntime is not loaded in the daemon")
        if off:
            return check("telemetry", OK, "onnxruntime telemetry off (ORT_DISABLE_TELEMETRY=1 "
                         "set before import, disable_telemetry_events() called)")
        return check("telemetry", PROBLEM, "onnxruntime is loaded without ORT_DISABLE_TELEMETRY=1",
                     "report this as a bug; meanwhile set ORT_DISABLE_TELEMETRY=1 in memoryd's "
                     "environment and " + RESTART)
