"""Secret redaction before storage: memoryd.redact."""

import bisect
import random
import re
import string

import pytest

import memoryd.redact
from memoryd.redact import PATTERNS, find_secrets, redact

ALNUM = string.ascii_letters + string.digits


def fake(length: int, alphabet: str = ALNUM, seed: int = 0) -> str:
    """A deterministic random string. Test secrets are assembled at run time, so the file
    itself holds no token that a secret scanner would flag."""
    rng = random.Random(f"{seed}:{length}:{alphabet}")
    return "".join(rng.choice(alphabet) for _ in range(length))


B64 = ALNUM + "+/"
URLSAFE = ALNUM + "-_"
AWS_KEY_ID = "AKIA" + fake(16, string.ascii_uppercase + string.digits)
AWS_SECRET = fake(40, B64, seed=1)
GITHUB_CLASSIC = "ghp_" + fake(36)
JWT = "eyJhbGciOiJIUzI1NiJ9" + ".eyJzdWIiOiIxMjM0NTY3ODkwIn0." + fake(43, URLSAFE)
BASIC = "YWxhZGRpbjpvcGVuc2VzYW1l"  # aladdin:opensesame
PRIVATE_KEY_BODY = [fake(64, B64, seed=n) for n in range(5)] + [fake(20, B64) + "=="]


def token(prefix: str, length: int, alphabet: str = ALNUM, seed: int = 0) -> tuple[str, str]:
    """(prefix + random body, the body): a test secret and a part of it that must go."""
    body = fake(length, alphabet, seed)
    return prefix + body, body


def case(
    kind: str, template: str, prefix: str, length: int, alphabet: str = ALNUM, seed: int = 0
) -> tuple[str, str, str]:
    secret, body = token(prefix, length, alphabet, seed)
    return kind, template.format(secret), body


