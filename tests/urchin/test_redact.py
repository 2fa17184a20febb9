"""Capture-time redaction and .urchinignore: what reaches the journal, and what never does.

Every fake secret here is assembled from parts at run time, so no secret-shaped literal
sits in the repository for a scanner to flag.
"""

from __future__ import annotations

import base64
import json
import random
import re
import string
from collections.abc import Callable
from pathlib import Path
from re import _constants as re_constants  # the parse tree's opcodes
from re import _parser as re_parser  # the standard library's own parser
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support import CliResult
from tests.urchin.redact.work import MODULES, Tally, counting
from urchin.config import load_settings
from urchin.ephemeral import Ephemeral
from urchin.errors import ConfigError
from urchin.event import Actor, Event
from urchin.ignore import IgnorePolicy
from urchin.journal import Journal
from urchin.recorder import Outcome, Recorder
from urchin.redact import (
    BUILTIN,
    Guard,
    Redactor,
    RegexRule,
    Scan,
    count_markers,
    event_marker_counts,
    redact,
)
from urchin.redact import scan as scan_module
from urchin.redact.rules.providers import ProviderTokens

Urchin = Callable[..., CliResult]

_RNG = random.Random(20260504)
_ALNUM = string.ascii_letters + string.digits


def rand(n: int, alphabet: str = _ALNUM) -> str:
    """Deterministic random characters; always mixes upper, lower and digits when it can."""
    while True:
        value = "".join(_RNG.choice(alphabet) for _ in range(n))
        if alphabet != _ALNUM or (
            any(c.isupper() for c in value)
            and any(c.islower() for c in value)
            and any(c.isdigit() for c in value)
        ):
            return value


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def pem(label: str, *, end: bool = True, escaped: bool = False) -> str:
    nl = "\\n" if escaped else "\n"
    body = base64.b64encode(bytes(_RNG.randrange(256) for _ in range(180))).decode()
    lines = [body[i : i + 64] for i in range(0, len(body), 64)]
    dash = "-" * 5
    text = f"{dash}BEGIN {label}{dash}{nl}" + nl.join(lines) + nl
    if end:
        text += f"{dash}END {label}{dash}"
    return text


PRIV = "PRIVATE " + "KEY"
JWT = ".".join(
    [
        b64url(json.dumps({"alg": "HS256", "typ": "JWT"}).encode()),
        b64url(json.dumps({"sub": "1234567890", "name": "Jo", "iat": 1516239022}).encode()),
        b64url(bytes(range(32))),
    ]
)
AWS_SECRET = rand(40, _ALNUM + "/+")
AZURE_KEY = base64.b64encode(bytes(_RNG.randrange(256) for _ in range(64))).decode()

