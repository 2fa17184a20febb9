"""Each rule class: what it must replace (and with which kind) and what it must leave.

Fake secrets are assembled from parts so no secret-shaped literal sits in the repository.
"""

from __future__ import annotations

import random
import string

import pytest

from urchin.redact import redact
from urchin.redact.rules import PROVIDERS

_RNG = random.Random(7)
_ALNUM = string.ascii_letters + string.digits
_BECH32 = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"


def r(n: int, alphabet: str = _ALNUM) -> str:
    while True:
        value = "".join(_RNG.choice(alphabet) for _ in range(n))
        if alphabet != _ALNUM or (
            any(c.isdigit() for c in value)
            and any(c.isupper() for c in value)
            and any(c.islower() for c in value)
        ):
            return value


def h(n: int) -> str:
    return r(n, "0123456789abcdef")


# (kind of marker, secret, text carrying it)
POSITIVE: list[tuple[str, str, str]] = [
    # providers, written bare in sentences, arguments, URLs and calls
    ("huggingface_token", (t := "h" + "f_" + r(34, string.ascii_letters)), f"use {t} for the hub"),
    ("npm_token", (t := "np" + "m_" + r(36)), f"npm publish --otp 1 --token {t}"),
    ("pypi_token", (t := "py" + "pi-AgEIcHlwaS5vcmc" + r(60)), f"password = {t}"),
    ("sendgrid_key", (t := "S" + "G." + r(22) + "." + r(43)), f"sg.send(key='{t}')"),
    (
        "mailgun_key",
        (t := "ke" + "y-" + h(32)),
        f"curl -s --user 'api:{t}' https://api.mailgun.net",
    ),
    ("shopify_token", (t := "shp" + "ss_" + h(32)), f"X={t}"),
    ("vault_token", (t := "hv" + "s." + r(24)), f"vault login {t}"),
    ("doppler_token", (t := "dp" + ".st.prd." + r(40)), f"DOPPLER={t}"),
    ("digitalocean_token", (t := "do" + "o_v1_" + h(64)), f"doctl auth init -t {t}"),
    ("heroku_key", (t := "HR" + "KU-AA" + r(58)), f"token {t} works"),
    ("linear_key", (t := "lin" + "_oauth_" + r(40)), f"Linear({t!r})"),
    ("notion_token", (t := "nt" + "n_" + r(46)), f"https://x.test/?t={t}&a=1"),
    ("pulumi_token", (t := "pu" + "l-" + h(40)), f"PULUMI_ACCESS={t}"),
    ("twilio_key", (t := "S" + "K" + h(32)), f"twilio api key {t}"),
    ("telegram_token", (t := "123456789" + ":" + "AA" + r(33)), f"bot{t}/getMe"),
    ("grafana_token", (t := "gl" + "sa_" + r(32) + "_" + h(8)), f"grafana {t}"),
    ("databricks_token", (t := "da" + "pi" + h(32)), f"token: {t}"),
    ("sentry_token", (t := "sn" + "tryu_" + h(64)), f"sentry-cli --auth {t}"),
    (
        "age_secret_key",
        (t := "AGE-" + "SECRET-KEY-1" + r(58, "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L")),
        t,
    ),
    ("discord_token", (t := "MT" + r(24) + "." + r(6) + "." + r(38)), f"client.run('{t}')"),
    ("github_token", (t := "gh" + "p_" + r(36)), f"git push https://{t}@github.com/o/r"),
    ("openai_key", (t := "s" + "k-" + h(32)), f"deepseek key {t}"),
    # command lines
    ("password", "Pw9-kq2!z", "curl -u bob:Pw9-kq2!z https://x"),
    ("password", "Pw9kq2zz", "mysqldump -uroot -pPw9kq2zz db"),
    ("password", "Pw9kq2zz", "redis-cli -a Pw9kq2zz ping"),
    ("password", "Pw9kq2zz", "docker login -u me -p Pw9kq2zz"),
    ("password", "Pw9kq2zz", "az login -u me@x.com -p Pw9kq2zz"),
    ("api_key", "Kx9" + r(30), "az storage account keys --account-key Kx9" + "{}"),
    ("token", (t := "abcdef." + "0123456789abcdef"), f"kubectl --token={t} get ns"),
    # assignments
    ("password", "Pw9kq2zz", "SMTP_PW=Pw9kq2zz"),
    ("password", "Pw9kq2zz", "s.login('me', 'Pw9kq2zz')"),
    ("password", "Pw9kq2zz", "requests.get(u, auth=('me', 'Pw9kq2zz'))"),
    ("password", "Pw9kq2zz", "session.auth = ('me', 'Pw9kq2zz')"),
    ("password", "Pw9kq2zz", "HTTPBasicAuth(user, 'Pw9kq2zz')"),
    ("password", "Pw9kq2zz", "client.authenticate('me', \"Pw9kq2zz\")"),
    ("password", "Pw9kq2zz", "Credentials(user, 'Pw9kq2zz')"),
    ("password", "Pw9kq2zz", "env['PASSWORD'] = 'Pw9kq2zz'"),
    ("api_key", "Pw9kq2zz", "const k = { apiKey: `Pw9kq2zz` }"),
    ("password", "Pw9kq2zz", "<Password>Pw9kq2zz</Password>"),
    ("api_key", "Pw9kq2zz", '<add key="StripeApiKey" value="Pw9kq2zz"/>'),
    ("password", "Pw9kq2zz", "machine example.com login me password Pw9kq2zz"),
    ("token", "Tk9zq2xw", "the password reset_token=Tk9zq2xw param"),
    ("api_key", (t := h(40)), f"DD-APPLICATION-KEY: {t}"),
    ("api_key", (t := r(40)), f"FCM_SERVER_KEY={t}"),
    # headers
    ("authorization", (t := "00" + r(40)), f"Authorization: SSWS {t}"),
    ("authorization", (t := r(32)), f"authorization: Custom-Scheme {t}"),
    ("bearer", (t := r(40)), f"Authorization: Bearer {t}"),
    ("url_credential", (t := h(32)), f"dsn = 'https://{t}@o1.ingest.sentry.io/2'"),
    # structure
    ("private_key", "MIIEv" + (b := r(60)), "-----BEGIN " + "PRIVATE " + "KEY-----\nMIIEv" + b),
]


