"""Capture-time secret redaction: known secret shapes become ``[REDACTED:<kind>]``.

Every event passes through a :class:`Redactor` before it reaches the journal
(see :mod:`urchin.recorder`), so a token pasted into a prompt, an ``.env`` file
echoed by an agent or a connection string in a shell command never lands on
disk. Kinds are short stable words (``private_key``, ``aws_key``,
``github_token``, ``jwt``, ``password``, ``bearer``, ``connection_string``, ...)
so readers can count them.

Speed: ordinary text pays a lower-casing and a few substring checks; a rule's
regular expression runs only when one of its keywords occurs. Every pattern is
linear on adversarial input: token patterns start only at the start of a token
run (a look-behind), repeats are bounded or possessive, and the private-key
block is found with two linear scans instead of a lazy match.

Redaction is idempotent: a marker is never matched again, because every value
pattern refuses text starting with ``[REDACTED:``.
"""

from __future__ import annotations

import functools
import math
import re
from abc import ABC, abstractmethod
from bisect import bisect_left
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from urchin.errors import ConfigError
from urchin.event import Actor, Event, JsonValue

if TYPE_CHECKING:
    from urchin.config import Settings

__all__ = [
    "MARKER_PREFIX",
    "Redactor",
    "compile_allowlist",
    "compile_patterns",
    "count_markers",
    "default_redactor",
    "event_marker_counts",
    "marker",
    "redact",
]

MARKER_PREFIX = "[REDACTED:"
_MARKER_RE = re.compile(r"\[REDACTED:([a-z0-9_]{1,40})\]")
_MAX_VALUE = 1024

#: Shannon entropy (bits per character) a value must reach to count as random.
ENTROPY_THRESHOLD = 3.5
#: Shortest value the entropy rule considers.
ENTROPY_MIN_LENGTH = 20


def marker(kind: str) -> str:
    """The text that replaces a secret of ``kind``."""
    return f"{MARKER_PREFIX}{kind}]"


def count_markers(text: str) -> Counter[str]:
    """How many ``[REDACTED:<kind>]`` markers of each kind ``text`` holds."""
    if MARKER_PREFIX not in text:
        return Counter()
    return Counter(m.group(1) for m in _MARKER_RE.finditer(text))


def event_marker_counts(event: Event) -> Counter[str]:
    """Markers per kind across every text field of an event (content, title, tags, meta...)."""
    counts: Counter[str] = Counter()
    for text in _event_texts(event):
        if MARKER_PREFIX in text:
            counts.update(count_markers(text))
    return counts


def _event_texts(event: Event) -> Iterable[str]:
    yield event.content
    for value in (event.title, event.workspace, event.session):
        if value:
            yield value
    yield from event.tags
    if event.actor is not None and event.actor.workspace:
        yield event.actor.workspace
    if event.meta:
        yield from _json_texts(dict(event.meta))