# (kind, the secret that must vanish, text that carries it)
CORPUS: list[tuple[str, str, str]] = [
    ("private_key", (k := pem(PRIV)), f"here is the key\n{k}\nthanks"),
    ("private_key", (k := pem("RSA " + PRIV)), f"cat id_rsa\n{k}"),
    ("private_key", (k := pem("EC " + PRIV)), f"{k}"),
    ("private_key", (k := pem("OPENSSH " + PRIV)), f"~/.ssh/id_ed25519:\n{k}\n"),
    ("private_key", (k := pem("PGP " + PRIV + " BLOCK")), f"gpg --export-secret-keys\n{k}"),
    ("private_key", (k := pem(PRIV, end=False)), f"truncated: {k}"),
    ("private_key", (k := pem(PRIV, escaped=True)), '{"type": "x", "private_key": "' + k + '"}'),
    ("aws_key", (k := "AK" + "IA" + rand(16, string.ascii_uppercase + string.digits)), f"id {k}."),
    ("aws_key", (k := "AS" + "IA" + rand(16, string.ascii_uppercase + string.digits)), f"{k}"),
    ("aws_secret", AWS_SECRET, f"aws_secret_access_key = {AWS_SECRET}"),
    ("aws_secret", AWS_SECRET, f'"SecretAccessKey": "{AWS_SECRET}"'),
    ("gcp_api_key", (k := "AI" + "za" + rand(35, _ALNUM + "_-")), f"key={k}&q=1"),
    (
        "azure_key",
        AZURE_KEY,
        f"DefaultEndpointsProtocol=https;AccountName=x;AccountKey={AZURE_KEY};",
    ),
    ("azure_sas", (k := rand(43) + "%3D"), f"https://x.blob.core.windows.net/c?sv=2022&sig={k}"),
    ("github_token", (k := "gh" + "p_" + rand(36)), f"export GITHUB_TOKEN={k}"),
    ("github_token", (k := "gh" + "o_" + rand(36)), f"oauth {k}"),
    ("github_token", (k := "gh" + "u_" + rand(36)), f"{k}"),
    ("github_token", (k := "gh" + "s_" + rand(36)), f"server {k} done"),
    ("github_token", (k := "gh" + "r_" + rand(36)), f"refresh={k}"),
    ("github_token", (k := "github" + "_pat_" + rand(22) + "_" + rand(59)), f"pat {k}"),
    ("gitlab_token", (k := "gl" + "pat-" + rand(20)), f"GITLAB {k}"),
    ("slack_token", (k := "xo" + "xb-" + "1234567890-" + rand(24)), f"slack bot {k}"),
    ("slack_token", (k := "xo" + "xp-" + "12345-67890-" + rand(24)), f"{k}"),
    (
        "slack_webhook",
        (k := "T0" + rand(8).upper() + "/B0" + rand(8).upper() + "/" + rand(24)),
        f"curl https://hooks.slack.com/services/{k}",
    ),
    ("openai_key", (k := "s" + "k-" + rand(48)), f"OPENAI {k}"),
    ("openai_key", (k := "s" + "k-proj-" + rand(40) + "_" + rand(20)), f"{k}"),
    ("anthropic_key", (k := "s" + "k-ant-api03-" + rand(80) + "-" + rand(12)), f"key {k}"),
    ("stripe_key", (k := "s" + "k_live_" + rand(24)), f"stripe {k}"),
    ("stripe_key", (k := "r" + "k_live_" + rand(24)), f"{k}"),
    ("jwt", JWT, f"cookie session={JWT}; Path=/"),
    ("password", "hunter2x", "password=hunter2x"),
    ("password", "hunter2x", "DB_PASSWORD: hunter2x"),
    ("password", "correct horse battery", 'conn(password="correct horse battery")'),
    ("password", "s3cr3t!", '{"passwd": "s3cr3t!"}'),
    ("password", "hunter2x", "mysql --password hunter2x -u root"),
    ("password", "hunter2x", "psql --password=hunter2x"),
    ("token", "abc123def", "token=abc123def&page=2"),
    ("token", "tok-99887766", "--token tok-99887766"),
    ("secret", "shh-0123", "client_secret: shh-0123"),
    ("api_key", "k-42-abcdef", '{"api_key": "k-42-abcdef"}'),
    ("api_key", "k-42-abcdef", "X-Api-Key: k-42-abcdef"),
    ("bearer", (k := rand(32)), f"curl -H 'Authorization: Bearer {k}' https://api"),
    ("basic_auth", (k := base64.b64encode(b"me:pa55word").decode()), f"Authorization: Basic {k}"),
    ("bearer", (k := rand(24)), f"header bearer {k}"),
    ("connection_string", "pa55word", "postgres://alice:pa55word@db.internal:5432/app"),
    ("connection_string", "p@ss:w0rd", "redis://:p@ss:w0rd@cache:6379/0"),
    ("secret", (k := rand(32)), f"STRIPE_SIGNING_KEY_V2={k}"),
    ("secret", (k := rand(28)), f"auth_header_value: {k}"),
]


@pytest.mark.parametrize(("kind", "secret", "text"), CORPUS, ids=[c[0] for c in CORPUS])
def test_every_secret_shape_is_replaced_by_its_marker(kind: str, secret: str, text: str) -> None:
    redacted = redact(text)
    assert secret not in redacted
    assert f"[REDACTED:{kind}]" in redacted
    assert redact(redacted) == redacted


@pytest.mark.parametrize(("kind", "secret", "text"), CORPUS[::4], ids=[c[0] for c in CORPUS[::4]])
def test_secrets_are_redacted_in_content_title_and_tags(kind: str, secret: str, text: str) -> None:
    event = Event.create(text, "cli", title=f"about {text}", tags=[text, "plain"])
    clean = Redactor().redact_event(event)
    line = clean.to_line().decode()
    assert secret not in line
    assert f"[REDACTED:{kind}]" in clean.content
    assert f"[REDACTED:{kind}]" in (clean.title or "")
    assert f"[REDACTED:{kind}]" in clean.tags[0]
    assert clean.tags[1] == "plain"
    assert clean.id == event.id


def test_connection_string_keeps_scheme_user_and_host() -> None:
    out = redact("DATABASE_URL=postgresql+psycopg://app_user:S3cr3t-pw@db.example.com:5432/prod")
    assert out == (
        "DATABASE_URL=postgresql+psycopg://app_user:[REDACTED:connection_string]"
        "@db.example.com:5432/prod"
    )


def test_only_the_value_of_an_assignment_goes() -> None:
    assert (
        redact('export API_TOKEN="t0k3n"; echo ok')
        == 'export API_TOKEN="[REDACTED:token]"; echo ok'
    )
    assert redact("Authorization: Bearer abc.def-123") == "Authorization: Bearer [REDACTED:bearer]"