# (kind, text, a secret that must be gone)
CASES: list[tuple[str, str, str]] = [
    ("aws-access-key", f"export AWS_ACCESS_KEY_ID={AWS_KEY_ID}", AWS_KEY_ID),
    case(
        "aws-access-key",
        "temporary creds {} expire",
        "ASIA",
        16,
        string.ascii_uppercase + string.digits,
    ),
    ("aws-secret-key", f"aws_secret_access_key = {AWS_SECRET}", AWS_SECRET),
    ("aws-secret-key", '{"SecretAccessKey": "' + AWS_SECRET + '"}', AWS_SECRET),
    ("github-token", f"git clone https://{GITHUB_CLASSIC}@github.com/o/r", GITHUB_CLASSIC),
    case("github-token", "oauth: {}", "gho_", 36, seed=2),
    case("github-token", "user-to-server {}", "ghu_", 36, seed=3),
    case("github-token", "installation {}", "ghs_", 36, seed=4),
    case("github-token", "refresh {}", "ghr_", 36, seed=5),
    case("github-token", "GH_TOKEN={}", "github_pat_11A", 79, ALNUM + "_"),
    case("gitlab-token", "PRIVATE-TOKEN: {}", "glpat-", 20, URLSAFE),
    case("slack-token", "SLACK_BOT_TOKEN={}", "xoxb-1234567890-", 24),
    case("slack-token", "user token {}", "xoxp-", 40, ALNUM + "-"),
    case("slack-webhook", "post to https://hooks.slack.com/services/{}", "T0123/B0456/", 24),
    case("stripe-key", "stripe.api_key = '{}'", "sk_live_", 24),
    case("stripe-key", "restricted {}", "rk_live_", 24),
    case("stripe-key", "test mode {}", "sk_test_", 24),
    case("openai-api-key", "OPENAI_API_KEY={}", "sk-", 48),
    case("openai-api-key", "client = OpenAI(api_key='{}')", "sk-proj-", 64, URLSAFE),
    case("anthropic-api-key", "ANTHROPIC_API_KEY={}", "sk-ant-api03-", 95, URLSAFE),
    case("google-api-key", "?key={}", "AIza", 35, URLSAFE),
    case("google-oauth", "client_secret {}", "GOCSPX-", 28, URLSAFE),
    case("google-oauth", "access token {}", "ya29.", 60, URLSAFE),
    case("huggingface-token", "huggingface-cli login --token {}", "hf_", 34),
    case("npm-token", "//registry.npmjs.org/:_authToken={}", "npm_", 36),
    case("pypi-token", "password = {}", "pypi-AgEIcHlwaS5vcmc", 120, URLSAFE),
    case("sendgrid-api-key", "sendgrid {}", "SG." + fake(22, URLSAFE) + ".", 43, URLSAFE),
    ("jwt", f"the session cookie was {JWT} yesterday", JWT),
    case("bearer-token", "curl -H 'Authorization: Bearer {}' https://api", "", 32),
    case("bearer-token", "headers = {{'Authorization': 'Bearer {}'}}", "", 40, URLSAFE),
    ("auth-header", f"Authorization: Basic {BASIC}", BASIC),
    case("auth-header", '"authorization": "token {}"', "", 30),
    (
        "url-password",
        "DATABASE_URL=postgres://app:Sup3r-S3cret@db.internal:5432/app",
        "Sup3r-S3cret",
    ),
    ("url-password", "git remote add origin https://bob:hunter2@git.example.com/r.git", "hunter2"),
    ("password", 'password = "correct horse battery staple"', "correct horse battery staple"),
    ("password", "db_password='hunter2'", "hunter2"),
    ("password", '{"user": "bob", "password": "p@ss w0rd!"}', "p@ss w0rd!"),
    ("password", 'login(password: str = "tr0ub4dor")', "tr0ub4dor"),
    ("password", '{\\"password\\": \\"escaped-in-json\\"}', "escaped-in-json"),
    ("password", "PASSWORD=correcthorse", "correcthorse"),
    ("password", "export MYSQL_ROOT_PASSWORD=rootpw ; docker compose up", "rootpw"),
    ("password", "mysql --user root --password foo", "foo"),
    ("password", "mysql --password=foo --host db", "foo"),
    ("password", 'openssl pkcs12 --passphrase "two words"', "two words"),
    ("password", "password: hunter2", "hunter2"),
    ("password", "[client]\npassword = s3cr3t!\nhost = db", "s3cr3t!"),
    ("password", "machine api.example.com\n  login bob\n  password netrcpw", "netrcpw"),
    case("secret", '"api_key": "{}"', "", 32, "0123456789abcdef"),
    ("secret", "API_TOKEN=tok3n", "tok3n"),
    case("secret", "SECRET_KEY = '{}'", "django-insecure-", 40),
    case("secret", "client_secret: {}", "", 32, seed=9),
    case("secret", "tool --api-key {}", "", 20, seed=8),
    case("secret", "curl 'https://x.test/v1?access_token={}&page=2'", "", 24, seed=7),
    case("docker-token", "docker login -u me -p {}", "dckr_pat_", 27, URLSAFE),
    ("password", "mysql -u root -pS3cretPass mydb", "S3cretPass"),
    ("password", "mysqldump -h db -pdumpPw9 app > app.sql", "dumpPw9"),
    ("password", "sshpass -p hunter2 ssh deploy@host", "hunter2"),
    ("password", "curl -u admin:S3cret! https://api.example.com", "S3cret!"),
    ("password", "curl -s --user bob:pw123 https://api.example.com", "pw123"),
    ("password", "docker login -u bot -p Sup3rS3cretPw ghcr.io", "Sup3rS3cretPw"),
    ("password", "requests.get(url, auth=('admin','Sup3rS3cret!'))", "Sup3rS3cret!"),
    ("password", 'session.auth = HTTPBasicAuth("admin", "hunter2hunter")', "hunter2hunter"),
    ("password", "httpx.get(url, auth=(cfg.user, 'S3cretPair9'))", "S3cretPair9"),
    case("registry-auth", '{{"auths":{{"ghcr.io":{{"auth":"{}"}}}}}}', "", 40, B64, 12),
    # pasted into a transcript (JSON-escaped); base64 of "user:pw12" has no digit
    ("registry-auth", '{\\"auths\\":{\\"r.io\\":{\\"auth\\":\\"dXNlcjpwdzEy\\"}}}',
     "dXNlcjpwdzEy"),
    case("cookie", "curl -H 'Cookie: session={}' https://x", "", 48, URLSAFE + ".", 13),
    case("cookie", "Set-Cookie: sid={}; Path=/; HttpOnly", "", 32, seed=14),
    (
        "private-key",
        "key: -----BEGIN OPENSSH PRIVATE KEY----- "
        + " ".join(PRIVATE_KEY_BODY)
        + " -----END OPENSSH PRIVATE KEY----- thanks",
        PRIVATE_KEY_BODY[3],
    ),
    (
        "private-key",
        "-----BEGIN RSA PRIVATE KEY-----\n"
        + "\n".join(PRIVATE_KEY_BODY)
        + "\n-----END RSA PRIVATE KEY-----",
        PRIVATE_KEY_BODY[2],
    ),
]


