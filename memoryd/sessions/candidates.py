"""Lessons and facts from a finished session (seed 003), as pure functions.

No daemon, no database, no model: the candidates a session's genuine user messages hold.
What becomes of them — the negative list, duplicates, one decision each, which is what
``memory extract SESSION --dry-run`` shows — is :mod:`memoryd.sessions.decisions`.

The deterministic extractor (:func:`find_candidates`)
    Only the user's own prose is read. Fenced code blocks (an unclosed fence runs to the end),
    ``>`` quoted lines, indented code, and lines that look pasted from a terminal or a log are
    dropped first (:mod:`memoryd.sessions.prose`: tracebacks and stack frames, timestamped or
    ``INFO``/``ERROR`` log lines, ``SomeError:`` lines, pytest ``E`` lines, shell and REPL
    prompts, diff lines, and lines that are mostly symbols). Each remaining line is split into
    sentences (``.``, ``!``, ``?``, ``;``, except after ``e.g.``, ``i.e.``, ``etc.``, ``vs.``).
    A sentence that chains two rules ("always run ruff and never commit with --no-verify") is
    split at the ``and``/``but``. Questions are skipped. Matching is case-insensitive.

    Before a pattern is tried, filler is trimmed: ``please``, ``btw``, ``also``, ``so``,
    ``ok``, ``important:``, ``from now on``, ``going forward``, ``in general``, … at the start,
    and ``please``, ``thanks``, ``ok`` at the end. A leading circumstance ("When deploying, never
    …", "In Python, always …") is kept in the text. A subject is dropped: ``we``, ``let's``,
    ``we should``, ``you should``/``must``/``need to``, ``make sure to``, ``I want you to``.
    A bare ``you`` is not a subject ("you never run the tests" is a complaint, not a rule).

    The patterns (:attr:`Candidate.rule` names them):

    ============  =========================================  ================================
    rule          the user says                              candidate
    ============  =========================================  ================================
    never         never X                                    lesson, negative, "Never X."
    dont          don't X, do not X, I don't want you to X   lesson, negative, "Don't X."
    avoid         avoid X                                    lesson, negative, "Avoid X."
    stop          stop X-ing                                 lesson, negative, "Stop X-ing."
    always        always X                                   lesson, positive, "Always X."
    prefer        I prefer X (over|to|rather than) Y         lesson, positive, "Prefer X over Y."
                                                             (said as "I prefer": personal)
    use-not       (we) use X, not Y / X instead of Y         lesson, positive, "Use X, not Y."
    remember      remember that X, keep in mind X, note      lesson, positive, "X." (or what the
                  that X, fyi: X, don't forget that X        inner sentence matches); a fact
                                                             "X." when X states how things are
                                                             ("staging is Postgres 16")
    contrast      we/I <verb> X, never/not Y                 lesson, positive, "<Verb> X, never Y."
                                                             (said as "I …": personal)
    we-use        we use X / I use X (X a known name)        fact
    my-x-is       my editor/shell/timezone/os/name is X      fact (pref.*, user.*)
    call-me       call me X                                  fact user.name
    written-in    our project/codebase/app is in X           fact project.language
    ============  =========================================  ================================

    ``prefer``, ``use-not`` and ``always use X`` also give a fact when X starts with a name in
    :data:`KNOWN_NAMES` (``ruff`` → ``tool.linter``, ``tabs`` → ``pref.indentation``,
    ``conventional commits`` → ``pref.commit_style``, ``Python`` → ``project.language``, …);
    the fact's text is that name, as the user wrote it. ``we-use`` gives only that fact ("we use
    pytest" alone is not a correction). A fact's text is its value; its key is dotted.

    A rule must say something: after ``don't``/``never``/``always`` at least two words that are
    not stop words or ``this``/``that``/``it`` ("don't do that", "never touch it" are reactions
    to the moment, not rules); after ``avoid``/``stop``/``prefer`` at least one; ``remember``
    needs two. ``don't`` followed by worry, bother, know, think, have, … and past tenses after
    ``never`` ("we never got it working") are not rules. Rules longer than
    :data:`MAX_RULE_CHARS` are not taken, and sentences longer than :data:`MAX_SENTENCE_CHARS`
    are not read (this keeps the cost linear in the message's length).

Categories (:func:`category_of`): the first row of :data:`CATEGORY_KEYWORDS` with a keyword in
the text (and key) wins, else ``general``. A fact from :data:`KNOWN_NAMES` takes the category
listed there; other facts fall back on their key's namespace (``user`` → ``user``,
``project`` → ``project``, ``tool`` → ``tooling``).

    =============  ============================================================================
    category       keywords (whole words)
    =============  ============================================================================
    testing        test(s), testing, pytest, unittest, jest, mock(s), mocking, fixture(s), tdd,…
    git            git, commit(s/ting), push, force-push, branch, merge, rebase, PR, cherry-pick
    database       db, database, sql, sqlite, postgres, mysql, migration(s), schema, query
    deploy         deploy(ment), release, staging, production, prod, rollout, rollback
    security       secret(s), password(s), credential(s), api key, access token, .env, ssh key
    style          tabs, spaces, indentation, naming, formatting, docstring(s), comment(s), …
    tooling        linter, lint, ruff, flake8, black, mypy, eslint, editor, vim, npm, pip, uv,…
    communication  explain, summary, verbose, concise, emoji, tone, answer, reply, question, …
    general        (nothing above matched)
    =============  ============================================================================

The negative list, duplicates and sessions: :mod:`memoryd.sessions.decisions`.

The optional LLM extractor (:mod:`memoryd.sessions.llm_extractor`) gives candidates too; they
go through the same decisions (:mod:`memoryd.sessions.decisions`: the negative list, duplicates,
:func:`~memoryd.sessions.decisions.decide`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from memoryd.lessons import LESSON_STOPWORDS, words
from memoryd.sessions.prose import prose_lines, sentences

EXTRACTED_CONFIDENCE = 0.8
MAX_RULE_CHARS = 300
MAX_SENTENCE_CHARS = 1_000

KINDS = ("lesson", "fact")
POLARITIES = ("negative", "positive")


@dataclass(frozen=True)
class Message:
    """One genuine user message of a session."""

    message_id: str
    session_id: str
    text: str
    timestamp: float | None = None


@dataclass(frozen=True)
class Candidate:
    """An entry an extractor proposes, with provenance to its session and message."""

    kind: str  # 'lesson' | 'fact'
    text: str  # the rule, or the fact's value
    polarity: str | None  # lessons: 'negative' | 'positive'; facts: None
    category: str  # kebab-case topic
    key: str | None  # facts: dotted key; lessons: None
    message_id: str  # "" when an LLM named no known message
    session_id: str
    rule: str  # the pattern that produced it, or 'llm'
    personal: bool = False  # the user's own preference ("I prefer …"): for every project


# -- words --------------------------------------------------------------------------------

_DEICTIC = frozenset(  # words that point at the moment and carry no rule
    "this that it these those them here there thing things stuff one again ever anymore now "
    "more really".split()
)


def _content_count(text: str) -> int:
    return sum(1 for w in words(text) if w not in LESSON_STOPWORDS and w not in _DEICTIC)


# -- the deterministic extractor -------------------------------------------------------------

_SPACES = re.compile(r"\s+")

_LEAD_FILLER = re.compile(
    r"^(?:please|pls|plz|btw|by the way|also|and|but|so|oh|ok(?:ay)?|hey|hi|yes|no|"
    r"just|actually|again|one more thing|important(?=\s*:)|from now on|going forward|"
    r"in (?:the )?future|in general|as a rule|generally|for the record)\b[\s,:;!-]*",
    re.I,
)
_TRAIL_FILLER = re.compile(
    r"[\s,;:-]*\b(?:please|pls|plz|thanks|thank you|thx|ty|ok(?:ay)?|btw|going forward|"
    r"from now on|too|as well)\s*[.!]*$",
    re.I,
)
_REMEMBER = re.compile(
    r"^(?:remember|keep in mind|bear in mind|note|reminder|don't forget|do not forget|"
    r"for (?:future )?reference|fyi)(?:\s+that\b|\s*[:,-])\s*(?P<body>.+)$",
    re.I,
)
_CLAUSE = re.compile(
    r"^(?P<clause>(?:when|whenever|while|during|before|after|in|on|for|if|unless|with|outside|"
    r"inside)\b[^,]{1,80}),\s*(?P<rest>.+)$",
    re.I,
)
_SUBJECT = re.compile(
    r"^(?:(?:you|u)\s+(?:really\s+)?(?:should|must|need to|have to|ought to|shall)\s+"
    r"|we\s+(?:really\s+)?(?:(?:should|must|need to|have to|ought to|shall)\s+)?"
    r"|let's\s+|let us\s+"
    r"|i\s+(?:want|need|would like|'d like)\s+you\s+to\s+"
    r"|make sure(?:\s+(?:to|that you|you))?\s+|be sure to\s+|remember to\s+|try to\s+)",
    re.I,
)
_I_NEGATIVE = re.compile(
    r"^i\s+(?:(?:really\s+)?(?:don't|do not)\s+want\s+(?:you\s+)?to|don't like it when you"
    r"|never want (?:you\s+)?to)\s+(?P<body>.+)$",
    re.I,
)
_I_PREFER = re.compile(
    r"^(?:i|we)(?:'d|\s+would)?(?:\s+(?:really|much|strongly|generally|usually|always))*"
    r"\s+(?=prefer\b)",
    re.I,
)
#: "I prefer …" (not "we prefer …", a team's convention): the user's own preference
_MY_PREFERENCE = re.compile(r"^i\b(?!')|^i'd\b", re.I)
_LESSON_RULES = (
    ("never", "negative", "Never", re.compile(r"^never\s+(?P<body>.+)$", re.I), 2),
    ("dont", "negative", "Don't", re.compile(r"^(?:don't|dont|do not)\s+(?P<body>.+)$", re.I), 2),
    ("avoid", "negative", "Avoid", re.compile(r"^avoid\s+(?P<body>.+)$", re.I), 1),
    ("stop", "negative", "Stop", re.compile(r"^stop\s+(?P<body>\w+ing\b.*)$", re.I), 1),
    ("always", "positive", "Always", re.compile(r"^always\s+(?P<body>.+)$", re.I), 2),
)
_USE_NOT = re.compile(
    r"^(?:always\s+|only\s+)?use\s+(?P<x>.+?),?\s+(?:not|instead of|rather than)\s+(?P<y>.+)$",
    re.I,
)
_PREFER = re.compile(r"^prefer\s+(?P<body>.+)$", re.I)
#: A sentence that states how things are rather than what to do
_STATEMENT = re.compile(r"\b(?:is|are|was|were|has|have|lives|runs|belongs|means|uses|owns)\b",
                        re.I)
#: "we deploy with fly.io, never with Heroku": what we do, and what we do not
_VERB_CONTRAST = re.compile(
    r"^(?:we|i|let's|let us)\s+(?:always\s+|only\s+|usually\s+)?(?P<verb>[a-z]+)\s+"
    r"(?P<x>[^,;]+?),?\s+(?P<neg>never|not|instead of|rather than)\s+"
    r"(?P<y>[^,;]+)$", re.I)
_NOT_CONTRAST_VERBS = frozenset(
    "are is was were be been am have has had do does did can could will would should might may "
    "must got get need want like think know say said mean".split())
#: Where a second clause starts: "use uv instead of pip, we don't use pip anymore"
_CLAUSE_END = re.compile(r",\s+|\s+(?:because|since|as|so that|we|i)\s+", re.I)
_CONTRAST = re.compile(r",|\b(?:not|instead of|rather than)\b", re.I)
_PREFER_SPLIT = re.compile(r"\s+(?:over|rather than|instead of|to)\s+", re.I)
_WE_USE = re.compile(r"^(?:we|i)\s+(?:mostly\s+|only\s+|always\s+)?use\s+(?P<x>.+)$", re.I)
_MY_X_IS = re.compile(
    r"^my\s+(?P<what>editor|shell|time ?zone|os|operating system|terminal|name)\s+is\s+"
    r"(?P<value>[^,;]+)",
    re.I,
)
_CALL_ME = re.compile(r"^call me\s+(?P<value>[^,;]+)", re.I)
_WRITTEN_IN = re.compile(
    r"^(?:our|the)\s+(?:project|codebase|code|repo|app|backend|frontend|service)\s+is\s+"
    r"(?:(?:mostly|all|entirely)\s+)?(?:written\s+)?in\s+(?P<value>.+)$",
    re.I,
)
_CHAIN = re.compile(
    r",?\s+(?:and|but|also|plus)\s+(?=(?:(?:you|we)\s+(?:should\s+|must\s+)?)?"
    r"(?:never|always|don't|do not|avoid|prefer)\b)",
    re.I,
)
_NOT_RULE_VERBS = frozenset(
    "worry bother forget know think have mind hesitate panic understand care see seem get "
    "really even believe recall remember".split()
)
_PAST_TENSE = frozenset("got had did was were went saw made found knew thought said".split())
_NOT_PAST = frozenset("need feed seed speed proceed exceed embed shed bed".split())
_MY_X_KEYS = {
    "editor": "pref.editor", "shell": "pref.shell", "timezone": "user.timezone",
    "time zone": "user.timezone", "os": "pref.os", "operating system": "pref.os",
    "terminal": "pref.terminal", "name": "user.name",
}

_NAMES = (
    ("tool.linter", "tooling", "ruff, flake8, pylint, eslint, golangci-lint, rubocop, clippy, "
                               "shellcheck"),
    ("tool.formatter", "tooling", "black, prettier, autopep8, yapf, gofmt, rustfmt"),
    ("tool.type_checker", "tooling", "mypy, pyright, pyre"),
    ("tool.test_runner", "testing", "pytest, unittest, nose, jest, vitest, mocha, rspec"),
    ("tool.package_manager", "tooling", "pip, uv, poetry, pipenv, conda, pdm, npm, yarn, pnpm, "
                                        "bun"),
    ("pref.editor", "tooling", "vim, neovim, nvim, emacs, vscode, vs code, helix, zed, sublime, "
                               "nano, pycharm, intellij"),
    ("pref.shell", "tooling", "bash, zsh, fish"),
    ("pref.indentation", "style", "tabs, spaces, 2 spaces, 4 spaces, two spaces, four spaces"),
    ("pref.commit_style", "git", "conventional commits"),
    ("pref.merge_strategy", "git", "rebase, squash, squash merges, squash-merge, merge commits"),
    ("project.language", "project", "python, rust, go, golang, typescript, javascript, java, "
                                    "kotlin, ruby, swift, c#, c++, elixir, scala, php"),
    ("project.framework", "project", "django, flask, fastapi, react, vue, svelte, rails, spring"),
    ("project.database", "database", "postgres, postgresql, mysql, sqlite, mongodb"),
)
KNOWN_NAMES: dict[str, tuple[str, str]] = {
    name: (key, category) for key, category, names in _NAMES for name in names.split(", ")
}
"""A name the user may choose (lower case) → (fact key, category)."""


@dataclass(frozen=True)
class _Hit:
    rule: str
    kind: str
    polarity: str | None
    text: str
    key: str | None = None
    category: str | None = None
    personal: bool = False


def find_candidates(messages: Sequence[Message]) -> list[Candidate]:
    """The deterministic extractor: lessons and facts in the users' own words, in order."""
    out: list[Candidate] = []
    for message in messages:
        for line in prose_lines(message.text):
            for sentence in sentences(line):
                for hit in _sentence_hits(sentence):
                    out.append(Candidate(
                        kind=hit.kind, text=hit.text, polarity=hit.polarity,
                        category=hit.category or category_of(hit.text, hit.key),
                        key=hit.key, message_id=message.message_id,
                        session_id=message.session_id, rule=hit.rule, personal=hit.personal,
                    ))
    return out


