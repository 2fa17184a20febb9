"""Redaction throughput over realistic agent-transcript text, against a trivial regex pass.

The corpus (~20 MB; ``--quick``: ~4 MB) is built deterministically from templates: prose
and Markdown (with everyday uses of "key", "token", "password", "authorization"), Python
code and diffs, shell sessions with their output, JSON tool output and service logs.
About one text in forty carries a planted secret; the run checks every one was replaced.

- ``redact_throughput``: MB/s of ``Redactor().redact`` over every text, overall and per
  kind of text, against a same-run baseline of one trivial regex pass
  (``re.compile(r"[A-Za-z0-9_]{40,}").search``) over the same texts.
- ``redact_event_rate``: events/s of ``Redactor.redact_event`` on typical events
  (200 B to 4 KB of content, a title, workspace, session and tags, as collectors build
  them), against the same trivial regex over every string of each event.
- ``recall_<class>`` / ``false_positive_rate_<class>``: on the labelled corpus of
  ``tests/urchin/redact/corpus.py`` (secrets of many kinds in shell commands, code,
  config files, sentences and logs; clean look-alikes), the share of secret samples whose
  secret is gone, per rule class, and the share of clean samples changed at all, per kind
  of look-alike; then ``recall`` and ``false_positive_rate`` overall.
"""

from __future__ import annotations

import base64
import json
import random
import re
import string
import time
import uuid
from collections.abc import Callable, Sequence

from tests.urchin.redact.corpus import build, evaluate

from benchmarks import report
from urchin.event import Event, EventKind
from urchin.redact import Redactor

_TRIVIAL = re.compile(r"[A-Za-z0-9_]{40,}")
_ALNUM = string.ascii_letters + string.digits
_MODULES = ["retry", "journal", "intake", "config", "collector", "index", "render", "auth"]
_WORDS = [
    *("the", "a", "of", "to", "in", "and", "for", "with", "on", "that", "this", "is", "it"),
    *("we", "was", "be", "by", "as", "from", "at", "run", "test", "file", "change", "fix"),
    *("update", "module", "function", "value", "list", "error", "call", "path", "line"),
    *("case", "check", "result", "config", "retry", "cache", "request", "response"),
    *("parse", "build", "read", "write", "user", "session", "event", "order"),
]

_PROSE = [
    "The key insight is that the retry loop never resets its backoff after a success.",
    "I'll check the token budget before running the full suite again.",
    "Reset the password from the settings page if the login keeps failing.",
    "The authorization flow redirects to the callback URL with a short-lived code.",
    "All {n} tests passed; the flaky one in `test_{m}.py` is now deterministic.",
    "Next, I'll update `{m}.load()` so the cache key includes the schema version.",
    "The secret to keeping this fast is to parse each line once and reuse the result.",
    "See https://docs.python.org/3/library/re.html for how possessive repeats behave.",
    "Key points: the journal is append-only, readers skip torn lines, ids are UUIDs.",
    "This bearer of bad news is the integration test that times out on slow machines.",
    "I found the bug: `{m}_timeout` was read as seconds but written as milliseconds.",
    "Let me look at how the private helper `_{m}_state` is used before changing it.",
    "The signature check fails when the key rotates between two requests.",
    "Done. Summary of changes: moved the parser, added {n} tests, removed dead code.",
    "We pass the credentials through the environment, never through the config file.",
]


def _rand(rng: random.Random, n: int, alphabet: str = _ALNUM) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _fill(rng: random.Random, template: str) -> str:
    return template.format(n=rng.randrange(2, 400), m=rng.choice(_MODULES))


def _prose(rng: random.Random) -> str:
    out = []
    if rng.random() < 0.3:
        out.append(f"## {rng.choice(_MODULES).title()} changes\n")
    for _ in range(rng.randrange(2, 6)):
        if rng.random() < 0.3:
            out.append(f"- {_fill(rng, rng.choice(_PROSE))}\n")
        else:
            words = " ".join(rng.choice(_WORDS) for _ in range(rng.randrange(8, 24)))
            out.append(f"{_fill(rng, rng.choice(_PROSE))} {words.capitalize()}.\n")
    return "".join(out) + "\n"


