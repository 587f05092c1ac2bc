"""A memory's words as rules the outcome judge can check (pure functions; see
memoryd.sessions.outcomes for the design and how the rules are judged).

:func:`rule_of` reads an entry's text into a :class:`Rule`: what it says to **do**, what it says
**not** to do, and, for "X before Y" rules, the occasion Y. Each is a set of :class:`Term`:

``command``  programs and how they are run: ``pip``, ``uv add``, ``git push`` with the flags
             ``--force``/``-f``/``--force-with-lease``, ``make test``; alternatives for a
             concept ("the tests": pytest, tox, ``npm test``, ``go test``, …)
``flag``     a flag on any program (``--no-verify`` said alone)
``path``     a file or directory the agent writes (``src/gen/``, ``*.lock``, ``.env``)
``code``     an identifier in code the agent writes (``datetime.utcnow``, ``print(``)
``literal``  a value (a host ``fly.io``, a port ``5433``) in a command or in code written
``name``     a bare name a sentence is about ("prefer httpx over requests", "don't import
             pandas"): in code written, or installed (``pip install requests``)

Where terms come from: text in backticks (always a term, classified by its shape); program
names from :data:`PROGRAMS` (the ambiguous English ones, such as ``make`` and ``go``, only in
backticks or before one of their subcommands); paths (a ``/`` or a file extension); code
(``()``, ``a.b``, ``snake_case``, ``camelCase``); hosts and, in facts, numbers of 3+ digits;
and a few concepts (:data:`CONCEPTS`: force-push, the tests, the linter, the formatter, the
type checker; commit, push and deploy only as an occasion, or with a flag or a branch).

How the words are read, per sentence (``.``, ``;``, ``!``, ``?``, a dash or a colon end one):

- contrast: "use X, not Y", "X instead of Y", "X rather than Y", "prefer X over Y",
  "instead of Y, X", "replace Y with X", "switch from Y to X" → do X, don't Y;
- "Y is deprecated|retired|obsolete|banned|gone" → don't Y;
- order: "X before Y", "never Y without X", "Y only after X" → X before the occasion Y;
- a sentence starting with a negation (never, don't, do not, avoid, stop, no longer, must
  not, …) → don't (and a ", use X" in it → do X);
- otherwise by the entry's polarity: negative → don't, positive or none → do.

A program of a group of alternatives (:data:`GROUPS`: Python and JavaScript package managers,
test runners, linters, formatters, type checkers, container engines) implies its rivals:
"use pnpm" does not want ``npm``; "don't use pip" is kept by ``uv add``. Such implied terms
are marked ``implied``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from functools import lru_cache

#: Programs whose name in prose is a term. Values: the subcommands that make an ambiguous
#: English word a program ("make sure" is not make; "make test" is).
PROGRAMS: dict[str, frozenset[str] | None] = dict.fromkeys((
    "pip pipx uv uvx poetry pipenv conda mamba pdm hatch rye python pytest tox nox ruff black "
    "isort flake8 pylint mypy pyright npm npx yarn pnpm bun bunx node deno jest vitest mocha "
    "eslint prettier tsc biome git gh docker podman docker-compose kubectl helm terraform tofu "
    "ansible cmake cargo rustc rustup gofmt mvn gradle dotnet brew apt apt-get yum dnf pacman "
    "apk curl wget ssh scp rsync sudo rm chmod chown sed awk rg psql mysql sqlite3 redis-cli "
    "alembic django-admin flask uvicorn gunicorn celery flyctl vercel aws gcloud az heroku "
    "supabase prisma bundle gem rails composer flutter pre-commit pyenv nvm jq yq unittest "
    "playwright cypress webpack vite twine mkdocs jupyter pip-compile pip-sync virtualenv "
    "systemctl nodemon pm2 wrangler netlify firebase kubectx minikube skaffold bazel "
    "nose2 nosetests autopep8 yapf golangci-lint clippy rspec phpunit").split())
PROGRAMS.update({
    "make": frozenset("test check lint build install migrate fmt format deploy clean release "
                      "dev run setup ci all docs typecheck".split()),
    "go": frozenset("test build run mod get vet fmt generate install".split()),
    "fly": frozenset({"deploy", "launch", "ssh", "secrets"}),
    "next": frozenset({"build", "dev", "start", "lint"}),
    "just": frozenset("test check lint build fmt deploy".split()),
    "task": frozenset("test check lint build".split()),
    "find": frozenset(), "cat": frozenset(), "kill": frozenset(), "mix": frozenset({"test"}),
})
#: Words taken as a program's subcommand when they follow it in prose ("pip install").
SUBCOMMANDS = frozenset(
    "install add remove uninstall run push commit build test deploy exec up down apply init "
    "publish upgrade update sync lock merge rebase reset checkout clean restore stash fetch "
    "pull clone tag amend format check lint fix migrate makemigrations generate start stop "
    "restart login logout create delete destroy plan import export compose dlx tidy vet get "
    "mod fmt audit outdated freeze list show".split())
#: Alternatives to one another: one of them named implies the others.
GROUPS: tuple[frozenset[str], ...] = tuple(frozenset(g.split()) for g in (
    "pip uv poetry pipenv conda mamba pdm rye", "npm yarn pnpm bun", "pytest unittest nose2 "
    "nosetests", "jest vitest mocha", "ruff flake8 pylint", "black autopep8 yapf",
    "eslint biome", "mypy pyright", "docker podman"))
_TESTS = ("pytest", "tox", "nox", "npm test", "pnpm test", "yarn test", "bun test", "go test",
          "cargo test", "make test", "make check", "just test", "jest", "vitest", "unittest",
          "mix test", "rspec", "phpunit", "mvn test", "gradle test", "dotnet test", "npm run test",
          "pnpm run test", "yarn run test", "playwright test", "nose2")
_LINT = ("ruff", "flake8", "pylint", "eslint", "make lint", "npm run lint", "pnpm lint",
         "pnpm run lint", "yarn lint", "golangci-lint", "cargo clippy", "biome", "pre-commit",
         "just lint", "make check")
_FORMAT = ("black", "ruff format", "prettier", "gofmt", "go fmt", "cargo fmt", "make fmt",
           "make format", "npm run format", "pnpm format", "isort", "just fmt")
_TYPES = ("mypy", "pyright", "tsc", "make typecheck", "npm run typecheck", "pnpm typecheck")
_COMMIT = ("git commit",)
_PUSH = ("git push",)
_DEPLOY = ("fly deploy", "flyctl deploy", "vercel deploy", "make deploy", "kubectl apply",
           "helm upgrade", "terraform apply", "npm run deploy", "pnpm deploy", "wrangler deploy",
           "netlify deploy", "firebase deploy", "just deploy", "vercel")
_FORCE = ("--force", "-f", "--force-with-lease", "--force-if-includes", "+")
#: Concepts: a phrase, the programs it means, and whether it is a term on its own (else only
#: as an occasion, or with a flag or a branch named).
CONCEPTS: tuple[tuple[re.Pattern[str], tuple[str, ...], tuple[str, ...], bool], ...] = (
    (re.compile(r"\bforce[- ]?push(?:es|ed|ing)?\b", re.I), _PUSH, _FORCE, True),
    (re.compile(r"\b(?:(?:the |our |all )?(?:unit |integration )?tests?(?: suite)?|test suite)"
                r"\b", re.I), _TESTS, (), True),
    (re.compile(r"\b(?:lint(?:er|ing)?|the linter)\b", re.I), _LINT, (), True),
    (re.compile(r"\b(?:format(?:ter|ting)?|auto-?format\w*)\b", re.I), _FORMAT, (), True),
    (re.compile(r"\btype[- ]?check(?:er|ing|s)?\b", re.I), _TYPES, (), True),
    (re.compile(r"\bcommit(?:s|ted|ting)?\b", re.I), _COMMIT, (), False),
    (re.compile(r"\bpush(?:es|ed|ing)?\b", re.I), _PUSH, (), False),
    (re.compile(r"\bdeploy(?:s|ed|ing|ment)?\b", re.I), _DEPLOY, (), False),
)
#: Flags that mean the same on one program (``git commit -n`` is ``--no-verify``).
SYNONYMS: dict[str, tuple[str, ...]] = {"--no-verify": ("-n",), "--force": _FORCE,
                                        "-f": _FORCE, "-A": ("--all",), "--all": ("-A",)}
BRANCHES = ("main", "master", "prod", "production", "trunk", "release", "develop")
_QUALIFIER = re.compile(r"\b(?:to|on|onto|into|against|in)\s+(?:the\s+)?(?:`)?(" +
                        "|".join(BRANCHES) + r")\b(?:`)?(?:\s+branch)?", re.I)
_EXTENSIONS = ("py js ts tsx jsx json toml yaml yml lock md env cfg ini sql sh txt rs go rb java "
               "kt swift c h cpp css scss html vue svelte proto tf ipynb mjs cjs xml csv").split()
_PATH_SHAPE = re.compile(r"^(?:[\w.~*-]*/[\w./*-]*|\.[A-Za-z][\w.-]*|[\w*-]+\.(?:" +
                         "|".join(_EXTENSIONS) + r"))$")
_HOST = re.compile(r"^[a-z0-9-]+(?:\.[a-z0-9-]+)*\.(?:io|com|org|net|dev|app|sh|co|ai|cloud|"
                   r"run|internal|local)(?::\d+)?$", re.I)
_CODE_SHAPE = re.compile(r"^[A-Za-z_][\w]*(?:(?:\.|::)[A-Za-z_]\w*)+(?:\(\))?$|^[A-Za-z_]\w*\(\)?$|"
                         r"^[a-z]+_[a-z_\d]+$|^[a-z]+[A-Z]\w*$|^[A-Z][a-z]+[A-Z]\w*$")
_NEGATION = re.compile(r"^(?:please\s+)?(?:never|don'?t|do not|dont|avoid|stop|no longer|no more|"
                       r"must not|mustn'?t|should not|shouldn'?t|cannot|can'?t|not|no)\b", re.I)
_POSITIVE = re.compile(r"^(?:please\s+)?(?:always|use|run|prefer|make sure|remember|call|"
                       r"invoke|keep|stick)\b", re.I)
_FILLER = re.compile(r"^(?:(?:please|also|btw|so|ok|important|note|rule|lesson|tip|reminder|"
                     r"from now on|going forward|in general)\b[:,]?\s*)+", re.I)
_NOT_WORDS = frozenset("e.g i.e etc vs a.m p.m and/or w/ n/a".split())
#: Words that end a command's arguments in prose ("pip install in the base env", "npm
#: publish without a version bump", "run make deploy again")
_NOT_ARGUMENTS = frozenset(
    "a an the this that these those it its them any all each every some no not and or but nor "
    "so as if when whenever while unless until before after without with by for of than then "
    "again anymore ever yet here there now first twice once yourself itself is are be was "
    "were do does done unless because even just only also too please ok instead either".split())


@dataclass(frozen=True)
class Term:
    """Something a rule looks for in the session's calls (see the module docstring)."""

    kind: str  # 'command' | 'flag' | 'path' | 'code' | 'literal'
    said: str  # as the memory says it
    alternatives: tuple[tuple[str, ...], ...] = ()  # command: word sequences, any one
    flags: tuple[tuple[str, ...], ...] = ()  # command/flag: each group needs one of its flags
    qualifiers: tuple[str, ...] = ()  # command: a branch it must name to be the thing itself
    value: str = ""  # path / code / literal
    implied: bool = False  # a rival of a program the memory names, not named itself
    #: command: the arguments the memory names after it ("kubectl delete namespace prod",
    #: "chmod 777 on /etc", "rm -rf /"): a call without them is near, not the thing (only
    #: what a memory forbids keeps them: doing the program is doing what it says to do)
    args: tuple[str, ...] = ()

    @property
    def programs(self) -> frozenset[str]:
        return frozenset(words[0] for words in self.alternatives)


