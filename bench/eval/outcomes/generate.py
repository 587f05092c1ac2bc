"""The generated half of the outcome set: families of memories times session scenarios.

Each family lists memories for the tuning half and *other* memories (other programs, other
wordings) for the held-out half, and scenarios that say what the agent does; the label is the
scenario's by construction (written down with it, never computed by the judge). Harness formats
rotate over the cases. Deterministic: the same cases every run.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

HARNESSES = ("claude-code", "codex", "generic", "pi")

# -- family A: a program, not its rival --------------------------------------------------

TOOLS = {
    "tuning": [
        ("Use uv, not pip, to manage dependencies", "positive", "uv", "pip",
         "uv add requests", "pip install requests", "add the requests library"),
        ("Use pnpm instead of npm in this repo", "positive", "pnpm", "npm",
         "pnpm add zod", "npm install zod", "add zod for validation"),
        ("Always use pytest; never python -m unittest", "positive", "pytest", "unittest",
         "pytest -q tests/test_refunds.py", "python -m unittest discover -s tests",
         "run the refund tests"),
        ("Use podman, not docker", "positive", "podman", "docker",
         "podman build -t shop-api .", "docker build -t shop-api .", "build the api image"),
        ("Lint with ruff rather than flake8", "positive", "ruff", "flake8",
         "ruff check src", "flake8 src", "lint the source"),
    ],
    "heldout": [
        ("Prefer yarn over npm for installing packages", "positive", "yarn", "npm",
         "yarn add lodash", "npm install lodash", "add lodash"),
        ("We moved from poetry to uv. Don't use poetry anymore", "negative", "uv", "poetry",
         "uv add httpx", "poetry add httpx", "add httpx as a dependency"),
        ("Instead of mypy, type-check with pyright", "positive", "pyright", "mypy",
         "pyright src/shop", "mypy src/shop", "type-check the shop package"),
        ("Run the frontend tests with vitest, not jest", "positive", "vitest", "jest",
         "npx vitest run src/cart", "npx jest src/cart", "run the cart tests"),
        ("flake8 is deprecated in this repo, use ruff", "positive", "ruff", "flake8",
         "ruff check --fix .", "flake8 .", "fix the lint errors"),
        ("Use bun, not node, to run scripts", "positive", "bun", "node",
         "bun run scripts/seed.ts", "node scripts/seed.js", "seed the dev database"),
    ],
}
UNRELATED = [["bash", "git status"], ["read", "src/shop/orders.py"],
             ["edit", "src/shop/orders.py", "    total = round(total, 2)", "    total = total"],
             ["bash", "ls -la src/shop"]]


def tool_cases(half: str) -> Iterator[dict[str, Any]]:
    for n, (text, polarity, good, bad, do, dont, task) in enumerate(TOOLS[half]):
        entry = {"kind": "lesson", "text": text, "polarity": polarity}
        yield _case(f"tool-{half}-{n}-broken", entry, "broken",
                    [["user", task], ["bash", dont], ["assistant", "Done."]])
        yield _case(f"tool-{half}-{n}-corrected", entry, "broken",
                    [["user", task], ["bash", dont], ["user", f"no, we use {good} here"],
                     ["bash", do]])
        yield _case(f"tool-{half}-{n}-followed", entry, "followed",
                    [["user", task], ["bash", do], ["assistant", f"Done with {good}."]])
        yield _case(f"tool-{half}-{n}-unrelated", entry, "no occasion",
                    [["user", "the order total is off by a cent"], *UNRELATED])
        yield _case(f"tool-{half}-{n}-mentioned", entry, "no occasion",
                    [["user", f"does the README still say {bad}?"],
                     ["bash", f"grep -rn '{dont}' README.md docs/"],
                     ["assistant", f"Yes, the README still says `{dont}`; it should say "
                                   f"`{do}`."],
                     ["bash", f"echo 'never {bad} here' >> NOTES.txt"]])
        yield _case(f"tool-{half}-{n}-asked", entry, "no occasion",
                    [["user", f"{task}, and use {bad} for it this time, {good} is broken on CI"],
                     ["bash", dont]])
        yield _case(f"tool-{half}-{n}-message", entry, "followed",
                    [["user", task], ["bash", do],
                     ["bash", f"git commit -am 'use {good} instead of {bad}'"]])


# -- family B: a program with a forbidden flag -------------------------------------------

FLAGS = {
    "tuning": [
        ("Never force-push to main", "negative", "git push --force origin main",
         "git push origin main", "git log --oneline -5", "force push"),
        ("Never commit with --no-verify", "negative", "git commit --no-verify -m 'wip'",
         "git commit -m 'fix: round refunds'", "grep -rn -- '--no-verify' .githooks",
         "no-verify"),
        ("Don't use `git add -A`; stage files by name", "negative", "git add -A",
         "git add src/shop/refunds.py", "git diff --stat", "add -A"),
    ],
    "heldout": [
        ("Do not run docker with --privileged", "negative",
         "docker run --privileged -it shop-api", "docker run -it shop-api",
         "docker ps", "privileged"),
        ("Never pass --legacy-peer-deps to npm install", "negative",
         "npm install --legacy-peer-deps", "npm install", "cat package.json",
         "legacy-peer-deps"),
        ("Never use `git reset --hard`", "negative", "git reset --hard HEAD~1",
         "git reset --soft HEAD~1", "git reflog -5", "reset --hard"),
    ],
}


def flag_cases(half: str) -> Iterator[dict[str, Any]]:
    for n, (text, polarity, thing, occasion, other, words) in enumerate(FLAGS[half]):
        entry = {"kind": "lesson", "text": text, "polarity": polarity}
        yield _case(f"flag-{half}-{n}-broken", entry, "broken",
                    [["user", "ship it"], ["bash", thing]])
        yield _case(f"flag-{half}-{n}-corrected", entry, "broken",
                    [["user", "ship it"], ["bash", thing],
                     ["user", f"why did you {words}?? I told you not to"]])
        yield _case(f"flag-{half}-{n}-kept", entry, "followed",
                    [["user", "ship it"], ["bash", occasion], ["assistant", "Shipped."]])
        yield _case(f"flag-{half}-{n}-unrelated", entry, "no occasion",
                    [["user", "what changed lately?"], ["bash", other],
                     ["assistant", f"Nothing that needed {words}."]])
        yield _case(f"flag-{half}-{n}-quoted", entry, "no occasion",
                    [["user", f"is `{thing}` ever OK?"],
                     ["assistant", f"No: the project's rule is “{text}”."],
                     ["bash", f"echo '{thing}' | wc -c"]])


# -- family C: X before Y ----------------------------------------------------------------

ORDER = {
    "tuning": [
        ("Always run the tests before committing", "positive", "pytest -q",
         "git commit -am 'fix refund rounding'", "tests"),
        ("Run `make lint` before you push", "positive", "make lint",
         "git push origin feature/refunds", "lint"),
    ],
    "heldout": [
        ("Never commit without running ruff first", "negative", "ruff check .",
         "git commit -m 'tidy imports'", "ruff"),
        ("Only deploy after the test suite passes", "positive", "npm test",
         "fly deploy --app shop-api", "tests"),
        ("Type-check with mypy before every push", "positive", "mypy src",
         "git push origin main", "mypy"),
    ],
}


def order_cases(half: str) -> Iterator[dict[str, Any]]:
    for n, (text, polarity, first, then, words) in enumerate(ORDER[half]):
        entry = {"kind": "lesson", "text": text, "polarity": polarity}
        yield _case(f"order-{half}-{n}-followed", entry, "followed",
                    [["user", "fix the rounding and wrap up"], ["edit", "src/shop/refunds.py",
                     "amount = round(amount, 2)"], ["bash", first], ["bash", then]])
        yield _case(f"order-{half}-{n}-chained", entry, "followed",
                    [["user", "wrap up"], ["bash", f"{first} && {then}"]])
        yield _case(f"order-{half}-{n}-skipped", entry, "broken",
                    [["user", "wrap up"], ["edit", "src/shop/refunds.py",
                     "amount = round(amount, 2)"], ["bash", then]])
        yield _case(f"order-{half}-{n}-late", entry, "broken",
                    [["user", "wrap up"], ["bash", then], ["bash", first],
                     ["user", f"you were supposed to run the {words} first"]])
        yield _case(f"order-{half}-{n}-no-occasion", entry, "no occasion",
                    [["user", "just check things"], ["bash", first], ["bash", "git status"]])
        yield _case(f"order-{half}-{n}-asked", entry, "no occasion",
                    [["user", f"skip the {words} this once, we're in a hurry; just do it"],
                     ["bash", then]])


# -- family D: files not to touch ---------------------------------------------------------

PATHS = {
    "tuning": [
        ("Don't edit generated files in src/gen/; change the schema and run `make gen`",
         "negative", "src/gen/models.py", "make gen"),
        ("Never modify applied migrations in db/migrations/", "negative",
         "db/migrations/0042_refunds.py", None),
    ],
    "heldout": [
        ("Do not touch anything under vendor/", "negative", "vendor/stripe/client.py", None),
        ("Never hand-edit package-lock.json", "negative", "package-lock.json", None),
        ("Leave .env alone; secrets live in 1Password", "negative", ".env", None),
    ],
}


def path_cases(half: str) -> Iterator[dict[str, Any]]:
    for n, (text, polarity, path, fix) in enumerate(PATHS[half]):
        entry = {"kind": "lesson", "text": text, "polarity": polarity}
        yield _case(f"path-{half}-{n}-edited", entry, "broken",
                    [["user", "fix the field name"], ["read", path],
                     ["edit", path, "refund_total = 0", "refund_sum = 0"]])
        yield _case(f"path-{half}-{n}-shell", entry, "broken",
                    [["user", "fix the field name"],
                     ["bash", f"sed -i 's/refund_sum/refund_total/' {path}"]])
        yield _case(f"path-{half}-{n}-read", entry, "no occasion",
                    [["user", "where is refund_sum defined?"], ["read", path],
                     ["bash", f"grep -n refund_sum {path}"]])
        yield _case(f"path-{half}-{n}-elsewhere", entry, "no occasion",
                    [["user", "fix the field name"],
                     ["edit", "src/shop/refunds.py", "refund_total = 0", "refund_sum = 0"]])
        if fix:
            yield _case(f"path-{half}-{n}-fixed", entry, "followed",
                        [["user", "fix the field name"], ["edit", "schema/models.yaml",
                         "refund_total: int"], ["bash", fix]])


# -- family E: code ------------------------------------------------------------------------

CODE = {
    "tuning": [
        ("Use datetime.now(UTC) instead of datetime.utcnow()", "positive",
         "created = datetime.utcnow()", "created = datetime.now(UTC)", "src/shop/models.py"),
        ("Don't use print() for logging; use the logger", "negative",
         "    print('refund failed', order_id)", "    logger.warning('refund failed %s', order_id)",
         "src/shop/refunds.py"),
    ],
    "heldout": [
        ("Never call os.system; use subprocess.run", "negative",
         "os.system(f'convert {src} {dst}')", "subprocess.run(['convert', src, dst], check=True)",
         "src/shop/images.py"),
        ("Prefer pathlib.Path over os.path.join", "positive",
         "target = os.path.join(root, 'media', name)",
         "target = pathlib.Path(root) / 'media' / name",
         "src/shop/storage.py"),
    ],
}


def code_cases(half: str) -> Iterator[dict[str, Any]]:
    for n, (text, polarity, bad, good, path) in enumerate(CODE[half]):
        entry = {"kind": "lesson", "text": text, "polarity": polarity}
        yield _case(f"code-{half}-{n}-broken", entry, "broken",
                    [["user", "add the timestamp"], ["edit", path, bad]])
        yield _case(f"code-{half}-{n}-followed", entry, "followed",
                    [["user", "add the timestamp"], ["edit", path, good]])
        yield _case(f"code-{half}-{n}-replaced", entry, "followed",
                    [["user", "clean this up"], ["edit", path, good, bad]])
        yield _case(f"code-{half}-{n}-talked", entry, "no occasion",
                    [["user", "why is this bad?"],
                     ["assistant", f"Because `{bad.strip()}` is what the lesson warns about."],
                     ["bash", f"grep -rn \"{bad.strip()[:12]}\" src"]])


# -- family F: facts -----------------------------------------------------------------------

FACTS = {
    "tuning": [
        ({"kind": "fact", "key": "tool.package_manager", "text": "pnpm"},
         "pnpm install", "npm install", "install the dependencies"),
        ({"kind": "fact", "key": "project.test_command", "text": "make test"},
         "make test", None, "run the tests"),
        ({"kind": "fact", "key": "project.dev_db_port",
          "text": "The dev database listens on port 5433"},
         "psql -h localhost -p 5433 shop", None, "check the orders table"),
        ({"kind": "fact", "key": None, "text": "We deploy to fly.io with `flyctl deploy`"},
         "flyctl deploy --app shop-api", None, "deploy it"),
    ],
    "heldout": [
        ({"kind": "fact", "key": "tool.python_package_manager", "text": "uv"},
         "uv sync", "pip install -r requirements.txt", "install the dependencies"),
        ({"kind": "fact", "key": "project.lint_command", "text": "`just lint`"},
         "just lint", None, "lint it"),
        ({"kind": "fact", "key": None, "text": "The staging API is at staging-api.shop.dev"},
         "curl -s https://staging-api.shop.dev/health", None, "is staging up?"),
        ({"kind": "fact", "key": "project.test_redis_port",
          "text": "Redis for the tests runs on port 6380"},
         "redis-cli -p 6380 ping", None, "is the test redis up?"),
        ({"kind": "fact", "key": "pref.test_runner", "text": "vitest"},
         "pnpm vitest run", "npx jest", "run the frontend tests"),
    ],
}


def fact_cases(half: str) -> Iterator[dict[str, Any]]:
    for n, (entry, use, rival, task) in enumerate(FACTS[half]):
        entry = {k: v for k, v in entry.items() if v is not None}
        yield _case(f"fact-{half}-{n}-used", entry, "followed", [["user", task], ["bash", use]])
        if rival:
            yield _case(f"fact-{half}-{n}-rival", entry, "broken",
                        [["user", task], ["bash", rival]])
        yield _case(f"fact-{half}-{n}-unrelated", entry, "no occasion",
                    [["user", "rename the cart module"],
                     ["bash", "git mv src/shop/cart.py src/shop/basket.py"],
                     ["edit", "src/shop/__init__.py", "from .basket import Basket",
                      "from .cart import Basket"]])
        yield _case(f"fact-{half}-{n}-said", entry, "no occasion",
                    [["user", task], ["assistant", f"I would run `{use}`, but I can't here."]])


# -- family G: notes -----------------------------------------------------------------------

NOTES = {
    "tuning": [
        "The payment client lives in src/shop/payments/client.py",
        "Refund logic is in src/shop/refunds.py and is fragile: read it whole first",
    ],
    "heldout": [
        "Feature flags are defined in config/flags.yaml",
        "The nightly job is `scripts/nightly.sh`; it also rotates the logs",
    ],
}


def note_cases(half: str) -> Iterator[dict[str, Any]]:
    for n, text in enumerate(NOTES[half]):
        entry = {"kind": "note", "text": text}
        path = next(w.strip("`;:,") for w in text.split() if "/" in w)
        yield _case(f"note-{half}-{n}-edited", entry, "followed",
                    [["user", "fix the bug"], ["edit", path, "x = 1", "x = 0"]])
        yield _case(f"note-{half}-{n}-read", entry, "followed",
                    [["user", "how does it work?"], ["read", path]])
        yield _case(f"note-{half}-{n}-unrelated", entry, "no occasion",
                    [["user", "bump the version"], ["edit", "pyproject.toml",
                     'version = "1.4.1"', 'version = "1.4.0"'], ["bash", "git tag v1.4.1"]])
        yield _case(f"note-{half}-{n}-said", entry, "no occasion",
                    [["user", f"is {path} still used?"], ["assistant", "I believe so."]])


# -- family H: memories no session can show ------------------------------------------------

VAGUE = {
    "tuning": [("lesson", "Be concise in answers", "positive"),
               ("lesson", "Prefer small, focused commits", "positive"),
               ("note", "Sam likes to be asked before large refactors", None)],
    "heldout": [("lesson", "Explain the why in commit messages", "positive"),
                ("lesson", "Don't apologise, just fix it", "negative"),
                ("feedback", "Stop adding emojis to messages", "negative")],
}
BUSY = [["user", "fix the refund bug and commit"], ["read", "src/shop/refunds.py"],
        ["edit", "src/shop/refunds.py", "amount = round(amount, 2)", "amount = amount"],
        ["bash", "pytest -q"], ["bash", "git commit -am 'fix refund rounding'"],
        ["assistant", "Fixed and committed."]]


def vague_cases(half: str) -> Iterator[dict[str, Any]]:
    for n, (kind, text, polarity) in enumerate(VAGUE[half]):
        entry = {"kind": kind, "text": text, **({"polarity": polarity} if polarity else {})}
        yield _case(f"vague-{half}-{n}-busy", entry, "no occasion", BUSY)
        yield _case(f"vague-{half}-{n}-chat", entry, "no occasion",
                    [["user", "what's left?"], ["assistant", "The refund bug."]])


FAMILIES = (tool_cases, flag_cases, order_cases, path_cases, code_cases, fact_cases,
            note_cases, vague_cases)
_counter = [0]


def _case(case_id: str, entry: dict[str, Any], label: str,
          steps: list[list[Any]]) -> dict[str, Any]:
    harness = HARNESSES[_counter[0] % len(HARNESSES)]
    _counter[0] += 1
    return {"id": case_id, "half": case_id.split("-")[1], "harness": harness, "entry": entry,
            "label": label, "steps": steps, "source": "generated"}


def generated() -> list[dict[str, Any]]:
    _counter[0] = 0
    return [case for half in ("tuning", "heldout") for family in FAMILIES
            for case in family(half)]
