"""The viewer's HTTP server: loopback only, a token in every path, pages and actions.

Why the standard library's ``ThreadingHTTPServer`` and no framework: the client package
depends on msgpack and platformdirs only, and a viewer for one person on one machine needs
routing of a dozen paths, not a framework (docs/viewer.md).

Who may use it:

- it listens on 127.0.0.1 only, on a free port;
- every path starts with a random token (``secrets.token_urlsafe``), compared in constant
  time: another local user who finds the port gets 403, never a page (the token is not a
  cookie: cookies are shared by every port of a host);
- the Host header must name 127.0.0.1 or localhost with the viewer's port, so that a web page
  whose name was made to resolve to 127.0.0.1 (DNS rebinding) is refused;
- what changes memory is a POST of JSON whose Origin is the viewer itself (another site can
  send neither without the browser refusing it first), with ``"confirm": true``, which the
  page's script sends only after the person confirmed; it goes through the daemon methods the
  `memory` command uses, on the channel `memory` would use here (``terminal`` when the viewer
  was started at a terminal), so the daemon's namespace rules apply as they do there.
"""

from __future__ import annotations

import hmac
import json
import queue
import re
import secrets
import signal
import sys
import threading
import traceback
import webbrowser
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

from memoryd_client.client import Client
from memoryd_client.command_spec import OK, UNREACHABLE, USAGE
from memoryd_client.errors import (
    BadParamsError,
    DaemonUnreachableError,
    MemorydError,
    NotFoundError,
    UsageError,
)
from memoryd_client.pass_view import conflicts_said
from memoryd_client.printable import printable
from memoryd_client.ui import health, pages, pass_pages, redirect, timeline
from memoryd_client.ui.html import Page, layout, message, refusal

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Any

HOST = "127.0.0.1"
#: What a page may load: only the viewer's own files (nothing from a CDN, no inline script).
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; "
                               "img-src 'self' data:; connect-src 'self'; base-uri 'self'; "
                               "form-action 'self'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
}
STATIC_TYPES = {".css": "text/css; charset=utf-8", ".js": "text/javascript; charset=utf-8",
                ".svg": "image/svg+xml", ".png": "image/png"}
#: A POST body is a small JSON map: {"target": "r12", "confirm": true}.
MAX_BODY = 16 * 1024
#: What a page that failed on a bug of the viewer's says (the traceback goes to stderr).
FAILED = ("This page could not be shown: the viewer failed on it (a bug; its traceback is on "
          "the terminal `memory ui` runs in). The other pages still work.")
FAILED_ACTION = ("the viewer failed on the daemon's answer (a bug; its traceback is on the "
                 "terminal `memory ui` runs in); the Passes page shows what was done")
_TARGETS = {"undo": re.compile(r"^[rc]\d{1,12}$"), "promote": re.compile(r"^c\d{1,12}$"),
            "forget": re.compile(r"^[\w.:-]{1,200}$"), "release": re.compile(r"^[\w.:-]{1,200}$")}


class Clients:
    """Connections to the daemon for the server's threads: one client per request at a time,
    kept for the next (a client is not shared by two threads)."""

    def __init__(self, socket: str | None, timeout_s: float, channel: str) -> None:
        self.socket, self.timeout_s, self.channel = socket, timeout_s, channel
        self._idle: queue.SimpleQueue[Client] = queue.SimpleQueue()
        self._all: list[Client] = []

    @contextmanager
    def client(self) -> Iterator[Client]:
        try:
            client = self._idle.get_nowait()
        except queue.Empty:
            client = Client(self.socket, timeout_s=self.timeout_s, channel=self.channel, cwd=None)
            self._all.append(client)
        try:
            yield client
        finally:
            self._idle.put(client)

    def close(self) -> None:
        for client in self._all:
            client.close()