@dataclass(frozen=True)
class Rule:
    do: tuple[Term, ...] = ()
    dont: tuple[Term, ...] = ()
    first: tuple[Term, ...] = ()  # "X before Y": X …
    occasion: tuple[Term, ...] = ()  # … and Y
    words: frozenset[str] = field(default_factory=frozenset)  # the memory's telling words

    @property
    def empty(self) -> bool:
        return not (self.do or self.dont or (self.first and self.occasion))


def _command(said: str, words: tuple[str, ...], flags: tuple[str, ...] = (),
             qualifiers: tuple[str, ...] = (), args: tuple[str, ...] = ()) -> Term:
    groups = tuple(tuple(dict.fromkeys((f, *SYNONYMS.get(f, ())))) for f in flags)
    return Term("command", said, (words,), groups, qualifiers, args=args)


def _concept(said: str, programs: tuple[str, ...], flags: tuple[str, ...] = (),
             qualifiers: tuple[str, ...] = ()) -> Term:
    groups = (flags,) if flags else ()
    return Term("command", said, tuple(tuple(p.split()) for p in programs), groups, qualifiers)


def _classify_span(span: str, fact: bool) -> Term | None:
    """A backticked span as a term, by its shape."""
    span = span.strip()
    if not span:
        return None
    if span.startswith("-"):
        return Term("flag", span, flags=(tuple(dict.fromkeys((span.split()[0],
                                                              *SYNONYMS.get(span, ())))),))
    if _HOST.match(span):
        return Term("literal", span, value=span)
    words = span.split()
    if len(words) > 1 and re.fullmatch(r"[a-z][\w.-]*", words[0]) and "(" not in span:
        # only the words up to the first flag or argument are the program and subcommands
        cut = next((i for i, w in enumerate(words[1:], 1) if not re.fullmatch(r"[a-z][\w:-]*", w)),
                   len(words))
        head = words[:min(cut, 3)]
        flags = tuple(w.split("=")[0] for w in words[1:] if w.startswith("-"))
        args = tuple(w for w in words[len(head):] if not w.startswith("-"))
        return _command(span, tuple(head), flags, (), args)
    if _PATH_SHAPE.match(span):
        return Term("path", span, value=span)
    if span.lower() in PROGRAMS:
        return _command(span, (span.lower(),))
    if _CODE_SHAPE.match(span) or "(" in span:
        return Term("code", span, value=span.rstrip(")").rstrip("(") + ("(" if "(" in span
                                                                         else ""))
    if re.fullmatch(r"[a-z][\w-]*", span):
        return Term("name", span, value=span)  # a library or a program memoryd does not know
    return Term("literal", span, value=span) if fact or len(span) >= 4 else None


