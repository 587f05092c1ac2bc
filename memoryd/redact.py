"""Secret redaction: every text goes through :func:`redact` before it is stored.

Each secret found is replaced by ``[REDACTED:<kind>]``. When a pattern has a ``secret`` group
only that group is replaced, so the context stays readable: ``password = "hunter2"`` becomes
``password = "[REDACTED:password]"`` and ``https://bob:pw@host`` becomes
``https://bob:[REDACTED:url-password]@host``.

:data:`PATTERNS` is the documented list, with one comment beside each pattern. The patterns are
tried in order. A match that overlaps a span an earlier pattern already claimed is dropped, so
the specific provider patterns come first and the generic assignments last:
``GITHUB_TOKEN=ghp_…`` is a ``github-token``, not a ``secret``. A match whose secret already
contains ``[REDACTED:`` is dropped too. That makes redaction idempotent:
``redact(redact(t)) == redact(t)``.

Kinds, in order:

- ``private-key``: PEM, OpenSSH and PGP private key blocks, from the BEGIN line to the END line.
  Line breaks may be real, JSON-escaped (``\\n``) or spaces (a key pasted into one line). A
  block cut off before its END line is redacted to the end of its base64 body.
- ``jwt``: ``eyJ….eyJ….<signature>``.
- ``anthropic-api-key``: ``sk-ant-…``.
- ``openai-api-key``: ``sk-…``, ``sk-proj-…``, ``sk-svcacct-…`` (20+ characters, a digit
  within the first 64).
- ``github-token``: ``ghp_`` ``gho_`` ``ghu_`` ``ghs_`` ``ghr_`` + 36, and ``github_pat_…``.
- ``gitlab-token``: ``glpat-…`` and the other ``gl…-`` token prefixes.
- ``slack-token``: ``xoxa-`` ``xoxb-`` ``xoxe-`` ``xoxp-`` ``xoxr-`` ``xoxs-`` (with a digit)
  and ``xapp-``.
- ``slack-webhook``: the path of ``https://hooks.slack.com/services/…``.
- ``stripe-key``: ``sk_live_`` ``sk_test_`` ``rk_live_`` ``rk_test_`` and ``whsec_``.
  Publishable ``pk_`` keys are not secret.
- ``google-api-key``: ``AIza`` + 35.
- ``google-oauth``: ``GOCSPX-`` client secrets and ``ya29.`` access tokens.
- ``huggingface-token``: ``hf_`` + 30 or more letters and digits.
- ``npm-token``: ``npm_`` + 36.
- ``pypi-token``: ``pypi-AgE…``.
- ``sendgrid-api-key``: ``SG.<22>.<43>``.
- ``docker-token``: Docker Hub personal access tokens, ``dckr_pat_…``.
- ``aws-access-key``: ``AKIA`` ``ASIA`` ``ABIA`` ``ACCA`` + 16 upper-case letters and digits.
- ``aws-secret-key``: the 40-character value of ``aws_secret_access_key`` or
  ``SecretAccessKey``.
- ``url-password``: the password in ``scheme://user:password@host`` (an ``@`` in it too). The
  user and host stay.
- ``bearer-token``: ``Bearer <token>`` (16+ characters, with a digit or 24+ long).
- ``auth-header``: ``Authorization: [Basic|Token|Bot|Digest] <credentials>``.
- ``registry-auth``: the base64 ``user:password`` of a registry: ``"auth": "…"`` in Docker's
  ``config.json``, ``_auth=…`` in ``.npmrc`` (8+ characters, a multiple of 4, with a digit,
  ``+``, ``/``, ``=`` or an upper-case letter after the first: not ``"auth": "required"``).
- ``cookie``: the value of a ``Cookie:`` or ``Set-Cookie:`` header, all its pairs (and
  attributes), when one of its first values looks random (16+ characters, or 8+ with a
  digit): ``Cookie: theme=dark`` stays.
- ``password``: the value of a key ending in ``password``, ``passwd``, ``passphrase``,
  ``_pass`` or ``_pwd``, in these styles:

  - quoted: ``password = "…"``, ``"password": "…"``;
  - env: ``DB_PASSWORD=…``;
  - flags: ``--password=foo``, ``--password "a b"``, and ``--password foo`` when the value has
    a digit or a symbol or ends the command (so not "the --password option is …");
  - ``.netrc``: ``machine h login u password p``;
  - commands: ``mysql -pS3cret`` (and ``mysqldump``, ``mariadb``), ``sshpass -p pw``, the
    password of ``curl -u user:pw`` (``--user``, ``-U``), ``docker login -p pw`` (and
    ``podman``, ``buildah``, ``skopeo``, ``nerdctl``, ``helm registry``; not ``-p $VAR``);
  - Python: the literal password of ``auth=('user', 'pw')`` and ``HTTPBasicAuth(user, 'pw')``
    (``HTTPDigestAuth``, ``HTTPProxyAuth``, ``aiohttp.BasicAuth``);
  - bare values with a digit or a symbol: ``password: hunter2``.
- ``secret``: the same styles for keys ending in ``secret``, ``token``, ``credentials``,
  ``api_key``, ``access_key``, ``secret_key``, ``private_key``, ``storage_key``,
  ``AccountKey`` and the like. A quoted or bare value must look random: 8+ characters without
  spaces and with a digit (a quoted one may instead be 24+ long). Env values (quoted or not)
  and flag values may be anything that is not a stand-in.

Where a token starts: not inside a longer word or token (``_START``), so ``AKIAproject`` and
``risk-…`` are words. A distinctive prefix (``ghp_`` and the other GitHub ones, ``glpat-``,
``xoxb-``, ``sk_live_``, ``AIza``, ``GOCSPX-``, ``sk-ant-``, ``sk-proj-``, ``pypi-AgE``,
``SG.``, ``dckr_pat_``) starts one after a ``-`` or ``_`` too (``_PREFIX_START``): a shell's
``${GH_TOKEN:-ghp_…}``, a category in kebab form (``deploy-with-ghp_…``). A bare ``sk-``,
``hf_`` or ``npm_`` does not: ``locale-sk-sk-2024-…`` and ``load_hf_…`` are names.

Deliberately not redacted, because false positives cost search quality:

- the words in prose ("reset your password", "a token limit", "pass the --token flag");
- values that are code (``password = None``, ``token = get_token()``,
  ``api_key = settings.API_KEY``, ``password: str``, ``private_key: Ed25519PrivateKey``,
  ``verify_token=expected_token``);
- placeholders and stand-ins (``"${DB_PASSWORD}"``, ``"$DB_PASSWORD"``, ``"<your key>"``,
  ``"{token}"``, ``"%s"``, ``YOUR_API_KEY``, ``sk-...``, ``xxx``, ``****``);
- tokenizer special tokens (``"pad_token": "[PAD]"``);
- plain numbers (``max_token = 512``);
- git SHAs and UUIDs.

The price is that a bare value made only of letters, under a lower-case key
(``password: hunter``), is kept.

Speed: a pattern can only match where one of its anchors matches in the lower-cased text. An
anchor is a small regex that starts with a literal, such as ``ghp_`` or ``-----begin ``; for
key words it is the word plus a lookahead for what may follow it (an operator, or a space after
a flag). Literal prefixes make the anchor search about as fast as ``str.find``.
:func:`find_secrets` finds the anchors, then tries the pattern only at those places. The result
is the same as ``pattern.finditer`` over the whole text, at a fraction of the cost. The four
command-line rules (``mysql -p…``, ``sshpass -p``, ``curl -u``, ``docker login -p``) also need
their command earlier in the same command (:func:`_in_command`), which a regex cannot say
without backtracking. Repeating bodies use possessive quantifiers, and a lookahead that looks
for a digit reads a bounded stretch, so no pattern backtracks badly (a pattern tried at every
``sk-proj-`` of ``sk-proj-sk-proj-…`` must not read to the end each time). A call never
raises.
"""

