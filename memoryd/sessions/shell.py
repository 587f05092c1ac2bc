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
A line shlex cannot split (an unclosed quote) is split on white space. A long line is read
as its beginning, and a long word or quoted string as its first 256 characters
(:func:`bounded`): what a line runs is in its command words, and a pasted blob must not make
a tool call's check take seconds.
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
#: A runner's command word, with or without a version (``python3.12``).
_RUNNER = re.compile("(" + "|".join(sorted({re.escape(r) for r, _ in _RUNNERS}))
                     + r")(?:\d+(?:\.\d+)*)?")
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
#: A word or quoted string longer than this is read as its first this many characters: a
#: pasted blob (``echo '<base64>' | base64 -d``, a long ``python -c "…"``) says nothing more
#: about the programs a line runs, and splitting it (shlex, character by character, each
#: word's characters copied as it grows) would hold up every other client of the daemon.
LONG_WORD = 256
#: Of a line, what is left once its long words are cut is read up to this many characters
#: (the time to read it grows with its length, on every tool call).
MAX_LINE = 8_192
#: Of a line with a here-document (read line by line), the first this many characters.
MAX_READ = 1_048_576
#: Where a quoted string or a long word may begin (or an escaped character, skipped).
_OPENS = re.compile(r"""\\.|['"]|[^\s'"\\;&|()<>]{""" + str(LONG_WORD + 1) + "}", re.S)
#: A quoted string (one left open runs to the end, as in a shell), or a long word.
_QUOTED = re.compile(r"""'[^']*+(?:'|\Z)|"(?:[^"\\]++|\\.?)*+(?:"|\Z)|[^\s'"\\;&|()<>]++""",
                     re.S)


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
    """The line without its here-documents' bodies, and the bodies (text written to files).
    A line with a here-document is read up to its first :data:`MAX_READ` characters."""
    if "<<" not in line:
        return line, ""
    lines = line[:MAX_READ].split("\n")
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


def bounded(line: str) -> str:
    """``line`` with its long words and quoted strings cut to :data:`LONG_WORD` characters
    (a quoted one keeps its closing quote), at most :data:`MAX_LINE` characters of it. Its
    time grows with what it keeps, not with the line: each search for the next quote or long
    word looks no further than what is still to be kept."""
    if len(line) <= LONG_WORD:
        return line
    kept: list[str] = []
    size = start = 0
    while size < MAX_LINE:
        found = _OPENS.search(line, start, start + MAX_LINE - size + LONG_WORD + 1)
        if found is None:
            kept.append(line[start:start + MAX_LINE - size])
            break
        if found.group(0).startswith("\\"):
            end, word = found.end(), ""
        else:
            match = _QUOTED.match(line, found.start())
            assert match is not None  # a quote always matches, to the end at worst
            end, word = match.end(), match.group(0)
            if len(word) > LONG_WORD:  # an escape cut in two would open the quote again
                word = word[:LONG_WORD - 1].rstrip("\\") + word[0] if word[0] in "'\"" \
                    else word[:LONG_WORD]
        gap = line[start:found.start() if word else end]
        kept += (gap, word)
        size += len(gap) + len(word)
        start = end
    return "".join(kept)[:MAX_LINE]


def _tokens(line: str) -> list[str]:
    """Words and control operators (of the line :func:`bounded`); new lines become ``\\n``
    tokens."""
    out: list[str] = []
    for part in bounded(line).replace("\\\n", " ").split("\n"):
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
    runner = _RUNNER.fullmatch(head)
    if runner and len(words) > 2 and (runner.group(1), words[1]) in _RUNNERS:
        rest = words[2:]
        while rest and rest[0].startswith("-"):
            rest = rest[1:]
        if rest:
            out.append(Invocation((command_word(rest[0]), *rest[1:]), line))


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