_SPAN = re.compile(r"`([^`]+)`")
#: What, right after a command in prose, is one of its arguments: a word, a number, a path
#: (not English around it: _NOT_ARGUMENTS, or an adverb); after a preposition, a place only
#: (a path, a branch: "chmod 777 on /etc", "push --force to main" is the qualifier's)
_ARGUMENT = re.compile(r"(?!(?:[a-z]+ly)$)(?:[a-z0-9][\w.:@=+-]*|[~./][\w./~*+-]*|/)")
_PLACE = re.compile(r"[~./][\w./~*+-]*|/|[\w.-]*/[\w./*-]*")
#: After a program named alone, only what looks like an argument is one ("chmod 777", "rm
#: -rf /"; "python one-liners" names a habit, not an argument)
_TECHNICAL = re.compile(r"[\d/~.=:@_]")
_PREPOSITIONS = frozenset("on in into onto to at under inside against from".split())
_TOKEN = re.compile(r"⟦\d+⟧|[^\s,;\"“”()]+(?:\(\))?")


def terms_of(fragment: str, spans: list[str], fact: bool = False,
             concepts_alone: bool = True) -> list[Term]:
    """The terms a piece of a sentence names (``spans``: its backticked texts, which the
    fragment holds as ``⟦n⟧``)."""
    terms: list[Term] = []
    tokens = [t.rstrip(".:!?'") if not t.startswith("⟦") else t for t in _TOKEN.findall(fragment)]
    tokens = [t for t in tokens if t]
    qualifiers = tuple(dict.fromkeys(m.group(1).lower() for m in _QUALIFIER.finditer(fragment)))
    flags_here = [t for t in tokens if re.fullmatch(r"--?[A-Za-z][\w-]*", t)]
    i = 0
    last_command: int | None = None
    arguments = False  # the tokens now are the last command's arguments
    after_preposition = False
    while i < len(tokens):
        token = tokens[i]
        low = token.lower()
        i += 1
        if arguments:
            arguments, after_preposition, placed = _argument(terms, last_command, token,
                                                             after_preposition)
            if placed:
                continue  # the command's place, not a path of its own
        if token.startswith("⟦"):
            term = _classify_span(spans[int(token[1:-1])], fact)
            arguments = False
            if term is not None:
                terms.append(term)
                last_command = len(terms) - 1 if term.kind == "command" else last_command
            continue
        if re.fullmatch(r"--?[A-Za-z][\w-]*", token):
            _add_flag(terms, last_command, token)
            continue
        if low in _NOT_WORDS:
            continue
        if low in ("python", "python3") and tokens[i:i + 1] == ["-m"] and i + 1 < len(tokens):
            module = tokens[i + 1].lower()  # "python -m unittest": unittest runs
            i += 2
            terms.append(_command(f"python -m {module}", (module,), (), qualifiers))
            last_command = len(terms) - 1
            continue
        if low in PROGRAMS:
            words = _program_words(tokens, i - 1)
            if not words:
                continue  # "make sure", "go through"
            i += len(words) - 1
            terms.append(_command(" ".join(words), words, (), qualifiers))
            last_command = len(terms) - 1
            arguments = True
            continue
        plain = _plain_term(token, fact)
        if plain is not None:
            terms.append(plain)
    return _concepts(fragment, _flags_to_command(terms), qualifiers, flags_here, concepts_alone)


