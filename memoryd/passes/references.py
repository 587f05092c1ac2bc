"""What a memory entry names in its project: paths, identifiers, flags, environment variables and
package names. Pure text rules, no I/O; the staleness pass (:mod:`memoryd.passes.staleness`)
checks what they find against the project's working tree.

A false "stale" mark demotes a true memory, so the rules prefer missing a reference to
inventing one:

- **code spans** (`` `…` ``) are the main source. A span that is one token is a path when it
  has a ``/`` or a known file extension (``src/app.py``, ``docs/``, ``Makefile``, ``.env``); a
  flag when it starts with ``--``; an environment variable when written ``$NAME``; otherwise an
  identifier when it looks like code (``set_meta``, ``Store.set_meta()``, ``Foo::bar``) — each
  dotted part is a name of its own. A span with spaces (a command, a snippet) gives only its
  flags, ``$VARS``, paths and the names of ``import``/``from`` statements;
- in **prose**, only forms that cannot be English: ``--flags``, ``$VARS``, ``name()`` calls, file
  names with a known extension and paths with a ``/`` that end in one (or in ``/``, or start
  with ``./``);
- **package names** only after an install command (``pip install``, ``uv add``, ``poetry
  add``, ``npm install``, ``yarn add``, ``pnpm add``, ``cargo add``);
- never: fenced code blocks, URLs, globs and placeholders (``*.py``, ``<name>``, ``{agent}``),
  ``~``/``..`` paths, numbers, single letters, and a few names every program has (``self``,
  ``None``, ``$HOME``).

A reference is a short string ``kind:value`` (:class:`Ref`); ``label`` is how a stale mark
names it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: File extensions that make a bare token a file name ("app.py", "README.md").
EXTENSIONS = frozenset("""
py pyi pyx pxd ipynb js jsx mjs cjs ts tsx mts cts vue svelte astro json jsonc json5 toml yaml yml
ini cfg conf env md mdx rst txt adoc tex sh bash zsh fish ps1 bat cmd rs go mod sum java kt kts
scala groovy gradle clj cljs edn c h cc cpp cxx hpp hh hxx m mm swift cs fs vb rb erb rake php pl
pm lua r jl ex exs erl hrl hs elm ml mli dart zig nim sql prisma graphql gql proto thrift html
htm css scss sass less xml xsd svg csv tsv lock tf tfvars hcl nix dockerfile mk cmake service
plist properties patch diff
""".split())
#: File names without an extension that are clearly files.
FILE_NAMES = frozenset("""
Makefile makefile GNUmakefile Dockerfile Containerfile Justfile justfile Procfile Gemfile
Rakefile Vagrantfile Brewfile Pipfile Jenkinsfile Taskfile Caddyfile LICENSE COPYING CODEOWNERS
""".split())
#: Names every program has, or that no change to a project removes.
COMMON_NAMES = frozenset("""
self this cls super true false True False null None nil undefined NaN main init new
""".split())
#: Environment variables of the system, not of a project.
SYSTEM_VARS = frozenset("""
HOME PATH USER LOGNAME PWD OLDPWD SHELL TERM LANG LC_ALL TMPDIR TMP TEMP EDITOR VISUAL PAGER
HOSTNAME DISPLAY XDG_CONFIG_HOME XDG_DATA_HOME XDG_STATE_HOME XDG_CACHE_HOME XDG_RUNTIME_DIR
""".split())

_FENCE = re.compile(r"^\s*(```|~~~).*?(?:^\s*\1[^\n]*$|\Z)", re.M | re.S)
_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://\S+|\bwww\.\S+"
                  r"|\b[\w.+-]+@[\w-]+(?:\.[\w-]+)*\.[A-Za-z]{2,}\b", re.I)  # and e-mail
_SPAN = re.compile(r"(`+)(?!`)(.+?)(?<!`)\1(?!`)")
_FLAG = re.compile(r"(?<![\w\-/.=])--([a-zA-Z][a-zA-Z0-9]*(?:[-_][a-zA-Z0-9]+)*)(?![\w\-/])")
_ENV = re.compile(r"\$\{?([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*)\b\}?")
_CALL = re.compile(r"(?<![\w.$])([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)\(\)")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:(?:\.|::|->|#)[A-Za-z_][A-Za-z0-9_]*)*"
                         r"(?:\(.*\))?[!?]?")
_PART = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_IMPORT = re.compile(r"^(?:from\s+([\w.]+)\s+)?import\s+([\w., ]+?)(?:\s+as\s+\w+)?\s*$")
_INSTALL = re.compile(
    r"\b(?:(?:pip3?|uv pip|python3? -m pip)\s+install|uv\s+add|poetry\s+add|pipx\s+install|"
    r"(?:npm|pnpm)\s+(?:install|i|add)|yarn\s+add|cargo\s+add)\s+([^\n`;|&()]+)")
_PACKAGE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
#: Install options that take a value (the value is no package).
_VALUED = frozenset(("-r", "-c", "-e", "--requirement", "--constraint", "--editable",
                     "-i", "--index-url", "--extra-index-url", "-f", "--find-links", "--target",
                     "-t", "--python", "-p", "--group", "--features", "-F"))
_PATH_CHARS = re.compile(r"^[\w.+@-]+(?:/[\w.+@-]+)*/?$")
_LINE_SUFFIX = re.compile(r"(?::\d+(?:[:-]\d+)?|#L\d+(?:-L?\d+)?)$")
_STRIP = "\"'([{<,;:!?)]}>."
MAX_REFS = 40


@dataclass(frozen=True, order=True)
class Ref:
    kind: str  # path, word, flag, env, package
    value: str

    @property
    def key(self) -> str:
        return f"{self.kind}:{self.value}"

    @classmethod
    def from_key(cls, key: str) -> Ref:
        kind, _, value = key.partition(":")
        return cls(kind, value)

    @property
    def label(self) -> str:
        if self.kind == "env":
            return f"`${self.value}`"
        if self.kind == "package":
            return f"package `{self.value}`"
        return f"`{self.value}`"

    def words(self) -> tuple[str, ...]:
        """The tokens of the word index any of which means the thing is there."""
        if self.kind == "flag":
            name = self.value[2:]
            return tuple(dict.fromkeys((name, name.replace("-", "_"))))
        if self.kind == "package":
            name = self.value
            return tuple(dict.fromkeys((name, name.lower(), name.replace("-", "_"),
                                        name.lower().replace("-", "_"),
                                        name.lower().replace("_", "-"))))
        if self.kind in ("word", "env"):
            return (self.value,)
        return ()


def references(text: str) -> list[Ref]:
    """What the text names (see the module docstring), sorted, at most ``MAX_REFS``."""
    if "```" in text or "~~~" in text:
        text = _FENCE.sub(" ", text)
    if "://" in text or "@" in text or "www." in text:
        text = _URL.sub(" ", text)
    found: set[Ref] = set()
    prose: list[str] = []
    last = 0
    for span in _SPAN.finditer(text):
        prose.append(text[last:span.start()])
        last = span.end()
        code = span.group(2).strip()
        for match in _INSTALL.finditer(code):
            found.update(_packages(match.group(1), first_only=False))
        found.update(_from_span(_INSTALL.sub(_arguments, code).strip()))
    prose.append(text[last:])
    rest = " ".join(prose)
    for match in _INSTALL.finditer(rest):  # in prose the command's end is unclear: one name
        found.update(_packages(match.group(1), first_only=True))
    found.update(_from_prose(_INSTALL.sub(_arguments, rest)))
    return sorted(found)[:MAX_REFS]


def _arguments(install: re.Match[str]) -> str:
    """An install command without the command: its arguments may still name paths."""
    return " " + install.group(1)


def _packages(arguments: str, *, first_only: bool) -> list[Ref]:
    found = []
    skip = False
    for token in arguments.split():
        token = token.strip("\"'")
        if first_only and token.startswith("-"):
            break  # "pip install -e . first": no name to trust
        if skip:
            skip = False
            continue
        if token in _VALUED:
            skip = True
            continue
        if token.startswith(("-", ".", "@")) or "/" in token:
            continue  # options, local paths, scoped npm packages
        name = re.split(r"[\[<>=!~;@]", token, maxsplit=1)[0].rstrip(".,:")
        if not (_PACKAGE.match(name) and re.search(r"[A-Za-z]", name) and len(name) > 1):
            break
        found.append(Ref("package", name))
        if first_only or token.endswith((",", ".", ":")):
            break
    return found


def _from_span(span: str) -> list[Ref]:
    """The references of one inline code span."""
    if not span:
        return []
    if re.search(r"\s", span):
        return _from_snippet(span)
    env = re.fullmatch(r"\$\{?([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*)\}?", span)
    if env:
        return _env(env.group(1))
    if span.startswith("--"):
        flag = _FLAG.fullmatch(span.split("=", 1)[0])
        return [Ref("flag", flag.group(0))] if flag else []
    path = path_ref(span, in_code=True)
    if path is not None:
        return [path]
    if _IDENTIFIER.fullmatch(span):
        callee = span.split("(", 1)[0]
        return _names(callee)
    if re.fullmatch(r"[A-Za-z][A-Za-z0-9]*(?:-[A-Za-z0-9]+)+", span):  # a dashed name: dry-run
        return [Ref("word", span)]
    return []


def _from_snippet(span: str) -> list[Ref]:
    """A code span with spaces: a command or a line of code."""
    found: list[Ref] = []
    imported = _IMPORT.match(span)
    if imported:
        for group in imported.groups():
            for name in re.split(r"[\s,]+", group or ""):
                found += _names(name)
        return found
    call = re.fullmatch(r"([A-Za-z_][\w.:]*)\(.*\)", span)
    if call:
        found += _names(call.group(1))
    found += [Ref("flag", m.group(0)) for m in _FLAG.finditer(span)]
    for m in _ENV.finditer(span):
        found += _env(m.group(1))
    for token in span.split():
        if "/" in token or "." in token:
            path = path_ref(token.split("=", 1)[-1], in_code=True)
            if path is not None:
                found.append(path)
    return found


def _from_prose(text: str) -> list[Ref]:
    found: list[Ref] = [Ref("flag", m.group(0)) for m in _FLAG.finditer(text)]
    for m in _ENV.finditer(text):
        found += _env(m.group(1))
    for m in _CALL.finditer(text):
        found += _names(m.group(1))
    for token in text.split():
        core = token.rstrip(_STRIP)
        if "/" in core or "." in core[1:]:
            path = path_ref(token, in_code=False)
            if path is not None:
                found.append(path)
    return found


def _env(name: str) -> list[Ref]:
    return [] if name in SYSTEM_VARS or name.startswith("XDG_") or len(name) < 2 else \
        [Ref("env", name)]


def _names(dotted: str) -> list[Ref]:
    """Each part of ``a.b``, ``A::b``, ``a->b``, ``A#b`` worth checking."""
    return [Ref("word", part) for part in _PART.findall(dotted)
            if len(part) > 2 and part not in COMMON_NAMES and not part.isdigit()]