import bisect
import re

__all__ = ["PATTERNS", "find_secrets", "redact", "redacted_kinds", "without_secrets"]

MARKER = "[REDACTED:"

# --- Building blocks -------------------------------------------------------------------------
# The regexes are assembled by hand; the formatter would put every `+` on a line of its own.
# fmt: off

# Keys whose value is a password (case-insensitive). The short forms need a separator before
# them, so ``bypass`` and ``OLDPWD`` are not keys.
_PASSWORD_KEY = r"(?:passw(?:or)?d|passphrase|(?<=[_.\-])(?:pass|pwd))"
_PASSWORD_ENV_KEY = r"(?<![a-z])(?:PASSW(?:OR)?D|PASSPHRASE|(?<=[_.\-])(?:PASS|PWD))"

# Keys whose value is another secret. A key ending in ``key`` needs one of these words before
# it (``api_key``, ``apiKey``, ``X-API-Key``, ``SECRET_KEY``); ``cache_key`` is not a secret.
_KEY_WORDS = (
    "api",
    "access",
    "secret",
    "private",
    "signing",
    "encryption",
    "master",
    "auth",
    "session",
    "client",
    "storage",
    "account",
)


def _after_key_word(separators: str) -> str:
    """A lookbehind: one of :data:`_KEY_WORDS`, then one of ``separators`` or nothing."""
    return "(?:" + "|".join(
        f"(?<={word})|(?<={word}[{separators}])" for word in _KEY_WORDS
    ) + ")"