def _sentence_hits(sentence: str) -> list[_Hit]:
    """Split a chained sentence ("always X and never Y") when its first part is a rule.

    Sentences longer than MAX_SENTENCE_CHARS are skipped before any pattern runs: no rule is
    that long, and it keeps the cost linear in the message's length. A sentence that states no
    rule is read again from after its first colon ("I said it before: never …")."""
    if len(sentence) > MAX_SENTENCE_CHARS:
        return []
    sentence = _SPACES.sub(" ", sentence)
    parts = _CHAIN.split(sentence)
    if len(parts) > 1:
        first = _match(parts[0])
        if first:
            return first + [hit for part in parts[1:] for hit in _match(part)]
    hits = _match(sentence)
    if not hits and ": " in sentence:  # "I said it before: never force-push to main"
        hits = _match(sentence.split(": ", 1)[1])
    return hits


def _trim(text: str) -> str:
    """Without filler at either end (trailing filler is looked for in the last 40 characters
    only, so long runs of punctuation cost nothing)."""
    text = text.replace("\u2019", "'").strip()
    while True:
        trimmed = _LEAD_FILLER.sub("", text, count=1)
        tail = _TRAIL_FILLER.search(trimmed, max(0, len(trimmed) - 40))
        if tail:
            trimmed = trimmed[:tail.start()]
        trimmed = trimmed.strip().strip(",;:- ")
        if trimmed == text:
            return text
        text = trimmed


