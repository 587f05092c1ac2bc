"""Whether two memories say the same thing: the one rule every merge goes by (DESIGN.md
principle 7: no automatic step changes what a memory says).

Vectors find memories worded alike, but a small model places "Deploys are allowed on Fridays"
and "Deploys are forbidden on Fridays" at a cosine of 0.93, "Prefer rebase over merge" and
"Prefer merge over rebase" at 0.98: alike is not the same. So before two memories are one —
a merge by consolidation, an older notebook bullet archived as a repeat, a write refused as a
near duplicate, an extracted lesson counted as a sighting of one already known — their words
are read (:func:`reading`) and compared (:func:`difference`). They say different things when

- one says "don't" and the other does not (``not``, ``never``, ``no``, ``without``, ``n't``,
  ``forbidden``, ``prohibited``, ``banned``, and ``avoid``/``stop`` leading a rule; "allowed"
  is the plain statement): **negation**;
- they name other numbers (digits, and number words read as digits: "two times" is "2
  times", "the first of December" is "1 December"): **number**;
- a word of one stands where the other has another word ("staging" / "production", "Alice"
  / "Bob", "before" / "after", "pnpm" / "npm"): a **substitution**, named by what the
  words are (an antonym, an environment, a quantity, a name, or other wording);
- one has a word the other lacks, unless it is a light word (``run``, ``really``, …,
  :data:`LIGHT`; a general noun after what it names, :data:`ADDABLE`: "main" / "the main
  branch"; a possessive where no word moved: "staging's database" / "the staging
  database"): an **addition** ("the slow tests" is not "the tests");
- the words they share stand in another order around a word they both have ("rebase over
  merge" / "merge over rebase", "Alice reports to Bob" / "Bob reports to Alice"), a "not"
  among them ("tabs, not spaces" / "spaces, not tabs"): **order**.
  Two words that only trade places ("Outline fonts" / "fonts outlined", "the first of
  December" / "December 1st") are the same thing said otherwise;
- their auxiliaries say it holds at other times ("Jenkins *is* our CI server" / "… *was* …",
  "we *will* migrate" / "we *did* migrate"), or one says it held and holds no longer ("Alice
  owns the billing service" / "Alice *used to* own …") or is yet to ("… *will* own …"):
  **tense**. A verb's own ending is not read ("The outage was caused by the DNS provider" /
  "The DNS provider caused the outage" are one), so a text with no auxiliary differs only
  from "used to" and "will";
- their modal verbs say another force ("Tests *must* pass" / "Tests *should* pass" / "Tests
  *may* fail"; "have to" and "need to" are "must"): **mood**. A rule said without one is
  said with any ("Outline fonts before exporting" / "Fonts must be outlined before export").

Words are compared by a light stem (``commits``, ``committing`` → ``commit``; ``linter`` →
``lint``), after a few abbreviations (``repo`` → ``repository``, ``db`` → ``database``,
``prod`` → ``production``) and without stop words, filler (``always``, ``please``,
``every``) and the words that only say it is said again (``again``, ``still``, "once
more": "Used threshold-based black removal again; it ate the dark hair" is the mistake of a
week before, seen once more). That is all: no thesaurus, so "push by hand" and "push
manually" are two memories (a miss costs a second copy; a wrong merge hides what the user
said). Texts that say the same thing have the same :attr:`Reading.key`, which groups the
texts worth comparing.

A difference is a **contradiction** — the same topic, said two incompatible ways, put to a
person rather than merged — when it is a negation of the same words, or the one change
between two otherwise identical statements is an antonym, an order, or a number that is a
quantity ("retry 3 times" / "5 times"; not "module 3" / "module 4", two modules). Numbers that
say which trade places between two things ("session 2 of notebook 1" / "session 1 of notebook
2") in an order that is none: two events, not one said two ways.

:func:`same_thing` is the decision: no difference, and alike by their vectors (cosine ≥ the
near-duplicate threshold) or, for two lessons, by their words (seed 003's Jaccard ≥ 0.7 of
their terms: "Use conventional commits" / "Always use conventional commits").
``bench/bench_meaning.py`` measures it on a labelled set of near pairs
(``bench/near_pairs/pairs.jsonl``).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from memoryd.lessons import LESSON_STOPWORDS, jaccard

#: Seed 003: "Use conventional commits" / "Always use conventional commits" are one lesson.
JACCARD_DUPLICATE = 0.7
#: Lessons this alike by their vectors are compared by their words too.
LESSON_COSINE = 0.75

#: A word, in any script ("café", "ชอบ"), or one character outside ASCII that is no letter,
#: digit or space: a symbol is a word of its own ("build: ✅" / "build: ❌"), punctuation
#: none (:func:`_is_symbol`). The model reads none of them (each is its unknown token, so
#: two texts that differ only there have a cosine of 1.0): the words must.
_WORD = re.compile(r"[^\W_]+(?:[./_][^\W_]+)*(?:'[a-z]+)?|[^\x00-\x7f\w\s]")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}\b)")
_ORDINAL = re.compile(r"^(\d+)(?:st|nd|rd|th)$")
#: A word written with a capital after the first of its sentence: a name ("Ask Alice").
_CAPITALISED = re.compile(r"(?<=[\w,;:)] )[A-Z][\w.]*")

#: Words that say "don't" wherever they stand; ``avoid`` and ``stop`` only leading a rule.
NEGATIONS = frozenset({"not", "never", "no", "nor", "without", "cannot", "dont", "forbidden",
                       "forbid", "prohibited", "prohibit", "banned", "disallowed"})
_LEADING_NEGATIONS = frozenset({"avoid", "stop"})
#: Words a wording varies in without changing what it says (beyond the stop words).
FILLER = frozenset(
    "always please pls just really also every each need needs make sure "
    "remember use uses using used get gets got am being been he she him her hers his "
    "mine ours yours whose whom its there here very actually basically generally ever allow "
    "allows allowed permit permits permitted okay ok fine".split())
#: Words that only say a thing is said again ("Used the threshold again; it ate the dark
#: hair" is a sighting of the same mistake; "once more" and "once again" too, read before
#: "once" is a number).
RESTATING = frozenset({"again", "still", "anew"})
#: The auxiliaries that say when a statement holds, as written (contractions as their verb:
#: "it's" is "is", "won't" "will"), and "used to" (not after "be" or "get": "is used to
#: build" is no tense).
TENSES = {
    "is": "present", "are": "present", "am": "present", "do": "present", "does": "present",
    "has": "present", "have": "present",
    "was": "past", "were": "past", "did": "past", "had": "past", "used to": "past",
    "will": "future",
}
#: Tenses a text without an auxiliary cannot have: "used to" says it holds no longer,
#: "will" that it is yet to (a bare verb's own tense is not read: it may be either other).
MARKED_TENSES = frozenset({"used to", "will"})
_NOT_USED_TO = frozenset({"is", "are", "am", "was", "were", "be", "been", "being", "get",
                          "gets", "got", "getting", "become", "becomes", "became"})
#: The modal verbs as written, by the force they say ("have to" and "need to" as "must").
MOODS = {"must": "must", "shall": "must", "have to": "must", "has to": "must",
         "had to": "must", "need to": "must", "needs to": "must", "should": "should",
         "ought": "should", "may": "may", "might": "may", "can": "may", "could": "may",
         "cannot": "may"}
#: Words one wording may add to another without changing what it says: a verb that only
#: carries the rule ("run the linter" / "lint"), a general noun ("your changes"), an aside
#: ("(I told you)").
LIGHT = frozenset("run running runs do doing done make making have having had keep keeping "
                  "thing things stuff code change changes told tell said say mentioned"
                  .split())
#: General nouns one wording may add after what it names ("main" / "the main branch"); in
#: place of another word they are a difference like any ("the branch" / "the file").
ADDABLE = frozenset("branch file files folder directory command tool step process work"
                    .split())
#: Function words kept to see who does what to whom: "merge the data branch *into* the
#: model branch", or what comes first: "run migrations, *then* deploy". They take part in
#: the order of a text's terms only (:func:`_swapped`); ``by`` marks the passive ("caused by
#: the DNS provider" / "the DNS provider caused").
MARKERS = frozenset("into onto to from than of by then".split())
#: Where a text says "not" among its terms' order: "ruff, never flake8" / "flake8, never ruff"
#: trade two names around it (an order), where "ruff flake8" / "flake8 ruff" only reword.
NEGATION_MARK = "not"
ORDER_MARKS = MARKERS | {NEGATION_MARK}
_ABBREVIATIONS = {
    "repo": "repository", "repos": "repositories", "db": "database", "dbs": "databases",
    "prod": "production", "env": "environment", "envs": "environments", "config": "configuration",
    "configs": "configurations", "docs": "documentation", "doc": "documentation",
    "info": "information", "k8s": "kubernetes", "js": "javascript", "ts": "typescript",
    "pr": "pull request", "prs": "pull requests", "mins": "minutes", "min": "minute",
    "secs": "seconds", "sec": "second", "hrs": "hours", "hr": "hour", "daily": "day",
    "kg": "kilograms", "kilo": "kilogram", "kilos": "kilograms", "km": "kilometres",
    "gb": "gigabytes", "mb": "megabytes", "kb": "kilobytes", "ms": "milliseconds",
}
_NUMBERS = {word: str(value) for value, word in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen twenty".split())}
_NUMBERS.update({"thirty": "30", "forty": "40", "fifty": "50", "sixty": "60", "seventy": "70",
                 "eighty": "80", "ninety": "90", "hundred": "100", "thousand": "1000",
                 "million": "1000000", "dozen": "12", "half": "0.5", "none": "0"})
_ORDINALS = {word: str(value) for value, word in enumerate(
    "zeroth first _ third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth "
    "thirteenth fourteenth fifteenth sixteenth seventeenth eighteenth nineteenth "
    "twentieth".split()) if word != "_"}
_TIMES = {"once": "1", "twice": "2", "thrice": "3"}
#: ``second`` is a number only after these ("the second of May"), else a unit of time.
_BEFORE_SECOND = frozenset({"the", "every", "each"})
_PRONOUNS_IS = frozenset({"it", "that", "there", "what", "here", "he", "she", "who", "let"})
_CONTRACTION_BASE = {"ca": "can", "wo": "will", "sha": "shall"}

#: Words that turn a statement around when one stands for the other.
_OPPOSITES = [
    ("allow", "forbid", "prohibit", "disallow", "ban", "forbidden", "prohibited", "disallowed",
     "banned", "block", "deny"),
    ("enable", "disable"), ("before", "after"), ("start", "end", "stop", "finish"),
    ("begin", "end", "finish"), ("increase", "decrease", "reduce", "lower", "raise"),
    ("add", "remove", "delete", "drop"), ("include", "exclude", "omit"),
    ("accept", "reject", "refuse", "decline"), ("left", "right"), ("upper", "lower"),
    ("newest", "oldest"), ("latest", "earliest"), ("new", "old"), ("first", "last"),
    ("early", "late"), ("public", "private"), ("synchronous", "asynchronous"),
    ("sync", "async"), ("more", "less", "fewer"), ("most", "least", "few", "fewest"),
    ("all", "none", "some", "only", "any"), ("love", "hate", "dislike"), ("like", "dislike"),
    ("on", "off"), ("open", "close", "closed"), ("true", "false"), ("yes", "no"),
    ("push", "pull"), ("min", "max"), ("minimum", "maximum"), ("above", "below"),
    ("over", "under"), ("inside", "outside"), ("internal", "external"), ("up", "down"),
    ("in", "out"), ("import", "export"), ("read", "write"), ("win", "lose"), ("pass", "fail"),
    ("succeed", "fail"), ("high", "low"), ("higher", "lower"), ("big", "small"),
    ("large", "small"), ("long", "short"), ("fast", "slow"), ("strict", "lenient", "loose"),
    ("safe", "unsafe"), ("valid", "invalid"), ("support", "unsupported"), ("with", "without"),
    ("supports", "lacks"), ("mandatory", "optional"), ("required", "optional"),
    ("encrypt", "decrypt"), ("compress", "decompress"), ("lock", "unlock"),
    ("show", "hide"), ("always", "never"), ("local", "remote"), ("online", "offline"),
    ("ascending", "descending"), ("top", "bottom"), ("light", "dark"), ("cheap", "expensive"),
    ("busy", "quiet"), ("busiest", "quietest"),
]
#: What a number counts when it is a quantity (see :func:`_quantity`).
UNITS = frozenset(
    "times time x percent % lines line spaces space characters chars pixels px seconds second "
    "minutes minute hours hour days day weeks week months month years year retries retry "
    "attempts attempt requests request items bytes kilobytes megabytes gigabytes milliseconds "
    "kilograms kilometres workers threads replicas columns tabs digits words pages".split())
_UNIT_SUFFIX = re.compile(r"^\d+(?:\.\d+)?(?:x|am|pm|ms|s|h|d|k|m|gb|mb|kb|px|%)$")
ENVIRONMENTS = frozenset(
    "production staging development dev test testing qa uat local sandbox preview demo "
    "canary beta alpha ci live".split())
QUANTITIES = frozenset(
    "all only some most many few fewer more less least none any several both either neither "
    "every each half whole entire single multiple majority minority".split())

#: Suffixes a light stem strips (the longest that leaves a root of 3+ letters; once).
_SUFFIXES = ("ations", "ation", "ments", "ment", "ings", "ing", "ers", "er", "ies", "ied",
             "ed", "es", "ly", "s", "e")


def _stem(word: str) -> str:
    """A word's light stem: ``commits``, ``committing``, ``committed`` → ``commit``;
    ``merging``, ``merge`` → ``merg``; ``linter`` → ``lint``. Names with digits, dots or
    slashes are kept whole."""
    if len(word) <= 3 or not word.isalpha():
        return word
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            if suffix == "s" and word.endswith(("ss", "us", "is")):
                continue
            root = word[:-len(suffix)]
            if suffix in ("ies", "ied"):
                root += "y"
            elif len(root) >= 4 and root[-1] == root[-2] and root[-1] not in "lsz" \
                    and root[-1] not in "aeiou":
                root = root[:-1]  # committ → commit, shipp → ship
            return root
    return word


_STEMMED_OPPOSITES: dict[str, set[str]] = {}
for _group in _OPPOSITES:
    _stems = {_stem(w) for w in _group}
    for _word in _stems:
        _STEMMED_OPPOSITES.setdefault(_word, set()).update(_stems - {_word})
_ENVIRONMENT_STEMS = frozenset(_stem(w) for w in ENVIRONMENTS)
_QUANTITY_STEMS = frozenset(_stem(w) for w in QUANTITIES)
#: LIGHT and ADDABLE as terms (stems), as :func:`difference` meets them.
LIGHT_TERMS = frozenset(_stem(w) for w in LIGHT) | LIGHT
ADDABLE_TERMS = frozenset(_stem(w) for w in ADDABLE) | ADDABLE
#: The modal verbs and auxiliaries are no terms: :func:`difference` reads a mood and a tense.
_DROPPED = LESSON_STOPWORDS | FILLER | RESTATING | frozenset(
    word for word in (*MOODS, *TENSES) if " " not in word and word not in LIGHT)
#: A contraction's verb ("it's", "we're", "I'll", "we've", "I'm"): a tense ("'d" is "had"
#: or "would": none).
_CONTRACTED_VERBS = {"s": "is", "re": "are", "ll": "will", "ve": "have", "m": "am"}
_POSSESSIVE = "'s"


@dataclass(frozen=True)
class Reading:
    """A text as :func:`difference` compares it: its terms in order (stems, numbers as
    digits, without stop words, filler and negations), whether it says "don't", and the
    words as written that some terms came from (to name them in an explanation)."""

    terms: tuple[str, ...]
    negative: bool
    written: tuple[tuple[str, str], ...] = ()
    names: frozenset[str] = frozenset()  # terms written with a capital inside a sentence
    order: tuple[str, ...] = ()  # the terms with the MARKERS and NEGATION_MARKs, in order
    #: its auxiliaries and "used to" as written (:data:`TENSES`), and its modal verbs
    #: (:data:`MOODS`): what :func:`difference` reads a tense and a mood by
    tenses: tuple[str, ...] = ()
    moods: tuple[str, ...] = ()

    @property
    def times(self) -> frozenset[str]:
        return frozenset(TENSES[word] for word in self.tenses)

    @property
    def forces(self) -> frozenset[str]:
        return frozenset(MOODS[word] for word in self.moods)

    @property
    def term_set(self) -> frozenset[str]:
        return frozenset(self.terms)

    @property
    def key(self) -> tuple[bool, frozenset[str]]:
        """What two texts that say the same thing have in common: whether they say "don't",
        and their terms but the light words, the general nouns and a possessive (the only
        words :func:`difference` lets one have and the other not). Texts with another key
        say different things: a key groups the texts worth comparing."""
        return self.negative, self.term_set - LIGHT_TERMS - ADDABLE_TERMS - {_POSSESSIVE}

    def numbers(self) -> Counter[str]:
        return Counter(t for t in self.terms if _is_number(t))

    def shown(self, term: str) -> str:
        return dict(self.written).get(term, term)


@dataclass(frozen=True)
class Difference:
    """Why two texts say different things: what differs (``negation``, ``number``,
    ``antonym``, ``environment``, ``quantity``, ``name``, ``wording``, ``addition``,
    ``order``, ``tense``, ``mood``), the words on each side, and whether it is a
    contradiction (see the module's docstring)."""

    what: str
    first: tuple[str, ...]
    second: tuple[str, ...]
    contradiction: bool

    def why(self) -> str:
        """The difference in words, for a reply, a report or a change's why."""
        a, b = ", ".join(self.first) or "-", ", ".join(self.second) or "-"
        if self.what == "negation":
            return "a \"do\" and a \"don't\" about the same thing"
        if self.what == "order":
            return f"the same words in another order: {a} / {b}"
        if self.what == "addition":
            return f"one says more ({', '.join(self.first or self.second)})"
        return f"{self.what}: {a} / {b}"


def _is_number(term: str) -> bool:
    """A number, a time, a version or a size: a term that starts with a digit ("3", "2x",
    "9am", "3.8"); "flake8" and "s3" are names."""
    return term[:1].isdigit()


def _tokens(raw: str) -> list[str]:
    """The words of a lower-cased text (:data:`_WORD`), a symbol that says something among
    them (✅, ❌, 🟢, ★: Unicode's "other symbol"); not a dash, a quotation mark or an
    ellipsis, which are how a text is typed."""
    import unicodedata

    return [word for word in _WORD.findall(raw)
            if len(word) > 1 or word.isalnum() or unicodedata.category(word) == "So"]


def reading(text: str) -> Reading:
    """What :func:`difference` compares of a text (see :class:`Reading`)."""
    capitals = {match.group().lower() for match in _CAPITALISED.finditer(text)}
    raw = _THOUSANDS.sub("", text.lower().replace("\u2019", "'"))
    raw = raw.replace("&", " and ").replace("-", " ")
    words = [part for word in _tokens(raw) for part in _uncontracted(word)]
    terms: list[str] = []
    order: list[str] = []
    written: list[tuple[str, str]] = []
    negative = False
    for number, word in enumerate(words):
        if _once_more(words, number):
            continue
        if word == "cannot":
            words_here = ["can", "not"]
        elif word in _ABBREVIATIONS:
            words_here = _ABBREVIATIONS[word].split()
        elif word in _TIMES:
            words_here = [_TIMES[word], "times"]
        else:
            words_here = [word]
        for part in words_here:
            if part in NEGATIONS or (part in _LEADING_NEGATIONS and not terms
                                     and not negative):
                negative = not negative
                order.append(NEGATION_MARK)
                continue
            if part in MARKERS:
                order.append(part)
                continue
            term = _term(part, words[number - 1] if number else "")
            if term is None:
                continue
            terms.append(term)
            order.append(term)
            if term != word:
                written.append((term, word))
    names = frozenset(term for term, word in [*written, *((t, t) for t in terms)]
                      if word in capitals)
    tenses, moods = _auxiliaries(words)
    return Reading(tuple(terms), negative, tuple(written), names, tuple(order), tenses, moods)


def _uncontracted(word: str) -> list[str]:
    """A word, a contraction as its words: "don't" → do, not; "Alice's" → alice, 's; "it's"
    → it, is ("they'd", "let's": their first word)."""
    if "'" not in word:
        return [word]
    base, _, tail = word.partition("'")
    if tail == "t" and base.endswith("n"):  # don't, can't, doesn't
        stem = base[:-1]
        return [_CONTRACTION_BASE.get(stem, stem), "not"]
    if tail == "s" and base not in _PRONOUNS_IS:
        return [base, _POSSESSIVE]
    if tail in _CONTRACTED_VERBS and base != "let":
        return [base, _CONTRACTED_VERBS[tail]]  # it's, we're, I'll: a stop word, a tense
    return [base]


def _once_more(words: Sequence[str], at: int) -> bool:
    """Whether a word is of a "once more" or "once again": said again, no number."""
    if words[at] == "once":
        return words[at + 1:at + 2] in (["more"], ["again"])
    return words[at] == "more" and at > 0 and words[at - 1] == "once"


def _auxiliaries(words: Sequence[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """A text's auxiliaries that say a tense and its modal verbs, as written (see
    :data:`TENSES`, :data:`MOODS`)."""
    tenses: list[str] = []
    moods: list[str] = []
    for at, word in enumerate(words):
        after = words[at + 1] if at + 1 < len(words) else ""
        if word == "used" and after == "to" and (not at or words[at - 1] not in _NOT_USED_TO):
            tenses.append("used to")
            continue
        if after == "to" and f"{word} to" in MOODS:
            moods.append(f"{word} to")
        elif word in MOODS:
            moods.append(word)
        if word in TENSES:
            tenses.append(word)
    return tuple(tenses), tuple(moods)


def _term(word: str, before: str) -> str | None:
    """A word's term (None: a word the comparison leaves out)."""
    if word in _NUMBERS:
        return _NUMBERS[word]
    if word in _ORDINALS:
        return _ORDINALS[word]
    if word == "second" and before in _BEFORE_SECOND:
        return "2"
    ordinal = _ORDINAL.match(word)
    if ordinal:
        return ordinal.group(1)
    if word == _POSSESSIVE:
        return word
    if word in _DROPPED:
        return None
    stem = _stem(word)
    return None if stem in FILLER else stem


def difference(first: str | Reading, second: str | Reading) -> Difference | None:
    """Why two texts say different things, or None when their words say the same (see the
    module's docstring). Symmetric up to the order of the sides."""
    a = first if isinstance(first, Reading) else reading(first)
    b = second if isinstance(second, Reading) else reading(second)
    set_a, set_b = a.term_set, b.term_set
    if a.negative != b.negative:
        return Difference("negation", (), (), jaccard(set_a, set_b) >= JACCARD_DUPLICATE)
    only_a, only_b = set_a - set_b, set_b - set_a
    if a.numbers() != b.numbers():
        numbers_a = sorted(t for t in only_a if _is_number(t))
        numbers_b = sorted(t for t in only_b if _is_number(t))
        if not numbers_a and not numbers_b:  # the same numbers, another count of them
            numbers_a = sorted(t for t in set_a if _is_number(t))
            numbers_b = sorted(t for t in set_b if _is_number(t))
        return Difference("number", tuple(a.shown(t) for t in numbers_a),
                          tuple(b.shown(t) for t in numbers_b),
                          len(only_a) == len(only_b) == 1 and _ordered_alike(a, b)
                          and _quantity(a, next(iter(only_a))))
    if only_a and only_b and (only_a | only_b) - LIGHT_TERMS:
        what = _substitution(only_a, only_b, a, b)
        one_for_one = len(only_a) == len(only_b) == 1 and _ordered_alike(a, b)
        return Difference(what, tuple(sorted(a.shown(t) for t in only_a)),
                          tuple(sorted(b.shown(t) for t in only_b)),
                          one_for_one and what == "antonym")
    added = (only_a or only_b) - LIGHT_TERMS - ADDABLE_TERMS
    if added == {_POSSESSIVE} and _ordered_alike(a, b):
        added = frozenset()  # "Staging's database" / "the staging database": nobody moved
    if added:
        side = a if only_a else b
        shown = tuple(sorted(side.shown(t) for t in added))
        return Difference("addition", shown if only_a else (), () if only_a else shown, False)
    swapped = _swapped(a.order, b.order)
    if swapped is not None:
        shown = (a.shown(swapped[0]), a.shown(swapped[1]))
        return Difference("order", shown, tuple(reversed(shown)),
                          not _identifiers(a, b, swapped))
    if _other_times(a, b):
        return Difference("tense", _distinct(a.tenses), _distinct(b.tenses), False)
    if a.forces and b.forces and a.forces != b.forces:
        return Difference("mood", _distinct(a.moods), _distinct(b.moods), False)
    return None


def _other_times(a: Reading, b: Reading) -> bool:
    """Whether two texts' auxiliaries say their statement holds at other times: both say a
    tense, not the same; or one says none and the other "used to" or "will" (see the
    module's docstring)."""
    times_a, times_b = a.times, b.times
    if times_a and times_b:
        return times_a != times_b
    return bool(MARKED_TENSES.intersection(a.tenses or b.tenses))


def _distinct(words: Sequence[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(words))


def _identifiers(a: Reading, b: Reading, swapped: tuple[str, str]) -> bool:
    """Whether two terms that trade places are numbers that say which of two different
    things, not how much, in both texts ("session 2 of notebook 1" / "session 1 of notebook
    2", "issue 12 in module 3" / "issue 3 in module 12"): two events, neither wrong — as
    "module 3" / "module 4" is no contradiction. Still one: numbers that are quantities
    ("retry 3 times, wait 5 seconds" / "retry 5 times, wait 3 seconds"), and two of the same
    thing in another relation ("release 2 replaced release 1" / "release 1 replaced release
    2", as "Alice reports to Bob")."""
    first, second = swapped
    if not all(_is_number(term) and not _quantity(a, term) and not _quantity(b, term)
               for term in swapped):
        return False
    labels = (_label(a, first), _label(a, second))
    return None not in labels and labels[0] != labels[1]


def _label(reading: Reading, number: str) -> str | None:
    """The word a number names one of: the word right before it ("session 2"), else the
    one right after it ("the 2nd session"); None without one (a marker or a number there)."""
    order = reading.order
    at = order.index(number)
    for near in (at - 1, at + 1):
        if 0 <= near < len(order) and order[near] not in ORDER_MARKS \
                and not _is_number(order[near]):
            return order[near]
    return None


def _substitution(only_a: frozenset[str], only_b: frozenset[str], a: Reading,
                  b: Reading) -> str:
    """What kind of words stand for each other: an antonym, an environment, a quantity, a
    name (or a path), or other wording."""
    if any(_STEMMED_OPPOSITES.get(t, set()) & only_b for t in only_a):
        return "antonym"
    both = only_a | only_b
    if both & _ENVIRONMENT_STEMS:
        return "environment"
    if both & _QUANTITY_STEMS:
        return "quantity"
    if any(not t.isalpha() for t in both) or both & (a.names | b.names):
        return "name"
    return "wording"


def _quantity(reading: Reading, term: str) -> bool:
    """Whether a number of a text is how much of something ("3 times", "40 lines", "2x",
    "9am"), not which one ("module 3", "release 2.3", "Postgres 16"): one value for another
    of the same quantity contradicts, another module or release does not."""
    if _UNIT_SUFFIX.match(term):
        return True
    order = reading.order
    at = order.index(term) if term in order else -1
    # the unit as written: "12 worked on" and "3 requested" stem to a unit's stem ("workers",
    # "requests") and are no quantity
    return 0 <= at < len(order) - 1 and reading.shown(order[at + 1]) in UNITS


def _ordered_alike(a: Reading, b: Reading) -> bool:
    """Whether the terms the two share stand in the same order (one change between two
    otherwise identical statements)."""
    shared = a.term_set & b.term_set
    return [t for t in a.terms if t in shared] == [t for t in b.terms if t in shared]


def _swapped(a: Sequence[str], b: Sequence[str]) -> tuple[str, str] | None:
    """Two terms that trade places around a third both texts hold between them ("rebase
    over merge" / "merge over rebase", "the data branch into the model branch"); None when
    the shared terms only moved as blocks or two neighbours traded places. Terms that occur
    more than once in either are left out. When one text is passive ("caused by the DNS
    provider") and the other is not, it is the other way round: the same order says
    another thing, and terms that trade places say the same."""
    count_a, count_b = Counter(a), Counter(b)
    where_a = {t: i for i, t in enumerate(a) if count_a[t] == 1 and count_b[t] == 1}
    where_b = {t: i for i, t in enumerate(b) if t in where_a}
    terms = [t for t in where_a if t in where_b]
    found: tuple[str, str] | None = None
    for i, x in enumerate(terms):
        for y in terms[i + 1:]:
            if where_b[x] > where_b[y] and x not in ORDER_MARKS and y not in ORDER_MARKS:
                if found is None:
                    found = (x, y)
                if ("by" in a) == ("by" in b) and any(
                        where_a[x] < where_a[z] < where_a[y]
                        and where_b[y] < where_b[z] < where_b[x] for z in terms):
                    return x, y
    if ("by" in a) != ("by" in b):
        content = [t for t in terms if t not in ORDER_MARKS]
        if found is None and len(content) >= 2:
            return content[0], content[-1]
    return None


def same_thing(first: str | Reading, second: str | Reading, cosine: float, threshold: float,
               lesson: bool) -> bool:
    """Whether two memories are one (see the module's docstring): no difference in what
    they say, and alike by their vectors (``cosine`` ≥ ``threshold``) or, two lessons, by
    their words (Jaccard ≥ JACCARD_DUPLICATE of their terms)."""
    a = first if isinstance(first, Reading) else reading(first)
    b = second if isinstance(second, Reading) else reading(second)
    if difference(a, b) is not None:
        return False
    return cosine >= threshold or (lesson and term_jaccard(a, b) >= JACCARD_DUPLICATE)


def term_jaccard(a: Reading, b: Reading) -> float:
    """The overlap of two readings' terms, light words aside (0 when either has none)."""
    set_a, set_b = a.term_set - LIGHT_TERMS, b.term_set - LIGHT_TERMS
    return jaccard(set_a, set_b) if set_a and set_b else 0.0