_SECRET_KEY = r"(?:secret|token|credentials?|" + _after_key_word(r"_.\-") + "key)"
_SECRET_ENV_KEY = (
    r"(?<![a-z])(?:SECRET|TOKEN|CREDENTIALS?|" + _after_key_word("_").upper() + "KEY)"
)


# A flag name ends at the key: ``--password``, ``--db-password``, ``--api-key``. The patterns
# start at the key word, so the ``--`` before it is a lookbehind (one per prefix length).
_AFTER_DASHES = "(?<=-)(?:(?<=--)|" + "|".join(
    f"(?<=--[a-z0-9][a-z0-9-]{{{n}}}-)" for n in range(24)
) + ")"
_PASSWORD_FLAG = _AFTER_DASHES + r"(?:passw(?:or)?d|passphrase|pass|pwd)"
_SECRET_FLAG = (
    _AFTER_DASHES + r"(?:secret|token|credentials?|" + _after_key_word("-") + "key)"
)

# After a key: an optional closing quote (JSON keys, perhaps JSON-escaped), an optional type
# annotation (``password: str = "…"``), then the operator.
_ASSIGN = (
    r"""\\*["']?[ \t]*(?::[ \t]*[A-Za-z_][\w.\[\]| ]{0,40}?[ \t]*(?==))?"""
    r"(?::=|=>|[:=])[ \t]*"
)
_OPEN_QUOTE = r"""(?:[rRbBuU]{1,2})?\\*["'`]"""
_CLOSE_QUOTE = r"""\\*["'`]"""
# One character of a bare (unquoted) value, and the end of one.
_BARE = r"""[^\s"'`,;(){}\[\]<>\\&|]"""
_BARE_END = "(?!" + _BARE + ")"
# Within a bare value, a "&" followed by more of it ("Tr0ub4dor&3x"): not "&&", not "& ",
# not a query string's next "key=" ("?pw=s3cret&next=/").
_AMP = r"&(?=" + _BARE + r")(?![A-Za-z_][\w.-]*=)"
_VALUE = "(?:" + _BARE + "|" + _AMP + ")"
# Values that stand in for a secret: "value", "your_api_key", "xxx", "****", "sk-...".
_STAND_IN = (
    r"(?:(?i:value|secret|password|passwd|pass|pwd|token|key|changeme|example|your[\w-]*"
    r"|x+|\*+)|[\w-]{0,12}(?:\.\.\.|…))"
)
_CONSTANT = r"(?i:none|null|nil|nullptr|undefined|true|false|yes|no|on|off)"
# Quoted values that are templates, variables or stand-ins, not secrets.
# A value starting with a separator is the gap between two strings (``"Password:", x``).
_NOT_QUOTED_SECRET = (
    r"(?![\s,;:)\]}+]|\$\{|\$\(|\{|<|\[|%[sd(]|(?:\$[A-Za-z_]\w*|" + _STAND_IN + ")"
    + _CLOSE_QUOTE + ")"
)
# A CamelCase type name (``password: SecretStr``, ``private_key: Ed25519PrivateKey``).
_TYPE_NAME = r"(?-i:[A-Z][a-z]*+(?:[A-Z][a-z]*+|\d++)*+(?<=[a-z]{2}))"
# Bare values that are code, not secrets: constants, numbers, attribute paths, snake_case
# and CamelCase names, stand-ins.
_NOT_BARE_SECRET = (
    r"(?![$%*=-]|(?:" + _CONSTANT + r"|[\d.]+|[A-Za-z_]\w*(?:\.\w+)+"
    r"|(?-i:[a-z]+(?:_[a-z0-9]+)+)|" + _TYPE_NAME + "|" + _STAND_IN + ")" + _BARE_END + ")"
)
# Words that follow a flag in prose ("pass the --token flag"), not values.
_NOT_FLAG_WORD = (
    r"(?!(?:a|an|and|are|arguments?|as|at|be|by|can|could|does|flags?|for|from|has|have|here"
    r"|if|in|instead|is|it|must|not|of|on|only|options?|or|parameters?|requires?|required"
    r"|should|so|switch|than|that|the|then|this|to|too|used?|value|was|were|when|which|will"
    r"|with|would)\b)"
)
# A value that looks random: 8+ characters with a digit (quoted: or 24+ long).
_RANDOM_QUOTED = r"""(?=[^"'`\\\s]*\d|[^"'`\\\s]{24})[^"'`\\\s]{8,}"""
_RANDOM_BARE = r"(?=" + _BARE + r"{8})(?=" + _VALUE + r"*?\d)" + _VALUE + "++"
# A bare value with a digit or a symbol; with a symbol before them, its brackets are its own
# ("Sup3r$ecret(1)": a function's name has none, "md5(x)" is a call).
_MIXED_BARE = (r"(?=" + _BARE + r"*?[!@#$%^*~?])(?:" + _VALUE + r"|\(" + _VALUE + r"*\)|\["
               + _VALUE + r"*\])++|(?=" + _VALUE + r"*?[0-9!@#%^*+/=~?])" + _VALUE + "++")
