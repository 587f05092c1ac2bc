"""What the `memory` command prints of memory's text, made safe for a terminal.

An entry's text, a session id, a watched file's name: anything memory holds came from an
agent, a transcript or a file, and may hold a terminal's control characters — an escape
sequence that recolours the screen, retitles the window or moves the cursor over what was
printed, a carriage return that hides the start of a line, a right-to-left override that
shows a command backwards. Printed as they are, they act on the user's terminal. The command
shows them instead, as the escapes Python writes (``\\x1b``, ``\\u202e``): its text output
passes through :class:`Printable`, and its JSON gets them as JSON escapes (:func:`json_safe`).
The command's own control sequences (a progress line's carriage return, the watch's screen)
are written to the stream under it (:attr:`Printable.unfiltered`).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TextIO

#: C0 controls but tab and newline, DEL, C1 controls (U+009B is a CSI to many terminals),
#: and the characters that reorder text (bidirectional marks, embeddings, overrides,
#: isolates).
UNSAFE = (*(c for c in range(0x20) if c not in (0x09, 0x0A)), *range(0x7F, 0xA0), 0x061C,
          0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))
_SHOWN = {c: f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}" for c in UNSAFE}
_JSON = {c: f"\\u{c:04x}" for c in UNSAFE}


def printable(text: str) -> str:
    """``text`` with its unsafe characters shown as escapes."""
    return text.translate(_SHOWN)


def json_safe(document: str) -> str:
    """A JSON document (``json.dumps``'s) with the unsafe characters it left as they are (it
    escapes C0 only) written as JSON escapes: the same document to a JSON reader."""
    return document.translate(_JSON)


class Printable:
    """A text stream that shows unsafe characters as escapes (:func:`printable`)."""

    def __init__(self, stream: TextIO) -> None:
        self.unfiltered = stream

    def write(self, text: str) -> int:
        return self.unfiltered.write(printable(text))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.unfiltered, name)


def unfiltered(stream: Any) -> Any:
    """The stream under a :class:`Printable` one (the stream itself otherwise): for the
    command's own control sequences."""
    return getattr(stream, "unfiltered", stream)
