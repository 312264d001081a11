"""The memory write-path privacy filter: private sections, secrets, levels; on real strings.

Every fake key is built at run time from a prefix and generated characters of the right
shape, so no secret-looking literal sits in the repository for scanners to flag.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import hmac
import json
import random
import string
import time
from collections.abc import Callable

import pytest

from coderecall._privacy import (
    LEVELS,
    PRIVATE_MARKER,
    Filtered,
    classify,
    filter_text,
    redact,
)

ALNUM = string.ascii_letters + string.digits
URLSAFE = ALNUM + "_-"
UPPER = string.ascii_uppercase + string.digits


def fake(length: int, alphabet: str = ALNUM, seed: int = 0) -> str:
    """``length`` generated characters from ``alphabet``, the same on every run."""
    rng = random.Random(f"{length}:{alphabet}:{seed}")
    return "".join(rng.choice(alphabet) for _ in range(length))


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def make_jwt() -> str:
    header = b64url(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    payload = b64url(json.dumps({"sub": "1234567890", "name": "Ada", "iat": 1516239022}).encode())
    signature = hmac.new(b"test-only", f"{header}.{payload}".encode(), hashlib.sha256).digest()
    return f"{header}.{payload}.{b64url(signature)}"


def make_pem(label: str = "RSA PRIVATE KEY", lines: int = 8) -> str:
    body = base64.b64encode(random.Random(label).randbytes(48 * lines)).decode()
    rows = [body[i : i + 64] for i in range(0, len(body), 64)]
    return "\n".join([f"-----BEGIN {label}-----", *rows, f"-----END {label}-----"])


def assert_gone(secret: str, text: str) -> None:
    """No piece of ``secret`` (8 characters or more) is left in ``text``."""
    assert secret not in text
    for i in range(len(secret) - 7):
        assert secret[i : i + 8] not in text, f"a part of the secret is left: {secret[i : i + 8]!r}"


# --- provider tokens ----------------------------------------------------------------------

PROVIDER_TOKENS: list[tuple[str, Callable[[], str]]] = [
    ("openai", lambda: "sk-" + "a" * 48),
    ("openai", lambda: "sk-" + fake(48)),
    ("openai", lambda: "sk-proj-" + fake(156, URLSAFE)),
    ("openai", lambda: "sk-svcacct-" + fake(120, URLSAFE)),
    ("anthropic", lambda: "sk-ant-api03-" + fake(93, URLSAFE) + "AA"),
    ("aws_access_key_id", lambda: "AKIA" + fake(16, UPPER)),
    ("aws_access_key_id", lambda: "ASIA" + fake(16, UPPER)),
    ("github", lambda: "ghp_" + fake(36)),
    ("github", lambda: "gho_" + fake(36)),
    ("github", lambda: "ghu_" + fake(36)),
    ("github", lambda: "ghs_" + fake(36)),
    ("github", lambda: "ghr_" + fake(36)),
    ("github", lambda: "github_pat_" + fake(22) + "_" + fake(59)),
    ("gitlab", lambda: "glpat-" + fake(20, URLSAFE)),
    (
        "slack",
        lambda: "xoxb-" + fake(12, string.digits) + "-" + fake(13, string.digits) + "-" + fake(24),
    ),
    ("slack", lambda: "xoxp-" + fake(12, string.digits) + "-" + fake(32)),
    ("google_api_key", lambda: "AIza" + fake(35, URLSAFE)),
    ("google_oauth_secret", lambda: "GOCSPX-" + fake(28, URLSAFE)),
    ("stripe", lambda: "sk_live_" + fake(24)),
    ("stripe", lambda: "sk_test_" + fake(24)),
    ("stripe", lambda: "rk_live_" + fake(24)),
    ("stripe_webhook", lambda: "whsec_" + fake(32)),
    ("huggingface", lambda: "hf_" + fake(34)),
    ("npm", lambda: "npm_" + fake(36)),
    ("pypi", lambda: "pypi-AgEIcHlwaS5vcmc" + fake(80, URLSAFE)),
    ("sendgrid", lambda: "SG." + fake(22, URLSAFE) + "." + fake(43, URLSAFE)),
    ("jwt", make_jwt),
]


@pytest.mark.parametrize(("kind", "make"), PROVIDER_TOKENS)
def test_provider_tokens_are_redacted_whole(kind: str, make: Callable[[], str]) -> None:
    secret = make()
    result = filter_text(f"Deploy notes: use {secret} for the staging run.\n")
    assert result.text == f"Deploy notes: use [redacted:{kind}] for the staging run.\n"
    assert result.redactions == (kind,)
    assert result.private_sections == 0
    assert result.level == "public"
    assert_gone(secret, result.text)


@pytest.mark.parametrize(("kind", "make"), PROVIDER_TOKENS)
def test_provider_tokens_in_punctuation_and_quotes(kind: str, make: Callable[[], str]) -> None:
    secret = make()
    for text in (f'"{secret}"', f"({secret})", f"`{secret}`,", f"<{secret}>", f"[{secret}]"):
        out = redact(text)
        assert f"[redacted:{kind}]" in out, text
        assert_gone(secret, out)


def test_slack_webhook_keeps_the_host() -> None:
    path = f"T{fake(10, UPPER)}/B{fake(10, UPPER)}/{fake(24)}"
    result = filter_text(f"post to https://hooks.slack.com/services/{path} when done")
    assert result.text == (
        "post to https://hooks.slack.com/services/[redacted:slack_webhook] when done"
    )
    assert result.redactions == ("slack_webhook",)


def test_stripe_publishable_keys_are_public() -> None:
    text = f"Stripe.js: Stripe('pk_live_{fake(24)}'); tests use pk_test_{fake(24, seed=1)}"
    assert filter_text(text) == Filtered(text, (), 0, "public")


def test_a_token_inside_a_longer_word_is_not_a_token() -> None:
    text = f"task-{fake(40)} my_ghp_{fake(36)} XAKIA{fake(16, UPPER)}"
    assert redact(text) == text


# --- private keys ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "label",
    [
        "RSA PRIVATE KEY",
        "PRIVATE KEY",
        "EC PRIVATE KEY",
        "OPENSSH PRIVATE KEY",
        "ENCRYPTED PRIVATE KEY",
    ],
)
def test_pem_private_key_blocks_are_redacted(label: str) -> None:
    pem = make_pem(label)
    result = filter_text(f"Key for the box:\n{pem}\nRotate it monthly.")
    assert result.text == "Key for the box:\n[redacted:private_key]\nRotate it monthly."
    assert result.redactions == ("private_key",)
    for line in pem.splitlines()[1:-1]:
        assert line not in result.text


def test_pem_with_encryption_headers() -> None:
    rows = make_pem().splitlines()
    pem = "\n".join(
        [rows[0], "Proc-Type: 4,ENCRYPTED", "DEK-Info: AES-128-CBC,0A1B2C", "", *rows[1:]]
    )
    assert redact(f"x\n{pem}\ny") == "x\n[redacted:private_key]\ny"


def test_pem_escaped_in_json_is_redacted() -> None:
    pem = make_pem("PRIVATE KEY").replace("\n", "\\n") + "\\n"
    text = '{"type": "service_account", "private_key": "' + pem + '", "client_id": "42"}'
    result = filter_text(text)
    assert result.text == (
        '{"type": "service_account", "private_key": "[redacted:private_key]", "client_id": "42"}'
    )
    assert_gone(pem.split("\\n")[1], result.text)


def test_unclosed_pem_hides_the_key_material() -> None:
    pem = make_pem()
    cut = "\n".join(pem.splitlines()[:-3])  # truncated: no END line
    result = filter_text(f"pasted: {cut}")
    assert result.redactions == ("private_key",)
    for line in cut.splitlines()[1:]:
        assert line not in result.text


def test_pem_header_mentioned_in_code_is_left() -> None:
    code = 'if line.startswith("-----BEGIN RSA PRIVATE KEY-----"):\n    kind = "rsa"\n'
    assert redact(code) == code


# --- passwords in URLs ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "password",
    ["hunter2", "p@ss:w0rd!", "p%40ss%2Fw0rd", "pa#ss?w0rd", "mot-de-passe-été", "a$b&c=d;e"],
)
def test_url_password_is_redacted_user_and_host_kept(password: str) -> None:
    result = filter_text(f"DATABASE_URL=postgres://admin:{password}@db.example.com:5432/app")
    assert (
        result.text == "DATABASE_URL=postgres://admin:[redacted:password]@db.example.com:5432/app"
    )
    assert result.redactions == ("password",)


def test_url_password_variants() -> None:
    assert redact("redis://:s3cr3tpw@localhost:6379/0") == (
        "redis://:[redacted:password]@localhost:6379/0"
    )
    token = "ghs_" + fake(36)
    assert redact(f"git clone https://x-access-token:{token}@github.com/o/r.git") == (
        "git clone https://x-access-token:[redacted:github]@github.com/o/r.git"
    )
    user_token = "ghp_" + fake(36)
    result = filter_text(f"https://{user_token}:x-oauth-basic@github.com/o/r")
    assert result.text == "https://[redacted:github]:[redacted:password]@github.com/o/r"
    assert result.redactions == ("github", "password")


@pytest.mark.parametrize(
    "text",
    [
        "postgres://app:${DB_PASSWORD}@localhost:5432/app",
        "https://user:password@example.com (placeholder in the docs)",
        "postgres://app:****@localhost/app",
        "http://localhost:3000/@vite/client",
        "https://git@github.com/o/r.git and ssh://git@github.com:22/o/r",
        "http://[::1]:8080/health",
        "https://example.com:8443/path?q=a@b",
    ],
)
def test_urls_without_a_real_password_are_left(text: str) -> None:
    assert redact(text) == text


# --- labelled values ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("password=hunter2", "password=[redacted:password]"),
        ("passwd: s3cr3t-Value", "passwd: [redacted:password]"),
        ("DB_PASS=correcthorse", "DB_PASS=[redacted:password]"),
        ("export DB_PASSWORD=changeme", "export DB_PASSWORD=[redacted:password]"),
        ("secret = 'abc123xyz'", "secret = '[redacted:secret]'"),
        ('api_key="abcd1234efgh"', 'api_key="[redacted:api_key]"'),
        ("X-Api-Key: 0123abcd4567", "X-Api-Key: [redacted:api_key]"),
        ("token: tok_12345abcde", "token: [redacted:token]"),
        ('{"client_secret": "Zx9-qq_Pl0"}', '{"client_secret": "[redacted:secret]"}'),
        ('{"access_token":"ya29.a0Af-x_y"}', '{"access_token":"[redacted:token]"}'),
        ("  password: hunter2 # prod", "  password: [redacted:password] # prod"),
        ("--password=S3cure!pass run", "--password=[redacted:password] run"),
        ('db.connect(password="pa ss wo rd")', 'db.connect(password="[redacted:password]")'),
        ('api_key: str = "abcdefgh"', 'api_key: str = "[redacted:api_key]"'),
        ("'password' => 'hunter2',", "'password' => '[redacted:password]',"),
        ("mysql_root_password=Pa55word;", "mysql_root_password=[redacted:password];"),
        ("SECRET_KEY = 'django-insecure-k3y'", "SECRET_KEY = '[redacted:secret]'"),
        ("signing_key: 9f86d081884c7d65", "signing_key: [redacted:secret]"),
        ("password: 1234", "password: [redacted:password]"),
        ('password = "unterminated string', 'password = "[redacted:password]'),
        (
            "GET /v1/items?api_key=abc123def&page=2",
            "GET /v1/items?api_key=[redacted:api_key]&page=2",
        ),
        (
            "Authorization: Bearer abc.def-ghi_123",
            "Authorization: Bearer [redacted:authorization]",
        ),
        (
            "authorization: Basic dXNlcjpwYXNzd29yZA==",
            "authorization: Basic [redacted:authorization]",
        ),
        ('"Authorization": "Token abcdef"', '"Authorization": "Token [redacted:authorization]"'),
        (
            "Proxy-Authorization: Basic Zm9vOmJhcg==",
            "Proxy-Authorization: Basic [redacted:authorization]",
        ),
    ],
)
def test_labelled_values_are_redacted(text: str, expected: str) -> None:
    assert redact(text) == expected


def test_labelled_value_takes_the_kind_of_a_provider_token() -> None:
    key = "sk-" + fake(48)
    ghp = "ghp_" + fake(36)
    text = f"OPENAI_API_KEY={key}\nexport GITHUB_TOKEN={ghp}\nAuthorization: token {ghp}\n"
    result = filter_text(text)
    assert result.text == (
        "OPENAI_API_KEY=[redacted:openai]\nexport GITHUB_TOKEN=[redacted:github]\n"
        "Authorization: token [redacted:github]\n"
    )
    assert result.redactions == ("openai", "github", "github")


def test_aws_secret_access_key_when_labelled() -> None:
    secret = fake(40, ALNUM + "/+")
    result = filter_text(
        f"[default]\naws_access_key_id = AKIA{fake(16, UPPER)}\naws_secret_access_key = {secret}\n"
    )
    assert result.text == (
        "[default]\naws_access_key_id = [redacted:aws_access_key_id]\n"
        "aws_secret_access_key = [redacted:aws_secret_key]\n"
    )
    assert result.redactions == ("aws_access_key_id", "aws_secret_key")
    cli = f'{{"AccessKeyId": "ASIA{fake(16, UPPER)}", "SecretAccessKey": "{secret}"}}'
    assert redact(cli) == (
        '{"AccessKeyId": "[redacted:aws_access_key_id]", '
        '"SecretAccessKey": "[redacted:aws_secret_key]"}'
    )


def test_standalone_bearer_token() -> None:
    opaque = fake(40, URLSAFE + ".~")
    assert redact(f"curl -H 'X-Auth: Bearer {opaque}' https://api.example.com") == (
        "curl -H 'X-Auth: Bearer [redacted:bearer]' https://api.example.com"
    )
    jwt = make_jwt()
    assert redact(f"sent Bearer {jwt} upstream") == "sent Bearer [redacted:jwt] upstream"


def test_a_long_unquoted_value_is_redacted_in_full() -> None:
    value = "a" * 5000  # letters only, which would read as a name if it were short
    assert redact(f"password={value} tail") == "password=[redacted:password] tail"


# --- several secrets, order, private sections -----------------------------------------------


def test_several_secrets_in_text_order() -> None:
    gh, ant, aws = "ghp_" + fake(36), "sk-ant-api03-" + fake(95, URLSAFE), "AKIA" + fake(16, UPPER)
    text = (
        f"first {gh}, then password=hunter2 and {ant}\n"
        f"postgres://u:pw1234@h/db then {aws} and {make_jwt()}"
    )
    result = filter_text(text)
    assert result.redactions == (
        "github",
        "password",
        "anthropic",
        "password",
        "aws_access_key_id",
        "jwt",
    )
    assert result.text == (
        "first [redacted:github], then password=[redacted:password] and [redacted:anthropic]\n"
        "postgres://u:[redacted:password]@h/db then [redacted:aws_access_key_id] and [redacted:jwt]"
    )
    for secret in (gh, ant, aws):
        assert_gone(secret, result.text)


def test_private_sections_are_cut_whole() -> None:
    text = (
        "Deploy steps.\n<private>\nThe root password is hunter2.\n"
        "Call Ana on 555-0100.\n</private>\n"
        "Then <PRIVATE>inline note</Private> and <private reason='hr'>salary</private>. Done."
    )
    result = filter_text(text)
    assert result.text == "Deploy steps.\n[private]\nThen [private] and [private]. Done."
    assert result.private_sections == 3
    assert result.redactions == ()
    for word in ("hunter2", "555-0100", "inline note", "salary", "reason"):
        assert word not in result.text


def test_secrets_inside_private_sections_leave_no_trace() -> None:
    key = "sk-" + fake(48)
    result = filter_text(f"a <private>{key} and password=hunter2</private> b {key}")
    assert result.text == "a [private] b [redacted:openai]"
    assert result.redactions == ("openai",)  # only the visible one
    assert result.private_sections == 1


def test_nested_private_sections_cut_at_the_outermost() -> None:
    result = filter_text("a <private> b <private> c </private> d </private> e")
    assert result.text == "a [private] e"
    assert result.private_sections == 1


def test_unclosed_private_hides_everything_after() -> None:
    key = "ghp_" + fake(36)
    result = filter_text(f"kept <private> hidden\nline two {key}\nand three")
    assert result.text == "kept [private]"
    assert result.private_sections == 1
    assert result.redactions == ()
    nested = filter_text("a <private> b <private> c </private> still hidden")
    assert nested.text == "a [private]"


def test_stray_closing_tag_hides_what_precedes_it() -> None:
    # "<privat>" is a typo for "<private>": what it meant to hide is hidden.
    result = filter_text("note <privat>s3cr3t stuff</private> visible")
    assert result.text == "[private] visible"
    assert result.private_sections == 1
    after_section = filter_text("<private>a</private> b </private> c")
    assert after_section.text == "[private][private] c"
    assert filter_text("</private>only").text == "only"


def test_private_tag_lookalikes_are_not_tags() -> None:
    text = "<privateKey>abc</privateKey> <private/> <privacy>x</privacy>"
    assert filter_text(text).text == text


# --- no false positives ---------------------------------------------------------------------

REALISTIC_CODE = '''\
import hashlib
import os
from dataclasses import dataclass

import httpx

TOKEN_ENV = "GITHUB_TOKEN"
MAX_TOKENS = 4096
KIND_TOKEN = 3


@dataclass
class Settings:
    api_key: str | None = None
    token: str = ""
    password_hash: str = ""
    secret_name: str = "prod/db"
    timeout: float = 30.0


def login(username: str, password: str) -> str:
    """Exchange a password for a session token; the token is refreshed hourly."""
    token = os.environ.get(TOKEN_ENV)
    if token is None:
        token = request_token(username, password)
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
    response = httpx.post("https://api.example.com/v1/session", headers=headers)
    secret = response.json()["secret"]
    if password == secret:
        raise ValueError("password and secret must differ")
    return secret


def count(tokens: list[str], tokenizer: Tokenizer) -> int:
    pad_token = "[PAD]"
    eos_token = "</s>"
    tokenizer.pad_token = tokenizer.eos_token
    return sum(1 for token in tokens if token not in (pad_token, eos_token))


def parse(args: argparse.Namespace) -> None:
    parser.add_argument("--token", help="API token (default: $GITHUB_TOKEN)")
    client = Client(token=args.token, api_key=settings.api_key)
    password = getpass.getpass()
    secret_key = settings.SECRET_KEY
    self.token = token
    if (token := next(stream, None)) is not None:
        lambda token: token.strip()


COMMIT = "3f786850e387550fdab836ed7e6dc881de23001b"
REQUEST_ID = "123e4567-e89b-12d3-a456-426614174000"
DIGEST = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
'''

REALISTIC_TS = """\
export interface Credentials {
  username: string;
  password?: string;
  token: string | null;
}

