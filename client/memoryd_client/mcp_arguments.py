"""The arguments of memoryd's MCP tools: each tool (:class:`Tool`) and its parameters
(:class:`Param`), as memoryd_client.mcp_tools's table lists them, and what a tool refuses, in
a line: arguments it does not take (the SDK would drop them silently) and arguments of the
wrong type, out of range or not among its values (the SDK's message is pydantic's dump). The
server is built with :func:`refusing`."""

from __future__ import annotations

TYPE_CHECKING = False  # see memoryd_client/__init__.py

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

    from memoryd_client.client import Client
    from memoryd_client.command_spec import Values

#: A parameter the model must give (Param's default).
REQUIRED = object()


class Param:
    """One argument of a tool, as the SDK describes it to the model: a type ("str", "int",
    "strs" for a list of text, or a tuple of the values allowed), a description (or a function
    of the server's facts that writes it) and a default (None makes it optional; REQUIRED: the
    model must give it). ``dest`` names the argument of the command it fills (its own name
    by default); ``ge`` and ``le`` bound a number, ``max_chars`` a text."""

    __slots__ = ("default", "description", "dest", "ge", "kind", "le", "max_chars", "name")

    def __init__(self, name: str, kind: Any, description: Any, default: Any = REQUIRED, *,
                 dest: str | None = None, ge: int | None = None, le: int | None = None,
                 max_chars: int | None = None) -> None:
        self.name = name
        self.kind = kind
        self.description = description
        self.default = default
        self.dest = dest or name
        self.ge = ge
        self.le = le
        self.max_chars = max_chars


class Tool:
    """One tool. A tool that is a command of `memory` (``command``, as "file read") runs the
    command's request from the table (memoryd_client.commands) with its arguments, the
    server's ``facts`` it takes ("agent": it acts as the server's agent; "cwd": the server's
    directory) filled in, and turns the reply into what the model reads (``reply``). A tool
    that is not quite one (search: another agent's memory; remember: a scope) has ``call``:
    the client call and the reply together."""

    __slots__ = (
        "call",
        "check",
        "command",
        "description",
        "destructive",
        "facts",
        "name",
        "params",
        "reply",
        "shown",
        "text",
        "writes",
    )

    def __init__(self, name: str, description: str, params: tuple[Param, ...] = (), *,
                 command: str | None = None, facts: tuple[str, ...] = (),
                 reply: Callable[[Any, Values], Any] | None = None,
                 call: Callable[[Client, dict[str, Any], dict[str, str]], Any] | None = None,
                 shown: Callable[[Any], list[str]] | None = None,
                 writes: bool = False, destructive: bool = False, check: str = "",
                 text: bool = True) -> None:
        self.name = name
        self.description = description
        self.params = params
        self.command = command
        self.facts = facts
        self.reply = reply
        self.call = call
        #: the entries the command's reply shows the model (their ids): counted as injected
        #: into the agent's session (:class:`Reads`)
        self.shown = shown
        self.writes = writes
        #: a write that can take out or replace what was there (a file's text, an entry),
        #: not only add: the MCP destructive hint, on which a client may ask the user first
        self.destructive = destructive
        #: a write's: how the model sees whether it was made, said when the daemon did not
        #: answer in time (it may still carry the write out: sent again, it is made twice)
        self.check = check
        self.text = text  # plain text for the model; else a structured (JSON) reply


def unknown_arguments(tool: str, arguments: dict[str, Any], takes: list[str]) -> str | None:
    """Why a call's arguments are refused (names the tool does not take), or None. The SDK
    drops such names: a misspelt filter ("categroy") would be a search of everything, and
    ``agent`` for ``other_agent`` a search of the wrong memory, with nobody told."""
    import difflib

    unknown = [name for name in arguments if name not in takes]
    if not unknown:
        return None
    hints = []
    for name in unknown:
        close = difflib.get_close_matches(name, takes, n=1, cutoff=0.6)
        hints.append(f"{name!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
    what = "argument" if len(unknown) == 1 else "arguments"
    return (f"{tool}: unknown {what} {', '.join(hints)}; nothing was done. {tool} takes "
            + (", ".join(takes) if takes else "no arguments"))


def accepted(param: Param) -> str:
    """What an argument takes, in words: "a whole number from 1 to 50", "one of note, fact"."""
    if isinstance(param.kind, tuple):
        return "one of " + ", ".join(param.kind)
    if param.kind == "int":
        if param.ge is not None and param.le is not None:
            return f"a whole number from {param.ge} to {param.le}"
        if param.ge is not None:
            return f"a whole number, {param.ge} or more"
        return "a whole number" + (f" up to {param.le}" if param.le is not None else "")
    if param.kind == "str" and param.max_chars is not None:
        return f"text of {param.max_chars:,} characters at most"
    return {"str": "text", "strs": "a list of texts"}[param.kind]


def invalid_arguments(tool: Tool, errors: list[Any], arguments: dict[str, Any]) -> str:
    """Why a call's arguments are refused (a wrong type, a number out of range, a value not in
    the list, one missing), from the SDK's validation ``errors`` (pydantic's), in the words
    :func:`unknown_arguments` uses: each argument named with what it takes. pydantic's own
    message is a dump of its model, its error codes and a link to its documentation."""
    import json

    params = {p.name: p for p in tool.params}
    problems: dict[str, str] = {}
    for error in errors:
        name = str(error["loc"][0]) if error.get("loc") else ""
        param = params.get(name)
        if param is None or name in problems:
            continue
        if error.get("type") == "missing":
            problems[name] = f"{name!r} is missing: it takes {accepted(param)}"
            continue
        value = arguments.get(name)
        if error.get("type") == "string_too_long" and isinstance(value, str):
            problems[name] = (f"{name!r} takes {accepted(param)}, not {len(value):,} (write a "
                              "long text in parts)")
            continue
        given = json.dumps(value, ensure_ascii=False, default=str)
        if len(given) > 60:
            given = given[:59] + "…"
        problems[name] = f"{name!r} takes {accepted(param)}, not {given}"
    if not problems:  # nothing pydantic named is a parameter of the table's (cannot happen)
        problems[""] = "its arguments are not what it takes"
    return f"{tool.name}: {'; '.join(problems.values())}; nothing was done"


def refusing(base: Any, tool_error: type[Exception], validation_error: type[Exception],
             tools: Mapping[str, Tool]) -> Any:
    """The SDK's server class, refusing arguments a tool does not take (and saying so in each
    tool's schema): the SDK would drop them silently; and saying in a line what is wrong with
    an argument the SDK's validation refused (:func:`invalid_arguments`). ``tools``: the
    table's tools by name."""

    class Server(base):  # type: ignore[misc]
        async def list_tools(self) -> Any:
            tools = await super().list_tools()
            for tool in tools:
                tool.input_schema["additionalProperties"] = False
            return tools

        async def call_tool(self, name: str, arguments: dict[str, Any],
                            context: Any = None) -> Any:
            schemas = {t.name: t.input_schema for t in await super().list_tools()}
            if name in schemas:
                takes = list(schemas[name].get("properties") or {})
                problem = unknown_arguments(name, arguments or {}, takes)
                if problem is not None:
                    raise tool_error(problem)
            try:
                return await super().call_tool(name, arguments, context)
            except tool_error as exc:
                cause = exc.__cause__
                if not isinstance(cause, validation_error) or name not in tools:
                    raise
                errors: list[Any] = cause.errors()  # type: ignore[attr-defined]
                # the cause stays: the SDK logs its field names, not the values given
                raise tool_error(invalid_arguments(tools[name], errors, arguments or {})) \
                    from cause

    return Server