def _code(rng: random.Random) -> str:
    m, n = rng.choice(_MODULES), rng.randrange(1, 90)
    choice = rng.randrange(5)
    if choice == 0:
        return (
            f"diff --git a/src/app/{m}.py b/src/app/{m}.py\n--- a/src/app/{m}.py\n"
            f"+++ b/src/app/{m}.py\n@@ -{n},7 +{n},9 @@ def load_{m}(path):\n"
            f"-    data = json.loads(path.read_text())\n"
            f"+    data = json.loads(path.read_text(encoding='utf-8'))\n"
            f"+    if not isinstance(data, dict):\n"
            f"+        raise ConfigError(f'{{path}}: not a table')\n"
            f"     return {m.title()}(**data)\n\n"
        )
    if choice == 1:
        # Code that handles credentials: names the name-anchored rules must look at.
        return (
            f"def load_{m}(path: Path, *, token: str | None = None, retries: int = {n}):\n"
            f'    """Read the {m} settings and apply overrides from the environment."""\n'
            f"    data = tomllib.loads(path.read_text(encoding='utf-8'))\n"
            f"    api_key = os.environ.get('API_KEY', '')\n"
            f"    headers = {{'Authorization': f'Bearer {{token}}'}} if token else {{}}\n"
            f"    for key, value in data.items():\n"
            f"        if key.startswith('_'):\n            continue\n"
            f"        self.cache[key] = value  # keyed by name, see {m}.md\n"
            f"    return Config(headers=headers, api_key=api_key, max_tokens={n * 64}, **data)\n\n"
        )
    if choice == 2:
        return (
            f"@dataclass(frozen=True)\nclass {m.title()}State:\n"
            f'    """What one {m} run saw: counts and the last position read."""\n\n'
            f"    seen: int = 0\n    skipped: int = 0\n    offset: int = {n}\n\n"
            f"    def advance(self, lines: list[str]) -> {m.title()}State:\n"
            f"        kept = [line for line in lines if line.strip()]\n"
            f"        seen, offset = self.seen + len(kept), self.offset + len(lines)\n"
            f"        return replace(self, seen=seen, offset=offset)\n\n"
        )
    if choice == 3:
        return (
            f"def test_{m}_survives_a_torn_line(tmp_path: Path) -> None:\n"
            f"    path = tmp_path / '{m}.jsonl'\n"
            f"    path.write_text('{{\"a\": 1}}\\n{{\"b\"', encoding='utf-8')\n"
            f"    result = read_{m}(path)\n"
            f"    assert result.events == 1 and result.torn == 1, result\n\n"
        )
    return (
        f"export async function fetch{m.title()}(id: string): Promise<{m.title()}> {{\n"
        f"  const res = await fetch(`/api/v1/{m}/${{id}}?limit={n}`, {{ method: 'GET' }});\n"
        f"  if (!res.ok) throw new Error(`{m} ${{id}}: ${{res.status}}`);\n"
        f"  return (await res.json()) as {m.title()};\n}}\n\n"
    )


def _shell(rng: random.Random) -> str:
    m, n = rng.choice(_MODULES), rng.randrange(1, 400)
    choice = rng.randrange(5)
    if choice == 0:
        lines = [f"$ pytest -q tests/test_{m}.py --maxfail=1"]
        lines += [f"tests/test_{m}.py::test_case_{i} PASSED" for i in range(rng.randrange(3, 12))]
        lines.append(f"==== {n} passed, 2 skipped in {n / 37:.2f}s ====")
        return "\n".join(lines) + "\n"
    if choice == 1:
        return (
            f"$ curl -sS -H 'Accept: application/json' "
            f"'https://api.github.com/repos/org/{m}/pulls?state=open&per_page={n}'\n"
        )
    if choice == 2:
        return (
            f"$ docker run --rm -e LOG_LEVEL=debug -e WORKERS={n % 8} -p 8080:8080 {m}:latest\n"
            f"Listening on http://0.0.0.0:8080 (pid {n * 13})\n"
        )
    if choice == 3:
        return (
            f"$ git log --oneline -3\n{uuid.UUID(int=rng.getrandbits(128)).hex[:7]} Fix {m} "
            f"retry\n$ git push origin feature/{m}-{n}\nTo github.com:org/{m}.git\n"
            f"   3f2a9c0..8e1d4b7  feature/{m}-{n} -> feature/{m}-{n}\n"
        )
    rows = [
        f"-rw-r--r--  1 dev dev {rng.randrange(100, 99999):>6} May  4 10:{i:02d} {m}_{i}.py"
        for i in range(rng.randrange(3, 10))
    ]
    return "$ ls -la src/app\n" + "\n".join(rows) + "\n"


