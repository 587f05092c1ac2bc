"""Shell command lines as the programs they run, for the outcome judge (pure functions).

An agent's ``Bash`` call is a line of shell: ``cd api && pip3 install -r requirements.txt 2>&1 |
tail``. What a memory is about is the programs it runs and how (``pip install``), not the words
it merely carries: ``grep "pip install" README.md`` and ``echo 'never pip install'`` run grep
and echo. :func:`invocations` splits a line into the commands it runs, each as its words with
the command word first:

- separators ``;``, ``&&``, ``||``, ``|``, ``&``, parentheses and new lines split commands;
  a backslash-newline joins lines; comments are dropped;
- a here-document's body is text written, not commands (:func:`heredoc_bodies` gives it);
- leading ``VAR=value`` assignments and wrappers (``sudo``, ``env``, ``time``, ``nohup``,
  ``nice``, ``timeout N``, ``exec``, ``command``, ``xargs``) are stepped over, the wrapper
  itself counted as a command too (a memory may be about ``sudo``);
- ``bash -c '…'`` (and sh, zsh) runs the quoted line: it is split in turn;
- runners run a second program: ``python -m pytest``, ``uv run pytest``, ``poetry run``,
  ``pipenv run``, ``npx``, ``pnpm exec``/``dlx``, ``yarn dlx``, ``bunx``, ``uvx``, ``pipx run``,
  ``hatch run``: both the runner and the program are commands;
- ``pnpm vitest``, ``yarn eslint``, ``bun tsc``: a package manager's first word that is not
  one of its own commands is a program it runs;
- the command word is a path's last part (``/usr/bin/pip`` is ``pip``).

:func:`written_paths` gives the files a line writes by redirection (``>``, ``>>``, ``tee``).
A line shlex cannot split (an unclosed quote) is split on white space.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

_CONTROL = {";", "&&", "||", "|", "&", "(", ")", "|&", ";;", "\n"}
_REDIRECT = re.compile(r"^(?:\d*>>?|&>>?|>&|>\||<|<<<?|<&|\d*<>)$")
_WRAPPERS = {"sudo", "env", "time", "nohup", "nice", "exec", "command", "builtin", "xargs",
             "timeout", "doas", "stdbuf", "caffeinate", "chronic"}
_SHELLS = {"bash", "sh", "zsh", "dash", "ksh"}
#: runner → the words after which the program starts ("" : right after the runner).
_RUNNERS = {("python", "-m"), ("uv", "run"), ("poetry", "run"), ("pipenv", "run"),
            ("pnpm", "exec"), ("pnpm", "dlx"), ("yarn", "dlx"), ("pipx", "run"),
            ("hatch", "run"), ("pdm", "run"), ("rye", "run"), ("npm", "exec")}
_DIRECT_RUNNERS = {"npx", "bunx", "uvx", "pnpx"}
#: Package managers that run a package's program when their first word is not theirs.
_PACKAGE_RUNNERS = {name: frozenset(words.split()) for name, words in {
    "pnpm": "add install i remove rm uninstall un update up upgrade list ls run exec dlx test t "
            "why outdated publish link unlink import rebuild prune store init audit create env "
            "setup patch install-test it fetch config c root bin licenses deploy pack start",
    "yarn": "add install remove upgrade up run dlx workspace workspaces why info init test "
            "build start publish pack link unlink config cache global audit outdated set "
            "plugin version npm constraints explain dedupe",
    "bun": "add install i remove rm update run x test build init create pm link unlink "
           "outdated publish upgrade repl exec patch",
}.items()}
_HEREDOC = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_][\w-]*)\1")
_MAX_DEPTH = 3


@dataclass(frozen=True)
class Invocation:
    """One program a line runs: its words, the (normalised) command word first."""

    words: tuple[str, ...]
    line: str  # the whole line it is part of

    @property
    def command(self) -> str:
        return self.words[0]

    @property
    def args(self) -> tuple[str, ...]:
        return self.words[1:]


def command_word(word: str) -> str:
    """``/usr/bin/pip3`` → ``pip3``; quotes and a trailing ``;`` are gone already."""
    return word.rsplit("/", 1)[-1] if "/" in word and not word.endswith("/") else word


def heredoc_bodies(line: str) -> tuple[str, str]:
    """The line without its here-documents' bodies, and the bodies (text written to files)."""
    lines = line.split("\n")
    kept: list[str] = []
    bodies: list[str] = []
    i = 0
    while i < len(lines):
        current = lines[i]
        kept.append(current)
        i += 1
        for match in _HEREDOC.finditer(current):
            end = match.group(2)
            body: list[str] = []
            while i < len(lines) and lines[i].strip() != end:
                body.append(lines[i])
                i += 1
            i += 1  # the delimiter line
            bodies.append("\n".join(body))
    return "\n".join(kept), "\n".join(bodies)