def _plain_term(token: str, fact: bool) -> Term | None:
    """A word of prose that is a host, a path, code, or (in a fact) a number."""
    if _HOST.match(token):
        return Term("literal", token, value=token.lower())
    if _PATH_SHAPE.match(token) and not token.startswith("http"):
        return Term("path", token, value=token)
    if _CODE_SHAPE.match(token) and not re.fullmatch(r"[A-Z][a-z]+", token):
        return Term("code", token, value=token[:-1] if token.endswith("()") else token)
    if fact and re.fullmatch(r"\d{3,}", token):
        return Term("literal", token, value=token)
    return None


def _program_words(tokens: list[str], at: int) -> tuple[str, ...]:
    """The program at ``tokens[at]`` and the subcommands that follow it ("pip install"), or
    none when the word is English there ("make sure", "go through")."""
    low = tokens[at].lower()
    allowed = PROGRAMS[low]
    follow = tokens[at + 1].lower() if at + 1 < len(tokens) else ""
    if allowed is not None and follow not in allowed:
        return ()
    words = [low]
    for token in tokens[at + 1:at + 3]:
        if token.lower() not in SUBCOMMANDS:
            break
        words.append(token.lower())
    return tuple(words)


def _argument(terms: list[Term], last_command: int | None, token: str,
              after_preposition: bool) -> tuple[bool, bool, bool]:
    """A token after a command in prose: one of its arguments (added to it), a preposition
    before one, or the end of them. Returns (still in its arguments, after a preposition, a
    place taken: a path that is no term of its own)."""
    low = token.lower()
    if last_command is None:
        return False, False, False
    if token.startswith("⟦") or low in PROGRAMS or re.fullmatch(r"--?[A-Za-z][\w-]*", token):
        return not token.startswith("⟦") and low not in PROGRAMS, after_preposition, False
    told = len(terms[last_command].alternatives[0]) > 1  # a subcommand named
    if low in _PREPOSITIONS and not after_preposition:
        return True, True, False
    if low in _NOT_ARGUMENTS or not _ARGUMENT.fullmatch(token) or (
            after_preposition and not _PLACE.fullmatch(token)) or (
            not told and not after_preposition and not _TECHNICAL.search(token)
            and low not in BRANCHES):
        return False, False, False
    old = terms[last_command]
    terms[last_command] = Term("command", old.said + " " + token, old.alternatives, old.flags,
                               old.qualifiers, args=(*old.args, token))
    return True, False, bool(_PLACE.fullmatch(token))