# An env value: anything bare but a variable, a constant, a small number or a stand-in.
_ENV_VALUE = (
    r"(?P<secret>(?![$%*{<]|(?:" + _CONSTANT + r"|\d{1,6}|" + _STAND_IN + ")" + _BARE_END + ")"
    + _VALUE + "+)"
)


# An env value in quotes: anything but a variable, a template, a constant, a small number or
# a stand-in.
_ENV_QUOTED = (
    r"""(?P<q>["'])(?P<secret>(?![$%*{<]|(?:""" + _CONSTANT + r"|\d{1,6}|" + _STAND_IN
    + r""")(?P=q))[^"'\r\n]+)(?P=q)"""
)


def _flag_value() -> str:
    """After a flag: ``=value``, `` "a value"``, or `` value`` that has a digit or a symbol
    or ends the command (end of line, a pipe, another flag)."""
    return (
        r"""(?:(?P<eq>=)|[ \t]+)(?P<q>\\*["'])?(?![-$%<{\[]|""" + _STAND_IN + "(?:" + _BARE_END
        + "|" + _CLOSE_QUOTE + "))" + _NOT_FLAG_WORD
        + r"(?(eq)|(?(q)|(?=" + _BARE + r"*?[0-9!@#%^*+/=~?]|" + _BARE
        + r"""++[ \t]*+(?:[\r\n`|;&)]|\\|--?[A-Za-z]|$))))"""
        + r"""(?P<secret>(?(q)[^"'\\\r\n]+|""" + _BARE + "+))"
    )


# Private key blocks. The body is base64 runs, ``Header: value`` lines (Proc-Type, DEK-Info,
# Version, Comment) and line breaks, real or JSON-escaped; possessive, so it never backtracks.
_KEY_LABEL = r"(?:[A-Z0-9]+ ){0,3}PRIVATE KEY(?: BLOCK)?-----"
_KEY_BODY = (
    r"(?:[ \t]*(?:\r?\n|(?:\\+r)?\\+n)[ \t]*"
    r"|[A-Za-z][A-Za-z0-9-]*+:[ \t](?:(?!-----)[^\r\n\\])*+"
    r"|[A-Za-z0-9+/=]++"
    r"|[ \t]++(?!-----END ))*+"  # lines joined by spaces (pasted into one line)
)

_START = r"(?<![A-Za-z0-9_\-])"  # a token does not start inside a longer word or token
# A distinctive prefix (``ghp_``, ``xoxb-``, ``sk-proj-``) starts a token after a "-" or "_"
# too: a shell's ``${TOKEN:-ghp_…}``, a category in kebab form (``deploy-with-ghp_…``).
_PREFIX_START = r"(?<![A-Za-z0-9])"
_END = r"(?![A-Za-z0-9_\-])"

# Command-line flags whose value is a password (the rules below; _COMMANDS names the command).
_MYSQL_FLAG = r"(?<=[ \t])-p(?P<secret>[^\s\"'`|;&]+)"
_SSHPASS_FLAG = r"(?<=[ \t])-p[ \t]*(?P<secret>\"[^\"\r\n]+\"|'[^'\r\n]+'|[^\s\"'`|;&]+)"
_CURL_FLAG = (r"(?<=[ \t])(?:-[uU]|--(?:proxy-)?user)(?:[ \t]+|=)[\"']?[^\s:\"']*:"
              r"(?P<secret>(?![$%{<])[^\s\"']+)")
# docker login -p pw (podman, buildah, …): quoted or not, glued or not; not a variable.
_LOGIN_FLAG = (r"(?<=[ \t])-p(?:[ \t]+|=)?(?P<secret>\"(?![$%{<])[^\"\r\n]+\""
               r"|'(?![$%{<])[^'\r\n]+'|(?![$%{<])[^\s\"'`|;&]+)")

# auth=('user', 'pw') (requests, httpx) and HTTPBasicAuth(user, 'pw'): a literal password
# (the user a literal too, or a name: ``user``, ``cfg.user``, ``os.environ["USER"]``).
_AUTH_PAIR = (
    r"(?i:(?<![a-z0-9])auth[ \t]*=[ \t]*[(\[]|(?:basic|digest|proxy)auth[ \t]*\()[ \t]*"
    r"(?:" + _OPEN_QUOTE + r"""[^"'`\\\r\n]*""" + _CLOSE_QUOTE
    + r"""|[A-Za-z_][\w.]*+(?:\[[^\]\r\n]{0,64}\])?)[ \t]*,[ \t]*""" + _OPEN_QUOTE
    + r"(?P<secret>" + _NOT_QUOTED_SECRET + r"""[^"'`\\\r\n]+)""" + _CLOSE_QUOTE
)