def _match(sentence: str) -> list[_Hit]:
    """The entries one sentence states; [] for questions and anything else."""
    s = _trim(sentence)
    if not s or s.endswith("?"):
        return []
    s = _trim(s.rstrip(".!;: "))
    if not s or len(s) > MAX_RULE_CHARS:
        return []
    m = _REMEMBER.match(s)
    if m:
        body = m["body"].strip()
        inner = _match(body)
        if inner:
            return inner
        if _content_count(body) < 2:
            return []
        if _STATEMENT.search(body):  # "remember that staging is Postgres 16": a fact, no rule
            return [_Hit("remember", "fact", None, sentence_case(body))]
        return [_Hit("remember", "lesson", "positive", sentence_case(body))]
    fact = _identity_fact(s)
    if fact:
        return [fact]
    clause, rest = "", s
    m = _CLAUSE.match(s)
    if m:
        clause, rest = m["clause"].strip() + ", ", m["rest"]
    return _lesson(clause, rest)


def _lesson(clause: str, rest: str) -> list[_Hit]:
    m = _I_NEGATIVE.match(rest)
    if m:
        rest = "don't " + m["body"]
    m = _WE_USE.match(rest)
    if m and not clause and not _CONTRAST.search(m["x"]):
        return _known_fact("we-use", m["x"], whole=True)
    contrast = _VERB_CONTRAST.match(rest)
    mine = bool(_I_PREFER.match(rest) and _MY_PREFERENCE.match(rest))
    rest = _SUBJECT.sub("", _I_PREFER.sub("", rest), count=1)
    for rule, polarity, word, pattern, minimum in _LESSON_RULES:
        m = pattern.match(rest)
        if not m:
            continue
        body = m["body"].strip()
        if rule == "always" and _USE_NOT.match(body):
            return _use_not(clause, body)
        first = words(body)[0] if words(body) else ""
        if rule in ("dont", "never") and (first in _NOT_RULE_VERBS or _is_past(first)):
            return []
        if _content_count(body) < minimum:
            return []
        text = sentence_case(f"{clause}{word.lower() if clause else word} {body}")
        hits = [_Hit(rule, "lesson", polarity, text)]
        use = re.match(r"use\s+(?P<x>.+)$", body, re.I)
        if rule == "always" and use:
            hits += _known_fact(rule, use["x"])
        return hits
    if _USE_NOT.match(rest):
        return _use_not(clause, rest)
    m = _PREFER.match(rest)
    if m:
        hits = _prefer(clause, m["body"].strip())
        return [replace(hit, personal=True) for hit in hits] if mine else hits
    m = contrast
    if m and m["verb"].lower() not in _NOT_CONTRAST_VERBS and not _is_past(m["verb"].lower()):
        x, y = value_of(m["x"]), value_of(m["y"])
        if x and y and len(x.split()) <= 8 and len(y.split()) <= 6:
            text = sentence_case(f"{clause}{m['verb'].lower() if clause else m['verb']} "
                                  f"{x}, {m['neg'].lower()} {y}")
            named = re.sub(r"^(?:with|using|on|in|via|through|to)\s+", "", x, flags=re.I)
            hits = [_Hit("contrast", "lesson", "positive", text)] + _known_fact("contrast", named)
            # "I write commits in English, never in French": the user's own way, as "I
            # prefer" is (not "we …", a team's)
            return [replace(hit, personal=True) for hit in hits] \
                if _MY_PREFERENCE.match(rest) else hits
    return []


