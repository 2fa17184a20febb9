"""A labelled corpus for redaction: secrets of many kinds in realistic settings, and clean
text that looks like them.

Every fake secret is assembled from parts at run time from a seeded generator, so no
secret-shaped literal sits in the repository and every run builds the same corpus. A
secret sample counts as caught when none of its secret strings survive; a clean sample
counts as a false positive when redaction changes it at all.

Classes follow the rule classes: ``provider`` (self-identifying tokens written bare),
``command_line``, ``assignment``, ``header``, ``structure`` (PEM, JWT), ``entropy``
(random values under secret-ish names); clean samples are grouped by what they imitate.
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import string
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Sample", "build", "evaluate"]

_ALNUM = string.ascii_letters + string.digits
_HEX = "0123456789abcdef"
_B64URL = _ALNUM + "-_"
_BECH32 = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"


@dataclass(frozen=True, slots=True)
class Sample:
    """One labelled text. ``secrets`` is empty for a clean sample."""

    cls: str
    kind: str
    text: str
    secrets: tuple[str, ...] = ()


class _Gen:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def s(self, n: int, alphabet: str = _ALNUM) -> str:
        while True:
            value = "".join(self.rng.choice(alphabet) for _ in range(n))
            if (
                alphabet != _ALNUM
                or n < 8
                or (
                    any(c.isupper() for c in value)
                    and any(c.islower() for c in value)
                    and any(c.isdigit() for c in value)
                )
            ):
                return value

    def hex(self, n: int) -> str:
        while True:
            value = self.s(n, _HEX)
            if any(c.isalpha() for c in value) and any(c.isdigit() for c in value):
                return value

    def b64(self, nbytes: int) -> str:
        return base64.b64encode(self.rng.randbytes(nbytes)).decode()

    def pick(self, options: list[str]) -> str:
        return self.rng.choice(options)


def _jwt(g: _Gen) -> str:
    def part(data: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()

    sig = base64.urlsafe_b64encode(g.rng.randbytes(32)).rstrip(b"=").decode()
    payload = {"sub": g.s(10, string.digits), "iat": 1700000000, "role": "service"}
    return f"{part({'alg': 'HS256', 'typ': 'JWT'})}.{part(payload)}.{sig}"


def _pem(g: _Gen, label: str) -> str:
    body = g.b64(400)
    lines = "\n".join(body[i : i + 64] for i in range(0, len(body), 64))
    dash = "-" * 5
    return f"{dash}BEGIN {label}{dash}\n{lines}\n{dash}END {label}{dash}"


# Provider tokens: kind -> generator. Prefixes are split so no whole token is a literal.
_P = "PRIVATE " + "KEY"


def _providers(g: _Gen) -> dict[str, Callable[[], str]]:
    return {
        "aws_access_key": lambda: "AK" + "IA" + g.s(16, string.ascii_uppercase + "234567"),
        "github_pat": lambda: "gh" + "p_" + g.s(36),
        "github_fine_grained": lambda: "github" + "_pat_" + g.s(22) + "_" + g.s(59),
        "gitlab_pat": lambda: "gl" + "pat-" + g.s(20, _B64URL),
        "slack_bot": lambda: (
            "xo" + "xb-" + g.s(11, string.digits) + "-" + g.s(13, string.digits) + "-" + g.s(24)
        ),
        "openai": lambda: "s" + "k-proj-" + g.s(48, _B64URL),
        "anthropic": lambda: "s" + "k-ant-api03-" + g.s(93, _B64URL) + "AA",
        "stripe_live": lambda: "s" + "k_live_" + g.s(24),
        "google_api": lambda: "AI" + "za" + g.s(35, _B64URL),
        "age_secret": lambda: "AGE-" + "SECRET-KEY-1" + g.s(58, _BECH32.upper()),
        "huggingface": lambda: "h" + "f_" + g.s(34, string.ascii_letters),
        "npm": lambda: "np" + "m_" + g.s(36),
        "pypi": lambda: "py" + "pi-AgEIcHlwaS5vcmc" + g.s(70, _B64URL),
        "sendgrid": lambda: "S" + "G." + g.s(22, _B64URL) + "." + g.s(43, _B64URL),
        "mailgun": lambda: "ke" + "y-" + g.hex(32),
        "shopify": lambda: "shp" + g.pick(["at", "ca", "pa", "ss"]) + "_" + g.hex(32),
        "vault": lambda: "hv" + g.pick(["s", "b", "r"]) + "." + g.s(90, _B64URL),
        "doppler": lambda: "dp" + ".st." + g.s(43),
        "digitalocean": lambda: "do" + g.pick(["p", "o", "r"]) + "_v1_" + g.hex(64),
        "heroku": lambda: "HR" + "KU-AA" + g.s(58, _B64URL),
        "linear": lambda: "lin" + "_api_" + g.s(40),
        "notion": lambda: "nt" + "n_" + g.s(11, string.digits) + g.s(35),
        "pulumi": lambda: "pu" + "l-" + g.hex(40),
        "twilio": lambda: "S" + "K" + g.hex(32),
        "telegram": lambda: g.s(10, string.digits) + ":" + "AA" + g.s(33, _B64URL),
        "discord": lambda: g.pick(["M", "N", "O"]) + g.s(25) + "." + g.s(6) + "." + g.s(38),
        "grafana": lambda: "gl" + "sa_" + g.s(32) + "_" + g.hex(8),
        "databricks": lambda: "da" + "pi" + g.hex(32),
        "sentry": lambda: "sn" + "tryu_" + g.hex(64),
        "postman": lambda: "PM" + "AK-" + g.hex(24) + "-" + g.hex(34),
        "google_oauth_secret": lambda: "GO" + "CSPX-" + g.s(28, _B64URL),
        "docker_pat": lambda: "dc" + "kr_pat_" + g.s(27, _B64URL),
        "supabase": lambda: "sb" + "p_" + g.hex(40),
        "groq": lambda: "gs" + "k_" + g.s(52),
        "perplexity": lambda: "pp" + "lx-" + g.s(48),
        "tailscale": lambda: "ts" + "key-auth-" + g.s(12) + "-" + g.s(30),
        "newrelic": lambda: "NR" + "AK-" + g.s(27, string.ascii_uppercase + string.digits),
        "azure_ad": lambda: g.s(3) + g.s(1, string.digits) + "Q~" + g.s(34, _ALNUM + "_~.-"),
        "atlassian": lambda: "ATA" + "TT3xFfGF0" + g.s(180, _B64URL) + "=" + g.hex(8).upper(),
        "replicate": lambda: "r" + "8_" + g.s(37),
        "figma": lambda: "fi" + "gd_" + g.s(40, _B64URL),
        "webhook_secret": lambda: "wh" + "sec_" + g.s(32),
        "langsmith": lambda: "lsv" + "2_pt_" + g.hex(32) + "_" + g.hex(10),
        "pinecone": lambda: "pc" + "sk_" + g.s(6) + "_" + g.s(60),
        "mailchimp": lambda: g.hex(32) + "-us" + g.s(2, string.digits),
        "dropbox": lambda: "s" + "l." + g.s(140, _B64URL),
        "google_oauth_token": lambda: "ya" + "29." + g.s(120, _B64URL),
        "facebook": lambda: "EA" + "ACEdEose0cBA" + g.s(100),
        "square": lambda: "sq0" + "atp-" + g.s(22, _B64URL),
        "terraform": lambda: g.s(14).lower() + ".atlas" + "v1." + g.s(67, _B64URL),
        "bitbucket": lambda: "AT" + "BB" + g.s(32),
        "xai": lambda: "xa" + "i-" + g.s(80),
        "openrouter": lambda: "s" + "k-or-v1-" + g.hex(64),
        "buildkite": lambda: "bk" + "ua_" + g.hex(40),
        "sonarqube": lambda: "sq" + "p_" + g.hex(40),
        "render": lambda: "rn" + "d_" + g.s(32),
        "dynatrace": lambda: (
            "dt0"
            + "c01."
            + g.s(24, string.ascii_uppercase + string.digits)
            + "."
            + g.s(64, string.ascii_uppercase + string.digits)
        ),
        "airtable": lambda: "pa" + "t" + g.s(14) + "." + g.hex(64),
        "brevo": lambda: "xkey" + "sib-" + g.hex(64) + "-" + g.s(16),
        "planetscale": lambda: "psc" + "ale_tkn_" + g.s(43, _B64URL),
        "resend": lambda: "r" + "e_" + g.s(8) + "_" + g.s(24),
    }


def _provider_samples(g: _Gen) -> list[Sample]:
    contexts: list[Callable[[str, str], str]] = [
        lambda k, t: f"Here is the {k.replace('_', ' ')} you asked for: {t} - keep it safe.",
        lambda k, t: f"$ ./deploy.sh --region eu-west-1 {t} --dry-run",
        lambda k, t: f"curl -s 'https://api.example.com/v2/items?limit=5&access={t}'",
        lambda k, t: f"client = make_client('{t}', timeout=30)",
        lambda k, t: f"2026-05-04T10:22:01Z WARN auth rejected credential {t} for user 412",
        lambda k, t: f"I tested it with `{t}` and the request went through.",
    ]
    samples = []
    for index, (kind, make) in enumerate(sorted(_providers(g).items())):
        for offset in (0, 3):
            context = contexts[(index + offset) % len(contexts)]
            secret = make()
            samples.append(Sample("provider", kind, context(kind, secret), (secret,)))
    return samples


def _command_samples(g: _Gen) -> list[Sample]:
    pw = lambda: g.s(14) + g.pick(["!", "#", "%", ""])  # noqa: E731
    out: list[Sample] = []

    def add(kind: str, template: str) -> None:
        secret = pw()
        out.append(Sample("command_line", kind, template.format(p=secret), (secret,)))

    add("curl_user", "curl -u deploy:{p} https://ci.example.com/api/json")
    add("curl_user", "$ curl --user admin:{p} -X POST https://jenkins.local/job/build")
    add("curl_user", "curl -sSf -uadmin:{p} https://nexus.internal/service/rest")
    add("sshpass", "sshpass -p {p} ssh root@10.0.0.12 uptime")
    add("sshpass", "sshpass -p '{p}' scp backup.tar ops@backup:/srv")
    add("mysql", "mysql -u root -p{p} -h 127.0.0.1 app_db")
    add("mysqldump", "mysqldump -uroot -p'{p}' --all-databases > dump.sql")
    add("redis_cli", "redis-cli -h cache.internal -a {p} INFO keyspace")
    add("az_login", "az login --service-principal -u http://app -p {p} --tenant t1")
    add("docker_login", "docker login registry.example.com -u ci -p {p}")
    add("docker_login", "podman login -u bot -p '{p}' quay.io")
    add("account_key", "az storage blob upload --account-name acct --account-key {p}== -f x")
    add("password_flag", "psql --host db --password {p} --username app")
    add("password_flag", "helm repo add internal https://charts.local --username u --password {p}")
    add("sqlcmd", "sqlcmd -S tcp:db.local,1433 -U sa -P '{p}' -Q 'SELECT 1'")
    add("ldapsearch", "ldapsearch -x -H ldap://dc1 -D cn=admin,dc=corp -w {p} -b dc=corp")
    add("smbclient", "smbclient //files/share -U alice%{p} -c ls")
    add("openssl", "openssl pkcs12 -in cert.p12 -passin pass:{p} -nodes -out cert.pem")
    add("mongo", "mongosh mongodb://db:27017 -u admin -p {p} --authenticationDatabase admin")
    add("zip", "zip -P {p} -r secrets.zip ./vault")
    add("sqlplus", "sqlplus scott/{p}@orcl @migrate.sql")
    add("htpasswd", "htpasswd -bc /etc/nginx/.htpasswd admin {p}")
    add("config_set", "aws configure set aws_secret_access_key {p}")
    add("config_set", "npm config set //registry.example.com/:_authToken {p}")
    add("twine", "twine upload -u __token__ -p {p} dist/*")
    add("httpie", "http -a admin:{p} GET https://api.local/health")
    boot = g.s(6, string.ascii_lowercase + string.digits)
    boot += "." + g.s(16, string.ascii_lowercase + string.digits)
    out.append(
        Sample("command_line", "bootstrap_token", f"kubectl get pods --token={boot}", (boot,))
    )
    out.append(
        Sample(
            "command_line",
            "bootstrap_token",
            f"kubeadm join 10.0.0.1:6443 --token {boot} --discovery-token-unsafe-skip-ca",
            (boot,),
        )
    )
    return out


def _assignment_samples(g: _Gen) -> list[Sample]:
    out: list[Sample] = []

    def add(kind: str, template: str, secret: str | None = None) -> None:
        value = secret or (g.s(12) + g.pick(["", "!", "-x", "$9"]))
        out.append(Sample("assignment", kind, template.format(v=value), (value,)))

    add("env", "DB_PASSWORD={v}")
    add("env", "export MYSQL_ROOT_PASSWORD='{v}'")
    add("env", "REDIS_PW={v}")
    add("env", "smtp_pw = '{v}'")
    add("yaml", "database:\n  host: db.internal\n  password: {v}\n  pool: 5")
    add("json", '{{"username": "svc", "password": "{v}", "port": 5432}}')
    add("python", 'server.login("ops@example.com", "{v}")')
    add("python", 'smtp.login(user, "{v}")')
    add("python", "os.environ['API_TOKEN'] = '{v}'")
    add("python", 'config["PASSWORD"] = "{v}"')
    add("python", 'os.environ.setdefault("SECRET_KEY", "{v}")')
    add("python", 'requests.get(url, auth=("admin", "{v}"))')
    add("js", "const apiKey = `{v}`;")
    add("js", 'process.env.STRIPE_SECRET = "{v}"')
    add("xml", "<settings><server><id>nexus</id><password>{v}</password></server></settings>")
    add("xml", '<add key="ApiKey" value="{v}" />')
    add("xml", '<property name="db.password" value="{v}"/>')
    add("netrc", "machine api.heroku.com\n  login me@example.com\n  password {v}")
    add("netrc", "machine github.com login octocat password {v}")
    add("header_name", "DD-APPLICATION-KEY: " + "{v}", g.hex(40))
    add("header_name", "DD-API-KEY: {v}", g.hex(32))
    add("name", "FCM_SERVER_KEY=AAAA" + "{v}", g.s(7) + ":APA91b" + g.s(134, _B64URL))
    add("name", "client_secret: {v}")
    add("name", "SECRET_KEY_BASE={v}", g.hex(128))
    add("name", "TWILIO_AUTH_TOKEN={v}", g.hex(32))
    add("name", "heroku_api_key: {v}", "12345678-" + g.hex(4) + "-4" + g.hex(3) + "-9" + g.hex(15))
    add("toml", '[database]\npassword = "{v}"\nuser = "app"')
    add("ini", "[client]\nuser=root\npassword={v}\n")
    add("connection", "DATABASE_URL=postgres://app:{v}@db.internal:5432/app")
    add("connection", "mongodb+srv://svc:{v}@cluster0.abcde.mongodb.net/prod")
    add("connection", "Server=db;Database=app;User Id=sa;Password={v};")
    add("prose", "The admin password is `{v}`, rotate it after the demo.")
    add("prose", "Log in with password {v} and change it on first use.", g.s(10) + "7!")
    return out


def _header_samples(g: _Gen) -> list[Sample]:
    out: list[Sample] = []

    def add(kind: str, template: str, secret: str) -> None:
        out.append(Sample("header", kind, template.format(v=secret), (secret,)))

    add("bearer", "curl -H 'Authorization: Bearer {v}' https://api.example.com/me", g.s(40))
    add("ssws", "Authorization: SSWS {v}", "00" + g.s(40, _B64URL))
    add("custom_scheme", '-H "Authorization: Api-Key {v}"', g.s(32))
    add("basic", "Authorization: Basic {v}", base64.b64encode(b"svc:" + g.s(12).encode()).decode())
    add("no_scheme", "authorization: {v}", g.s(36))
    add("token", 'headers = {{"Authorization": "token {v}"}}', g.hex(40))
    add("x_api_key", "X-API-Key: {v}", g.s(32))
    add("private_token", "PRIVATE-TOKEN: {v}", g.s(20, _B64URL))
    add("vault", "X-Vault-Token: {v}", g.s(26))
    add("cookie", "Cookie: sessionid={v}; theme=dark", g.s(32).lower())
    add("set_cookie", "Set-Cookie: _session={v}; Path=/; HttpOnly", g.s(48))
    add("sentry_dsn", "SENTRY_DSN=https://{v}@o450123.ingest.sentry.io/5512345", g.hex(32))
    add("url_token", "git clone https://{v}@github.com/org/repo.git", g.s(40))
    return out


def _structure_samples(g: _Gen) -> list[Sample]:
    out: list[Sample] = []
    for label in (_P, "RSA " + _P, "EC " + _P, "OPENSSH " + _P, "ENCRYPTED " + _P):
        key = _pem(g, label)
        body = key.splitlines()[1]
        out.append(Sample("structure", "pem", f"$ cat ~/.ssh/id\n{key}\n$ ls", (body,)))
    key = _pem(g, _P)
    escaped = key.replace("\n", "\\n")
    body = key.splitlines()[2]
    doc = '{"type": "service_account", "private_key": "' + escaped + '", "client_id": "1"}'
    out.append(Sample("structure", "gcp_service_account", doc, (body,)))
    for template in ("Set-Cookie: jwt={v}; Secure", "token: {v}", "the id token was {v} today"):
        jwt = _jwt(g)
        out.append(Sample("structure", "jwt", template.format(v=jwt), (jwt.split(".")[2],)))
    return out


def _entropy_samples(g: _Gen) -> list[Sample]:
    out = []
    for name in ("MY_SERVICE_SIGNING_KEY", "webhookSigningSecret", "encryption-key", "authKey2"):
        value = g.s(40, _ALNUM + "+/")
        out.append(Sample("entropy", "named_random", f"{name}={value}", (value,)))
    value = g.s(32)
    out.append(Sample("entropy", "named_random", f'{{"appSecret": "{value}"}}', (value,)))
    return out


# -- clean look-alikes -------------------------------------------------------------------------


def _clean(g: _Gen) -> list[Sample]:
    out: list[Sample] = []

    def add(kind: str, text: str) -> None:
        out.append(Sample("clean", kind, text))

    for _ in range(12):
        sha = g.hex(40)
        add(
            "git_sha",
            g.pick(
                [
                    f"commit {sha}\nAuthor: Dev <dev@example.com>",
                    f"git checkout {sha[:12]} && git log -1 {sha}",
                    f"Merged in {sha[:7]} ({sha})",
                    f"https://github.com/org/repo/commit/{sha}",
                ]
            ),
        )
    for _ in range(12):
        u = str(__import__("uuid").UUID(int=g.rng.getrandbits(128), version=4))
        add(
            "uuid",
            g.pick(
                [
                    f"request_id={u} status=200",
                    f'{{"id": "{u}", "session_id": "{u}"}}',
                    f"trace {u.upper()} finished in 12ms",
                    f"api_key_id: {u}",
                ]
            ),
        )
    for _ in range(12):
        digest = hashlib.sha256(g.rng.randbytes(16)).hexdigest()
        add(
            "digest",
            g.pick(
                [
                    f"sha256:{digest}",
                    f"{digest}  dist/app-1.2.0.tar.gz",
                    f'checksum = "sha256:{digest}"',
                    f'etag: W/"{digest[:32]}"',
                    f"content_hash={digest}",
                ]
            ),
        )
    for _ in range(10):
        img = base64.b64encode(b"\x89PNG\r\n\x1a\n" + g.rng.randbytes(60)).decode()
        add(
            "data_uri",
            g.pick(
                [
                    f'<img src="data:image/png;base64,{img}" alt="logo">',
                    f'{{"icon": "data:image/png;base64,{img}"}}',
                    f"background: url(data:image/png;base64,{img});",
                ]
            ),
        )
    for _ in range(10):
        integ = base64.b64encode(g.rng.randbytes(64)).decode()
        add(
            "integrity",
            g.pick(
                [
                    f'"integrity": "sha512-{integ}"',
                    f'<script src="x.js" integrity="sha384-{integ[:64]}" crossorigin></script>',
                    f'  resolved "https://registry.npmjs.org/left-pad/-/left-pad-1.3.0.tgz#{g.hex(40)}"'
                    f"\n  integrity sha512-{integ}",
                ]
            ),
        )
    for _ in range(10):
        digest = hashlib.sha256(g.rng.randbytes(8)).hexdigest()
        add(
            "docker_digest",
            g.pick(
                [
                    f"FROM python:3.11-slim@sha256:{digest}",
                    f"image: ghcr.io/org/app@sha256:{digest}",
                    f"Digest: sha256:{digest}\nStatus: Downloaded newer image",
                ]
            ),
        )
    placeholders = [
        "password: ~",
        "password: null",
        "DB_PASSWORD=",
        "API_KEY=your-api-key-here",
        "token: <TOKEN>",
        'api_key: "${{ secrets.API_KEY }}"',
        "password=${DB_PASSWORD}",
        "export OPENAI_API_KEY=sk-...",
        "GITHUB_TOKEN=ghp_xxxxxxxxxxxxxxxxxxxx",
        "password: '********'",
        "secret: changeme",
        "AWS_SECRET_ACCESS_KEY=<secret>",
        "Authorization: Bearer $TOKEN",
        "Authorization: Bearer ${ACCESS_TOKEN}",
        'token = "{{ vault_token }}"',
        "password: REPLACE_ME",
        "api_key = '...'",
        "SLACK_TOKEN=xoxb-your-token",
        "client_secret: ${CLIENT_SECRET:-}",
        "password = os.environ['DB_PASSWORD']",
        "token: !Ref ApiToken",
        "password: op://Private/db/password",
        "stripe_key: sk_test_...",
        "secret: {{ .Values.secret }}",
        'password: "%(db_password)s"',
        "PGPASSWORD=$(cat ~/.pgpass)",
        "api_key=None",
        "password: <redacted>",
        "token: ${{ github.token }}",
        "DATABASE_URL=postgres://user:password@localhost/db",
    ]
    for text in placeholders:
        add("placeholder", text)
    prose = [
        "Authorization: see the docs for the scopes each endpoint needs.",
        "Reset your password from the settings page; tokens expire after 24 hours.",
        "The key insight is that the retry loop never resets its backoff.",
        "Password policy: at least 12 characters, one digit.",
        "The password is stored in the keychain, never in the repo.",
        "Use a token with the repo scope; the secret manager rotates it weekly.",
        "I rotated the API key and updated the password manager entry.",
        "The bearer of this message is trusted.",
        "Passwords are hashed with argon2id before they reach the database.",
        "Make sure the secret is not committed; add .env to .gitignore.",
        "Token budget: 128k input tokens, 8k output tokens per request.",
        "authorization: required for every write endpoint",
        "Set the password to something long and random before sharing the box.",
        "The private key never leaves the device; only the public key is uploaded.",
        "Set the key to the customer id and the value to their plan.",
        "passwords must differ from the last 5 and be at least 2048-bit for keys",
    ]
    for text in prose:
        add("prose", text)
    code = [
        "def login(username: str, password: str) -> Session:",
        "    password = password.strip()",
        "self.token = token",
        "password=password,",
        "api_key=api_key, timeout=timeout",
        "password: _Secret = field(repr=False)",
        "token: Token | None = None",
        "secret = Secret.from_env('APP_SECRET')",
        "token = TokenStore.load(path)",
        'password = getpass("Password: ")',
        'pw = getpass.getpass(prompt="Password: ")',
        "api_key = settings.API_KEY",
        "headers = {'Authorization': f'Bearer {token}'}",
        "headers['Authorization'] = 'Bearer ' + access_token",
        "if token == expected_token: return True",
        "const password = req.body.password;",
        "password: Joi.string().min(12).required(),",
        'token := os.Getenv("GITHUB_TOKEN")',
        'let secret = env::var("SECRET").expect("SECRET set");',
        "private_key = load_pem_private_key(data, password=None)",
        "public_key = private_key.public_key()",
        "self.api_key = api_key or os.environ.get('API_KEY')",
        "auth = HTTPBasicAuth(user, password)",
        "smtp.login(user, password)",
        "mock.patch('app.auth.TokenClient.refresh')",
        "password_hash = bcrypt.hashpw(password.encode(), bcrypt.gensalt())",
        "max_tokens=4096, temperature=0.2",
        'cache_key = f"{user_id}:{page}"',
        "for key, value in secrets.items():",
        "token_type: str = 'Bearer'",
        "KEY_LENGTH = 32",
        'password = f"{user}:{pw}"',
        "raise ValueError('password must be set')",
        "assert user.check_password('correct-horse') is False or True",
    ]
    for text in code:
        add("code", text)
    for _ in range(8):
        key = base64.b64encode(g.rng.randbytes(65)).decode().rstrip("=")
        ssh = "AAAAC3NzaC1lZDI1NTE5AAAAI" + g.s(43, _ALNUM + "+/")
        add(
            "public_key",
            g.pick(
                [
                    f"VAPID_PUBLIC_KEY={key}",
                    f"public_key: ssh-ed25519 {ssh} dev@laptop",
                    f'"publicKey": "{key}"',
                    f"SSH_PUBLIC_KEY='ssh-ed25519 {ssh}'",
                    f"NEXT_PUBLIC_STRIPE_KEY=pk_live_{g.s(24)}",
                    f"recipient: age1{g.s(58, _BECH32)}",
                    f"deploy_key: ssh-ed25519 {ssh} ci",
                ]
            ),
        )
    config = [
        "server:\n  port: 8080\n  host: 0.0.0.0\nlog_level: debug",
        '[tool.ruff]\nline-length = 100\ntarget-version = "py311"',
        "key: value\nsort_key: created_at\nprimary_key: id",
        "token_count: 5\nmax_tokens: 4096\ntokens_used: 1200",
        "passwd:         files systemd\ngroup:          files systemd",
        "auth:\n  enabled: true\n  provider: oidc\n  password_min_length: 12",
        "secretName: db-credentials\nsecretKeyRef:\n  name: db\n  key: password",
        "SSH_KEY_PATH=/home/user/.ssh/id_ed25519",
        "private_key_path: ~/.ssh/id_rsa",
        "tls:\n  cert_file: /etc/tls/tls.crt\n  key_file: /etc/tls/tls.key",
    ]
    for text in config:
        add("config", text)
    for _ in range(8):
        add(
            "logs",
            g.pick(
                [
                    f"2026-05-04T10:{g.rng.randrange(60):02d}:00Z INFO GET /api/v1/items 200 "
                    f"trace_id={g.hex(32)} span_id={g.hex(16)}",
                    f"[{g.hex(8)}] worker-3 finished job {g.rng.randrange(9999)} in 231ms",
                    f"Downloading layer {g.hex(12)}: 100% |####| 31.4MB",
                    f"tests/test_auth.py::test_token_refresh PASSED [{g.rng.randrange(100)}%]",
                    "npm notice integrity: sha512-" + g.b64(64),
                ]
            ),
        )
    urls = [
        "https://example.com/path?page=2&sort=asc and git@github.com:org/repo.git",
        "https://user@gitlab.com/group/project.git",
        "postgres://localhost:5432/app",
        "https://s3.amazonaws.com/bucket/key-2026-05-04.tar.gz",
        "see https://docs.python.org/3/library/secrets.html#secrets.token_urlsafe",
        "ftp://ftp.example.org/pub/releases/app-1.2.tar.gz",
    ]
    for text in urls:
        add("url", text)
    shell = [
        "docker run -p 8080:8080 -e LOG_LEVEL=debug app:latest",
        "mkdir -p build && cd build && cmake ..",
        "mysql -u root -p app_db < schema.sql",
        "curl -u admin https://ci.example.com",
        "ls -la ~/.ssh && ssh-add -l",
        "git commit -a -m 'fix token refresh'",
        "kubectl get secret db-credentials -o yaml",
        "echo $GITHUB_TOKEN | docker login ghcr.io -u bot --password-stdin",
        "pip install --index-url https://pypi.org/simple requests",
        "redis-cli -h cache.internal ping",
        "openssl rand -hex 32",
        "gpg --recv-keys 0x" + g.hex(16).upper(),
        "ssh-keygen -t ed25519 -N '' -f ~/.ssh/id_ed25519",
    ]
    for text in shell:
        add("shell", text)
    return out


def build(seed: int = 20260504) -> list[Sample]:
    """The whole corpus: every secret class, then the clean look-alikes."""
    g = _Gen(seed)
    return [
        *_provider_samples(g),
        *_command_samples(g),
        *_assignment_samples(g),
        *_header_samples(g),
        *_structure_samples(g),
        *_entropy_samples(g),
        *_clean(g),
    ]


@dataclass(frozen=True, slots=True)
class Score:
    """Per class: samples, and how many were caught (secret) or changed (clean)."""

    total: int
    hits: int

    @property
    def rate(self) -> float:
        return self.hits / self.total if self.total else 0.0


def evaluate(
    redact: Callable[[str], str], samples: list[Sample]
) -> tuple[dict[str, Score], list[Sample], list[Sample]]:
    """Scores by class (``clean:<kind>`` for clean samples), the missed secrets and the
    changed clean samples."""
    totals: dict[str, list[int]] = {}
    missed: list[Sample] = []
    changed: list[Sample] = []
    for sample in samples:
        out = redact(sample.text)
        key = sample.cls if sample.secrets else f"clean:{sample.kind}"
        entry = totals.setdefault(key, [0, 0])
        entry[0] += 1
        if sample.secrets:
            if all(secret not in out for secret in sample.secrets):
                entry[1] += 1
            else:
                missed.append(sample)
        elif out != sample.text:
            entry[1] += 1
            changed.append(sample)
    return {k: Score(t, h) for k, (t, h) in totals.items()}, missed, changed