# A cookie header's value: its ``name=value`` pairs (and a Set-Cookie's attributes), when one
# of the first few values looks random (16+ characters, or 8+ with a digit). Every part is
# possessive or bounded: a long value is a random one, so no failed try scans far.
_COOKIE_NAME = r"""[^\s=;,:"'\\]{1,64}+="""
_COOKIE_CHAR = r"""[^\s;,"'\\]"""
_COOKIE = (
    r"""(?<![A-Za-z0-9_])(?i:cookie)\\*["']?[ \t]*:[ \t]*\\*["']?(?P<secret>(?=(?:"""
    + _COOKIE_NAME + _COOKIE_CHAR + r"*+;[ \t]*+){0,8}?" + _COOKIE_NAME + r"(?![$%{<])(?="
    + _COOKIE_CHAR + r"{16}|(?=" + _COOKIE_CHAR + r"{8})" + _COOKIE_CHAR + r"{0,15}?\d))"
    + _COOKIE_NAME + _COOKIE_CHAR + r"*+(?:[ \t]*+;[ \t]*+[^\s=;,\"'\\]++(?:="
    + _COOKIE_CHAR + r"*+)?)*+)"
)

# Anchors of the key-word patterns: the word, then an operator, or a space after a flag.
_AFTER_KEY = r"""(?=\\*["']?[ \t]*[:=]|[ \t])"""
_PASSWORD_ANCHORS = (r"pass(?:w(?:or)?d|phrase)?" + _AFTER_KEY, "pwd" + _AFTER_KEY)
_SECRET_ANCHORS = tuple(word + _AFTER_KEY for word in ("secret", "token", "credentials?", "key"))