def _use_not(clause: str, text: str) -> list[_Hit]:
    m = _USE_NOT.match(text)
    if not m:
        return []
    x, y = value_of(m["x"]), value_of(_CLAUSE_END.split(m["y"], maxsplit=1)[0])
    if not x or not y or len(x.split()) > 8 or len(y.split()) > 8:
        return []
    text_out = sentence_case(f"{clause}{'use' if clause else 'Use'} {x}, not {y}")
    return [_Hit("use-not", "lesson", "positive", text_out)] + _known_fact("use-not", x)


def _prefer(clause: str, body: str) -> list[_Hit]:
    if body.lower().startswith("to "):
        x, y = body, None
    else:
        parts = _PREFER_SPLIT.split(body, maxsplit=1)
        x, y = parts[0], parts[1] if len(parts) > 1 else None
    x = value_of(x)
    y = value_of(y) if y else None
    if not x or _content_count(x) < 1:
        return []
    text = f"{clause}{'Prefer' if not clause else 'prefer'} {x}" + (f" over {y}" if y else "")
    return [_Hit("prefer", "lesson", "positive", sentence_case(text))] + _known_fact("prefer", x)


def _identity_fact(s: str) -> _Hit | None:
    m = _MY_X_IS.match(s)
    if m:
        what = re.sub(r"\s+", " ", m["what"].lower())
        value = value_of(m["value"])
        if not value or len(value.split()) > 6 or (what == "name" and not value[0].isupper()):
            return None
        key = _MY_X_KEYS[what]
        return _Hit("my-x-is", "fact", None, value, key, _fact_category(value, key))
    m = _CALL_ME.match(s)
    if m:
        value = value_of(m["value"])
        if value and value[0].isupper() and len(value.split()) <= 3:
            return _Hit("call-me", "fact", None, value, "user.name", "user")
        return None
    m = _WRITTEN_IN.match(s)
    if m:
        name = _known_prefix(value_of(m["value"]))
        if name and KNOWN_NAMES[name[1]][0] == "project.language":
            return _Hit("written-in", "fact", None, name[0], "project.language", "project")
    return None