def _json_texts(value: JsonValue) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from _json_texts(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _json_texts(item)


# -- value heuristics ----------------------------------------------------------------------

_PLACEHOLDER = re.compile(
    r"\$\{?[A-Za-z_][A-Za-z0-9_]*\}?"  # $VAR, ${VAR}
    r"|%[A-Za-z_][A-Za-z0-9_]*%"  # %VAR%
    r"|<[^<>\n]{0,64}>"  # <your-token>
    r"|\{\{[^{}\n]{0,64}\}\}"  # {{ secret }}
    r"|[*•.]+|[xX]{3,}"  # already masked
)
# Values that are types, nulls or masks rather than secrets (`password: str`, `token: null`).
_STOPWORDS = re.compile(
    r"null|none|nil|true|false|undefined|str|string|int|bytes|bool|any|secretstr|optional"
    r"|required|empty|redacted|hidden|changeme",
    re.IGNORECASE,
)
_CODE_PATH = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")
_PATH_PREFIXES = ("/", "~/", "./", "../", "http://", "https://", "file://")
_PLACEHOLDER_STARTS = frozenset("$%<{*•.xX")


def _is_placeholder(value: str) -> bool:
    stripped = value.strip()
    return (
        not stripped
        or stripped.startswith(MARKER_PREFIX)
        or _STOPWORDS.fullmatch(stripped) is not None
        or (stripped[0] in _PLACEHOLDER_STARTS and _PLACEHOLDER.fullmatch(stripped) is not None)
    )


def _shannon_entropy(value: str) -> float:
    """Bits of entropy per character of ``value`` (0 for an empty string)."""
    if not value:
        return 0.0
    size = len(value)
    return -sum(n / size * math.log2(n / size) for n in Counter(value).values())


def _mixed(value: str) -> bool:
    return (
        any(c.isdigit() for c in value)
        and any(c.isupper() for c in value)
        and any(c.islower() for c in value)
    )


def _looks_random(value: str) -> bool:
    """Long, mixed upper/lower/digit and high entropy: how generated secrets look.

    Hex ids, UUIDs and git SHAs have no upper case (or no lower case), so they never pass.
    """
    if len(value) < ENTROPY_MIN_LENGTH or value.startswith(_PATH_PREFIXES) or " " in value:
        return False
    return _mixed(value) and _shannon_entropy(value) >= ENTROPY_THRESHOLD


# -- secret-looking names -------------------------------------------------------------------

_NAME_SEPARATORS = re.compile(r"[_.\-\s\"']")
# Words that, followed by "key", name a credential: apiKey, ACCESS_KEY, signing-key.
_KEY_WORDS = (
    "api|access|secret|signing|encryption|master|auth|client|account|app|license|subscription"
)
_KEY_PREFIXES = tuple(_KEY_WORDS.split("|"))
_KEY_SUFFIXES = tuple(f"{prefix}key" for prefix in _KEY_PREFIXES)
_PASS_NAME = re.compile(r"(?:^|[_.\-])(?:pass|pwd)$")
_ENTROPY_WORDS = ("key", "secret", "token", "pass", "pwd", "credential", "auth", "private", "sig")
_EXPLICIT_KEYWORDS = ("pass", "pwd", "secret", "token", "cred", "key")


@functools.lru_cache(maxsize=4096)
def _secret_name_kind(name: str) -> str | None:
    """The kind for a name whose value is always a secret (``DB_PASSWORD``, ``apiKey``), or None.

    ``token_count`` or ``password_hint`` are not secret names: the secret word must end the name.
    """
    lowered = name.strip().strip("\"'-").lower()
    flat = _NAME_SEPARATORS.sub("", lowered)
    if flat.endswith(("password", "passwd", "passphrase")) or _PASS_NAME.search(lowered):
        return "password"
    if flat.endswith("secretaccesskey") or ("aws" in flat and "secret" in flat):
        return "aws_secret"
    if flat.endswith("privatekey"):
        return "private_key"
    if flat.endswith(_KEY_SUFFIXES):
        return "api_key"
    if flat.endswith("secret"):
        return "secret"
    if flat.endswith("token"):
        return "token"
    if flat.endswith(("credential", "credentials", "creds")):
        return "credential"
    return None


def _entropy_name(name: str) -> bool:
    lowered = name.lower()
    return any(word in lowered for word in _ENTROPY_WORDS)


def _classify_value(
    name: str, value: str, *, quoted: bool = True, prose: bool = False
) -> str | None:
    """The kind to redact ``value`` as when it is assigned to ``name``, or None to keep it.

    ``quoted`` says the value was quoted (so it is surely a value); ``prose`` says an unquoted
    value sits in running text (``password: reset it``), where only secret-shaped values count.
    """
    if _is_placeholder(value):
        return None
    kind = _secret_name_kind(name)
    if kind is not None and _plausible_secret(value, kind, quoted=quoted, prose=prose):
        return kind
    if _entropy_name(name) and _looks_random(value.strip()):
        return kind or "secret"
    return None


def _plausible_secret(value: str, kind: str, *, quoted: bool, prose: bool) -> bool:
    stripped = value.strip()
    if kind != "password" and stripped.isdigit():
        return False  # max_token=100, key=3
    if quoted:
        return True
    if stripped.startswith(_PATH_PREFIXES) or _CODE_PATH.fullmatch(stripped):
        return False  # token=args.token, SSH_KEY=/home/me/.ssh/id_rsa
    if prose:
        return not stripped.isalpha()
    return True


# -- rules ---------------------------------------------------------------------------------

Decision = tuple[str, int, int]


class _Rule(ABC):
    """One secret shape. ``keywords`` (lower case) gate the scan: none present, no scan."""

    keywords: tuple[str, ...] = ()

    @abstractmethod
    def apply(self, text: str, guard: _Guard) -> str:
        """``text`` with this shape's secrets replaced (the same object when none were)."""


@dataclass(frozen=True, slots=True)
class _Guard:
    """What every replacement checks: the allowlist, and a tally of what was replaced."""

    allow: Callable[[str, str], bool]
    counts: Counter[str] | None

    def take(self, kind: str) -> str:
        if self.counts is not None:
            self.counts[kind] += 1
        return marker(kind)


class _RegexRule(_Rule):
    def __init__(
        self,
        pattern: re.Pattern[str],
        decide: Callable[[re.Match[str]], Decision | None],
        keywords: tuple[str, ...] = (),
    ) -> None:
        self.pattern = pattern
        self.decide = decide
        self.keywords = keywords

    def apply(self, text: str, guard: _Guard) -> str:
        pieces: list[str] = []
        pos = 0
        for match in self.pattern.finditer(text):
            decision = self.decide(match)
            if decision is None:
                continue
            kind, start, end = decision
            if end <= start or start < pos:
                continue
            secret = text[start:end]
            if secret.startswith(MARKER_PREFIX) or guard.allow(secret, match.group(0)):
                continue
            pieces.append(text[pos:start])
            pieces.append(guard.take(kind))
            pos = end
        if not pieces:
            return text
        pieces.append(text[pos:])
        return "".join(pieces)


def _token(
    kind: str,
    pattern: str,
    keywords: Sequence[str],
    check: Callable[[str], bool] | None = None,
) -> _RegexRule:
    """A rule for a self-identifying token (``ghp_...``): the whole match is the secret."""
    compiled = re.compile(pattern)

    def decide(match: re.Match[str]) -> Decision | None:
        if check is not None and not check(match.group(0)):
            return None
        return kind, match.start(), match.end()

    return _RegexRule(compiled, decide, tuple(keywords))


class _PrivateKeyRule(_Rule):
    """PEM private-key blocks (PKCS#1/8, OpenSSH, EC, encrypted, PGP), BEGIN through END.

    A block cut off before its END line still leaks the key, so without an END the base64
    body after BEGIN is redacted instead. Ends are found once, up front, so many BEGIN lines
    without an END cost one pass, not one pass each.
    """

    keywords = ("private key",)
    _begin = re.compile(r"-----BEGIN (?:[A-Z0-9]++ ){0,3}PRIVATE KEY(?: BLOCK)?-----")
    _end = re.compile(r"-----END (?:[A-Z0-9]++ ){0,3}PRIVATE KEY(?: BLOCK)?-----")
    # Base64 lines, real or JSON-escaped line breaks, and RFC 1421 header lines.
    _body = re.compile(
        r"(?:[ \t]*+(?:\\r|\\n|\r?\n)|[A-Za-z0-9+/=]++"
        r"|(?:Proc-Type|DEK-Info|Comment):[^\n]{0,200}+)*+"
    )

    def apply(self, text: str, guard: _Guard) -> str:
        begins = list(self._begin.finditer(text))
        if not begins:
            return text
        end_matches = list(self._end.finditer(text))
        ends = [m.start() for m in end_matches]
        pieces: list[str] = []
        pos = 0
        for begin in begins:
            if begin.start() < pos:
                continue
            index = bisect_left(ends, begin.end())
            if index < len(ends):
                stop = end_matches[index].end()
            else:
                body = self._body.match(text, begin.end())
                stop = body.end() if body else begin.end()
            if guard.allow(text[begin.start() : stop], text[begin.start() : stop]):
                continue
            pieces.append(text[pos : begin.start()])
            pieces.append(guard.take("private_key"))
            pos = stop
        if not pieces:
            return text
        pieces.append(text[pos:])
        return "".join(pieces)


def _keyword_start(words: Sequence[str]) -> str:
    """A case-insensitive alternation of ``words`` that starts with one character class.

    ``re`` skips ahead over text that cannot start a match only when a pattern starts with a
    literal or a class; ``(?i:a|b)`` hides that, so dispatch on the first letter instead.
    """
    firsts = sorted({word[0] for word in words})
    branches = []
    for first in firsts:
        rests = sorted((w[1:] for w in words if w[0] == first), key=len, reverse=True)
        branches.append(f"(?<=[{first}{first.upper()}])(?i:{'|'.join(rests)})")
    letters = "".join(f"{c}{c.upper()}" for c in firsts)
    return f"[{letters}](?:{'|'.join(branches)})"


def _boundary(first: str, before: str = r"A-Za-z0-9_\-") -> str:
    """Just after a one-character ``first``: the character before it is not in ``before``.

    Put after the first character (not before it) so the pattern keeps a literal or class
    start, which ``re`` uses to skip ahead quickly.
    """
    return f"(?<![{before}]{first})"


# A quoted or bare value after a separator; the marker is refused by the callers.
_N = f"{{1,{_MAX_VALUE}}}+"
_VALUE = (
    r"(?:\\\"(?P<eq>[^\"\\\n]" + _N + ")"
    r"|\"(?P<dq>(?:[^\"\\\n]|\\.)" + _N + ")"
    r"|'(?P<sq>[^'\n]" + _N + ")"
    r"|(?P<bare>[^\s\"'`,;&|<>(){}\[\]]" + _N + "))"
)

_SEPARATOR = r"(?P<kq>\\?[\"']?)[ \t]*(?P<sep>:=|=>|=(?!=)|:(?!:))[ \t]*"
# Names that always hold a secret, anchored on the word that ends them; the rest of the name
# is read back in _name_before. Kept narrow so that ordinary text rarely reaches Python.
_NAME_ENDINGS = "password|passwd|passphrase|pass|pwd|secret|token|credentials?|creds"
_EXPLICIT_WORDS = (
    *_NAME_ENDINGS.split("|"),
    *(rf"{prefix}[_.\-]?key" for prefix in _KEY_PREFIXES),
)
_ASSIGN = re.compile(_keyword_start(_EXPLICIT_WORDS) + _SEPARATOR + _VALUE)
# Any name with a secret-ish word in it, when the value is a long run of token characters.
_ENTROPY_ASSIGN = re.compile(
    _keyword_start(_ENTROPY_WORDS)
    + r"[\w.\-]{0,40}+"
    + _SEPARATOR
    + r"\\?[\"']?(?P<value>[A-Za-z0-9+/=_.~\-]{20,1024}+)"
)
_LINE_TAIL = re.compile(r"[ \t,;}\]]*(?:\r?\n|\\n|$)")
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")


def _name_before(text: str, start: int, name_end: int) -> str:
    begin = start
    limit = max(0, start - 40)
    while begin > limit and text[begin - 1] in _NAME_CHARS:
        begin -= 1
    return text[begin:name_end]


def _value_span(match: re.Match[str]) -> tuple[str, int, int, bool]:
    # The value groups close last, so lastgroup names the one that matched.
    group = match.lastgroup or "bare"
    start, end = match.span(group)
    return match.string[start:end], start, end, group != "bare"


def _decide_assignment(match: re.Match[str]) -> Decision | None:
    value, start, end, quoted = _value_span(match)
    text = match.string
    if not quoted and end < len(text) and text[end] in "([{":
        return None  # a call, subscript or ${template}: code, not a value
    kind = _secret_name_kind(_name_before(text, match.start(), match.start("kq")))
    if kind is None or _is_placeholder(value):
        return None
    prose = (
        not quoted
        and match.group("sep") == ":"
        and not match.group("kq")
        and _LINE_TAIL.match(text, end) is None
    )
    if not _plausible_secret(value, kind, quoted=quoted, prose=prose):
        return None
    return kind, start, end


def _decide_entropy(match: re.Match[str]) -> Decision | None:
    value = match.group("value")
    if not _looks_random(value):
        return None
    start, end = match.span("value")
    name = _name_before(match.string, match.start(), match.start("kq"))
    return _secret_name_kind(name) or "secret", start, end


_FLAG = re.compile(
    r"--(?<![\w\-]--)(?P<name>(?i:(?:[a-z0-9]++-){0,4}"
    r"(?:password|passwd|passphrase|pass|token|secret|api-?key|access-key|secret-key"
    r"|private-key|client-secret|credentials?)))"
    r"[ \t]++(?!-)" + _VALUE
)


def _decide_flag(match: re.Match[str]) -> Decision | None:
    value, start, end, quoted = _value_span(match)
    kind = _classify_value(match.group("name"), value, quoted=quoted)
    return None if kind is None else (kind, start, end)


_AUTH_HEADER = re.compile(
    r"[Aa]" + _boundary("[Aa]", r"A-Za-z0-9_") + r"(?i:uthorization)"
    r"\\?[\"']?[ \t]*[:=][ \t]*\\?[\"']?"
    r"(?>(?P<scheme>(?i:bearer|basic|token|digest|negotiate|bot|apikey))[ \t]++)?"
    r"(?P<value>[^\s\"'\\,;]{1,4096}+)"
)
_SCHEME_KINDS = {"bearer": "bearer", "token": "bearer", "basic": "basic_auth"}


def _decide_auth(match: re.Match[str]) -> Decision | None:
    value = match.group("value")
    if _is_placeholder(value):
        return None
    scheme = (match.group("scheme") or "").lower()
    start, end = match.span("value")
    return _SCHEME_KINDS.get(scheme, "authorization"), start, end


_BARE_BEARER = re.compile(
    r"[Bb]" + _boundary("[Bb]") + r"(?i:earer)[ \t]++(?P<value>[A-Za-z0-9._~+/=\-]{16,4096}+)"
)


def _decide_bearer(match: re.Match[str]) -> Decision | None:
    value = match.group("value")
    if not any(c.isdigit() for c in value):
        return None  # "bearer of responsibilities"
    start, end = match.span("value")
    return "bearer", start, end


# user:password@ after a scheme; the scheme itself is not needed to recognise the password.
_CONNECTION = re.compile(r"://[^\s:/?#@'\"\[\]]{0,256}+:(?P<value>[^\s/?#'\"]{1,1024})@")


_GCP_PRIVATE_KEY = re.compile(r"\"private_key\"[ \t]*:[ \t]*\"(?P<value>(?:[^\"\\]|\\.){1,16384}+)")


def _named_value(kind: str) -> Callable[[re.Match[str]], Decision | None]:
    """The ``value`` group is the secret, unless it is a placeholder such as ``${PASSWORD}``."""

    def decide(match: re.Match[str]) -> Decision | None:
        start, end = match.span("value")
        if _is_placeholder(match.string[start:end]):
            return None
        return kind, start, end

    return decide


_AWS_KEY_PREFIXES = ("AKIA", "ASIA", "ABIA", "ACCA", "AGPA", "AIDA", "AIPA", "ANPA", "ANVA", "AROA")

_BUILTIN: tuple[_Rule, ...] = (
    _RegexRule(_GCP_PRIVATE_KEY, _named_value("private_key"), ('"private_key"',)),
    _PrivateKeyRule(),
    _token(
        "aws_key",
        r"A" + _boundary("A", "A-Za-z0-9") + r"(?:KIA|SIA|BIA|CCA|GPA|IDA|IPA|NPA|NVA|ROA)"
        r"[A-Z0-9]{16}(?![A-Za-z0-9])",
        tuple(p.lower() for p in _AWS_KEY_PREFIXES),
    ),
    _token("gcp_api_key", r"AIza" + r"(?<![\w\-]AIza)[0-9A-Za-z_\-]{35}(?![\w\-])", ("aiza",)),
    _RegexRule(
        re.compile(
            r"(?:AccountKey|SharedAccessKey)[ \t]*=[ \t]*(?P<value>[A-Za-z0-9+/%]{16,}+={0,2})"
        ),
        _named_value("azure_key"),
        ("accountkey", "sharedaccesskey"),
    ),
    _RegexRule(
        re.compile(r"[?&]sig=(?P<value>[A-Za-z0-9%+/=_\-]{16,}+)"),
        _named_value("azure_sas"),
        ("sig=",),
    ),
    _token(
        "github_token",
        r"g"
        + _boundary("g", "A-Za-z0-9_")
        + r"(?:h[pousr]_[A-Za-z0-9]{36,255}+|ithub_pat_[A-Za-z0-9_]{22,255}+)",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    ),
    _token(
        "gitlab_token",
        r"gl" + r"(?<![A-Za-z0-9_\-]gl)(?:pat|dt|rt|ptt|oas)-[A-Za-z0-9_\-]{20,}+",
        ("glpat-", "gldt-", "glrt-", "glptt-", "gloas-"),
    ),
    _RegexRule(
        re.compile(
            r"https://hooks\.slack\.com/(?:services|workflows|triggers)/"
            r"(?P<value>[A-Za-z0-9/_\-]{20,}+)"
        ),
        _named_value("slack_webhook"),
        ("hooks.slack.com",),
    ),
    _token(
        "slack_token",
        r"x" + _boundary("x") + r"(?:ox[abposr]|app)-[A-Za-z0-9\-]{10,}+",
        ("xox", "xapp-"),
        check=lambda token: any(c.isdigit() for c in token),
    ),
    _token(
        "anthropic_key",
        r"sk-ant-" + r"(?<![A-Za-z0-9_\-]sk-ant-)[A-Za-z0-9_\-]{20,}+",
        ("sk-ant-",),
    ),
    _token(
        "openai_key",
        r"sk-" + r"(?<![A-Za-z0-9_\-]sk-)(?!ant-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}+",
        ("sk-",),
        check=_mixed,
    ),
    _token(
        "stripe_key",
        r"[sr]k_" + r"(?<![A-Za-z0-9_][sr]k_)(?:live|test)_[A-Za-z0-9]{16,}+",
        ("_live_", "_test_"),
    ),
    _token(
        "jwt",
        r"eyJ"
        + r"(?<![A-Za-z0-9_\-]eyJ)[A-Za-z0-9_\-]{4,}+\.[A-Za-z0-9_\-]{4,}+\.[A-Za-z0-9_\-]*+",
        ("eyj",),
    ),
    _RegexRule(_AUTH_HEADER, _decide_auth, ("authorization",)),
    _RegexRule(_BARE_BEARER, _decide_bearer, ("bearer",)),
    _RegexRule(_CONNECTION, _named_value("connection_string"), ("://",)),
    _RegexRule(_FLAG, _decide_flag, ("--",)),
    _RegexRule(_ASSIGN, _decide_assignment, _EXPLICIT_KEYWORDS),
    _RegexRule(_ENTROPY_ASSIGN, _decide_entropy, _ENTROPY_WORDS),
)


# -- configuration -------------------------------------------------------------------------


def compile_patterns(
    raw: Sequence[str], label: str = "redact_patterns"
) -> tuple[re.Pattern[str], ...]:
    """Compile extra secret patterns.

    Raises:
        ConfigError: a pattern is not a valid regular expression, or matches empty text;
            the message names its index (``redact_patterns[2]``) but never echoes it.
    """
    compiled: list[re.Pattern[str]] = []
    for index, pattern in enumerate(raw):
        regex = _compile_one(pattern, f"{label}[{index}]")
        if regex.fullmatch("") is not None:
            raise ConfigError(f"{label}[{index}] matches empty text; it would redact nothing")
        compiled.append(regex)
    return tuple(compiled)


def compile_allowlist(
    raw: Sequence[str], label: str = "redact_allow"
) -> tuple[frozenset[str], tuple[re.Pattern[str], ...]]:
    """Split allowlist entries into literals and ``re:``-prefixed regular expressions.

    Raises:
        ConfigError: a ``re:`` entry is not a valid regular expression (named by index).
    """
    literals: set[str] = set()
    patterns: list[re.Pattern[str]] = []
    for index, entry in enumerate(raw):
        if entry.startswith("re:"):
            patterns.append(_compile_one(entry[3:], f"{label}[{index}]"))
        elif entry:
            literals.add(entry)
    return frozenset(literals), tuple(patterns)


def _compile_one(pattern: str, label: str) -> re.Pattern[str]:
    if not isinstance(pattern, str) or not pattern:
        raise ConfigError(f"{label} must be a non-empty string")
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise ConfigError(f"{label} is not a valid regular expression: {exc.msg}") from None


def _custom_rule(pattern: re.Pattern[str]) -> _RegexRule:
    group: int | str = 0
    if "secret" in pattern.groupindex:
        group = "secret"
    elif pattern.groups:
        group = 1

    def decide(match: re.Match[str]) -> Decision | None:
        start, end = match.span(group)
        if start < 0 or _inside_marker(match.string, start, end):
            return None
        return "custom", start, end

    return _RegexRule(pattern, decide)


def _inside_marker(text: str, start: int, end: int) -> bool:
    """Whether [start, end) touches a marker, so a user pattern never rewrites one."""
    if MARKER_PREFIX in text[start:end]:
        return True
    opened = text.rfind(MARKER_PREFIX, max(0, start - 52), start + len(MARKER_PREFIX))
    if opened < 0:
        return False
    closed = text.find("]", opened)
    return closed >= start


# -- the redactor --------------------------------------------------------------------------


class Redactor:
    """Replaces secrets in text and events. Build once; thread-safe; patterns compiled once.

    ``patterns`` are extra regular expressions (a ``secret`` group or group 1 is what gets
    replaced, else the whole match; kind ``custom``). ``allow`` entries are literal strings,
    or regular expressions when prefixed ``re:``; a candidate equal to a literal, or fully
    matched by an allow pattern, is left alone.
    """

    def __init__(
        self,
        *,
        enabled: bool = True,
        patterns: Sequence[str] = (),
        allow: Sequence[str] = (),
    ) -> None:
        """Raises:
        ConfigError: a pattern or ``re:`` allow entry is invalid (named by its index).
        """
        self.enabled = enabled
        self.extra_patterns = len(patterns)
        self.allow_entries = len(allow)
        custom = tuple(_custom_rule(p) for p in compile_patterns(patterns))
        self._literals, self._allow_patterns = compile_allowlist(allow)
        self._rules: tuple[_Rule, ...] = (*custom, *_BUILTIN)

    @classmethod
    def from_settings(cls, settings: Settings) -> Redactor:
        """The redactor ``settings`` describe (``redact``, ``redact_patterns``, ``redact_allow``).

        Raises:
            ConfigError: a pattern is invalid.
        """
        return cls(
            enabled=settings.redact,
            patterns=settings.redact_patterns,
            allow=settings.redact_allow,
        )

    def _allowed(self, secret: str, whole: str) -> bool:
        if not self._literals and not self._allow_patterns:
            return False
        if secret in self._literals or whole in self._literals:
            return True
        return any(
            p.fullmatch(secret) is not None or p.fullmatch(whole) is not None
            for p in self._allow_patterns
        )

    def redact(self, text: str) -> str:
        """``text`` with every secret replaced by ``[REDACTED:<kind>]``; never raises."""
        return self._redact(text, None)

    def redact_counted(self, text: str) -> tuple[str, Counter[str]]:
        """Like :meth:`redact`, also returning how many secrets of each kind were replaced."""
        counts: Counter[str] = Counter()
        return self._redact(text, counts), counts

    def _redact(self, text: str, counts: Counter[str] | None) -> str:
        if not self.enabled or not text:
            return text
        lowered = text.lower()
        guard = _Guard(self._allowed, counts)
        for rule in self._rules:
            if rule.keywords and not any(k in lowered for k in rule.keywords):
                continue
            redacted = rule.apply(text, guard)
            if redacted is not text:
                text = redacted
                lowered = text.lower()
        return text

    def redact_event(self, event: Event) -> Event:
        """The event with secrets removed from content, title, tags, workspace, session and meta.

        Returns the same object when nothing changed.
        """
        if not self.enabled:
            return event
        changes: dict[str, object] = {}
        content = self.redact(event.content)
        if content != event.content:
            changes["content"] = content
        for name in ("title", "workspace", "session"):
            value = getattr(event, name)
            if value:
                redacted = self.redact(value)
                if redacted != value:
                    changes[name] = redacted
        tags = tuple(self.redact(tag) for tag in event.tags)
        if tags != event.tags:
            changes["tags"] = tags
        if event.actor is not None and event.actor.workspace:
            workspace = self.redact(event.actor.workspace)
            if workspace != event.actor.workspace:
                changes["actor"] = _with_workspace(event.actor, workspace)
        if event.meta:
            meta = {key: self._redact_json(value, key) for key, value in event.meta.items()}
            if meta != dict(event.meta):
                changes["meta"] = meta
        if not changes:
            return event
        return replace(event, **changes)  # type: ignore[arg-type]

    def _redact_json(self, value: JsonValue, key: str | None) -> JsonValue:
        if isinstance(value, str):
            if key is not None:
                kind = _classify_value(key, value)
                if kind is not None and not self._allowed(value, value):
                    return marker(kind)
            return self.redact(value)
        if isinstance(value, list):
            return [self._redact_json(item, key) for item in value]
        if isinstance(value, dict):
            return {k: self._redact_json(v, k) for k, v in value.items()}
        return value


def _with_workspace(actor: Actor, workspace: str) -> Actor:
    return replace(actor, workspace=workspace)


@functools.cache
def default_redactor() -> Redactor:
    """The built-in rules with no extra patterns or allowlist; shared, built once."""
    return Redactor()


def redact(text: str) -> str:
    """Redact ``text`` with the built-in rules (see :class:`Redactor` for configured ones)."""
    return default_redactor().redact(text)