@pytest.mark.parametrize(("kind", "text", "secret"), CASES)
def test_each_kind_is_redacted(kind: str, text: str, secret: str) -> None:
    redacted = redact(text)
    assert f"[REDACTED:{kind}]" in redacted
    assert secret not in redacted
    assert kind in {found for found, _, _ in find_secrets(text)}


@pytest.mark.parametrize(("text", "redacted"), [
    ("password: Tr0ub4dor&3x", "password: [REDACTED:password]"),
    ("export API_KEY=Xy9&zz!qq+ww", "export API_KEY=[REDACTED:secret]"),
    ("password=Sup3r$ecret(1) then", "password=[REDACTED:password] then"),
    ("curl 'https://x.test/in?password=s3cret9&next=/home'",
     "curl 'https://x.test/in?password=[REDACTED:password]&next=/home'"),
    ("DB_PASSWORD=p4ss&&echo ok", "DB_PASSWORD=[REDACTED:password]&&echo ok"),
])
def test_a_bare_value_goes_whole(text: str, redacted: str) -> None:
    """A "&" within a bare value, or brackets after a symbol, are the value's: the part after
    them was left in the text ("[REDACTED:password]&3x"), or the whole value was ("(1)"
    read as a call). A shell's "&&" and a query string's next "key=" still end it."""
    assert redact(text) == redacted


@pytest.mark.parametrize(("text", "redacted"), [
    # an env value in quotes is an env value ("supersecretvalue" has no digit)
    ('export AUTH_TOKEN="supersecretvalue"', 'export AUTH_TOKEN="[REDACTED:secret]"'),
    ("API_KEY='letmein-now'", "API_KEY='[REDACTED:secret]'"),
    ('ADMIN_PASSWORD="correct horse battery staple"', 'ADMIN_PASSWORD="[REDACTED:password]"'),
    # a storage or account key, as Azure names them
    ("AZURE_STORAGE_KEY=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsu==",
     "AZURE_STORAGE_KEY=[REDACTED:secret]"),
    ("DefaultEndpointsProtocol=https;AccountName=shop;AccountKey=Eby8vdM02xNOcqFlqUw9JPL==;",
     "DefaultEndpointsProtocol=https;AccountName=shop;AccountKey=[REDACTED:secret];"),
    # an "@" in a URL's password is the password's
    ("postgres://app:p@ss9w0rd@db.internal:5432/app",
     "postgres://app:[REDACTED:url-password]@db.internal:5432/app"),
])
def test_an_env_file_keeps_none_of_its_secrets(text: str, redacted: str) -> None:
    """Lines of a .env the redactor let through: a quoted env value without a digit, a
    storage or account key, a URL password holding an "@"."""
    assert redact(text) == redacted


@pytest.mark.parametrize("text", [
    'export EDITOR="vim"', 'MODE="production"', 'API_KEY="${API_KEY}"', "API_KEY=''",
    'DB_PASSWORD="$PGPASSWORD"', "storage_key = compute_key(path)", "SERVICE_URL=http://x:8080",
    "mailto:ana@example.com and https://example.com/@ana",
])
def test_an_env_files_ordinary_lines_are_kept(text: str) -> None:
    assert redact(text) == text


XOXB = "xoxb-124906528630-3748625702929-" + fake(24, seed=15)
PROJ = "sk-proj-" + fake(48, URLSAFE, seed=16)