def _json_output(rng: random.Random) -> str:
    items = [
        {
            "id": str(uuid.UUID(int=rng.getrandbits(128))),
            "sha": uuid.UUID(int=rng.getrandbits(128)).hex[:12],
            "url": f"https://api.example.com/v1/{rng.choice(_MODULES)}/{rng.randrange(9999)}",
            "status": rng.choice(["ok", "queued", "failed"]),
            "created_at": f"2026-05-04T10:{rng.randrange(60):02d}:00Z",
            "usage": {"input_tokens": rng.randrange(9999), "output_tokens": rng.randrange(999)},
            "key": rng.choice(_MODULES),
            "labels": ["bug", "p2"],
        }
        for _ in range(rng.randrange(1, 5))
    ]
    return json.dumps({"items": items, "next": None}, indent=rng.choice([None, 2])) + "\n"


def _log(rng: random.Random) -> str:
    lines = []
    for _ in range(rng.randrange(3, 10)):
        rid = uuid.UUID(int=rng.getrandbits(128))
        lines.append(
            f"2026-05-04T10:{rng.randrange(60):02d}:{rng.randrange(60):02d}.123Z INFO "
            f"request_id={rid} method=GET path=/api/v1/{rng.choice(_MODULES)} status=200 "
            f"duration_ms={rng.randrange(400)}"
        )
    if rng.random() < 0.3:
        lines.append(
            'Traceback (most recent call last):\n  File "app/server.py", line 88, in handle\n'
            "KeyError: 'session'"
        )
    return "\n".join(lines) + "\n"


_KINDS: dict[str, Callable[[random.Random], str]] = {
    "prose": _prose,
    "code": _code,
    "shell": _shell,
    "json": _json_output,
    "logs": _log,
}


def _secret(rng: random.Random) -> tuple[str, str]:
    """A planted secret in a realistic setting, and the secret; built from parts at run time."""
    dash = "-" * 5
    body = base64.b64encode(rng.randbytes(180)).decode()
    pem = "PRIVATE " + "KEY"
    token, key_id = (
        "gh" + "p_" + _rand(rng, 36),
        "AK" + "IA" + _rand(rng, 16, string.ascii_uppercase),
    )
    password, bearer, db = _rand(rng, 14), _rand(rng, 40), _rand(rng, 12)
    jwt = f"eyJ{_rand(rng, 30)}.eyJ{_rand(rng, 40)}.{_rand(rng, 43)}"
    api_key = "s" + "k-proj-" + _rand(rng, 48)
    choices = [
        (f"$ export GITHUB_TOKEN={token}\n", token),
        (f"aws_access_key_id = {key_id}\n", key_id),
        (f"$ cat .env\nDB_PASSWORD={password}\nDEBUG=1\n", password),
        (f"curl -H 'Authorization: Bearer {bearer}' https://api.example.com/v1/me\n", bearer),
        (f"DATABASE_URL=postgres://app:{db}@db.internal:5432/app\n", db),
        (f"Set-Cookie: session={jwt}\n", jwt),
        (
            f"{dash}BEGIN {pem}{dash}\n{body[:64]}\n{body[64:128]}\n{dash}END {pem}{dash}\n",
            body[:64],
        ),
        (f"OPENAI_API_KEY={api_key}\n", api_key),
    ]
    return rng.choice(choices)


def corpus(total: int, seed: int = 20260504) -> tuple[list[tuple[str, str]], dict[int, str]]:
    """``(kind, text)`` pairs adding up to about ``total`` characters, and the secret planted
    in some of them, by index."""
    rng = random.Random(seed)
    texts: list[tuple[str, str]] = []
    planted: dict[int, str] = {}
    size = 0
    names = list(_KINDS)
    while size < total:
        kind = rng.choice(names)
        roll = rng.random()
        target = (
            rng.randrange(200, 1000)
            if roll < 0.6
            else rng.randrange(1000, 4000)
            if roll < 0.9
            else rng.randrange(4000, 16000)
            if roll < 0.99
            else rng.randrange(16000, 64000)
        )
        parts: list[str] = []
        length = 0
        while length < target:
            part = _KINDS[kind](rng)
            parts.append(part)
            length += len(part)
        if rng.random() < 0.025:
            setting, secret = _secret(rng)
            parts.insert(rng.randrange(len(parts) + 1), setting)
            planted[len(texts)] = secret
        text = "".join(parts)
        texts.append((kind, text))
        size += len(text)
    return texts, planted


def _best_pair(
    subject: Callable[[], object], baseline: Callable[[], object], repeat: int
) -> tuple[float, float]:
    """Best times of ``subject`` and ``baseline``, run alternately so load hits both alike."""
    best = [float("inf"), float("inf")]
    for _ in range(repeat):
        for index, fn in enumerate((subject, baseline)):
            start = time.perf_counter()
            fn()
            best[index] = min(best[index], time.perf_counter() - start)
    return best[0], best[1]