def _add_flag(terms: list[Term], last_command: int | None, token: str) -> None:
    """A flag: the last command's ("git push --force": the program's flag), or one alone."""
    synonyms = tuple(dict.fromkeys((token, *SYNONYMS.get(token, ()))))
    if last_command is not None:
        old = terms[last_command]
        terms[last_command] = Term("command", old.said + " " + token, old.alternatives,
                                   (*old.flags, synonyms), old.qualifiers, args=old.args)
    else:
        terms.append(Term("flag", token, flags=(synonyms,)))


def _flags_to_command(terms: list[Term]) -> list[Term]:
    """Flags named apart from a command go to the last command ("never pass --x to npm
    install")."""
    commands = [n for n, t in enumerate(terms) if t.kind == "command"]
    if commands and any(t.kind == "flag" for t in terms):
        flags = tuple(g for t in terms if t.kind == "flag" for g in t.flags)
        old = terms[commands[-1]]
        terms[commands[-1]] = Term("command", old.said, old.alternatives, old.flags + flags,
                                   old.qualifiers, args=old.args)
        terms = [t for t in terms if t.kind != "flag"]
    return terms


def _concepts(fragment: str, terms: list[Term], qualifiers: tuple[str, ...],
              flags_here: list[str], concepts_alone: bool) -> list[Term]:
    """``terms`` and the concepts (CONCEPTS) the fragment names, each said once."""
    has_program = any(t.kind == "command" for t in terms)
    taken: list[tuple[int, int]] = []  # "force-push" is not also "push"
    for pattern, programs, flags, alone in CONCEPTS:
        match = pattern.search(fragment)
        if match is None or any(a < match.end() and match.start() < b for a, b in taken):
            continue
        taken.append(match.span())
        if pattern.pattern.startswith(r"\bforce"):
            terms.append(_concept(match.group(0), programs, flags, qualifiers))
        elif not has_program and (alone and concepts_alone):
            terms.append(_concept(match.group(0), programs))
        elif not alone and not has_program and (flags_here or qualifiers):
            flag_groups = tuple(tuple(dict.fromkeys((f, *SYNONYMS.get(f, ()))))
                                for f in flags_here)
            terms = [t for t in terms if t.kind != "flag"]
            terms.append(Term("command", match.group(0), tuple(tuple(p.split()) for p in programs),
                              flag_groups, qualifiers))
    return terms