NEAR_MISSES = [
    "commit 3f2a9c0d1e4b5a6c7d8e9f0011223344556677aa merged",
    "sha256 " + "ab" * 32,
    "blob " + "0123456789abcdef" * 4,
    "request id 19180341-2b2d-4964-9a20-e105802451cb and 68E36C47-9BFF-4B08-88F5-9170E1DB6719",
    "event_id=5f0c6e1d-2b7a-4c1e-9a55-0d4f3e2b1a90",
    "cache_key=3f2a9c0d1e4b5a6c7d8e9f0011223344556677aa",
    "/home/user/dev/project/src/urchin/redact.py:120",
    "SSH_KEY_PATH=/home/user/.ssh/id_ed25519 and PWD=/home/user/dev",
    "Please reset your password before the token expires.",
    "The password policy requires 12 characters; tokens are rotated daily.",
    "token_count=5 max_tokens=4096 tokens_used: 1200",
    "key: the most important part is the secret sauce",
    "passwd:         files systemd",
    "def login(password: str, token: str | None = None) -> None:",
    "token = args.token; password = getpass()",
    "password=os.environ['DB_PASSWORD']",
    "export API_TOKEN=$API_TOKEN; curl -H 'Authorization: Bearer $TOKEN'",
    "secret: <your-secret-here> password: ${DB_PASSWORD}",
    "aGVsbG8gd29ybGQgdGhpcyBpcyBhIHRlc3Q= is base64 of a greeting",
    "Token::new(kind) and Secret::from(x)",
    "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----",
    "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU\n-----END CERTIFICATE-----",
    "the bearer of bad news; sk-learn-compatible-estimator-interface",
    "https://example.com/path?page=2&sort=asc and git@github.com:org/repo.git",
    "if token == expected: return",
    "Asia and AKIA are just words here",
    "ghp_ alone, eyJ alone, xoxb- alone",
]


@pytest.mark.parametrize("text", NEAR_MISSES)
def test_near_misses_are_left_alone(text: str) -> None:
    assert redact(text) == text


def test_workspace_session_and_meta_strings_are_redacted() -> None:
    token = "gh" + "p_" + rand(36)
    event = Event.create(
        "ran it",
        "cli",
        workspace="https://bob:hunter22@git.example.com/repo",
        session=f"s-{token}",
        actor=Actor("me", "laptop", workspace="https://bob:hunter22@git.example.com/repo"),
        meta={"api_key": "plainvalue", "nested": {"items": [f"x {token}"]}, "count": 3},
    )
    clean = Redactor().redact_event(event)
    line = clean.to_line().decode()
    assert token not in line
    assert "hunter22" not in line
    assert clean.meta is not None
    assert clean.meta["api_key"] == "[REDACTED:api_key]"
    assert clean.meta["count"] == 3
    assert clean.actor is not None and clean.actor.account == "me"
    assert event_marker_counts(clean)["github_token"] == 2
    assert event_marker_counts(clean)["connection_string"] == 2


def test_markers_are_counted_in_every_field_redaction_writes() -> None:
    token = "gh" + "p_" + rand(36)
    key = "AK" + "IA" + rand(16, string.ascii_uppercase + string.digits)
    event = Event.create(
        "plain words",
        f"bot-{token}",
        f"deploy-{key}",
        actor=Actor(f"me-{token}", f"box-{key}", node_id=f"n-{token}"),
    )
    clean = Redactor().redact_event(event)
    line = clean.to_line().decode()
    assert token not in line and key not in line
    # source, actor account and node id hold the GitHub token; the kind and device the AWS key.
    assert event_marker_counts(clean) == {"github_token": 3, "aws_key": 2}
    assert event_marker_counts(event) == {}


def test_unchanged_event_is_returned_as_is() -> None:
    event = Event.create("nothing secret here", "cli", tags=["a"])
    assert Redactor().redact_event(event) is event
    assert Redactor(enabled=False).redact_event(Event.create("password=x1", "cli")).content == (
        "password=x1"
    )


def test_counts_of_markers() -> None:
    text, counts = Redactor().redact_counted("password=a1 token=b2 password=c3")
    assert counts == {"password": 2, "token": 1}
    assert count_markers(text) == counts


# -- configuration ---------------------------------------------------------------------------