# (kind, anchors, pattern). A match starts where an anchor matches the lower-cased text.
_RULES: tuple[tuple[str, tuple[str, ...], str], ...] = (
    # -----BEGIN [RSA|EC|DSA|OPENSSH|ENCRYPTED|PGP] PRIVATE KEY[ BLOCK]----- … -----END …-----
    ("private-key", ("-----begin ",),
        r"-----BEGIN " + _KEY_LABEL + _KEY_BODY + r"(?:[ \t]*-----END " + _KEY_LABEL + ")?"),
    # JWT: base64url JSON header and payload ("eyJ" is '{"'), then the signature.
    ("jwt", ("eyj",),
        r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"),
    # Anthropic: sk-ant-api03-…, sk-ant-admin01-… (before OpenAI's sk-).
    ("anthropic-api-key", ("sk-ant-",),
        _PREFIX_START + r"sk-ant-[A-Za-z0-9_-]{20,}"),
    # OpenAI: sk-<48>, sk-proj-…, sk-svcacct-…, sk-admin-…; with a digit somewhere.
    ("openai-api-key", ("sk-",),
        r"(?:" + _PREFIX_START + r"(?=sk-(?:proj|svcacct|admin)-)|" + _START + ")"
        r"sk-(?=[A-Za-z_-]{0,64}[0-9])[A-Za-z0-9_-]{20,}"),
    # GitHub: ghp_ (classic PAT), gho_ (OAuth), ghu_/ghs_ (app), ghr_ (refresh); github_pat_.
    ("github-token", (r"g(?:h[pousr]_|ithub_pat_)",),
        _PREFIX_START + r"(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})"
        + _END),
    # GitLab: glpat- (personal), gldt- (deploy), glrt- (runner), glptt- (trigger), …
    ("gitlab-token", (r"gl(?:pat|dt|rt|ptt|cbt|soat|oas|ft|imt)-",),
        _PREFIX_START + r"gl(?:pat|dt|rt|ptt|cbt|soat|oas|ft|imt)-[A-Za-z0-9_-]{20,}"
        r"(?:\.[A-Za-z0-9_-]+)*"),
    # Slack: xoxb- (bot), xoxp- (user), xoxa-, xoxe-, xoxr- (refresh), xoxs-; xapp- (app).
    # With a digit (their team and user ids), so not a name such as "xoxb-style-names".
    ("slack-token", (r"x(?:ox|app-)",),
        _PREFIX_START + r"(?:xox[abeprs]-(?=[A-Za-z-]{0,16}[0-9])[A-Za-z0-9-]{10,}"
        r"|xoxe\.xox[bp]-[A-Za-z0-9-]{10,}"
        r"|xapp-\d-[A-Za-z0-9-]{10,})"),
    # Slack incoming webhooks: the URL path is the credential.
    ("slack-webhook", (r"hooks\.slack\.com/",),
        r"hooks\.slack\.com/(?:services|workflows|triggers)/(?P<secret>[A-Za-z0-9_/-]{20,})"),
    # Stripe: secret (sk_) and restricted (rk_) keys, live or test; webhook secrets (whsec_).
    ("stripe-key", (r"sk_(?:live|test)_", r"rk_(?:live|test)_", "whsec_"),
        _PREFIX_START + r"(?:[sr]k_(?:live|test)_[A-Za-z0-9]{10,}|whsec_[A-Za-z0-9]{24,})" + _END),
    # Google API keys: AIza + 35.
    ("google-api-key", ("aiza",),
        _PREFIX_START + r"AIza[A-Za-z0-9_-]{35}" + _END),
    # Google OAuth: client secrets (GOCSPX-) and access tokens (ya29.).
    ("google-oauth", ("gocspx-", r"ya29\."),
        _PREFIX_START + r"(?:GOCSPX-[A-Za-z0-9_-]{20,}|ya29\.[A-Za-z0-9_-]{20,})"),
    # Hugging Face: hf_ + 30+ letters and digits (no "_", so not hf_hub_download).
    ("huggingface-token", ("hf_",),
        _START + r"hf_[A-Za-z0-9]{30,}" + _END),
    # npm: npm_ + 36.
    ("npm-token", ("npm_",),
        _START + r"npm_[A-Za-z0-9]{36}" + _END),
    # PyPI upload tokens are macaroons: pypi-AgE…
    ("pypi-token", ("pypi-age",),
        _PREFIX_START + r"pypi-AgE[A-Za-z0-9_-]{50,}"),
    # SendGrid: SG.<22>.<43>
    ("sendgrid-api-key", (r"sg\.",),
        _PREFIX_START + r"SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}"),
    # Docker Hub personal access tokens: dckr_pat_…
    ("docker-token", ("dckr_pat_",),
        _PREFIX_START + r"dckr_pat_[A-Za-z0-9_-]{20,}"),
    # AWS access key ids: AKIA (long-term), ASIA (temporary), ABIA, ACCA + 16.
    ("aws-access-key", (r"a(?:kia|sia|bia|cca)",),
        r"(?<![A-Z0-9])(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Z0-9])"),
    # AWS secret access keys: 40 base64 characters after their key name.
    ("aws-secret-key", ("aws", r"secret[_.\-]?access"),
        r"(?i:aws[_.\-]?secret[_.\-]?(?:access[_.\-]?)?key|secret[_.\-]?access[_.\-]?key)"
        + _ASSIGN + r"""\\*["']?(?P<secret>[A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])"""),
    # scheme://user:password@host: only the password goes.
    ("url-password", ("://",),
        r"""://[^\s:/?#@"'<>\\\[\]]*:(?P<secret>(?![$%{<*]|""" + _STAND_IN
        + r"""@)(?:[^\s/?#@"'<>\\]|@(?=[^\s/?#"'<>\\]*@))+)@"""),
    # Bearer <token>, in a header or not.
    ("bearer-token", (r"bearer[ \t]",),
        r"\b[Bb]earer[ \t]+(?P<secret>(?=[A-Za-z0-9\-._~+/]*[0-9]|[A-Za-z0-9\-._~+/]{24})"
        r"[A-Za-z0-9\-._~+/]{16,}=*)"),
    # Authorization: Basic <base64> / Token … / Bot … / Digest …, or bare credentials.
    ("auth-header", (r"""authorization(?=\\*["']?[ \t]*[:=])""",),
        r"(?i:authorization)" + _ASSIGN + r"""\\*["']?(?:(?i:basic|token|bot|digest|apikey)"""
        r"""[ \t]+)?(?P<secret>(?![$%{<])(?=[^\s"'\\]*[0-9=+/]|[^\s"'\\]{24})[^\s"'\\,;]{8,})"""),
    # Docker's config.json "auth" and .npmrc's _auth: base64 of user:password.
    ("registry-auth", (r'"auth\\*"', r"_auth(?=[ \t]*=)"),
        r"""(?:"auth\\*"[ \t]*:[ \t]*\\*"|(?<![A-Za-z0-9])_auth[ \t]*=[ \t]*["']?)"""
        r"(?P<secret>(?=[A-Za-z0-9+/]{8})(?=[A-Za-z0-9+/]{0,64}?[0-9+/=]"
        r"|[A-Za-z0-9+/]{1,64}?[A-Z])(?:[A-Za-z0-9+/]{4})++(?:[A-Za-z0-9+/]{2}==|"
        r"[A-Za-z0-9+/]{3}=)?)(?![A-Za-z0-9+/=])"),
    # Cookie: session=…, Set-Cookie: sid=…; Path=/; HttpOnly
    ("cookie", (r"""cookie(?=\\*["']?[ \t]*:)""",), _COOKIE),
    # password = "…", "password": "…", password: str = '…', \"password\": \"…\"
    # (not a label such as "challengePassword").
    ("password", _PASSWORD_ANCHORS,
        r"(?i:" + _PASSWORD_KEY + _ASSIGN + _OPEN_QUOTE + r"(?P<secret>" + _NOT_QUOTED_SECRET
        + r"(?![A-Za-z_-]*pass(?:word|wd)?[A-Za-z_-]*" + _CLOSE_QUOTE
        + r""")[^"'`\\\r\n]+)""" + _CLOSE_QUOTE + ")"),
    # api_key = "…", "token": "…" with a random-looking value.
    ("secret", _SECRET_ANCHORS,
        r"(?i:" + _SECRET_KEY + _ASSIGN + _OPEN_QUOTE
        + r"(?P<secret>" + _NOT_QUOTED_SECRET + _RANDOM_QUOTED + ")" + _CLOSE_QUOTE + ")"),
    # DB_PASSWORD=…, export PGPASSWORD=…: an upper-case env key takes any bare value.
    ("password", _PASSWORD_ANCHORS,
        _PASSWORD_ENV_KEY + "=" + _ENV_VALUE),
    # API_TOKEN=…, AWS_SESSION_TOKEN=…, SECRET_KEY=…
    ("secret", _SECRET_ANCHORS,
        _SECRET_ENV_KEY + "=" + _ENV_VALUE),
    # API_TOKEN="…", export AUTH_TOKEN='…': quoted, an env value still (any but a stand-in)
    ("secret", _SECRET_ANCHORS,
        _SECRET_ENV_KEY + "=" + _ENV_QUOTED),
    # --password foo, --db-password=foo, --passphrase "two words"
    ("password", _PASSWORD_ANCHORS,
        _PASSWORD_FLAG + _flag_value()),
    # --token foo, --api-key=foo, --client-secret "…"
    ("secret", _SECRET_ANCHORS,
        _SECRET_FLAG + _flag_value()),
    # Command-line passwords, anchored at the flag; the command must come earlier in the same
    # command (_COMMANDS), so `cp -pr` or `docker run -u 1000:50` are not passwords.
    # mysql -pS3cret (glued to -p; a lone -p prompts), mysqldump, mariadb.
    ("password", (r"-p(?<=[ \t]-p)(?=[^\s\"'`|;&])",), _MYSQL_FLAG),
    # sshpass -p hunter2, -phunter2, -p 'two words'
    ("password", (r"-p(?<=[ \t]-p)",), _SSHPASS_FLAG),
    # curl -u user:password, --user user:password, -U / --proxy-user: only the password goes.
    ("password", (r"-u(?<=[ \t]-u)(?=[ \t=])", r"--(?<=[ \t]--)(?:proxy-)?user(?=[ \t=])"),
        _CURL_FLAG),
    # docker login -u bot -p pw, and podman's, buildah's, skopeo's, nerdctl's, helm registry's
    ("password", (r"-p(?<=[ \t]-p)",), _LOGIN_FLAG),
    # requests.get(url, auth=('admin', 'pw')), HTTPBasicAuth("admin", "pw")
    ("password", (r"auth(?=[ \t]*=[ \t]*[(\[])", r"(?:basic|digest|proxy)auth[ \t]*\("),
        _AUTH_PAIR),
    # .netrc: machine host login user password pw
    ("password", ("machine",),
        r"\bmachine\s+\S+\s+(?:login\s+\S+\s+)?password\s+(?P<secret>[^\s\[]\S*)"),
    # password: hunter2, password=s3cret! (bare: needs a digit or a symbol).
    ("password", _PASSWORD_ANCHORS,
        r"(?i:" + _PASSWORD_KEY + _ASSIGN + _NOT_BARE_SECRET
        + r"(?P<secret>" + _MIXED_BARE + r")(?![(\[]))"),
    # token=abc123def456 (bare: 8+ characters with a digit).
    ("secret", _SECRET_ANCHORS,
        r"(?i:" + _SECRET_KEY + _ASSIGN + _NOT_BARE_SECRET
        + r"(?P<secret>" + _RANDOM_BARE + r")(?![(\[]))"),
)
# The command a flag rule needs before it in the same command (same line, after the last
# ``|``, ``;`` or ``&``, at most _COMMAND_REACH characters back), by the rule's pattern.
_COMMANDS: dict[str, str] = {
    _MYSQL_FLAG: r"\b(?:mysql(?:dump|admin|import|show|check)?|mariadb(?:-dump|-admin)?)\b",
    _SSHPASS_FLAG: r"\bsshpass\b",
    _CURL_FLAG: r"\bcurl\b",
    _LOGIN_FLAG: r"\b(?:docker|podman|buildah|skopeo|nerdctl|helm[ \t]+registry)[ \t]+login\b",
}
_COMMAND_REACH = 500
# fmt: on

PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (kind, re.compile(pattern)) for kind, _, pattern in _RULES
)
_ANCHORS: tuple[tuple[re.Pattern[str], ...], ...] = tuple(
    tuple(re.compile(anchor) for anchor in anchors) for _, anchors, _ in _RULES
)
_CONTEXTS: tuple[re.Pattern[str] | None, ...] = tuple(
    re.compile(_COMMANDS[pattern]) if pattern in _COMMANDS else None for _, _, pattern in _RULES
)
_COMMAND_END = re.compile(r"[\r\n|;&]")


