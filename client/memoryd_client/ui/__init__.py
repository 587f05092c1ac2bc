"""`memory ui`: a viewer of memory in the browser, served by the client process.

The daemon stays Unix-socket only: this package runs a small HTTP server (the standard
library's ``ThreadingHTTPServer``) on 127.0.0.1, which answers each page by asking the daemon
over the socket, as any client does. Every request carries a random token in its path, and
every action that changes memory (undo, forget, release, promote accept) is a POST from the
viewer's own pages, confirmed by the person, through the daemon methods the `memory` command
uses (docs/viewer.md says why, and how it is kept private).

Modules: :mod:`.server` (HTTP, token, origin checks, actions), :mod:`.html` (layout and shared
fragments), :mod:`.pages` (search, entry, sessions), :mod:`.pass_pages` (runs and their
diffs), :mod:`.timeline` (the growth chart), :mod:`.health` (doctor and indexing, live),
:mod:`.redirect` (the private page the browser is opened at, not the address with the token);
``static/`` holds the stylesheet and the script, shipped in the package.
"""