class Viewer(ThreadingHTTPServer):
    """The server: its token, its clients, its address (loopback, a free port by default)."""

    daemon_threads = True
    allow_reuse_address = False  # another process on the port is an error, not a sharing

    def __init__(self, clients: Clients, port: int = 0) -> None:
        self.clients = clients
        self.token = secrets.token_urlsafe(24)
        self.assets = _assets()
        super().__init__((HOST, port), Handler)

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}/{self.token}/"

    def allowed_hosts(self) -> set[str]:
        return {f"{HOST}:{self.port}", f"localhost:{self.port}"}

    def allowed_origins(self) -> set[str]:
        return {f"http://{host}" for host in self.allowed_hosts()}


def _assets() -> dict[str, tuple[bytes, str]]:
    """The shipped static files, read once: name → (bytes, content type)."""
    folder = resources.files("memoryd_client.ui") / "static"
    found = {}
    for item in folder.iterdir():
        suffix = "." + item.name.rsplit(".", 1)[-1]
        if item.is_file() and suffix in STATIC_TYPES:
            found[item.name] = (item.read_bytes(), STATIC_TYPES[suffix])
    return found


class Handler(BaseHTTPRequestHandler):
    server: Viewer
    server_version = "memoryd-viewer"
    sys_version = ""

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: requests carry the token, and the terminal is for the URL."""

    # -- who may ask --------------------------------------------------------------------

    def _route(self) -> tuple[str, dict[str, str]] | None:
        """The path after the token and the query, or None (403 sent) when the request is
        not the viewer's own: a wrong Host, no token, a wrong token."""
        if self.headers.get("Host", "") not in self.server.allowed_hosts():
            self._send(403, b"forbidden: unknown Host\n", "text/plain; charset=utf-8")
            return None
        parts = urlsplit(self.path)
        token, _, rest = parts.path.lstrip("/").partition("/")
        if not hmac.compare_digest(token.encode(), self.server.token.encode()):
            self._send(403, b"forbidden: this address needs the token `memory ui` printed\n",
                       "text/plain; charset=utf-8")
            return None
        query = {name: values[-1] for name, values in parse_qs(parts.query).items()}
        return rest, query  # still percent-encoded: an id's "/" is not the path's (_view)

    # -- GET: pages, fragments, static files -------------------------------------------------

    def do_GET(self) -> None:
        routed = self._route()
        if routed is None:
            return
        path, query = routed
        if path.startswith("static/"):
            asset = self.server.assets.get(path.removeprefix("static/"))
            if asset is None:
                self._send(404, b"not found\n", "text/plain; charset=utf-8")
            else:
                self._send(200, *asset)
            return
        fragment = query.get("fragment")
        view = self._view(path, query, fragment)
        if view is None:
            self._page(message("Not found", f"The viewer has no page {path!r}.", status=404))
            return
        if fragment:
            status, body = self._answer(view, fragment=True)
            self._send(status, body.encode(), "text/html; charset=utf-8")
        else:
            self._page(view)

    def _view(self, path: str, query: dict[str, str], fragment: str | None
              ) -> Callable[[Client], Page | str] | None:
        """What renders the path (a page, or with ``fragment`` a part of one), or None. The
        path is as the request sent it: split into the page and the id it shows, then the id
        decoded (a session id may hold "/"; one of dots alone comes as ``?id=``)."""
        name, _, rest = path.lstrip("/").partition("/")
        name, rest = unquote(name), unquote(rest.rstrip("/")) or query.get("id") or ""
        if name in ("", "search"):
            if fragment == "results":
                return lambda c: pages.search_fragment(c, query)
            return lambda c: pages.search_page(c, query)
        if name == "entry" and rest:
            return lambda c: pages.entry_page(c, rest)
        if name == "sessions":
            return (lambda c: pages.session_page(c, rest)) if rest else \
                (lambda c: pages.sessions_page(c, query))
        if name == "passes":
            return (lambda c: pass_pages.run_page(c, rest, query)) if rest else \
                (lambda c: pass_pages.passes_page(c, query))
        if name == "timeline":
            return lambda c: timeline.timeline_page(c, query)
        if name == "health":
            return health.live if fragment == "live" else health.checks \
                if fragment == "checks" else health.health_page
        return None

    def _answer(self, view: Callable[[Client], Page | str], fragment: bool = False
                ) -> tuple[int, str]:
        """Render a view with a client; a failure of the daemon's becomes a page saying it."""
        try:
            with self.server.clients.client() as client:
                rendered = view(client)
        except DaemonUnreachableError as exc:
            rendered = message("memoryd is not running", exc.message, status=503)
        except NotFoundError as exc:
            rendered = message("Not found", exc.message, status=404)
        except (BadParamsError, UsageError) as exc:
            rendered = message("Not understood", refusal(exc), status=400)
        except MemorydError as exc:
            rendered = message("memoryd refused", exc.message, status=502)
        except Exception:  # a bug: said on the page and on stderr, the viewer keeps serving
            self._log_failure()
            rendered = message("The viewer failed", FAILED, status=500)
        if isinstance(rendered, str):
            return 200, rendered
        if fragment:
            return rendered.status, rendered.body
        return rendered.status, layout(rendered, f"/{self.server.token}/")

    def _page(self, view: Callable[[Client], Page | str] | Page) -> None:
        if isinstance(view, Page):
            status, body = view.status, layout(view, f"/{self.server.token}/")
        else:
            status, body = self._answer(view)
        self._send(status, body.encode(), "text/html; charset=utf-8")

    # -- POST: the actions -------------------------------------------------------------------

    def do_POST(self) -> None:
        routed = self._route()
        if routed is None:
            return
        path, _ = routed
        if self.headers.get("Origin") not in self.server.allowed_origins():
            self._json(403, {"ok": False, "message": "forbidden: an action is taken only from "
                             "the viewer's own pages (Origin)"})
            return
        if self.headers.get("Content-Type", "").split(";")[0].strip() != "application/json":
            self._json(415, {"ok": False, "message": "an action is a JSON request"})
            return
        action = path.removeprefix("action/")
        if not path.startswith("action/") or action not in _TARGETS:
            self._json(404, {"ok": False, "message": f"no action {path!r}"})
            return
        request = self._body()
        target = request.get("target") if isinstance(request, dict) else None
        if not isinstance(target, str) or not _TARGETS[action].match(target):
            self._json(400, {"ok": False, "message": f"{action}: no valid target given"})
            return
        if request.get("confirm") is not True:
            self._json(400, {"ok": False, "message": f"{action}: not confirmed"})
            return
        try:
            with self.server.clients.client() as client:
                said = act(client, action, target)
        except MemorydError as exc:
            status = 503 if isinstance(exc, DaemonUnreachableError) else \
                self._not_found_or_not_now(action, target) \
                if isinstance(exc, NotFoundError) else 409
            self._json(status, {"ok": False, "message": exc.message})
            return
        except Exception:  # a bug: the daemon may have acted; the run lists say what it did
            self._log_failure()
            self._json(500, {"ok": False, "message": f"{action} {target}: {FAILED_ACTION}"})
            return
        self._json(200, {"ok": True, "message": said})

    def _not_found_or_not_now(self, action: str, target: str) -> int:
        """The status of an action the daemon answered "not found": 404 when there is no
        such run or change, 409 when there is one that cannot be undone or accepted as it is
        now (the daemon says either as not found: a change reported, undone already, a run
        with nothing left to undo)."""
        if action not in ("undo", "promote"):
            return 404
        try:
            with self.server.clients.client() as client:
                client.pass_show(target)
        except MemorydError:
            return 404
        return 409

    def _body(self) -> Any:
        try:
            length = int(self.headers.get("Content-Length", "0"))
        except ValueError:
            return None
        if not 0 < length <= MAX_BODY:
            return None
        try:
            return json.loads(self.rfile.read(length))
        except (ValueError, UnicodeDecodeError):
            return None

    # -- replies ---------------------------------------------------------------------------

    def _log_failure(self) -> None:
        """A request that failed on a bug of the viewer's: its traceback on stderr (the
        terminal `memory ui` runs in), with the page asked for but not the token."""
        asked = urlsplit(self.path).path.lstrip("/").partition("/")[2]
        print(f"memory ui: {self.command} {asked!r} failed:\n{traceback.format_exc()}",
              file=sys.stderr, end="", flush=True)

    def _json(self, status: int, value: dict[str, Any]) -> None:
        """A JSON reply; its message (shown on the page) with control characters shown as
        escapes, as pages show them (it may name what memory holds)."""
        if isinstance(value.get("message"), str):
            value = {**value, "message": printable(value["message"])}
        self._send(status, json.dumps(value).encode(), "application/json")

    def _send(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in SECURITY_HEADERS.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{name} {n}" for name, n in sorted(counts.items())) or "nothing to do"


def act(client: Client, action: str, target: str) -> str:
    """Do a confirmed action through the daemon; what it did, in words."""
    if action == "undo":
        done = client.undo(target)
        said = f"{target} undone as run {done['run']} ({done['status']}: {_counts(done['counts'])})"
        left = conflicts_said(done)
        return f"{said}; {left}: see run {done['run']}" if left else said
    if action == "promote":
        done = client.promote_accept(target)
        return f"{target} accepted as run {done['run']} ({_counts(done['counts'])})"
    if action == "forget":
        done = client.forget(target, reason="forgotten in the viewer (memory ui)")
        undo = done.get("undo") or (done.get("edited") or {}).get("run")
        return f"forgotten{f'; undo run {undo} takes it back' if undo else ''}"
    done = client.release(target)
    return f"released {done.get('id', target)}: it may be injected into sessions now"


def run_command(args: Any) -> int:
    """`memory ui`: serve until Ctrl-C (or SIGTERM). Actions go on the channel the `memory`
    command would use from here: ``terminal`` when started at one (a person), else ``cli``."""
    channel = "terminal" if sys.stdin is not None and sys.stdin.isatty() else "cli"
    clients = Clients(args.socket, args.timeout, channel)
    try:
        with clients.client() as client:
            client.status()  # as every command: a daemon that is not there is said at once
    except DaemonUnreachableError as exc:
        print(f"Error: {exc.message}", file=sys.stderr)
        return UNREACHABLE
    try:
        viewer = Viewer(clients, args.port)
    except OSError as exc:
        print(f"Error: cannot listen on {HOST}:{args.port}: {exc.strerror or exc}",
              file=sys.stderr)
        return USAGE
    print(f"memory ui: {viewer.url}", flush=True)
    print("The address holds a token: anyone with it can read your memory. Ctrl-C stops the "
          "viewer.", file=sys.stderr, flush=True)
    page = None if args.no_open else _open_browser(viewer.url)
    signal.signal(signal.SIGTERM, _stop)
    try:
        viewer.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        viewer.server_close()
        clients.close()
        if page is not None:
            redirect.remove(page)
    return OK


def _open_browser(url: str) -> Path | None:
    """Open the browser at a page that leads to ``url``, not at ``url`` itself: the
    browser's command line, which every local user can read, would show the token
    (memoryd_client.ui.redirect). Returns the page, removed when the viewer stops."""
    try:
        page = redirect.write(url)
    except OSError as exc:
        print(f"memory ui: no browser opened: cannot write the page that opens it "
              f"({exc.strerror or exc}); open the address yourself", file=sys.stderr, flush=True)
        return None
    # in a thread: a console browser would hold the terminal
    threading.Thread(target=webbrowser.open, args=(page.as_uri(),), daemon=True).start()
    return page


def _stop(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt
