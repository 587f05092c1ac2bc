"""An id given by a prefix of it, as git takes a commit's: entries (`memory get 3f2a`) and
sessions (`memory session show 5f2c`, `memory explain 5f2c`), whose ids are long. The ids are
hex (an entry's; a harness's session id is most often a UUID), written in lower case: one
given in upper case (copied from a tool that shows them so) is the same id."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from memoryd.errors import BadParamsError, NotFoundError

#: The shortest prefix taken: shorter ones would name many ids, or the wrong one.
MIN_CHARS = 4
#: How many ids are asked for, to list a few when the prefix names several.
ASKED = 4
#: An id (or a prefix of one) that is hex, a UUID's dashes and all.
_HEX = re.compile(r"[0-9A-Fa-f-]+")


def by_prefix(given: str, starting: Callable[[str, int], Sequence[str]], what: str,
              hint: str = "") -> str:
    """The one id that starts with ``given`` (``starting(prefix, limit)`` lists them), or,
    none doing so, with it in lower case when it is hex; an error names the ids it could be,
    or says that none is (``hint`` after it)."""
    matches = starting(given, ASKED) if len(given) >= MIN_CHARS else []
    if not matches and len(given) >= MIN_CHARS and given != given.lower() \
            and _HEX.fullmatch(given):
        matches = starting(given.lower(), ASKED)
    if len(matches) == 1:
        return matches[0]
    if len(matches) > 1:
        listed = ", ".join(matches[:3]) + (", …" if len(matches) > 3 else "")
        raise BadParamsError(f"id prefix {given!r} is ambiguous ({listed}); give more "
                             "characters")
    short = f" (a prefix needs {MIN_CHARS} characters or more)" if len(given) < MIN_CHARS else ""
    raise NotFoundError(f"no {what} with id {given!r}{short}{hint}")