def _in_command(context: re.Pattern[str], text: str, start: int,
                cache: dict[re.Pattern[str], list[int]]) -> bool:
    """Whether ``context`` (a command name) occurs before ``start`` in the same command: at
    most _COMMAND_REACH characters back, with no ``|``, ``;``, ``&`` or line break between.
    The command's positions are found once per text, then looked up by bisection."""
    if context not in cache:
        cache[context] = [m.end() for m in context.finditer(text)]
    commands = cache[context]
    i = bisect.bisect_right(commands, start) - 1
    if i < 0 or start - commands[i] > _COMMAND_REACH:
        return False
    return _COMMAND_END.search(text, commands[i], start) is None


def _lower(text: str) -> str | None:
    """``text`` lower-cased with every character at the same index, or None."""
    lowered = text.replace("\u0130", "i").lower()  # "İ".lower() is two characters
    return lowered if len(lowered) == len(text) else None


def _anchor_starts(anchor: re.Pattern[str], lowered: str) -> list[int]:
    """Every index where ``anchor`` matches, overlapping ones included."""
    starts: list[int] = []
    match = anchor.search(lowered)
    while match is not None:
        starts.append(match.start())
        match = anchor.search(lowered, match.start() + 1)
    return starts


def _matches(
    pattern: re.Pattern[str],
    anchors: tuple[re.Pattern[str], ...],
    text: str,
    lowered: str | None,
    cache: dict[re.Pattern[str], list[int]],
) -> list[re.Match[str]]:
    """What ``pattern.finditer(text)`` yields, trying the pattern only where an anchor is."""
    if lowered is None:
        return list(pattern.finditer(text))
    starts: list[int] = []
    for anchor in anchors:
        if anchor not in cache:
            cache[anchor] = _anchor_starts(anchor, lowered)
        starts.extend(cache[anchor])
    matches: list[re.Match[str]] = []
    end = 0
    for start in sorted(set(starts)):
        if start < end:
            continue
        match = pattern.match(text, start)
        if match is not None:
            matches.append(match)
            end = match.end()
    return matches