export async function refreshToken(client: HttpClient, refreshToken: string): Promise<string> {
  const response = await client.post("/oauth/token", {
    grant_type: "refresh_token",
    refresh_token: refreshToken,
  });
  const accessToken: string = response.data.access_token;
  localStorage.setItem("token", accessToken);
  return accessToken;
}

const apiKey = process.env.OPENAI_API_KEY ?? "";
const config = { secret: process.env.APP_SECRET!, token: undefined, password: null };
"""

REALISTIC_CONFIG = """\
name: ci
on: [push]
jobs:
  test:
    runs-on: ubuntu-latest
    env:
      GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}
      DATABASE_URL: postgres://postgres:${POSTGRES_PASSWORD}@localhost:5432/test
    steps:
      - uses: actions/checkout@v4
      - run: pytest -q
services:
  db:
    image: postgres:16
    environment:
      POSTGRES_PASSWORD: ${POSTGRES_PASSWORD}
      POSTGRES_USER: app
      - POSTGRES_DB=app
vault:
  password: !vault |
  token: *default_token
  secret: ~
---
export GITHUB_TOKEN="$(gh auth token)"
curl -H "Authorization: Bearer $GITHUB_TOKEN" https://api.github.com/user
TOKEN=$(cat ~/.token)
{"token_count": 12, "password_min_length": 8, "password": {"type": "string"}}
"""

REALISTIC_RUST_GO = """\
fn new(token: String, password: &str) -> Self {
    let token: &str = &args.token;
    let kind = Token::new(TokenKind::Ident);
}
func Login(token string) error {
    token := os.Getenv("TOKEN")
    secret, err := vault.Read(ctx, "kv/app")
}
"""

PROSE = """\
The token is refreshed every hour, so the secret never leaves the server.
Passwords are hashed with argon2; a token: the opaque string the API returns.
Secret: none. Password reset links expire. Set `api_key` in the config file.
Bearer tokens are sent in a header. Max tokens: 4096. Token count: 12.
Rotate the API key, then re-run `coderecall index`. Private keys stay in the vault.
Les jetons (token) expirent — 令牌会过期 ✓. Use password= on the command line.
"""


@pytest.mark.parametrize(
    "text",
    [REALISTIC_CODE, REALISTIC_TS, REALISTIC_CONFIG, REALISTIC_RUST_GO, PROSE],
    ids=["python", "typescript", "config", "rust-go", "prose"],
)
def test_realistic_text_without_secrets_is_unchanged(text: str) -> None:
    assert filter_text(text) == Filtered(
        text=text, redactions=(), private_sections=0, level="public"
    )


def test_hashes_ids_and_data_urls_are_left() -> None:
    rng = random.Random(7)
    image = base64.b64encode(rng.randbytes(6000)).decode()
    planted = base64.b64encode(rng.randbytes(30)).decode() + "AIza" + fake(35) + "eyJ" + fake(30)
    text = (
        f'<img src="data:image/png;base64,{image}">\n'
        f'<img src="data:image/png;base64,{planted}">\n'
        f"commit {hashlib.sha1(b'x').hexdigest()} uuid 123e4567-e89b-12d3-a456-426614174000 "
        f"sha256 {hashlib.sha256(b'x').hexdigest()} md5 {hashlib.md5(b'x').hexdigest()}"
    )
    assert redact(text) == text


# --- idempotence ----------------------------------------------------------------------------


def test_filtering_is_idempotent() -> None:
    secrets = [make() for _, make in PROVIDER_TOKENS]
    text = "\n".join(
        [
            *(f"value {s}" for s in secrets),
            make_pem(),
            "password=hunter2 passwd: abc123 'secret': 'abcdef' token: tok_1234",
            "api_key: [private] password: <private>x</private> token: <private>",
            "postgres://u:p@ss@h/db Authorization: Bearer abc123 Bearer " + fake(30),
            f"https://{'ghp_' + fake(36)}:x@github.com  DB_PASS=pw  x=<private>y</private>",
        ]
    )
    once = filter_text(text)
    assert once.redactions
    twice = filter_text(once.text)
    assert twice.text == once.text
    assert twice.redactions == ()
    assert twice.private_sections == 0
    for secret in secrets:
        assert_gone(secret, once.text)


# --- levels ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tags", "level", "expected"),
    [
        ((), None, "public"),
        (["python", "auth"], None, "public"),
        (["private"], None, "private"),
        (["Secret"], None, "private"),
        (["PII", "notes"], None, "private"),
        (["sensitive"], "public", "private"),  # a tag is never overridden into exposure
        (["blocked"], None, "blocked"),
        (["do_not_store"], None, "blocked"),
        (["Do Not Store"], None, "blocked"),
        (["no-store", "private"], "public", "blocked"),
        ((), "private", "private"),
        ((), " Blocked ", "blocked"),
        (["public"], "private", "private"),
        ("private", None, "private"),  # one string is one tag
        ("bl", None, "public"),
    ],
)
def test_classify(tags: list[str] | str, level: str | None, expected: str) -> None:
    assert classify(tags, level) == expected


def test_unknown_level_names_the_allowed_ones() -> None:
    with pytest.raises(ValueError, match=r"'secret'.*public, private, blocked"):
        classify((), "secret")
    with pytest.raises(ValueError, match="unknown privacy level"):
        filter_text("x", level="")
    assert LEVELS == ("public", "private", "blocked")


def test_blocked_record_is_returned_empty_for_the_caller_to_refuse() -> None:
    key = "sk-" + fake(48)
    for result in (
        filter_text(f"do not keep {key}", tags=["do-not-store"]),
        filter_text(f"do not keep {key}", level="blocked"),
    ):
        assert result == Filtered(text="", redactions=(), private_sections=0, level="blocked")
        assert result.blocked


def test_private_record_is_still_filtered() -> None:
    key = "sk-" + fake(48)
    result = filter_text(f"<private>x</private> {key}", tags=["private"])
    assert result == Filtered(
        text=f"{PRIVATE_MARKER} [redacted:openai]",
        redactions=("openai",),
        private_sections=1,
        level="private",
    )
    assert not result.blocked


def test_filtered_is_frozen() -> None:
    result = filter_text("hello")
    assert result == Filtered("hello", (), 0, "public")
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.text = "changed"  # type: ignore[misc]


# --- Unicode, redact(), speed ---------------------------------------------------------------


def test_unicode_around_secrets() -> None:
    key = "sk-ant-api03-" + fake(95, URLSAFE)
    text = f"Clé API : {key} — ça marche ✓\n🔑{key}🔒\n密码 password=パスワード123 结束\nméfiance"
    result = filter_text(text)
    assert result.text == (
        "Clé API : [redacted:anthropic] — ça marche ✓\n🔑[redacted:anthropic]🔒\n"
        "密码 password=[redacted:password] 结束\nméfiance"
    )
    assert result.redactions == ("anthropic", "anthropic", "password")
    assert filter_text("<private>日本語の秘密\n🔐</private>ok ✓").text == "[private]ok ✓"


def test_redact_for_logs() -> None:
    gh = "ghp_" + fake(36)
    assert redact(f"request failed: token={gh} <private>note</private>") == (
        "request failed: token=[redacted:github] [private]"
    )
    assert redact("") == ""
    assert redact("plain text") == "plain text"


MB = 1 << 20
ADVERSARIAL = {
    "letters": "a" * MB,
    "words": "ab " * (MB // 3),
    "open-tags": "<private" * (MB // 8),
    "stray-closes": "</private>x" * (MB // 11),
    "sk-prefixes": "sk-" * (MB // 3),
    "keys-no-values": "api_key: " * (MB // 9),
    "nested-calls": "x(token=" * (MB // 8),
    "auth-calls": "x(Authorization:" * (MB // 16),
    "url-starts": "a://b:" * (MB // 6),
    "url-colons": "x://" + ":" * MB,
    "pem-headers": "-----BEGIN PRIVATE KEY-----" * (MB // 27),
    "pem-prose": "-----BEGIN PRIVATE KEY-----\n" + "a b\n" * (MB // 4),
    "jwt-prefixes": "eyJ" * (MB // 3),
    "open-quote": 'password="' + "\\a" * (MB // 2),
    "bearer": "Bearer " * (MB // 7),
    "closing-brackets": "password=a" + ")" * MB,
    "query-values": "?token=&" * (MB // 8),
}


@pytest.mark.parametrize("name", list(ADVERSARIAL))
def test_adversarial_megabyte_is_linear(name: str) -> None:
    text = ADVERSARIAL[name]
    started = time.perf_counter()
    filter_text(text)
    elapsed = time.perf_counter() - started
    assert elapsed < 5.0, f"{name}: {elapsed:.2f} s for {len(text)} characters"


def test_a_shrunk_text_is_filtered_as_exactly_as_the_whole() -> None:
    # Private sections and private keys are cut from the whole text before the cut; the
    # rest is redacted in what the cut keeps, and once more in what it returns.
    token = "ghp_" + fake(36)
    body = fake(64, ALNUM + "+/")
    key = "\n".join(
        ["-----BEGIN RSA PRIVATE KEY-----", *[body] * 8, "-----END RSA PRIVATE KEY-----"]
    )
    text = "\n".join([f"token {token}", "<private>12 Elm Street", "x</private>", "a", key, "z"])
    seen: list[str] = []

    def last_lines(visible: str, redact: Callable[[str], str]) -> str:
        seen.append(visible)
        return "\n".join(redact(line) for line in visible.splitlines()[-3:])

    filtered = filter_text(text, shrink=last_lines)
    assert filtered.text == "a\n[redacted:private_key]\nz"
    assert body not in seen[0]  # cut from the whole text, before the cut
    assert "Elm Street" not in seen[0]
    assert filtered.redactions == ("private_key",)
    assert filtered.private_sections == 1
    whole = filter_text(text)
    assert whole.text.endswith(filtered.text)
    kept = filter_text(text, shrink=lambda visible, redact: redact(visible))
    assert kept.text == whole.text
    assert kept.redactions == ("private_key", "github")  # private keys listed first