_VERB = re.compile(r"^(?:use|using|run|running|call|calling|import|importing|add|adding|"
                   r"install|installing|depend on|pull in)\s+(?:the\s+)?", re.I)
_NAME = re.compile(r"[a-z][\w.-]*[a-z0-9]")


def name_term(fragment: str, slot: bool) -> Term | None:
    """One bare name a sentence is about: "prefer httpx over requests" (``slot``: a side of a
    contrast), "don't import pandas" (after a verb of using)."""
    text = fragment.strip().rstrip(".!?")
    verb = _VERB.match(text)
    if verb is None and not slot:
        return None
    word = text[verb.end():] if verb else re.sub(r"^(?:the|a|an)\s+", "", text, flags=re.I)
    word = re.split(r"\s+(?:for|in|to|when|with|on|from|here|anymore|again)\b", word)[0].strip()
    if _NAME.fullmatch(word) and word not in _STOP and word not in _NOT_WORDS:
        return Term("name", word, value=word)
    return None


def occasion_terms(fragment: str, spans: list[str]) -> list[Term]:
    """Y of "X before Y": programs, and commit/push/deploy as occasions."""
    terms = [t for t in terms_of(fragment, spans) if t.kind == "command"]
    if terms:
        return terms
    for pattern, programs, _flags, _alone in CONCEPTS:
        match = pattern.search(fragment)
        if match:
            return [_concept(match.group(0), programs)]
    return []