def _known_fact(rule: str, x: str, whole: bool = False) -> list[_Hit]:
    """A fact when ``x`` starts with a known name (or, with ``whole``, is one)."""
    found = _known_prefix(value_of(x))
    if not found or whole and len(value_of(x).split()) > len(found[0].split()) + 2:
        return []
    key, category = KNOWN_NAMES[found[1]]
    return [_Hit(rule, "fact", None, found[0], key, category)]


def _known_prefix(value: str) -> tuple[str, str] | None:
    """(the name as written, its KNOWN_NAMES entry) for the longest known name ``value`` starts
    with; a leading "the" is skipped."""
    tokens = value.split()
    if tokens and tokens[0].lower() == "the":
        tokens = tokens[1:]
    for n in (3, 2, 1):
        if len(tokens) >= n:
            written = " ".join(tokens[:n]).strip(".,;:!")
            if written.lower() in KNOWN_NAMES:
                return written, written.lower()
    return None


def value_of(text: str) -> str:
    """A named thing as written, without backticks, double quotes and trailing punctuation;
    a single quote only when it is unpaired ("like 'Add X'" keeps both)."""
    text = re.sub(r"[`\"]", "", text.replace("\u2019", "'")).strip()
    text = re.sub(r"\s+", " ", text).strip(" .,;:!")
    if text.count("'") % 2:
        text = text.strip("'")
    return text