def path_ref(token: str, *, in_code: bool) -> Ref | None:
    """A path reference, or None. In prose a path needs a form English does not take: a
    known extension, a trailing ``/`` or a leading ``./``."""
    token = token.strip(_STRIP.replace(".", "")).rstrip(_STRIP)
    token = _LINE_SUFFIX.sub("", token)
    if not token or token.startswith(("~", "$", "-", "@", "//")) or "//" in token:
        return None
    absolute = token.startswith("/")
    if absolute:
        if not in_code and token.count("/") < 2:
            return None
        body = token[1:]
    else:
        body = token.removeprefix("./")
    if not body or not _PATH_CHARS.match(body):
        return None
    parts = body.rstrip("/").split("/")
    if any(p in ("", ".", "..") or not re.search(r"[A-Za-z]", p) for p in parts):
        return None
    last = parts[-1]
    stem, dot, extension = last.rpartition(".")
    known = bool(dot and stem and extension.lower() in EXTENSIONS and re.search(r"[A-Za-z]", stem))
    dotfile = last.startswith(".") and not stem.strip(".") and re.fullmatch(r"\.[a-z][\w.-]*",
                                                                             last) is not None
    named = last in FILE_NAMES
    if len(parts) == 1 and not absolute:
        directory = body.endswith("/") and len(last) > 1  # "tests/", not "w/"
        if not (known or named or directory or (in_code and dotfile)):
            return None
    elif not in_code and not (known or named or dotfile or body.endswith("/")
                              or token.startswith("./") or absolute):
        return None
    elif in_code and len(parts) > 1 and not (known or named or dotfile or body.endswith("/")) \
            and "." in last and not re.fullmatch(r"\.[\w-]+", last):
        return None  # "os.path/x.y" and such: a dotted last part of no known kind
    value = ("/" if absolute else "") + body.rstrip("/")
    return Ref("path", value + ("/" if body.endswith("/") else ""))