@pytest.mark.parametrize(("text", "redacted"), [
    # a shell default, a category, a kebab or snake name: a "-" or "_" before the prefix
    (f'export GH_TOKEN="${{GH_TOKEN:-{GITHUB_CLASSIC}}}"',
     'export GH_TOKEN="${GH_TOKEN:-[REDACTED:github-token]}"'),
    (f"TOKEN=${{TOKEN:-{GITHUB_CLASSIC}}}", "TOKEN=${TOKEN:-[REDACTED:github-token]}"),
    (f"cat-{XOXB}", "cat-[REDACTED:slack-token]"),
    (f"token-{XOXB}", "token-[REDACTED:slack-token]"),
    (f"deploy-with-{GITHUB_CLASSIC}", "deploy-with-[REDACTED:github-token]"),
    (f"context-openai-key-{PROJ}", "context-openai-key-[REDACTED:openai-api-key]"),
    (f"key_{PROJ}", "key_[REDACTED:openai-api-key]"),
    (f"x-sk-ant-api03-{fake(40, URLSAFE)}", "x-[REDACTED:anthropic-api-key]"),
    (f"aws_{AWS_KEY_ID}", "aws_[REDACTED:aws-access-key]"),
    (f"id:{AWS_KEY_ID}", "id:[REDACTED:aws-access-key]"),
])
def test_a_token_after_a_dash_or_underscore_is_redacted(text: str, redacted: str) -> None:
    """A distinctive prefix is a token wherever it starts but inside a word: after a "-" or
    "_" (a shell's ``${VAR:-…}``, a category in kebab form) it was kept whole."""
    assert redact(text) == redacted


@pytest.mark.parametrize("text", [
    "a task-force on disk-usage and risk-management",
    "the ask-proj-2024-q3-planning-meeting-notes",  # "sk-proj-" inside a word
    "load_hf_modelweightsfromthecheckpointfile(path)",  # snake_case, not an hf_ token
    "run_npm_install_for_the_frontend_workspace_now",
    "locale-sk-sk-2024-01-01-backup-archive",  # a lone "sk-" after "-" needs more
    "my-xoxb-style-names",  # too short for a token
    "docker run -p 8080:80 nginx",
    "docker login -u $REGISTRY_USER -p $REGISTRY_TOKEN ghcr.io",
    "docker login -u bot --password-stdin < token.txt",
    "requests.get(url, auth=('admin', password))",
    "auth=(user, password)",
    '{"auth": "basicAuth", "mode": "required"}',
    '{"auth": "required"}',
    'auth = HTTPBasicAuth(user, os.environ["PW"])',
    '{"oauth": "enabled"}',
    "Cookie: theme=dark; lang=en",
    "set the Cookie: header yourself",
    "Set-Cookie: session=${SESSION_COOKIE_VALUE_FROM_ENV}",
])
def test_widened_patterns_keep_ordinary_words(text: str) -> None:
    assert redact(text) == text


def test_every_documented_kind_has_a_case() -> None:
    kinds = {kind for kind, _ in PATTERNS}
    assert kinds == {kind for kind, _, _ in CASES}
    doc = memoryd.redact.__doc__ or ""
    assert all(f"``{kind}``" in doc for kind in kinds)


def test_space_joined_key_block_goes_whole() -> None:
    text = ("-----BEGIN OPENSSH PRIVATE KEY----- " + " ".join(PRIVATE_KEY_BODY)
            + " -----END OPENSSH PRIVATE KEY----- and then")
    assert redact(text) == "[REDACTED:private-key] and then"


def test_command_passwords_keep_the_command() -> None:
    assert redact("mysql -u root -pS3cretPass db") == "mysql -u root -p[REDACTED:password] db"
    assert redact("curl -u admin:S3cret! https://x") == "curl -u admin:[REDACTED:password] https://x"
    for kept in ("mysql -p mydb", "use mysql -p to be asked", "curl -u $USER:$PASS https://x"):
        assert redact(kept) == kept


def test_context_around_the_secret_is_kept() -> None:
    assert redact("https://bob:hunter2@example.com/x") == (
        "https://bob:[REDACTED:url-password]@example.com/x"
    )
    assert redact('password = "hunter2"') == 'password = "[REDACTED:password]"'
    assert redact(f"key {AWS_KEY_ID}.") == "key [REDACTED:aws-access-key]."
    assert redact(f"Authorization: Basic {BASIC}") == "Authorization: Basic [REDACTED:auth-header]"


def test_provider_patterns_win_over_generic_ones() -> None:
    assert redact(f"GITHUB_TOKEN={GITHUB_CLASSIC}") == "GITHUB_TOKEN=[REDACTED:github-token]"
    assert redact(f'"Authorization": "Bearer {JWT}"') == '"Authorization": "Bearer [REDACTED:jwt]"'
    assert redact(f"https://x:{GITHUB_CLASSIC}@github.com") == (
        "https://x:[REDACTED:github-token]@github.com"
    )