def _plain_programs(terms: list[Term]) -> set[str]:
    """Programs named alone (``uv``, ``pip install``; not ``git push --force``)."""
    return {t.alternatives[0][0] for t in terms
            if t.kind == "command" and len(t.alternatives) == 1 and not t.flags}


def implied(these: list[Term], those: list[Term]) -> list[Term]:
    """The rivals of the grouped programs ``these`` name, in the groups ``those`` name none of
    (a memory that names both sides, "use uv, not pip", says all it means)."""
    mine, theirs = _plain_programs(these), _plain_programs(those)
    out: list[Term] = []
    for group in GROUPS:
        if mine & group and not theirs & group:
            out.extend(Term("command", rival, ((rival,),), implied=True)
                       for rival in sorted(group - mine))
    return out


_SENTENCE = re.compile(r"(?<=[.!?;])\s+|\s+[\u2014\u2013]\s+|\s+-\s+|(?<=\w):\s+|\n+")
_CONTRAST = (
    re.compile(r"\bprefer\s+(?P<do>.+?)\s+(?:over|to|rather than|instead of)\s+(?P<dont>.+)",
               re.I),
    re.compile(r"^instead of\s+(?P<dont>.+?),\s*(?P<do>.+)$", re.I),
    re.compile(r"\b(?:replace|swap)\s+(?P<dont>.+?)\s+(?:with|by|for)\s+(?P<do>.+)", re.I),
    re.compile(r"\b(?:switch(?:ed)?|migrat\w*|mov(?:e|ed)|mov\w*)\s+from\s+(?P<dont>.+?)\s+to\s+"
               r"(?P<do>.+)", re.I),
    re.compile(r"^(?P<do>.+?)(?:,\s*|\s+)(?:not|never|rather than|instead of|and not|but not|"
               r"not ever)\s+(?P<dont>.+)$", re.I),
)
_DEPRECATED = re.compile(r"^(?P<dont>.+?)\s+(?:is|are|was|were|has been|have been)\s+(?:now\s+)?"
                         r"(?:deprecated|retired|obsolete|banned|forbidden|gone|removed|dead|"
                         r"not allowed|no longer (?:used|supported))\b(?:[,;]?\s*(?:so\s+)?"
                         r"(?:use\s+)?(?P<do>.+))?", re.I)
_ORDER = (
    re.compile(r"^(?:never|don'?t|do not)\s+(?P<then>.+?)\s+without\s+(?:first\s+)?"
               r"(?P<first>.+)$", re.I),
    re.compile(r"^(?:only\s+)?(?P<then>.+?)\s+only\s+after\s+(?P<first>.+)$", re.I),
    re.compile(r"^only\s+(?P<then>.+?)\s+(?:after|once)\s+(?P<first>.+)$", re.I),
    re.compile(r"^(?P<first>.+?)\s+(?:before|prior to|ahead of)\s+(?P<then>.+)$", re.I),
)
_AFTER_NEGATION = re.compile(r",\s*(?:but\s+|and\s+)?(?:use|run|prefer|call)\s+(?P<do>.+?)"
                             r"(?:\s+instead)?$", re.I)


def _telling_words(text: str) -> frozenset[str]:
    words = re.findall(r"[a-z][a-z0-9_.-]{2,}", text.lower())
    return frozenset(w.strip(".-") for w in words if w not in _STOP)


_STOP = frozenset(
    "the and for with not never don't dont use using run always avoid that this are was were "
    "you your our their them its into onto from than then instead rather when what which "
    "should must only before after without prefer over all any can will would could also "
    "just make sure keep stop does doing done have has had been being here there".split())