def _is_past(word: str) -> bool:
    return word in _PAST_TENSE or word.endswith("ed") and word not in _NOT_PAST


def sentence_case(text: str) -> str:
    text = re.sub(r"\s+", " ", text).strip().rstrip(".!;:, ")
    return text[:1].upper() + text[1:] + "."


def _fact_category(value: str, key: str) -> str:
    known = KNOWN_NAMES.get(value.lower())
    if known and known[0] == key:
        return known[1]
    return category_of(value, key)


# -- categories -------------------------------------------------------------------------------

CATEGORY_KEYWORDS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (name, re.compile(r"(?<![\w-])(?:" + alternatives + r")(?![\w-])", re.I))
    for name, alternatives in (
        ("testing", r"tests?|testing|tested|pytest|unittest|jest|vitest|mocks?|mocking|mocked|"
                    r"fixtures?|coverage|tdd|e2e|unit-tests?"),
        ("git", r"git|commits?|committing|committed|push|pushes|pushing|force-push(?:ing|es)?|"
                r"force push|pull requests?|prs?|branch(?:es)?|merg(?:e|es|ed|ing)|"
                r"rebas(?:e|es|ed|ing)|cherry-pick|stash|main branch"),
        ("database", r"db|dbs|databases?|sql|sqlite|postgres(?:ql)?|mysql|mongodb|"
                     r"migrations?|schemas?|quer(?:y|ies)"),
        ("deploy", r"deploy(?:s|ed|ing|ments?)?|releases?|releasing|staging|production|prod|"
                   r"rollouts?|rollbacks?|roll back"),
        ("security", r"secrets?|passwords?|credentials?|api[ -]keys?|access tokens?|"
                     r"api tokens?|\.env|ssh keys?|sudo"),
        ("style", r"tabs|spaces|indent(?:ation|s)?|naming|format(?:ting|ted)?|docstrings?|"
                  r"comments?|line length|camelcase|snake_case|type hints?|quotes|f-strings?|"
                  r"semicolons?|trailing commas?"),
        ("tooling", r"lint(?:er|ers|ing)?|ruff|flake8|pylint|black|mypy|pyright|eslint|"
                    r"prettier|editor|vim|neovim|emacs|vs ?code|ide|npm|yarn|pnpm|pip|uv|"
                    r"poetry|docker|makefile|ci|shell|bash|zsh|cli|tooling"),
        ("communication", r"explain|explanations?|summar(?:y|ies|ize|ise)|verbose|concise|"
                          r"brief|emojis?|tone|answers?|repl(?:y|ies)|ask|asking|questions?|"
                          r"respond|responses?|tell me|bullet points?|apologi[sz](?:e|ing)"),
    )
)
_KEY_CATEGORIES = {"user": "user", "project": "project", "tool": "tooling"}


def category_of(text: str, key: str | None = None) -> str:
    """The first category of :data:`CATEGORY_KEYWORDS` with a keyword in the text or key."""
    haystack = f"{text} {key.replace('.', ' ').replace('_', ' ')}" if key else text
    for name, pattern in CATEGORY_KEYWORDS:
        if pattern.search(haystack):
            return name
    if key:
        return _KEY_CATEGORIES.get(key.split(".", 1)[0], "general")
    return "general"