PROSE_AND_CODE = """\
I reset my password yesterday and the new token limit is 4096 tokens per request. The
password field must not be empty, and a token is just a piece of text. Pass the --token
flag, or use --password instead. Run `git log` and check commit 3f2a9c1 and
d670460b4b4aece5915caf5c68d12f560a9fe3e4, then the request id
123e4567-e89b-12d3-a456-426614174000. See https://example.com/docs?page=2#secrets and
https://localhost:8080/path. Basic authentication is off; the Bearer scheme is preferred.

```python
def login(user: str, password: str | None = None, token: Optional[str] = None) -> None:
    password = None
    token = get_token()
    api_key = settings.API_KEY
    secret = os.environ["SECRET"]
    password = getpass.getpass("Password: ")
    headers = {"Authorization": f"Bearer {token}"}
    cfg = {"password": password, "token": token, "pad_token": "[PAD]", "eos_token": "</s>"}
    max_tokens = 512
    max_token = 512
    tokens = tokenizer(text)[0]
    password_hash = hashlib.sha256(password.encode()).hexdigest()
    secret_key: bytes = load_key(path)
    private_key: Ed25519PrivateKey = generate()
    cache_key = "user:1234:profile"
    url = f"https://{user}:{password}@{host}/"
    dsn = "postgres://user:${DB_PASSWORD}@db/app"
    db_password = "${DB_PASSWORD}"
    API_KEY = "<your api key>"
    os.environ["OPENAI_API_KEY"] = "sk-..."
    print("Password:", "*" * 8)
```

```yaml
auth:
  password: ${PASSWORD}
  token: null
  secretName: app-secrets
  api_key: YOUR_API_KEY
```

```sh
PWD=/home/me/src OLDPWD=/tmp
HF_HUB_DISABLE_IMPLICIT_TOKEN=True
export PASSWORD="$DB_PASSWORD"
read -s -p "Password: " password
```
"""


def test_no_false_positives_on_prose_and_code() -> None:
    assert find_secrets(PROSE_AND_CODE) == []
    assert redact(PROSE_AND_CODE) == PROSE_AND_CODE


@pytest.mark.parametrize(
    "text",
    [
        "The password is stored hashed; never log the token.",
        "password = None",
        "token = get_token()",
        "self.password = password",
        "d670460b4b4aece5915caf5c68d12f560a9fe3e4",
        "123e4567-e89b-12d3-a456-426614174000",
        "max_token = 512",
        "a long-term-risk-assessment-for-task-management",  # "sk-" inside words
        "ssh://git@github.com:22/org/repo.git",
        "hf_hub_download(repo_id)",
        "the Slovakia AKIAproject",  # lower-case hits of anchors
        "verify_token=expected_token",
        "private_key: Ed25519PrivateKey",
        "the --password option is required",
        "API_KEY=YOUR_API_KEY",
        'token = "xxxxxxxx"',
        "https://user:****@host",
        'password = "$DB_PASSWORD"',
        "password=md5(salt)",  # a call, not a value
    ],
)
def test_ordinary_text_is_kept(text: str) -> None:
    assert redact(text) == text


def private_key_block(label: str, newline: str = "\n") -> str:
    lines = [f"-----BEGIN {label}-----", *PRIVATE_KEY_BODY, f"-----END {label}-----"]
    return newline.join(lines)


@pytest.mark.parametrize(
    "label",
    [
        "PRIVATE KEY",
        "RSA PRIVATE KEY",
        "EC PRIVATE KEY",
        "OPENSSH PRIVATE KEY",
        "ENCRYPTED PRIVATE KEY",
        "PGP PRIVATE KEY BLOCK",
    ],
)
def test_private_key_block_is_removed_whole(label: str) -> None:
    text = f"Here is the key:\n{private_key_block(label)}\nKeep this line."
    assert redact(text) == "Here is the key:\n[REDACTED:private-key]\nKeep this line."


def test_private_key_with_headers_indent_and_json_escapes() -> None:
    pem = (
        "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\n"
        "DEK-Info: AES-128-CBC,3F17F5316E2BAC89\n\n"
        + "\n".join(PRIVATE_KEY_BODY)
        + "\n-----END RSA PRIVATE KEY-----"
    )
    assert redact(pem) == "[REDACTED:private-key]"
    yaml = "tls:\n  key: |\n    " + pem.replace("\n", "\n    ") + "\n  cert: x"
    assert redact(yaml) == "tls:\n  key: |\n    [REDACTED:private-key]\n  cert: x"
    escaped = '{"key": "' + private_key_block("OPENSSH PRIVATE KEY", "\\n") + '\\n"}'
    assert redact(escaped) == '{"key": "[REDACTED:private-key]\\n"}'


