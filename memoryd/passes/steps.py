"""What a pass yields to the runner besides a plain slice point (see memoryd.passes.runner)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Offload:
    """Work a pass wants done off the database thread; its result is sent back (``wait``
    False: a handle is, at once, for a later :class:`Collect`)."""

    fn: Callable[..., Any]
    args: tuple[Any, ...] = ()
    wait: bool = True


@dataclass(frozen=True)
class Collect:
    """The result of an ``Offload(wait=False)``, once it is done: sent back into the pass."""

    handle: asyncio.Future[Any]
