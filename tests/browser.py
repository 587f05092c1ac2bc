"""Headless Chromium driven over the DevTools protocol, with the standard library only.

Chromium started with ``--remote-debugging-pipe`` reads commands from its fd 3 and writes
replies and events to its fd 4: JSON messages, each ended by a NUL byte. This module starts
it, attaches to its page, and offers what the viewer's tests do as a person would: open a
page, type into a field, click, wait until something shows, read the page's text, save a
screenshot. Chromium comes from the distribution's packages (.ci/run installs it).
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

#: Where the screenshots go (CI keeps the folder; .gitignore keeps it out of git).
SCREENSHOTS = Path(__file__).resolve().parent / "artifacts" / "screenshots"


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


class BrowserError(AssertionError):
    pass


class Browser:
    def __init__(self, width: int = 1280, height: int = 900) -> None:
        program = chromium()
        if program is None:
            raise BrowserError("chromium is not installed (apt-get install chromium)")
        self.profile = tempfile.mkdtemp(prefix="md-chromium-")
        to_browser, self._writer = os.pipe()
        self._reader, from_browser = os.pipe()

        def fds() -> None:  # the pipe's ends as Chromium's fds 3 and 4 (os.dup2 makes them
            # inheritable; every other descriptor of ours is not, PEP 446: none leaks)
            high_in, high_out = os.dup(to_browser), os.dup(from_browser)
            os.dup2(high_in, 3)
            os.dup2(high_out, 4)

        self.process = subprocess.Popen(
            [program, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--no-default-browser-check", "--disable-extensions", "--hide-scrollbars",
             "--remote-debugging-pipe", f"--user-data-dir={self.profile}",
             f"--window-size={width},{height}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=fds, close_fds=False)
        os.close(to_browser)
        os.close(from_browser)
        self._ids = 0
        self._buffer = b""
        self.events: list[dict[str, Any]] = []
        targets = self.call("Target.getTargets")["targetInfos"]
        page = next(t for t in targets if t["type"] == "page")
        self.session = self.call("Target.attachToTarget", targetId=page["targetId"],
                                 flatten=True)["sessionId"]
        self.call("Page.enable", session=True)
        self.call("Runtime.enable", session=True)

    # -- the protocol -------------------------------------------------------------------

    def call(self, method: str, session: bool = False, timeout_s: float = 30.0,
             **params: Any) -> dict[str, Any]:
        self._ids += 1
        message: dict[str, Any] = {"id": self._ids, "method": method, "params": params}
        if session:
            message["sessionId"] = self.session
        os.write(self._writer, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout_s
        while True:
            reply = self._next(deadline)
            if reply.get("id") == self._ids:
                if "error" in reply:
                    raise BrowserError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def _next(self, deadline: float) -> dict[str, Any]:
        import select

        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._reader], [], [], left)[0]:
                raise BrowserError("chromium did not answer in time")
            chunk = os.read(self._reader, 1 << 20)
            if not chunk:
                raise BrowserError("chromium closed the pipe")
            self._buffer += chunk
        message, _, self._buffer = self._buffer.partition(b"\0")
        return json.loads(message)

    # -- what a person does -----------------------------------------------------------

    def open(self, url: str) -> None:
        """Load a page and wait until it (and its deferred script) ran."""
        self.events.clear()
        self.call("Page.navigate", session=True, url=url)
        self.wait("document.readyState === 'complete'")

    def evaluate(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", session=True, expression=expression,
                           returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise BrowserError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait(self, condition: str, timeout_s: float = 15.0) -> Any:
        """Wait until the JavaScript ``condition`` is truthy; returns its value. While the
        page reloads the condition may throw (its elements are not there yet): not yet."""
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                value = self.evaluate(condition)
            except BrowserError:
                value = None
            if value:
                return value
            if time.monotonic() > deadline:
                raise BrowserError(f"not seen in {timeout_s} s: {condition}\n"
                                   f"page: {self.text()[:2000]}")
            time.sleep(0.05)

    def arrive(self, path: str) -> None:
        """Wait until the page at an address ending in ``path`` has loaded (a link followed):
        the address changes as the page starts to load, before its text is there."""
        self.wait(f"location.pathname.endsWith({json.dumps(path)}) && "
                  "document.readyState === 'complete'")

    def text(self, selector: str = "body") -> str:
        """What a person reads in an element (its rendered text)."""
        return self.evaluate(f"(document.querySelector({json.dumps(selector)}) || "
                             "{innerText: ''}).innerText") or ""

    def type(self, selector: str, text: str) -> None:
        """Focus a field and type into it (the browser fires the input events)."""
        self.evaluate(f"document.querySelector({json.dumps(selector)}).focus()")
        for char in text:
            self.call("Input.insertText", session=True, text=char)

    def click(self, selector: str) -> None:
        """Click an element where it is on the screen, as a mouse does."""
        box = self.evaluate(
            f"(() => {{ const e = document.querySelector({json.dumps(selector)}); "
            "e.scrollIntoView({block: 'center'}); const r = e.getBoundingClientRect(); "
            "return [r.x + r.width / 2, r.y + r.height / 2]; })()")
        if not box:
            raise BrowserError(f"nothing to click: {selector}")
        x, y = box
        for kind in ("mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", session=True, type=kind, x=x, y=y,
                      button="left", clickCount=1)

    def screenshot(self, name: str) -> Path:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        data = self.call("Page.captureScreenshot", session=True, format="png",
                         captureBeyondViewport=True)["data"]
        path = SCREENSHOTS / f"{name}.png"
        path.write_bytes(base64.b64decode(data))
        return path

    def close(self) -> None:
        try:
            self.call("Browser.close", timeout_s=5)
        except (BrowserError, OSError):
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)
        for fd in (self._reader, self._writer):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self.profile, ignore_errors=True)