def text_rates(
    redact: Callable[[str], str], texts: Sequence[str], repeat: int
) -> tuple[float, float]:
    """Seconds for ``redact`` and for the trivial regex over ``texts`` (best of ``repeat``)."""
    search = _TRIVIAL.search

    def subject() -> None:
        for text in texts:
            redact(text)

    def baseline() -> None:
        for text in texts:
            search(text)

    return _best_pair(subject, baseline, repeat)


def events_of(texts: Sequence[str]) -> list[Event]:
    """Events as collectors build them, one per text of 200 B to 4 KB."""
    session = str(uuid.UUID(int=7))
    return [
        Event.create(
            text,
            "codex",
            EventKind.CONVERSATION if i % 3 else EventKind.COMMAND,
            workspace="/home/dev/app",
            session=session,
            title="make the retry logic idempotent",
            tags=("agent", "codex"),
        )
        for i, text in enumerate(t for t in texts if 200 <= len(t) <= 4000)
    ]


def event_rates(
    redact_event: Callable[[Event], Event], events: Sequence[Event], repeat: int
) -> tuple[float, float]:
    """Seconds for ``redact_event`` and for the trivial regex over each event's strings."""
    search = _TRIVIAL.search

    def subject() -> None:
        for event in events:
            redact_event(event)

    def baseline() -> None:
        for event in events:
            for text in (event.content, event.title, event.workspace, event.session, *event.tags):
                if text:
                    search(text)

    return _best_pair(subject, baseline, repeat)


def check(redactor: Redactor, texts: Sequence[str], planted: dict[int, str]) -> int:
    """How many markers the corpus yields.

    Raises:
        SystemExit: a planted secret survived redaction.
    """
    found = 0
    for index, text in enumerate(texts):
        clean, counts = redactor.redact_counted(text)
        found += counts.total()
        if index in planted and planted[index] in clean:
            raise SystemExit(f"redaction missed the secret planted in text {index}")
    return found


def accuracy(redactor: Redactor) -> None:
    """Print recall per secret class and false-positive rate per clean kind, then overall."""
    samples = build()
    scores, missed, changed = evaluate(redactor.redact, samples)
    for key, score in sorted(scores.items()):
        clean = key.startswith("clean:")
        metric = f"false_positive_rate_{key[6:]}" if clean else f"recall_{key}"
        report("redact", metric, score.rate, "ratio", samples=score.total)
    secrets = sum(1 for s in samples if s.secrets)
    clean_total = len(samples) - secrets
    report(
        "redact",
        "recall",
        1 - len(missed) / secrets,
        "ratio",
        samples=secrets,
        kinds=len({s.kind for s in samples if s.secrets}),
        missed=sorted({f"{s.cls}:{s.kind}" for s in missed}),
    )
    report(
        "redact",
        "false_positive_rate",
        len(changed) / clean_total,
        "ratio",
        samples=clean_total,
        changed=sorted({s.kind for s in changed}),
    )


def run(quick: bool = False) -> None:
    total = (4 if quick else 20) * 1_000_000
    repeat = 2 if quick else 3
    pairs, planted = corpus(total)
    texts = [text for _, text in pairs]
    redactor = Redactor()
    accuracy(redactor)
    markers = check(redactor, texts, planted)
    megabytes = sum(len(t.encode("utf-8")) for t in texts) / 1e6
    seconds, base = text_rates(redactor.redact, texts, repeat)
    report(
        "redact",
        "redact_throughput",
        megabytes / seconds,
        "MB/s",
        megabytes / base,
        size_mb=round(megabytes, 1),
        texts=len(texts),
        planted=len(planted),
        markers=markers,
    )
    for kind in _KINDS:
        subset = [text for k, text in pairs if k == kind]
        mb = sum(len(t.encode("utf-8")) for t in subset) / 1e6
        seconds, base = text_rates(redactor.redact, subset, repeat)
        report(
            "redact",
            f"redact_throughput_{kind}",
            mb / seconds,
            "MB/s",
            mb / base,
            size_mb=round(mb, 1),
            texts=len(subset),
        )
    events = events_of(texts)
    seconds, base = event_rates(redactor.redact_event, events, repeat)
    report(
        "redact",
        "redact_event_rate",
        len(events) / seconds,
        "events/s",
        len(events) / base,
        events=len(events),
        mean_bytes=round(sum(len(e.content) for e in events) / max(1, len(events))),
    )