def _tokens(line: str) -> list[str]:
    """Words and control operators; new lines become ``\\n`` tokens."""
    out: list[str] = []
    for part in line.replace("\\\n", " ").split("\n"):
        lexer = shlex.shlex(part, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        try:
            out.extend(lexer)
        except ValueError:  # an unclosed quote: the words as they are
            out.extend(part.split())
        out.append("\n")
    return out


def _segments(tokens: list[str]) -> list[list[str]]:
    segments: list[list[str]] = [[]]
    for token in tokens:
        if token in _CONTROL:
            segments.append([])
        else:
            segments[-1].append(token)
    return [s for s in segments if s]


def _strip_redirects(words: list[str]) -> tuple[list[str], list[str]]:
    """The words without redirections, and the files written by them."""
    kept: list[str] = []
    written: list[str] = []
    skip = False
    for i, word in enumerate(words):
        if skip:
            skip = False
            continue
        if _REDIRECT.match(word):
            skip = True
            if ">" in word and i + 1 < len(words) and not words[i + 1].isdigit():
                written.append(words[i + 1])
            continue
        kept.append(word)
    return kept, written


def _unwrap(words: list[str], line: str, depth: int, out: list[Invocation]) -> None:
    while words and re.fullmatch(r"[A-Za-z_]\w*=.*", words[0]):
        words = words[1:]  # VAR=value
    if not words:
        return
    head = command_word(words[0])
    if head in _WRAPPERS:
        out.append(Invocation((head, *words[1:]), line))
        rest = words[1:]
        while rest and (rest[0].startswith("-") or re.fullmatch(r"[A-Za-z_]\w*=.*", rest[0])
                        or (head == "timeout" and re.fullmatch(r"[\d.]+[smhd]?", rest[0]))):
            takes_value = head == "sudo" and rest[0] in ("-u", "-g", "-C", "-D")
            rest = rest[2:] if takes_value else rest[1:]
        _unwrap(rest, line, depth, out)
        return
    if head in _SHELLS and len(words) >= 3 and words[1] in ("-c", "-lc", "-ic", "-ec") \
            and depth < _MAX_DEPTH:
        out.extend(invocations(words[2], depth + 1))
        return
    words = [head, *words[1:]]
    out.append(Invocation(tuple(words), line))
    if head in _DIRECT_RUNNERS and len(words) > 1:
        rest = [w for w in words[1:] if not w.startswith("-")]
        if rest:
            out.append(Invocation((command_word(rest[0]), *rest[1:]), line))
        return
    if head in _PACKAGE_RUNNERS and len(words) > 1 and not words[1].startswith("-") \
            and words[1] not in _PACKAGE_RUNNERS[head]:  # "pnpm vitest run": vitest runs
        out.append(Invocation((command_word(words[1]), *words[2:]), line))
        return
    for runner, verb in _RUNNERS:
        if re.fullmatch(re.escape(runner) + r"(?:\d+(?:\.\d+)*)?", head) and len(words) > 2 \
                and words[1] == verb:
            rest = words[2:]
            while rest and rest[0].startswith("-"):
                rest = rest[1:]
            if rest:
                out.append(Invocation((command_word(rest[0]), *rest[1:]), line))
            return


def invocations(line: str, depth: int = 0) -> list[Invocation]:
    """The programs a shell line runs, in order (see the module docstring)."""
    code, _ = heredoc_bodies(line)
    out: list[Invocation] = []
    for segment in _segments(_tokens(code)):
        words, _written = _strip_redirects(segment)
        _unwrap(words, line, depth, out)
    return out


def written_paths(line: str) -> list[str]:
    """The files a shell line writes by redirection or ``tee``."""
    code, _ = heredoc_bodies(line)
    written: list[str] = []
    for segment in _segments(_tokens(code)):
        words, targets = _strip_redirects(segment)
        written.extend(targets)
        if words and command_word(words[0]) == "tee":
            written.extend(w for w in words[1:] if not w.startswith("-"))
    return written