def test_truncated_private_key_is_removed_to_the_end_of_its_body() -> None:
    text = "-----BEGIN PRIVATE KEY-----\n" + "\n".join(PRIVATE_KEY_BODY[:3])
    assert redact(text) == "[REDACTED:private-key]"
    assert not any(line in redact(text + "\n\n(truncated)") for line in PRIVATE_KEY_BODY)


def test_public_material_is_kept() -> None:
    public = "-----BEGIN PUBLIC KEY-----\n" + PRIVATE_KEY_BODY[0] + "\n-----END PUBLIC KEY-----"
    assert redact(public) == public
    assert redact("pk_live_" + fake(24)) == "pk_live_" + fake(24)


ALL_SECRETS = "\n".join(text for _, text, _ in CASES)


@pytest.mark.parametrize("text", [text for _, text, _ in CASES] + [ALL_SECRETS, PROSE_AND_CODE])
def test_redaction_is_idempotent(text: str) -> None:
    once = redact(text)
    assert redact(once) == once
    assert find_secrets(once) == []


def test_all_secrets_together() -> None:
    redacted = redact(PROSE_AND_CODE + ALL_SECRETS)
    assert redacted.startswith(PROSE_AND_CODE)
    for _, _, secret in CASES:
        assert secret not in redacted


def naive_find_secrets(text: str) -> list[tuple[str, int, int]]:
    """find_secrets spelt out: every pattern's finditer over the whole text, in order (a
    command-line rule's match only after its command)."""
    starts: list[int] = []
    spans: list[tuple[int, int, str]] = []
    for (kind, pattern), context in zip(PATTERNS, memoryd.redact._CONTEXTS, strict=True):
        grouped = "secret" in pattern.groupindex
        for match in pattern.finditer(text):
            if context is not None and not memoryd.redact._in_command(context, text, match.start(), {}):
                continue
            start, end = match.span("secret") if grouped else match.span()
            if start >= end or "[REDACTED:" in text[start:end]:
                continue
            i = bisect.bisect_left(starts, start)
            if (i > 0 and spans[i - 1][1] > start) or (i < len(spans) and spans[i][0] < end):
                continue
            starts.insert(i, start)
            spans.insert(i, (start, end, kind))
    return [(kind, start, end) for start, end, kind in spans]


def test_anchored_search_matches_a_full_scan() -> None:
    rng = random.Random(7)
    pieces = [text for _, text, _ in CASES] + PROSE_AND_CODE.splitlines()
    for _ in range(20):
        text = rng.choice([" ", "\n", "-", "_", "x"]).join(rng.sample(pieces, 30))
        assert find_secrets(text) == naive_find_secrets(text)
    for command in ("mysql -h db -pX1 a; cp -pr b c | sshpass -p y1 ssh h && curl -u u:p1 x",
                    "x-pfoo mysql -pbar -p -pbaz\ncp -pq curl --user=a:b2 -U c:d3"):
        assert find_secrets(command) == naive_find_secrets(command)
    odd = "İ" + ALL_SECRETS + "ẞ\u212a"  # characters whose lower case is special
    assert find_secrets(odd) == naive_find_secrets(odd)


def test_never_raises() -> None:
    rng = random.Random(3)
    alphabet = string.printable + "İıßẞ\u212a\u0000\ud800\U0001f600=:\"'@/-_[]"
    for _ in range(200):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(200)))
        assert isinstance(redact(text), str)
    for text in [
        "",
        "-----BEGIN ",
        "-----BEGIN PRIVATE KEY-----",
        "://",
        "password=",
        'password: "',
        "--password",
        "Bearer ",
        "\\" * 50,
        "sk-" * 50,
    ]:
        assert isinstance(redact(text), str)


def test_patterns_are_compiled_and_named() -> None:
    assert all(isinstance(pattern, re.Pattern) for _, pattern in PATTERNS)
    assert all(re.fullmatch(r"[a-z][a-z0-9-]*", kind) for kind, _ in PATTERNS)
    kinds = [kind for kind, _ in PATTERNS]
    assert kinds.index("github-token") < kinds.index("secret")
    assert kinds.index("anthropic-api-key") < kinds.index("openai-api-key")