@pytest.mark.parametrize(("kind", "secret", "text"), POSITIVE, ids=[p[0] for p in POSITIVE])
def test_secret_is_replaced_by_its_kind(kind: str, secret: str, text: str) -> None:
    text = text.replace("{}", "")
    out = redact(text)
    assert secret.replace("{}", "") not in out, out
    assert f"[REDACTED:{kind}]" in out, out


NEGATIVE = [
    # providers: prefixes without a token's body, or glued inside longer words
    "hf_hub_download(repo_id='x')",
    "npm_config_cache=/tmp/npm",
    "key-value store; key-rotation schedule",
    "SKU12345 in stock",
    "dapi is not a word but dapi_version=3 is fine",
    "12:30 meeting, ratio 3:1, see RFC 3339 section 5.6",
    "pul-request template",
    "the hvs.config module and sl.sh script",
    "sk-learn-compatible-estimator-interface",
    # command lines without a password
    "mysql -u root -p app_db",
    "docker run -p 8080:80 -u 1000:1000 nginx",
    "curl -u admin https://x",
    "docker run --user 1000:1000 app",
    "redis-cli -h cache ping",
    "ls -a && git commit -a -m wip",
    # code passing variables
    "password=password, token=token",
    "self.token = token",
    "password: _Secret",
    'password = getpass("Password: ")',
    "db_password = settings.DB_PASSWORD",
    "return login(user, password)",
    "password = f'{user}:{pw}'",
    # placeholders
    "password: ~",
    "token: sk-...",
    'token: "${{ secrets.GH_TOKEN }}"',
    "API_KEY=<your-api-key>",
    "password: xxxxxxxx",
    # the noun in prose, before a setting of its own
    "Password reset=enabled for all users",
    "enable password reset=1 and password length=12",
    "password strength=strong",
    "the password reset_token param is documented",
    # headers in prose
    "Authorization: see the docs",
    "Authorization: Bearer",
    "authorization: required",
    # public keys
    "VAPID_PUBLIC_KEY=" + r(87),
    "public_key: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI" + r(43) + " me@host",
    "publishableKey: pk_live_" + r(24),
]


@pytest.mark.parametrize("text", NEGATIVE)
def test_look_alike_is_left_alone(text: str) -> None:
    assert redact(text) == text


def test_every_provider_kind_is_named_in_the_readme() -> None:
    from pathlib import Path

    readme = (Path(__file__).parents[3] / "README.md").read_text(encoding="utf-8")
    for provider in PROVIDERS:
        assert f"`{provider.kind}`" in readme, provider.kind