@lru_cache(maxsize=4096)
def rule_of(kind: str, text: str, polarity: str | None, key: str | None) -> Rule:
    """The rule an entry's words make (see the module docstring)."""
    fact = kind == "fact"
    spans: list[str] = []

    def protect(match: re.Match[str]) -> str:
        spans.append(match.group(1))
        return f"⟦{len(spans) - 1}⟧"

    body = _SPAN.sub(protect, text)
    do: list[Term] = []
    dont: list[Term] = []
    first: list[Term] = []
    occasion: list[Term] = []
    for number, sentence in enumerate(_SENTENCE.split(body)):
        sentence = _FILLER.sub("", sentence.strip().rstrip(".!?;"))
        if not sentence:
            continue
        if _ordered(sentence, spans, first, occasion):
            continue
        deprecated = _DEPRECATED.match(sentence)
        if deprecated is not None:
            dont.extend(terms_of(deprecated.group("dont"), spans, fact))
            if deprecated.group("do"):
                do.extend(terms_of(deprecated.group("do"), spans, fact))
            continue
        contrast = next((m for p in _CONTRAST if (m := p.search(sentence))), None)
        if contrast is not None:
            do_part = _NEGATION.sub("", contrast.group("do")).strip()
            these = terms_of(do_part, spans, fact) or _named(do_part, True)
            those = terms_of(contrast.group("dont"), spans, fact) or \
                _named(contrast.group("dont"), True)
            if _NEGATION.match(contrast.group("do")) and not contrast.re.pattern.startswith(
                    r"\bprefer"):
                dont.extend(these + those)  # "never X, not even Y"
            elif these or those:
                do.extend(these)
                dont.extend(those)
            continue
        if _NEGATION.match(sentence):
            rest = _NEGATION.sub("", sentence, count=1)
            positive = _AFTER_NEGATION.search(rest)
            if positive is not None:
                do.extend(terms_of(positive.group("do"), spans, fact))
                rest = rest[:positive.start()]
            dont.extend(terms_of(rest, spans, fact) or _named(rest, False))
        elif _POSITIVE.match(sentence) or polarity != "negative" or number > 0:
            # a negative lesson's later sentences say what to do instead ("…; stage files
            # by name", "…; change the schema and run `make gen`")
            do.extend(terms_of(sentence, spans, fact, concepts_alone=polarity is not None
                               or kind != "fact") or _named(sentence, False))
        else:
            dont.extend(terms_of(sentence, spans, fact))
    dont_implied = implied(do, dont)
    do_implied = implied(dont, do)
    return Rule(tuple(_unique(_any_args(do + do_implied))), tuple(_unique(dont + dont_implied)),
                tuple(_unique(_any_args(first))), tuple(_unique(_any_args(occasion))),
                _telling_words(text))


def _any_args(terms: list[Term]) -> list[Term]:
    """What a memory says to do is done with any arguments (``pytest`` runs the tests that
    "run pytest tests/unit before a commit" means); only what it forbids keeps them."""
    return [replace(t, args=()) if t.args else t for t in terms]


def _named(fragment: str, slot: bool) -> list[Term]:
    term = name_term(fragment, slot)
    return [term] if term is not None else []


def _ordered(sentence: str, spans: list[str], first: list[Term], occasion: list[Term]) -> bool:
    """An "X before Y" sentence: its terms into ``first`` and ``occasion``."""
    for pattern in _ORDER:
        match = pattern.search(sentence)
        if match is None:
            continue
        before = [t for t in terms_of(_POSITIVE.sub("", match.group("first")).strip(), spans)
                  if t.kind == "command"]
        then = occasion_terms(match.group("then"), spans)
        if before and then:
            first.extend(before)
            occasion.extend(then)
            return True
    return False


def _unique(terms: list[Term]) -> list[Term]:
    seen: dict[tuple[object, ...], Term] = {}
    for term in terms:
        seen.setdefault((term.kind, term.alternatives, term.flags, term.value, term.qualifiers,
                         term.args), term)
    return list(seen.values())