def find_secrets(text: str) -> list[tuple[str, int, int]]:
    """The secrets in ``text`` as ``(kind, start, end)``: sorted, not overlapping."""
    lowered = _lower(text)
    cache: dict[re.Pattern[str], list[int]] = {}
    starts: list[int] = []
    spans: list[tuple[int, int, str]] = []
    for (kind, pattern), anchors, context in zip(PATTERNS, _ANCHORS, _CONTEXTS, strict=True):
        grouped = "secret" in pattern.groupindex
        for match in _matches(pattern, anchors, text, lowered, cache):
            if context is not None and not _in_command(context, text, match.start(), cache):
                continue
            start, end = match.span("secret") if grouped else match.span()
            if start >= end or MARKER in text[start:end]:
                continue
            i = bisect.bisect_left(starts, start)
            if (i > 0 and spans[i - 1][1] > start) or (i < len(spans) and spans[i][0] < end):
                continue
            starts.insert(i, start)
            spans.insert(i, (start, end, kind))
    return [(kind, start, end) for start, end, kind in spans]


def redact(text: str) -> str:
    """``text`` with each secret replaced by ``[REDACTED:<kind>]``."""
    parts: list[str] = []
    position = 0
    for kind, start, end in find_secrets(text):
        parts.append(text[position:start])
        parts.append(f"{MARKER}{kind}]")
        position = end
    if not parts:
        return text
    parts.append(text[position:])
    return "".join(parts)


_MARKERS = re.compile(r"\[REDACTED:([\w.-]*)\]")


def redacted_kinds(before: str, after: str) -> set[str]:
    """The kinds of secret redaction took out of ``before`` to make ``after``: the marks
    ``after`` holds that ``before`` did not (no second scan of the text)."""
    return set(_MARKERS.findall(after)) - set(_MARKERS.findall(before))


def without_secrets(text: str) -> str:
    """``text`` with its secrets, and the marks of secrets redacted before, taken out: a
    question asked with a key pasted into it is the question (a search led by the key, or by
    the words of its mark, finds nothing of what was asked)."""
    return _MARKERS.sub(" ", redact(text))