def test_extra_patterns_and_allowlist_from_config(isolated_home: Path) -> None:
    allowed = "AK" + "IA" + "IOSFODNN7EXAMPLE"
    config = isolated_home / ".config" / "urchin" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(
        "redact_patterns = ['ACME-[0-9]{6}', 'employee=(?P<secret>\\w+)']\n"
        f"redact_allow = ['{allowed}', 're:hunter[0-9]+']\n",
        encoding="utf-8",
    )
    settings = load_settings()
    assert settings.redact_patterns == ("ACME-[0-9]{6}", r"employee=(?P<secret>\w+)")
    redactor = Redactor.from_settings(settings)
    out = redactor.redact(f"ticket ACME-123456 employee=jdoe key {allowed} password=hunter12")
    assert (
        out
        == f"ticket [REDACTED:custom] employee=[REDACTED:custom] key {allowed} password=hunter12"
    )
    # Still redacts what the allowlist does not name.
    assert redactor.redact("password=other1") == "password=[REDACTED:password]"


@pytest.mark.parametrize(
    ("raw", "index"), [("['ok', '(unclosed']", 1), ("['[z-a]']", 0), ("['a*']", 0)]
)
def test_invalid_pattern_is_a_config_error_naming_its_index(
    isolated_home: Path, raw: str, index: int
) -> None:
    config = isolated_home / ".config" / "urchin" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(f"redact_patterns = {raw}\n", encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_settings()
    assert f"redact_patterns[{index}]" in caught.value.message
    assert "line 1" in caught.value.message
    with pytest.raises(ConfigError, match=r"redact_allow\[0\]"):
        Redactor(allow=["re:(("])


@pytest.mark.parametrize(("raw", "expected"), [("0", False), ("off", False), ("YES", True)])
def test_redact_switch_from_env(raw: str, expected: bool) -> None:
    assert load_settings({"HOME": "/nonexistent", "URCHIN_REDACT": raw}).redact is expected
    with pytest.raises(ConfigError, match="URCHIN_REDACT"):
        load_settings({"HOME": "/nonexistent", "URCHIN_REDACT": "maybe"})


def test_config_set_and_show_for_redaction_keys(urchin: Urchin, isolated_home: Path) -> None:
    assert urchin("config", "set", "redact", "off").code == 0
    assert urchin("config", "set", "redact_allow", '["literal", "re:ab+c"]').code == 0
    assert urchin("config", "set", "redact_patterns", "ACME-[0-9]{2,4}").code == 0
    shown = urchin("config", "show", "--json").json()
    assert shown["values"]["redact"] is False
    assert shown["values"]["redact_allow"] == ["literal", "re:ab+c"]
    assert shown["values"]["redact_patterns"] == ["ACME-[0-9]{2,4}"]
    bad = urchin("config", "set", "redact_patterns", '["fine", "(oops"]')
    assert bad.code == 2
    assert "redact_patterns[1]" in bad.stderr
    assert "Traceback" not in bad.stderr
    bad_bool = urchin("config", "set", "redact", "perhaps")
    assert bad_bool.code == 2 and "true or false" in bad_bool.stderr


# -- .urchinignore ---------------------------------------------------------------------------


def _recorder(tmp_path: Path, policy: IgnorePolicy) -> Recorder:
    return Recorder(Journal(tmp_path / "j.jsonl"), Ephemeral(tmp_path / "data"), ignore=policy)


def _lines(path: Path) -> list[dict[str, object]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_global_urchinignore_drops_matching_workspaces(tmp_path: Path, isolated_home: Path) -> None:
    ignore = isolated_home / ".config" / "urchin" / "urchinignore"
    ignore.parent.mkdir(parents=True)
    ignore.write_text(
        "# clients under NDA\n~/clients/acme\n\n/srv/*/private\nscratch-*\n", encoding="utf-8"
    )
    policy = IgnorePolicy.from_env()
    home = str(isolated_home)
    assert policy.ignores(f"{home}/clients/acme")
    assert policy.ignores(f"{home}/clients/acme/api/src")
    assert policy.ignores("~/clients/acme")
    assert policy.ignores("/srv/web/private")
    assert policy.ignores(f"{home}/dev/scratch-2026/sub")
    assert not policy.ignores(f"{home}/clients/acme-two")
    assert not policy.ignores(f"{home}/dev/project")
    assert not policy.ignores(None)

    recorder = _recorder(tmp_path, policy)
    kept = Event.create("kept", "cli", workspace=f"{home}/dev/project")
    dropped = Event.create("dropped", "cli", workspace=f"{home}/clients/acme/x")
    assert recorder.record(dropped) is Outcome.IGNORED
    batch = recorder.record_batch([kept, dropped])
    assert (batch.outcome, batch.written, batch.ignored) == (Outcome.OK, 1, 1)
    assert recorder.record_many([dropped, dropped]) is Outcome.IGNORED
    assert [line["content"] for line in _lines(tmp_path / "j.jsonl")] == ["kept"]


def test_workspace_urchinignore_in_folder_or_parent(tmp_path: Path) -> None:
    secret_project = tmp_path / "work" / "secret"
    (secret_project / "deep" / "er").mkdir(parents=True)
    (secret_project / ".urchinignore").write_text("# whole folder\n", encoding="utf-8")
    mixed = tmp_path / "work" / "mixed"
    (mixed / "drafts" / "a").mkdir(parents=True)
    (mixed / "code").mkdir()
    (mixed / ".urchinignore").write_text("drafts\nvendor/*/keys\n", encoding="utf-8")
    policy = IgnorePolicy(None, home=tmp_path)
    assert policy.ignores(str(secret_project))
    assert policy.ignores(str(secret_project / "deep" / "er"))
    assert policy.ignores(str(mixed / "drafts" / "a"))
    assert policy.ignores(str(mixed / "vendor" / "x" / "keys"))
    assert not policy.ignores(str(mixed))
    assert not policy.ignores(str(mixed / "code"))
    assert not policy.ignores(str(tmp_path / "work"))
    assert policy.files_for(secret_project / "deep") == [secret_project / ".urchinignore"]

    recorder = _recorder(tmp_path, policy)
    event = Event.create("x", "cli", workspace=str(secret_project / "deep"))
    assert recorder.record(event) is Outcome.IGNORED
    # The actor's workspace counts too, for events that carry only that.
    by_actor = Event.create("y", "cli", actor=Actor("me", "box", workspace=str(secret_project)))
    assert recorder.record(by_actor) is Outcome.IGNORED
    assert not (tmp_path / "j.jsonl").exists()


def test_ignore_lookups_are_cached_and_refreshed(tmp_path: Path) -> None:
    folder = tmp_path / "proj"
    folder.mkdir()
    cached = IgnorePolicy(None, home=tmp_path, ttl=3600)
    fresh = IgnorePolicy(None, home=tmp_path, ttl=0)
    assert not cached.ignores(str(folder))
    assert not fresh.ignores(str(folder))
    (folder / ".urchinignore").write_text("", encoding="utf-8")
    assert not cached.ignores(str(folder))  # served from the cache, no file system walk
    assert fresh.ignores(str(folder))


def test_plain_recorder_construction_still_redacts(tmp_path: Path) -> None:
    recorder = Recorder(Journal(tmp_path / "j.jsonl"), Ephemeral(tmp_path / "data"))
    token = "gh" + "p_" + rand(36)
    assert recorder.record(Event.create(f"push with {token}", "mcp")) is Outcome.OK
    [line] = _lines(tmp_path / "j.jsonl")
    assert line["content"] == "push with [REDACTED:github_token]"


# -- through the command line ----------------------------------------------------------------


def test_ingest_and_doctor_through_the_cli(
    urchin: Urchin, journal_path: Path, tmp_path: Path
) -> None:
    token = "gh" + "p_" + rand(36)
    key = "AK" + "IA" + rand(16, string.ascii_uppercase + string.digits)
    result = urchin("ingest", f"pushed with {token} and password=hunter22", "--tag", key, "--json")
    assert result.code == 0, result.stderr
    assert result.json()["status"] == "ok"
    raw = journal_path.read_text(encoding="utf-8")
    assert token not in raw and key not in raw and "hunter22" not in raw
    assert "[REDACTED:github_token]" in raw and "[REDACTED:aws_key]" in raw
    assert token not in result.stdout + result.stderr

    ignored = tmp_path / "nda"
    ignored.mkdir()
    (ignored / ".urchinignore").write_text("", encoding="utf-8")
    skipped = urchin("ingest", "private work", "--workspace", str(ignored), "--json")
    assert skipped.code == 0
    assert skipped.json()["status"] == "ignored"
    human = urchin("ingest", "private work", "--workspace", str(ignored / "sub"))
    assert human.code == 0 and "not recorded" in human.stderr
    assert "private work" not in journal_path.read_text(encoding="utf-8")

    report = urchin("doctor", "--json", cwd=ignored).json()
    redactions = report["redactions"]
    assert redactions["enabled"] is True
    assert redactions["counts"] == {"aws_key": 1, "github_token": 1, "password": 1}
    assert redactions["total"] == 3
    assert redactions["ignore_files"]["workspace"] == [str(ignored / ".urchinignore")]
    assert report["journal"]["events"] == 1
    human_doctor = urchin("doctor", cwd=ignored)
    assert "redaction    on; 3 in the journal" in human_doctor.stdout


def test_redaction_can_be_switched_off_and_bad_patterns_fail_cleanly(
    urchin: Urchin, journal_path: Path
) -> None:
    off = urchin("ingest", "password=keepme1", env={"URCHIN_REDACT": "off"})
    assert off.code == 0
    assert "password=keepme1" in journal_path.read_text(encoding="utf-8")
    bad = urchin("ingest", "x", env={"URCHIN_REDACT_PATTERNS": "(broken"})
    assert bad.code == 1
    assert "redact_patterns[0]" in bad.stderr and "Traceback" not in bad.stderr


# -- speed and robustness --------------------------------------------------------------------
#
# Speed is the benchmark's to measure (python -m benchmarks redact); these tests count the
# regular-expression work instead (tests/urchin/redact/work.py), which is the same on any
# machine: no built-in expression can backtrack catastrophically, adversarial texts cost
# work in proportion to their length, and ordinary text a fixed number of passes.

_MB = 1_000_000


def _repeat(piece: str) -> Callable[[int], str]:
    return lambda size: piece * (size // len(piece))


ADVERSARIAL: dict[str, Callable[[int], str]] = {
    "one run": _repeat("a"),
    "assignments": _repeat("password="),
    "open quotes": _repeat('password: "'),
    "jwt starts": _repeat("eyJ"),
    "key headers": _repeat("-----BEGIN " + PRIV + "-----\n"),
    "json keys": _repeat('"private_key": "'),
    "userinfo": _repeat("postgres://u:"),
    "at signs": lambda size: "x://u:" + "@" * size,
    "flags": _repeat("--token "),
    "headers": _repeat("Authorization: "),
    "names": _repeat("a_key_b "),
    "mixed": _repeat(
        "token=abc password: x ghp_ eyJ -----BEGIN " + PRIV + "----- sk- AKIA a://b:c@ "
        "Authorization: Bearer sig= AccountKey= "
    ),
    # A name at every few characters: too many places to try rules one by one.
    "crowded names": _repeat("ke="),
    "spaced names": _repeat("api_key = "),
    "blanks before a separator": lambda size: "key" + " " * size + ":",
}


def _builtin_patterns() -> list[re.Pattern[str]]:
    found: dict[int, re.Pattern[str]] = {}
    for module in MODULES:
        found.update((id(v), v) for v in vars(module).values() if isinstance(v, re.Pattern))
    for anchor in scan_module.NAME_ANCHORS:
        found.update({id(anchor.near): anchor.near, id(anchor.full): anchor.full})
    for rule in BUILTIN:
        for value in (*vars(rule).values(), *vars(type(rule)).values()):
            if isinstance(value, re.Pattern):
                found[id(value)] = value
        if isinstance(rule, ProviderTokens):
            for _, probe, keyed, always in rule._probes:
                found[id(probe)] = probe
                for _, pattern in (*always, *(e for v in keyed.values() for e in v)):
                    found[id(pattern)] = pattern
    return list(found.values())


_BACKTRACKING = {re_constants.MAX_REPEAT, re_constants.MIN_REPEAT}


def _nested_repeats(items: Any, outer: bool) -> list[str]:
    """Repeats that can backtrack inside another repeat that can: what lets a regular
    expression take exponential time on a text that almost matches."""
    found: list[str] = []
    for op, arg in items:
        if op in _BACKTRACKING or op is re_constants.POSSESSIVE_REPEAT:
            low, high, body = arg
            backtracks = op in _BACKTRACKING and high > 1
            if backtracks and outer:
                found.append(f"{{{low},{high}}}")
            # Inside a possessive repeat nothing is tried again: its body starts afresh.
            inner = (outer or backtracks) and op is not re_constants.POSSESSIVE_REPEAT
            found += _nested_repeats(body, inner)
        elif op is re_constants.SUBPATTERN:
            found += _nested_repeats(arg[-1], outer)
        elif op is re_constants.BRANCH:
            for branch in arg[1]:
                found += _nested_repeats(branch, outer)
        elif op is re_constants.ATOMIC_GROUP:
            # An atomic group commits once matched, but tries everything inside it first.
            found += _nested_repeats(arg, outer)
        elif op in (re_constants.ASSERT, re_constants.ASSERT_NOT):
            found += _nested_repeats(arg[1], outer)
    return found


def test_no_builtin_expression_nests_repeats_that_backtrack() -> None:
    patterns = _builtin_patterns()
    assert len(patterns) > 100  # every rule's, the anchors', the probes', the helpers'
    nested = {
        p.pattern: found
        for p in patterns
        if (found := _nested_repeats(re_parser.parse(p.pattern, p.flags), False))
    }
    assert nested == {}


def test_the_nesting_check_sees_nested_repeats() -> None:
    def nested(pattern: str) -> list[str]:
        return _nested_repeats(re_parser.parse(pattern), False)

    assert nested(r"(?:a+)+b") and nested(r"(\w*,)*x") and nested(r"(?:(?=a*)b)+")
    assert nested(r"(?>(?:a+)+c)") and nested(r"(?:(?:a+)+c)++")
    assert not nested(r"(?:a++)+b") and not nested(r"(?:a+b)++") and not nested(r"a+b+")
    assert not nested(r"(?:[a-z]+\.)++x")


def _work(tally: Tally, text: str) -> tuple[int, int]:
    """The tries and matches redacting ``text`` costs, and the characters matched."""
    tally.reset()
    assert isinstance(redact(text), str)
    return tally.work, tally.spanned


@pytest.mark.parametrize("name", list(ADVERSARIAL))
def test_adversarial_text_costs_work_in_proportion_to_its_length(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    tally = counting(monkeypatch)
    build = ADVERSARIAL[name]
    (small, small_span), (large, large_span) = (
        _work(tally, build(_MB // 64)),
        _work(tally, build(_MB // 8)),
    )
    # Eight times the text, at most eight times the work (and a few passes more): a rule
    # tried again at every hit for every hit, or matching on to the end from every start,
    # would make it sixty-four.
    assert large <= 8 * small + 64, (name, small, large)
    assert large_span <= 8 * small_span + 1024, (name, small_span, large_span)
    # A whole megabyte still comes back, without hanging on backtracking.
    assert redact(build(_MB))


def test_ordinary_text_costs_a_fixed_number_of_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    tally = counting(monkeypatch)
    prose = "The quick brown fox reviewed the key points of the token budget. "
    assert redact(prose * 16_000) == prose * 16_000
    (short, _), (long, _) = _work(tally, prose * 16), _work(tally, prose * 16_000)
    # Each expression runs once over the text however long it is: no per-occurrence
    # tries, nothing found.
    assert long == short
    assert tally.matches == 0


FRAGMENTS = [
    "password",
    "token",
    "secret",
    "api_key",
    "KEY",
    "Authorization: ",
    "Bearer ",
    "://",
    "@",
    ":",
    "=",
    '"',
    "'",
    '\\"',
    "\\n",
    "\n",
    " ",
    "--password ",
    "-----BEGIN " + PRIV + "-----",
    "-----END " + PRIV + "-----",
    "[REDACTED:",
    "]",
    "[REDACTED:jwt]",
    "eyJ",
    JWT,
    ".",
    "sk-",
    "AK" + "IA",
    "gh" + "p_",
    rand(36),
    "hunter2",
    "$",
    "{",
    "(",
    "?sig=",
    "AccountKey=",
    '"private_key": "',
]
texts = st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=6)), max_size=16).map(
    "".join
)
CONFIGURED = Redactor(patterns=[r"ACME-\d{4}", r"\w+ID"], allow=["hunter2", "re:sk-.*"])


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts)
def test_redaction_is_idempotent_and_never_raises(text: str) -> None:
    for redactor in (Redactor(), CONFIGURED):
        once = redactor.redact(text)
        assert isinstance(once, str)
        assert redactor.redact(once) == once


# -- where rules are tried ---------------------------------------------------------------------
#
# Rules are tried only where a cheap search found a place they can match; scanning every
# position of the whole text with the same expressions must find exactly the same.

EXHAUSTIVE = tuple(
    RegexRule(rule.pattern, rule.decide) if isinstance(rule, RegexRule) else rule
    for rule in BUILTIN
)


def exhaustive(text: str) -> str:
    guard = Guard(lambda secret, whole: False, None)
    scan = Scan(text)
    for rule in EXHAUSTIVE:
        scan = rule.apply(scan, guard)
    return scan.text


NAMES = [
    *("password", "PASSWORD", "db_pass", "pwd", "passphrase", "secret", "client-secret"),
    *("token", "Token", "API_TOKEN", "api_key", "apiKey", "ACCESS.KEY", "signing-key"),
    *("credentials", "creds", "private_key", '"private_key"', "AccountKey", "SharedAccessKey"),
    *("?sig", "&sig", "sig", "Authorization", "authorization", "auth_header", "tokens"),
    *("make_key", "key_key", "input_tokens", "secretive", "keyboard", "x" * 44 + "_key"),
    # Characters re.IGNORECASE equates with ASCII letters: Kelvin sign, long s, dotless
    # and dotted i.
    *("\u212aey", "pa\u017fsword", "\u212aEY_\u212aey", "AUTHOR\u0130ZATION", "s\u0131g"),
    # The entropy rule reads at most 40 name characters after its word: 40, then 41.
    *(
        word + "_" + "x" * extra
        for word in ("key", "token", "secret", "credential", "private", "pass", "auth", "sig")
        for extra in (39, 40)
    ),
]
SEPARATORS = ["=", ": ", ":", ":=", "=>", "==", "::", " = ", '": "', "='", '\\":\\"', "  :\t"]
VALUES = [
    rand(24),
    rand(40, _ALNUM + "+/"),
    rand(17),  # long enough for a SAS signature, too short for the entropy rule
    "hunter2x",
    "$TOKEN",
    "os.environ['X']",
    "gh" + "p_" + rand(36),
    JWT,
    "123",
    "null",
    "Bearer " + rand(30),
    "[REDACTED:token]",
]
SHAPES = [
    "AK" + "IA" + rand(16, string.ascii_uppercase + string.digits),
    "s" + "k-proj-" + rand(40),
    "xo" + "xb-1234567890-" + rand(24),
    "postgres://u:" + rand(10) + "@db/x",
    "https://hooks.slack.com/services/T0" + rand(30),
    "-----BEGIN " + PRIV + "-----\n" + rand(64, _ALNUM + "+/") + "\n",
    "--password " + rand(12),
    "bearer " + rand(20),
]
FILLER = st.text(alphabet=" abcekprstyx.-_\n", max_size=90)
assignments = st.builds(
    "".join,
    st.tuples(st.sampled_from(NAMES), st.sampled_from(SEPARATORS), st.sampled_from(VALUES)),
)
mixed_texts = st.lists(
    st.one_of(assignments, st.sampled_from(SHAPES), st.sampled_from(FRAGMENTS), FILLER),
    max_size=24,
).map(" ".join)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mixed_texts)
def test_candidate_search_finds_what_scanning_every_position_finds(text: str) -> None:
    assert Redactor().redact(text) == exhaustive(text)


def test_every_name_separator_and_value_is_searched_exactly() -> None:
    grid = [name + sep + value for name in NAMES for sep in SEPARATORS for value in VALUES[:2]]
    grid += [name + "=" + value for name in NAMES for value in VALUES[2:]]
    redactor = Redactor()
    for assignment in grid:
        # Alone, among a few other separators, and among many (each found another way).
        for text in (assignment, f"note: see {assignment}; ok", "id: 1, " * 9 + assignment):
            assert redactor.redact(text) == exhaustive(text), text


@pytest.mark.parametrize(
    ("prose", "filler", "repeat"),
    [(40, 0, 1), (2, 10, 5), (0, 0, 400)],
    ids=["few separators", "many separators", "names everywhere"],
)
def test_names_are_searched_exactly_however_dense(prose: int, filler: int, repeat: int) -> None:
    # Names are found before each of a few separators, by one search per literal among
    # many, and (when there are names everywhere) by scanning the whole text per rule:
    # each must agree with scanning every position.
    unit = (
        "The key idea, as tokens are cheap and passwords are not. " * prose
        + "a=1 b=2 c=3 d=4 e=5 f=6 " * filler
        + f"export API_TOKEN={rand(30)}; echo done\n"
        + f'{{"client_secret": "{rand(24)}", "input_tokens": 12}}\n'
        + f"make_key={rand(28)} &sig={rand(20)} Authorization: Basic {rand(16)}\n"
    )
    text = unit * repeat
    assert (Scan(text).hits() is None) == (repeat == 400)
    out = Redactor().redact(text)
    assert out == exhaustive(text)
    assert count_markers(out) == {
        "token": repeat,
        "secret": 2 * repeat,
        "azure_sas": repeat,
        "basic_auth": repeat,
    }


def _realistic_megabyte() -> str:
    pieces = [
        "I'll check the token budget, then reset the password flow; key points below.\n",
        "    api_key = os.environ.get('API_KEY', '')  # read at start-up\n",
        "def load(path: Path, *, token: str | None = None) -> Config:\n",
        '{"id": "19180341-2b2d-4964-9a20-e105802451cb", "input_tokens": 1200, "key": "x"}\n',
        "2026-05-04T10:32:11Z INFO request_id=42 path=/api/v1/items status=200 ms=12\n",
        "$ curl -sS 'https://api.example.com/v1/items?page=2' --retry 3 | jq .items\n",
        "-rw-r--r--  1 dev dev  4096 May  4 10:32 src/app/collector.py\n",
    ]
    text = "".join(pieces)
    return text * (_MB // len(text))


def test_realistic_text_costs_work_in_proportion_to_its_length(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    text = _realistic_megabyte()
    assert Redactor().redact(text) == text
    tally = counting(monkeypatch)
    eighth = text[: text.index("\n", len(text) // 8) + 1]
    (small, small_span), (large, large_span) = _work(tally, eighth), _work(tally, text)
    # The work grows with the number of places a rule may match, so in step with the
    # text; the benchmark measures what it costs in time against one regex pass.
    assert large <= 8.5 * small + 64, (small, large)
    assert large_span <= 8.5 * small_span + 1024, (small_span, large_span)
