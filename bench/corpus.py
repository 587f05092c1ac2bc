"""A deterministic generator of realistic short agent memories and search queries.

Texts are composed from templates × vocabulary lists with a seeded ``random.Random``: the
kind of thing a coding / design / ops agent stores (preferences, "Don't …" lessons, facts about
tools, projects and people, rejected design concepts, deployment gotchas, debugging notes,
decisions, commands, config locations, performance numbers, feedback). Every template draws
several independent slots, so two entries of one agent and category rarely say nearly the same
thing (memoryd rejects cosine ≥ 0.92 within an agent and category as a near duplicate).

    corpus = Corpus(seed=7)
    entries = corpus.entries(10_000)
    # [{"agent", "category", "text", "kind", and maybe "tags", "key", "project"}, ...]
    queries = corpus.queries(300)      # distinct natural-language questions
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from typing import Any

# -- who writes -------------------------------------------------------------------------------

#: (agent, weight): skewed, as in a real install where one coding agent writes most memories.
AGENTS = [
    ("claude-code", 34), ("designer", 17), ("reviewer", 13), ("ops-bot", 11),
    ("researcher", 9), ("planner", 7), ("tester", 5), ("scribe", 4),
]

# -- vocabulary -------------------------------------------------------------------------------

PROJECTS = [
    "atlas", "billing-api", "sticker-studio", "harbor", "quill", "lumen-web", "orchid",
    "pathfinder", "relay", "snowcap", "tessera", "ember-cli", "northwind", "gazette", "kiln",
    "marigold", "payroll-sync", "vantage", "driftwood", "cobalt-mobile", "fieldnotes", "juniper",
]
SERVICES = [
    "auth service", "search indexer", "payments worker", "thumbnail renderer",
    "notification fan-out", "export job", "webhook relay", "session store", "rate limiter",
    "feature-flag service", "audit logger", "image CDN", "billing reconciler", "email sender",
    "report builder", "GraphQL gateway", "sync daemon", "ingest pipeline", "invoice generator",
    "presence tracker", "media transcoder", "scheduler", "geo lookup", "admin console backend",
]
ENVS = [
    "staging", "production", "the eu-west cluster", "the canary pool", "the preview environments",
    "the on-prem install at the hospital customer", "the CI runners", "the load-test cluster",
    "the demo tenant", "us-east-2", "the ARM build hosts", "developer laptops",
]
TOOLS = [
    "pytest", "ruff", "mypy", "Docker", "kubectl", "Terraform", "Postgres", "Redis", "nginx",
    "systemd", "git", "uv", "poetry", "webpack", "Vite", "ESLint", "Prettier", "Jest",
    "Playwright", "Helm", "Ansible", "GitHub Actions", "Sentry", "Grafana", "Prometheus",
    "SQLite", "ffmpeg", "ImageMagick", "Celery", "RabbitMQ", "Kafka", "pnpm", "cargo", "clippy",
    "black", "pre-commit", "tmux", "jq", "Figma", "Storybook", "Alembic", "gunicorn", "Caddy",
]
TOOL_QUIRKS = [
    "needs --no-cache to pick up a changed config",
    "is pinned because the next minor release breaks our plugin",
    "runs about {n} times faster with its cache on tmpfs",
    "must be started through the Makefile so the environment variables are set",
    "prints a misleading permission error when the socket directory is missing",
    "reads its settings from pyproject.toml and ignores setup.cfg",
    "hangs forever without a TTY unless you pass the batch flag",
    "leaks file descriptors when the watch mode runs for more than a day",
    "has to be upgraded together with its lockfile or the checksum step fails",
    "resolves symlinks differently on macOS, so paths in snapshots differ",
    "chokes on files larger than {n} MB and needs the streaming option",
    "defaults to UTC in containers but to local time on laptops",
    "silently ignores unknown keys in its config file",
    "uses a global cache in the home directory that CI must persist between jobs",
    "exits 0 even when some checks were skipped, so grep the summary line",
    "changed its default output format in the last major version",
    "is only installed in the dev container, not on the bare runners",
    "needs an explicit timeout because the default waits for {n} minutes",
]
NAMES = [
    "Maya", "Jonas", "Priya", "Tomás", "Aiko", "Dmitri", "Fatima", "Lena", "Oskar", "Rahul",
    "Sofia", "Wen", "Kwame", "Ingrid", "Mateo", "Nadia", "Ezra", "Hana", "Luca", "Zoe",
    "Amara", "Bjorn", "Chloe", "Diego",
]
ROLES = [
    "tech lead", "product manager", "staff designer", "SRE on call this quarter",
    "security reviewer", "data engineer", "frontend lead", "QA owner", "release manager",
    "founder", "contractor from the agency", "new backend hire", "support lead", "CTO",
]
PERSON_FACTS = [
    "reviews every schema change personally",
    "works from {tz}, so ask before noon our time",
    "wants a heads-up before anything touches the {service}",
    "prefers written async updates over meetings",
    "knows the history of the {service} better than anyone",
    "is on leave until the end of {month}",
    "approves all spending on cloud resources above {n} dollars",
    "hates emoji in commit messages",
    "asked to be tagged on every incident involving {env}",
    "wrote the original {service} and still owns its runbook",
    "is the only one with admin rights on the {tool} account",
    "likes mockups delivered as {format} rather than links",
    "needs release notes a day before each launch",
    "is allergic to long standups and will leave after fifteen minutes",
]
TIMEZONES = ["Tokyo", "Berlin", "São Paulo", "Nairobi", "Toronto", "Auckland", "Lisbon", "Seoul",
             "Pacific time", "Bangalore"]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December"]
FORMATS = ["PNG exports", "a PDF deck", "a Loom video", "Figma frames", "SVG files",
           "a one-page brief"]

PREFERENCE_PAIRS = [
    ("squash merges", "merge commits"),
    ("short imperative commit subjects", "long descriptive commit messages"),
    ("dataclasses", "plain dicts"), ("British spelling", "American spelling"),
    ("snake_case JSON keys", "camelCase keys"),
    ("small focused pull requests", "large batched pull requests"),
    ("pytest fixtures", "unittest setUp methods"), ("Markdown tables", "bullet lists"),
    ("dark mode mockups", "light mode mockups"), ("explicit type hints", "inferred types"),
    ("server-side rendering", "a client-only SPA"), ("tabs in Makefiles only", "tabs everywhere"),
    ("ISO dates", "US-style dates"), ("one sentence per line in docs", "wrapped paragraphs"),
    ("flat module layouts", "deep package hierarchies"), ("early returns", "nested conditionals"),
    ("plain SQL", "an ORM"), ("pastel palettes", "saturated primaries"),
    ("rounded corners", "sharp corners"), ("serif headings", "sans-serif headings"),
    ("feature flags", "long-lived branches"), ("structured JSON logs", "free-form log lines"),
    ("rebasing onto main", "merging main into branches"),
    ("English variable names", "abbreviations"),
]
ARTIFACTS = [
    "commit messages", "code reviews", "API responses", "release notes", "design mockups",
    "error messages", "test names", "database migrations", "changelog entries", "shell scripts",
    "config files", "status updates", "dashboards", "log lines", "docstrings", "CLI output",
    "onboarding docs", "sticker packs", "landing pages", "incident reports", "sprint summaries",
]
PREFERENCE_REASONS = [
    "because it keeps the history readable", "since the auditors read them",
    "after the confusion in the {month} release", "because reviewers on mobile struggle otherwise",
    "as the client's brand guide demands", "since it matches the rest of {project}",
    "because screen readers handle it better", "to keep diffs small",
    "because the support team copies them into tickets", "after {name} complained twice",
]

BAD_ACTIONS = [
    "run migrations during peak hours", "force-push to main",
    "bump the framework and the lockfile in one PR",
    "mock the database in integration tests", "cache auth tokens in localStorage",
    "rely on the default HTTP client timeout", "log full request bodies",
    "trust the file extension of uploads", "delete a feature flag before the rollout finishes",
    "rename a public API field without a deprecation window",
    "restart the workers while a backfill runs",
    "use floats for money", "ship a migration together with the code that needs it",
    "skip the smoke test on staging", "edit generated client code by hand",
    "pin a Docker image to the latest tag", "parse timestamps without a time zone",
    "retry non-idempotent POST requests", "share one database user between services",
    "run the test suite against the shared dev database",
    "commit .env files, even examples with real keys",
    "change the sticker outline width without re-exporting the whole pack",
    "resize raster logos instead of asking for the vector source",
    "answer the customer before the fix is actually deployed",
    "assume the CSV exports are UTF-8", "merge on a Friday evening",
    "disable the linter to get a build green",
]
CONSEQUENCES = [
    "it locked the orders table for {n} minutes last time",
    "the read replicas fell behind and users saw stale data",
    "the tests passed against behaviour the real database does not have",
    "customers briefly saw each other's avatars",
    "the on-call engineer spent a night rolling it back",
    "the nightly export silently dropped rows",
    "a timeout of several minutes froze the checkout page",
    "the audit log ended up full of card numbers",
    "someone uploaded an HTML file renamed to .png",
    "mobile clients older than two releases crashed on launch",
    "invoices were off by a cent in {n} percent of cases",
    "the rollout stalled halfway and nobody noticed for hours",
    "reports were shifted by one day for users east of UTC",
    "duplicate charges went out to a handful of customers",
    "the printed stickers came back with blurry edges",
    "the regenerated code overwrote the fix the next morning",
    "the security scanner flagged the repository and blocked releases",
    "we had to rotate every credential in the vault",
]
PRECAUTIONS = [
    "a backup taken in the last hour", "a second reviewer", "checking the queue depth first",
    "a dry run on staging", "telling the support channel", "a feature flag to turn it off",
    "reading the changelog of every bumped package", "the load-test numbers",
]

PROJECT_FACTS = [
    "stores uploads in a bucket per tenant with a {n}-day lifecycle rule",
    "uses Postgres {v} with logical replication to the warehouse",
    "has its real entry point in {path}, not in main.py",
    "builds with {tool} and deploys through GitHub Actions",
    "is owned by {name}'s team until the reorg settles",
    "still depends on the legacy {service} for login",
    "targets Python 3.{minor} because of the base image used on {env}",
    "keeps its feature flags in a YAML file reviewed by product",
    "has no staging database; tests use a throwaway container",
    "sends all transactional mail through the {service}",
    "publishes a nightly build that the sales team demos from",
    "runs its cron jobs on a single VM that nobody has rebooted in a year",
    "has a monorepo layout with the web app under apps/web",
    "shares its design tokens with {project2} through a private npm package",
    "was forked from {project2} two years ago and has diverged a lot",
    "exposes metrics on port {port} for Prometheus",
    "needs a license key from {name} to run the PDF renderer locally",
    "serves about {n} thousand requests per minute at peak",
    "runs its database migrations from a separate release job on {env}",
    "has flaky end-to-end tests that {name} is slowly rewriting",
    "keeps secrets in the vault under a path named after the team, not the repo",
    "vendors a patched copy of {tool} under third_party/",
    "cannot be built offline because {tool} downloads plugins at build time",
    "logs to stdout only; the {service} ships the logs",
    "uses {project2}'s auth tokens, so a change there breaks its login",
    "pins every dependency and gets weekly update PRs from a bot",
    "has an on-call rotation shared with {project2}",
    "generates its API docs from docstrings on every merge to main",
    "still reads a legacy INI file on {env}",
    "is scheduled to be merged into {project2} by {month}",
]
PROJECT_FOLLOWUPS = [
    "keep that in mind when touching {path}", "ask {name} before changing it",
    "new hires trip over this every time", "it is documented nowhere else",
    "the README is out of date about it", "expect it to change after the {month} migration",
    "the CI config depends on it", "it explains most of the odd code in {path}",
    "the {service} team relies on it", "nobody remembers why, but do not change it",
]
PATHS = [
    "src/app/server.py", "cmd/api/main.go", "packages/core/index.ts", "app/entry.py",
    "bin/start", "services/web/wsgi.py", "lib/bootstrap.rb", "src/main.rs", "backend/asgi.py",
]

DESIGN_CONCEPTS = [
    "floating speech bubble", "gradient mascot badge", "hand-drawn border", "neon outline",
    "die-cut rounded sticker shape", "pixel-art avatar", "animated confetti burst",
    "skeuomorphic paper texture", "glassmorphism card", "monochrome line icon set",
    "oversized serif headline", "diagonal split layout", "testimonial carousel",
    "hamburger menu on desktop", "bottom sheet for settings", "infinite scroll feed",
    "emoji reaction bar", "isometric illustration", "full-bleed hero video", "retro CRT filter",
    "sticky chat widget", "watercolor background wash", "3D clay-style mascot",
    "dotted grid pattern",
]
SURFACES = [
    "cat sticker pack", "onboarding screen", "pricing page", "settings panel", "empty state",
    "checkout flow", "app icon", "release announcement", "dashboard header", "404 page",
    "mobile tab bar", "weekly email digest", "holiday campaign", "team page", "invoice PDF",
]
CLIENTS = [
    "the bakery client", "the fintech startup", "the museum shop", "the school district",
    "the pet food brand", "the indie game studio", "the city council", "the coffee chain",
    "the yoga studio", "our own marketing team", "the crypto exchange", "the children's hospital",
]
REJECTION_REASONS = [
    "the client said it looked too busy", "it failed the contrast check",
    "it clashed with the brand palette", "users missed the primary action in testing",
    "it did not survive scaling down to 16 pixels", "legal flagged the mascot likeness",
    "it lost to the control in the A/B test", "it was too expensive to print at that size",
    "it felt dated next to the competitors", "engineering estimated two extra sprints",
    "it broke the layout in right-to-left languages", "the stakeholders found it childish",
    "it hurt load time on low-end Android phones", "it hid the price until the last step",
]

GOTCHAS = [
    "needs the secrets synced first or the pods crash-loop",
    "silently skips migrations when an image tag is reused",
    "drops websocket connections for about {n} seconds",
    "requires a manual purge of the CDN cache afterwards",
    "fails the health check while the warm-up job is still running",
    "needs the old and new versions to share a schema for one release",
    "breaks if the DNS change has not propagated yet",
    "resets the rate-limit counters, so expect a burst of traffic",
    "takes {n} minutes because the image is rebuilt without the layer cache",
    "must happen before the mobile release or old apps get 404s",
    "leaves orphaned cron entries unless the old release is uninstalled",
    "requires the maintenance banner to be switched on by hand",
]
WORKAROUNDS = [
    "run the secrets sync script before the rollout",
    "bump the tag even for config-only changes",
    "announce it in the ops channel and deploy after six in the evening",
    "purge with the ops script rather than the dashboard",
    "raise the readiness probe delay to {n} seconds",
    "deploy the schema change one release ahead",
    "lower the TTL a day before",
    "scale the workers up first and back down after an hour",
    "warm the build cache on the runner beforehand",
    "coordinate the date with the mobile release manager",
    "check the crontab on the old host afterwards",
]

SYMPTOMS = [
    "flaky login test", "memory leak in the worker", "502s right after deploys", "duplicate emails",
    "slow dashboard load", "off-by-one in pagination", "time zone drift in reports",
    "missing thumbnails", "random logouts on Safari", "stuck export jobs", "wrong currency symbol",
    "garbled umlauts in CSV downloads", "high CPU on the search indexer", "failing nightly backup",
    "blurry sticker exports", "dropped webhook deliveries",
]
CAUSES = [
    "a race between the cache warm-up and the first request",
    "an unbounded dict used as a cache", "the load balancer keeping idle connections too long",
    "a retry loop without an idempotency key", "an N+1 query in the serializer",
    "using the page number instead of an offset", "naive datetimes in the aggregation job",
    "a worker running an outdated image", "a cookie with SameSite=None missing the Secure flag",
    "a deadlock between two advisory locks", "the locale falling back to en_US on the server",
    "Excel expecting a byte-order mark", "regex backtracking on long inputs",
    "the backup volume filling up", "exporting at 72 dpi instead of 300",
    "the receiver answering slower than our {n}-second timeout",
]
FIXES = [
    "the fix was to await the warm-up before serving",
    "an LRU with a size cap solved it",
    "aligning the keep-alive timeouts fixed it",
    "we added idempotency keys to every retry",
    "prefetching the related rows brought it back under {n} ms",
    "switching to keyset pagination fixed it",
    "storing everything as UTC fixed the drift",
    "pinning the image digest in the deployment fixed it",
    "setting the cookie flags explicitly fixed it",
    "taking the locks in a fixed order fixed it",
    "writing the BOM for CSV downloads fixed it",
    "a possessive pattern removed the backtracking",
    "a retention policy on old backups fixed it",
    "exporting at 300 dpi fixed it",
    "raising the timeout and adding a queue fixed it",
]

DECISIONS = [
    "move the job queue to {tool}", "drop support for Internet Explorer mode",
    "keep the monorepo for another year", "adopt trunk-based development",
    "write new services in Go", "stop hand-editing the OpenAPI spec and generate it",
    "freeze the public API until the partner launch", "replace the homegrown auth with OIDC",
    "archive the old admin panel", "use Postgres full-text search instead of Elasticsearch",
    "require design review for every new screen", "run the test suite in parallel on CI",
    "bill annually by default", "ship the sticker packs as vector files only",
    "deprecate the v1 webhooks by {month}", "host the docs on the main domain",
]
DECISION_REASONS = [
    "it saves roughly {n} hours of maintenance a month", "the team is too small for two stacks",
    "the partner contract requires it", "the incident review recommended it",
    "the costs doubled last quarter", "nobody understood the old setup",
    "it unblocks the {project} migration", "customers kept asking for it",
]

COMMANDS = [
    ("reset the local database", "make db-reset && make seed"),
    ("regenerate the API client", "pnpm run codegen"),
    ("run only the fast tests", "pytest -m 'not slow' -x"),
    ("tail production logs", "kubectl logs -f deploy/{slug} -n prod"),
    ("rebuild the sticker previews", "python scripts/render_previews.py --dpi 300"),
    ("bump the version", "uv run bump-my-version patch"),
    ("open a shell on staging", "ssh bastion -t 'sudo -iu deploy'"),
    ("check the migration plan", "alembic upgrade head --sql | less"),
    ("profile a slow endpoint", "py-spy record -o profile.svg --pid $(pgrep -f gunicorn)"),
    ("clear the CDN cache", "./ops/purge.sh --all"),
    ("update the snapshots", "npx jest -u"),
    ("find large files in the repo", "git rev-list --objects --all | git cat-file --batch-check"),
    ("restart the worker cleanly", "systemctl --user restart {slug}-worker"),
    ("lint only changed files", "pre-commit run --from-ref origin/main --to-ref HEAD"),
    ("seed a demo tenant", "python manage.py seed_demo --tenant {slug}-demo"),
    ("dump the production schema", "pg_dump --schema-only -h replica.internal {slug} > schema.sql"),
    ("run the end-to-end tests headed", "npx playwright test --headed --project=chromium"),
    ("re-run a failed CI job", "gh run rerun --failed"),
    ("inspect the job queue", "celery -A {slug} inspect active"),
    ("rotate the local TLS certificates", "mkcert -install && make certs"),
    ("build the release image",
     "docker buildx build --platform linux/amd64,linux/arm64 -t {slug}:rc ."),
    ("check which flags are on", "curl -s localhost:4242/flags | jq '.[] | select(.on)'"),
    ("export the sticker sheet", "inkscape sheet.svg --export-type=pdf --export-dpi=300"),
    ("compare two releases", "git log --oneline v{v}.0..v{v}.1"),
    ("vacuum the local SQLite file", "sqlite3 data/{slug}.db 'VACUUM'"),
    ("run the type checker strictly", "mypy --strict src/{slug}"),
]
SITUATIONS = [
    "when the seed data is stale", "after switching branches", "before opening a PR",
    "if CI reports schema drift", "when the previews look blurry", "during an incident",
    "after a dependency bump", "when onboarding a new teammate", "before a release candidate",
    "if the dev server refuses to start", "when a customer reports missing data",
    "after rebasing onto main", "once a week", "before a demo",
]
COMMAND_NOTES = [
    "", "", " (it needs the VPN)", " from the repository root", " inside the dev container",
    "; it takes a couple of minutes", " and never with sudo", " after pulling main",
]

SETTINGS = {
    "request timeout": ["10 seconds", "30 seconds", "2 minutes"],
    "max upload size": ["10 MB", "25 MB", "100 MB"],
    "retry budget": ["3 attempts", "5 attempts", "10 percent of requests"],
    "session lifetime": ["12 hours", "7 days", "30 minutes"],
    "worker count": ["4", "8", "twice the core count"],
    "log level": ["warning", "info", "debug on staging only"],
    "batch size": ["100", "500", "1,000 rows"],
    "cache TTL": ["60 seconds", "5 minutes", "1 hour"],
    "connection pool size": ["10 connections", "20 connections", "50 connections"],
    "rate limit per key": ["100 per minute", "1,000 per hour", "10 per second"],
    "thumbnail quality": ["75 percent", "85 percent", "lossless for stickers"],
    "queue visibility timeout": ["30 seconds", "5 minutes", "15 minutes"],
}
CONFIG_PATHS = [
    "config/settings.toml", "deploy/values.yaml", ".env.example", "infra/terraform/vars.tf",
    "src/config.py", "charts/app/values-prod.yaml", "settings/base.json",
    "ops/ansible/group_vars/all.yml",
]

OPERATIONS = [
    "A cold start", "The full test suite", "A search query", "Rendering one sticker sheet",
    "The nightly export", "Login including the token refresh", "Building the Docker image",
    "Generating an invoice PDF", "The schema migration", "Reindexing one tenant",
    "A checkout request", "Resizing an avatar",
]
PERF_CONTEXTS = [
    "on a laptop", "on the CI runners", "in production at peak", "with a warm cache",
    "with a cold cache", "on the ARM hosts", "for the biggest tenant", "since the last upgrade",
]

FEEDBACK = [
    "felt too long and should fit on one screen", "needs a clearer call to action",
    "was great but the colors were off on print", "should lead with the numbers",
    "read like marketing, not like documentation", "was exactly the tone we want going forward",
    "buried the breaking change at the bottom", "had too many abbreviations for new customers",
    "should show the error code next to the message", "looked cramped on small phones",
    "needs alt text on every image", "was approved without changes",
]

SECURITY = [
    "rotate the {service} credentials every {n} days",
    "never print tokens in CI logs, even masked ones",
    "scan uploaded images for embedded scripts before thumbnailing",
    "keep the admin console behind the VPN",
    "give the {service} read-only database credentials",
    "require hardware keys for the {tool} admin accounts",
    "store webhook secrets per customer, never one global secret",
    "strip EXIF location data from user photos",
    "sign every release artifact with the team key",
    "keep production data out of the {env} databases",
    "review OAuth scopes of the {tool} integration every quarter",
    "expire invitation links after {n} hours",
    "encrypt the exports of the {service} at rest",
    "block outbound traffic from the {service} except to an allow-list",
    "log every admin impersonation with the reason",
    "pin third-party GitHub Actions to a commit SHA",
]
SECURITY_REASONS = [
    "the SOC 2 auditor asked for it", "a pentest found the gap in {month}",
    "the hospital customer's contract requires it", "it was the root cause of the {month} incident",
    "insurance needs proof of it", "{name} signed off on it as the security owner",
    "the bug bounty report made it urgent", "it is the cheapest way to limit blast radius",
]

TAGS = {
    "preferences": ["style", "workflow", "user-pref", "writing", "git"],
    "lessons": ["incident", "postmortem", "database", "safety", "release"],
    "tools": ["tooling", "ci", "python", "js", "infra"],
    "projects": ["architecture", "ownership", "infra", "legacy"],
    "people": ["team", "contacts", "stakeholders"],
    "design": ["sticker", "branding", "ux", "rejected", "print", "accessibility"],
    "deploy": ["deploy", "k8s", "cdn", "gotcha", "ops"],
    "debug": ["bug", "root-cause", "flaky", "performance"],
    "decisions": ["adr", "roadmap", "architecture"],
    "commands": ["cli", "howto", "ops"],
    "config": ["config", "defaults", "ops"],
    "perf": ["performance", "latency", "benchmark"],
    "feedback": ["feedback", "review", "copy"],
    "security": ["security", "secrets", "compliance"],
}

#: Where a memory came from, appended to some entries: "(from the March retro)".
PROVENANCE = [
    "(from the {month} retro)", "({name} confirmed this in {month})",
    "(noticed during the {project} migration)", "(came up in {name}'s code review)",
    "(see the incident write-up from {month})", "(learned the hard way in {month})",
    "(per {name})", "(verified again after the {tool} upgrade)",
    "(mentioned at the {project} kickoff)", "(still true as of {month})",
    "({name} and {name} both ran into this)", "(raised by support in {month})",
]

# -- templates --------------------------------------------------------------------------------

Draft = tuple[str, str, str | None]  # text, kind, key hint (a dotted key or None)


def _fill(rng: random.Random, template: str) -> str:
    """Fill {n}, {v}, {name}, … placeholders that family functions leave to chance."""
    values: dict[str, Callable[[], str]] = {
        "n": lambda: str(rng.choice([2, 3, 4, 5, 8, 10, 12, 15, 20, 30, 45, 60, 90, 120, 250])),
        "v": lambda: str(rng.choice([12, 13, 14, 15, 16, 17])),
        "minor": lambda: str(rng.choice([9, 10, 11, 12, 13])),
        "port": lambda: str(rng.choice([8080, 9090, 9100, 9187, 8443, 3000, 5000])),
        "name": lambda: rng.choice(NAMES),
        "tz": lambda: rng.choice(TIMEZONES),
        "month": lambda: rng.choice(MONTHS),
        "service": lambda: rng.choice(SERVICES),
        "env": lambda: rng.choice(ENVS),
        "tool": lambda: rng.choice(TOOLS),
        "format": lambda: rng.choice(FORMATS),
        "path": lambda: rng.choice(PATHS),
        "project": lambda: rng.choice(PROJECTS),
        "project2": lambda: rng.choice(PROJECTS),
        "slug": lambda: rng.choice(PROJECTS),
    }
    return re.sub(r"\{(\w+)\}", lambda m: values[m.group(1)](), template)


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")[:40]


def fam_preference(rng: random.Random) -> Draft:
    a, b = rng.choice(PREFERENCE_PAIRS)
    artifact = rng.choice(ARTIFACTS)
    reason = _fill(rng, rng.choice(PREFERENCE_REASONS))
    project = rng.choice(PROJECTS)
    text = rng.choice([
        f"{rng.choice(NAMES)} prefers {a} over {b} for {artifact} in {project}, {reason}.",
        f"For {artifact} in {project} the user wants {a}, not {b}; {reason}.",
        f"Use {a} rather than {b} when writing {artifact} for {project} ({reason}).",
        f"Preference: {a} for {artifact}. {rng.choice(NAMES)} pushed back on {b} {reason}.",
    ])
    return text, "feedback" if rng.random() < 0.3 else "fact", f"pref.{_slug(artifact)}.{project}"


def fam_lesson(rng: random.Random) -> Draft:
    action = rng.choice(BAD_ACTIONS)
    consequence = _fill(rng, rng.choice(CONSEQUENCES))
    where = rng.choice([f"in {rng.choice(PROJECTS)}", f"on {rng.choice(ENVS)}",
                        f"for the {rng.choice(SERVICES)}",
                        f"in {rng.choice(PROJECTS)} on {rng.choice(ENVS)}"])
    text = rng.choice([
        f"Don't {action} {where}: {consequence}.",
        f"Never {action} {where} without {rng.choice(PRECAUTIONS)}; {consequence}.",
        f"Lesson learned {where}: do not {action}, because {consequence}.",
        f"We tried to {action} {where} once and {consequence}. Ask {rng.choice(NAMES)} first.",
    ])
    return text, "lesson", None


def fam_tool(rng: random.Random) -> Draft:
    tool = rng.choice(TOOLS)
    quirk = _fill(rng, rng.choice(TOOL_QUIRKS))
    version = f"{rng.randint(0, 9)}.{rng.randint(0, 30)}"
    where = rng.choice([f"in the {rng.choice(PROJECTS)} repo", f"on {rng.choice(ENVS)}",
                        f"for {rng.choice(PROJECTS)}"])
    text = rng.choice([
        f"{tool} {version} {quirk} {where}.",
        f"Note about {tool} {where}: it {quirk}.",
        f"Heads-up: {tool} {quirk} {where} (seen with version {version}).",
    ])
    return text, "fact", None


def fam_project(rng: random.Random) -> Draft:
    project = rng.choice(PROJECTS)
    fact = _fill(rng, rng.choice(PROJECT_FACTS))
    followup = _fill(rng, rng.choice(PROJECT_FOLLOWUPS))
    text = rng.choice([
        f"{project} {fact}; {followup}.",
        f"Worth knowing: the {project} codebase {fact}, and {followup}.",
        f"{project} {fact}, according to {rng.choice(NAMES)}.",
        f"Heads-up for anyone touching {project} on {rng.choice(ENVS)}: it {fact}.",
    ])
    return text, "fact", None


def fam_person(rng: random.Random) -> Draft:
    name = rng.choice(NAMES)
    role = rng.choice(ROLES)
    fact = _fill(rng, rng.choice(PERSON_FACTS))
    project = rng.choice(PROJECTS)
    text = rng.choice([
        f"{name} is the {role} for {project} and {fact}.",
        f"{name} ({role}, {project}) {fact}.",
        f"About {name}, our {role} on {project}: {fact}.",
    ])
    return text, "fact", f"person.{_slug(name)}.{project}" if rng.random() < 0.5 else None


def fam_design(rng: random.Random) -> Draft:
    concept = rng.choice(DESIGN_CONCEPTS)
    surface = rng.choice(SURFACES)
    reason = rng.choice(REJECTION_REASONS)
    alternative = rng.choice(DESIGN_CONCEPTS)
    client = rng.choice(CLIENTS)
    text = rng.choice([
        f"Rejected: the {concept} for {client}'s {surface}, because {reason}.",
        f"Do not propose a {concept} on the {surface} for {client} again; {reason}.",
        f"The {concept} concept for the {surface} was turned down ({reason}); "
        f"{rng.choice(NAMES)} asked for a {alternative} instead.",
        f"{rng.choice(NAMES)} from {client} vetoed the {concept} on the {surface}: {reason}.",
    ])
    return text, "feedback" if rng.random() < 0.5 else "lesson", None


def fam_deploy(rng: random.Random) -> Draft:
    service = rng.choice(SERVICES)
    env = rng.choice(ENVS)
    gotcha = _fill(rng, rng.choice(GOTCHAS))
    workaround = _fill(rng, rng.choice(WORKAROUNDS))
    text = rng.choice([
        f"Deploying the {service} to {env} {gotcha}; {workaround}.",
        f"Gotcha for {env}: the {service} {gotcha}. Workaround: {workaround}.",
        f"Before shipping the {service} on {env}, remember it {gotcha}, so {workaround}.",
    ])
    return text, "lesson", None


def fam_debug(rng: random.Random) -> Draft:
    symptom = rng.choice(SYMPTOMS)
    cause = _fill(rng, rng.choice(CAUSES))
    fix = _fill(rng, rng.choice(FIXES))
    project = rng.choice(PROJECTS)
    text = rng.choice([
        f"The {symptom} in {project} was caused by {cause}; {fix}.",
        f"Root cause of the {symptom} ({project}): {cause}. {fix.capitalize()}.",
        f"If the {symptom} comes back in {project} on {rng.choice(ENVS)}, check for {cause} first.",
    ])
    return text, "note", None


def fam_decision(rng: random.Random) -> Draft:
    decision = _fill(rng, rng.choice(DECISIONS))
    reason = _fill(rng, rng.choice(DECISION_REASONS))
    project = rng.choice(PROJECTS)
    text = rng.choice([
        f"Decided in {rng.choice(MONTHS)}: {project} will {decision} because {reason}.",
        f"Decision for {project} ({rng.choice(MONTHS)} planning, {rng.choice(NAMES)}): {decision}. "
        f"Reason: {reason}.",
        f"{rng.choice(NAMES)} and {rng.choice(NAMES)} agreed that {project} should {decision}, "
        f"since {reason}.",
    ])
    return text, "fact", f"decision.{project}.{_slug(decision)}" if rng.random() < 0.3 else None


def fam_command(rng: random.Random) -> Draft:
    goal, command = rng.choice(COMMANDS)
    project = rng.choice(PROJECTS)
    command = _fill(rng, command)
    note = rng.choice(COMMAND_NOTES)
    situation = rng.choice(SITUATIONS)
    text = rng.choice([
        f"To {goal} in {project} {situation}, run `{command}`{note}.",
        f"How to {goal} ({project}): `{command}`{note}. Useful {situation}.",
        f"{situation.capitalize()}, {goal} in {project} with `{command}`{note}.",
    ])
    return text, "note", None


def fam_config(rng: random.Random) -> Draft:
    setting = rng.choice(list(SETTINGS))
    service = rng.choice(SERVICES)
    path = rng.choice(CONFIG_PATHS)
    value = rng.choice(SETTINGS[setting])
    project = rng.choice(PROJECTS)
    text = rng.choice([
        f"The {setting} of the {service} in {project} lives in {path} and defaults to {value}.",
        f"{project}: change the {service}'s {setting} in {path} (currently {value}), "
        "not in the environment.",
    ])
    return text, "fact", f"config.{project}.{_slug(service)}.{_slug(setting)}"


def fam_perf(rng: random.Random) -> Draft:
    operation = rng.choice(OPERATIONS)
    project = rng.choice(PROJECTS)
    amount = rng.choice(["40 ms", "120 ms", "0.8 seconds", "3 seconds", "11 minutes", "250 ms",
                         "25 minutes", "90 seconds", "6 ms", "1.5 seconds"])
    context = rng.choice(PERF_CONTEXTS)
    who = f"measured by {rng.choice(NAMES)} in {rng.choice(MONTHS)}"
    text = rng.choice([
        f"{operation} in {project} takes about {amount} {context} ({who}).",
        f"{operation} for {project} is down to {amount} {context} after the {rng.choice(TOOLS)} "
        f"upgrade, {who}.",
        f"Baseline for {project}: {operation.lower()} needs roughly {amount} {context}; "
        "flag regressions above twice that.",
    ])
    return text, "fact", None


def fam_feedback(rng: random.Random) -> Draft:
    name = rng.choice(NAMES)
    artifact = rng.choice(ARTIFACTS + [s for s in SURFACES])
    feedback = rng.choice(FEEDBACK)
    project = rng.choice(PROJECTS)
    text = rng.choice([
        f"{name} said the {artifact} for {project} {feedback}.",
        f"Feedback from {name} on the {project} {artifact}: it {feedback}.",
    ])
    return text, "feedback", None


def fam_security(rng: random.Random) -> Draft:
    rule = _fill(rng, rng.choice(SECURITY))
    project = rng.choice(PROJECTS)
    reason = _fill(rng, rng.choice(SECURITY_REASONS))
    owner = rng.choice(NAMES)
    text = rng.choice([
        f"Security rule for {project}: {rule}, because {reason}.",
        f"The audit for {project} requires us to {rule}; {reason}. {owner} tracks it.",
        f"{project} on {rng.choice(ENVS)} must {rule} ({reason}).",
    ])
    return text, "lesson", None


#: category → (weight, tag group, generator families)
CATEGORIES: dict[str, tuple[int, str, list[Callable[[random.Random], Draft]]]] = {
    "preferences": (10, "preferences", [fam_preference]),
    "lessons": (9, "lessons", [fam_lesson]),
    "tools": (7, "tools", [fam_tool]),
    "projects": (6, "projects", [fam_project]),
    "people": (4, "people", [fam_person]),
    "rejected-designs": (6, "design", [fam_design]),
    "deploy-gotchas": (5, "deploy", [fam_deploy]),
    "debugging": (6, "debug", [fam_debug]),
    "decisions": (4, "decisions", [fam_decision]),
    "commands": (4, "commands", [fam_command]),
    "config": (3, "config", [fam_config]),
    "performance": (3, "perf", [fam_perf]),
    "feedback": (4, "feedback", [fam_feedback]),
    "security": (2, "security", [fam_security]),
    "style-guide": (2, "preferences", [fam_preference, fam_feedback]),
    "incidents": (3, "lessons", [fam_lesson, fam_debug]),
    "onboarding": (2, "commands", [fam_command, fam_project, fam_person]),
    "workflows": (3, "commands", [fam_command, fam_preference]),
    "environment": (2, "config", [fam_config, fam_tool]),
    "ci": (3, "tools", [fam_tool, fam_deploy]),
    "git": (2, "preferences", [fam_preference, fam_command]),
    "dependencies": (2, "tools", [fam_tool, fam_decision]),
    "data-model": (2, "projects", [fam_project, fam_decision]),
    "ui-feedback": (3, "design", [fam_feedback, fam_design]),
    "branding": (2, "design", [fam_design]),
    "accessibility": (1, "design", [fam_design, fam_feedback]),
    "releases": (2, "deploy", [fam_deploy, fam_decision]),
    "stakeholders": (2, "people", [fam_person, fam_feedback]),
    "api-notes": (2, "projects", [fam_project, fam_config]),
    "followups": (1, "decisions", [fam_decision, fam_debug]),
}

#: agent → categories it writes more often (a designer stores designs, ops-bot gotchas, …)
AGENT_FOCUS = {
    "designer": ["rejected-designs", "branding", "ui-feedback", "accessibility", "feedback"],
    "ops-bot": ["deploy-gotchas", "config", "environment", "incidents", "releases", "ci"],
    "reviewer": ["style-guide", "lessons", "feedback", "git", "security"],
    "tester": ["debugging", "ci", "performance", "tools"],
    "researcher": ["decisions", "projects", "dependencies", "data-model"],
    "planner": ["decisions", "followups", "stakeholders", "people"],
    "scribe": ["people", "decisions", "onboarding", "stakeholders"],
}

# -- queries ----------------------------------------------------------------------------------

QUERY_TEMPLATES = [
    "how do I deploy the {service} to {env}",
    "what does {name} prefer for {artifact}",
    "why did we reject the {concept}",
    "is {tool} flaky on {env}",
    "what went wrong last time we tried to {action}",
    "who owns the {service}",
    "where is the {setting} configured for the {service}",
    "how long does {operation} take in {project}",
    "what was the root cause of the {symptom}",
    "which design ideas were turned down for the {surface}",
    "any gotchas when shipping {project} to {env}",
    "how to {goal} in {project}",
    "what did {name} say about the {artifact}",
    "security requirements for {project}",
    "what did we decide about the {topic}",
    "{tool} problems in {project}",
    "things to avoid with the {service}",
    "who should I ask about {project}",
    "preferred style for {artifact} in {project}",
    "why is the {symptom} happening again",
]
TOPICS = ["job queue", "monorepo", "webhooks", "auth", "admin panel", "search backend",
          "billing cycle", "design review", "OpenAPI spec", "docs hosting", "test parallelism"]


class Corpus:
    """Deterministic: the same seed gives the same entries and queries."""

    def __init__(self, seed: int = 7) -> None:
        self.seed = seed
        categories = list(CATEGORIES)
        self._category_weights = {
            agent: [CATEGORIES[c][0] * (6 if c in AGENT_FOCUS.get(agent, ()) else 1)
                    for c in categories]
            for agent, _ in AGENTS
        }
        self._categories = categories
        self.generated = 0  # texts drawn, collisions included
        self.collisions = 0  # drawn texts equal (case/space-insensitive) to an earlier one

    @staticmethod
    def _norm(text: str) -> str:
        return " ".join(text.lower().split())

    def entry(self, rng: random.Random) -> dict[str, Any]:
        agent = rng.choices([a for a, _ in AGENTS], weights=[w for _, w in AGENTS])[0]
        category = rng.choices(self._categories, weights=self._category_weights[agent])[0]
        _, tag_group, families = CATEGORIES[category]
        text, kind, key = rng.choice(families)(rng)
        if rng.random() < 0.3:
            text = f"{text} {_fill(rng, rng.choice(PROVENANCE))}"
        entry: dict[str, Any] = {"agent": agent, "category": category, "text": text, "kind": kind}
        if key is not None and rng.random() < 0.2:
            entry["key"] = key  # a dotted key makes it a fact; later writes with it supersede
            entry["kind"] = "fact"
        if rng.random() < 0.45:
            group = TAGS[tag_group]
            entry["tags"] = rng.sample(group, k=rng.randint(1, min(3, len(group))))
        if rng.random() < 0.5:
            entry["project"] = f"/home/dev/src/{rng.choice(PROJECTS)}"
        return entry

    def entries(self, n: int, *, salt: int = 0,
                avoid: set[str] | None = None) -> list[dict[str, Any]]:
        """``n`` entries with pairwise distinct texts (and none in ``avoid``, normalised)."""
        rng = random.Random(f"{self.seed}/entries/{salt}")
        seen = avoid if avoid is not None else set()
        out: list[dict[str, Any]] = []
        while len(out) < n:
            entry = self.entry(rng)
            self.generated += 1
            norm = self._norm(entry["text"])
            if norm in seen:
                self.collisions += 1
                continue
            seen.add(norm)
            out.append(entry)
        return out

    @property
    def unique_ratio(self) -> float:
        """Share of drawn texts that were new: how diverse the generator is."""
        return 1.0 - self.collisions / self.generated if self.generated else 1.0

    def queries(self, n: int, *, salt: int = 0, avoid: set[str] | None = None) -> list[str]:
        """``n`` distinct natural-language questions (none in ``avoid``)."""
        rng = random.Random(f"{self.seed}/queries/{salt}")
        seen = avoid if avoid is not None else set()
        out: list[str] = []
        slots: dict[str, Callable[[], str]] = {
            "service": lambda: rng.choice(SERVICES), "env": lambda: rng.choice(ENVS),
            "name": lambda: rng.choice(NAMES), "artifact": lambda: rng.choice(ARTIFACTS),
            "concept": lambda: rng.choice(DESIGN_CONCEPTS), "tool": lambda: rng.choice(TOOLS),
            "action": lambda: rng.choice(BAD_ACTIONS),
            "setting": lambda: rng.choice(list(SETTINGS)),
            "operation": lambda: rng.choice(OPERATIONS).lower(),
            "project": lambda: rng.choice(PROJECTS),
            "symptom": lambda: rng.choice(SYMPTOMS), "surface": lambda: rng.choice(SURFACES),
            "goal": lambda: rng.choice(COMMANDS)[0], "topic": lambda: rng.choice(TOPICS),
        }
        attempts = 0
        while len(out) < n:
            attempts += 1
            if attempts > 100 * n + 1000:
                raise RuntimeError(f"could not draw {n} distinct queries")
            query = re.sub(r"\{(\w+)\}", lambda m: slots[m.group(1)](), rng.choice(QUERY_TEMPLATES))
            if rng.random() < 0.3:
                query += "?"
            if query in seen:
                continue
            seen.add(query)
            out.append(query)
        return out


if __name__ == "__main__":  # a peek at the corpus: python bench/corpus.py [N]
    import collections
    import sys

    corpus = Corpus()
    sample = corpus.entries(int(sys.argv[1]) if len(sys.argv) > 1 else 20)
    for e in sample[:20]:
        key = e.get("key") or ""
        print(f"{e['agent']:>12} {e['category']:<17} {e['kind']:<8} {key:<40} {e['text']}")
    print(f"unique ratio {corpus.unique_ratio:.4f} over {corpus.generated} draws")
    print(collections.Counter(e["agent"] for e in sample).most_common())
    print(len({(e["agent"], e["category"]) for e in sample}), "agent/category buckets")
    for q in corpus.queries(10):
        print("  ?", q)
