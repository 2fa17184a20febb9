"""The secret shapes :mod:`urchin.redact` replaces, and where in a text each can start.

Each shape keeps the one regular expression it always had; what makes ordinary text cheap
is where that expression is tried (the search itself is :class:`urchin.redact.Scan`):

- Shapes with a fixed prefix (``ghp_``, ``eyJ``, ``://``, ``--``) scan with ``re``'s fast
  literal search, most behind a character the text must hold (found with memchr) and a
  literal gate shared with their neighbours.
- Shapes anchored on a name (``password=``, ``"api_key":``, ``Authorization:``) are tried
  only where a search for five literals found a secret-ish word, the rest of its name and
  an assignment, and either the name ends as one of those shapes' names do or a value
  long enough for the entropy rule follows.

Trying an expression only at candidate starts, in order, skipping starts inside the last
match, finds exactly what ``finditer`` finds as long as the candidates include every place
the expression can match; each finder below says why its candidates do.
"""

from __future__ import annotations

import functools
import math
import re
from abc import ABC, abstractmethod
from bisect import bisect_left
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from urchin.redact import Scan

__all__ = [
    "BUILTIN",
    "ENTROPY_MIN_LENGTH",
    "ENTROPY_THRESHOLD",
    "MARKER_PREFIX",
    "Decision",
    "Gate",
    "Guard",
    "NameAnchor",
    "RegexRule",
    "Rule",
    "Span",
    "classify_value",
    "marker",
    "presence",
]

MARKER_PREFIX = "[REDACTED:"
_MAX_VALUE = 1024

#: Shannon entropy (bits per character) a value must reach to count as random.
ENTROPY_THRESHOLD = 3.5
#: Shortest value the entropy rule considers.
ENTROPY_MIN_LENGTH = 20


def marker(kind: str) -> str:
    """The text that replaces a secret of ``kind``."""
    return f"{MARKER_PREFIX}{kind}]"


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


def classify_value(
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


# -- where names are assigned -----------------------------------------------------------------

# Words that end a name whose value is always a secret.
_NAME_ENDINGS = "password|passwd|passphrase|pass|pwd|secret|token|credentials?|creds"
# The names the explicit-assignment rule starts with, folded.
_ASSIGN_NAMES = frozenset(
    _NAME_ENDINGS.replace("credentials?", "credential|credentials").split("|")
) | {f"{prefix}{sep}key" for prefix in _KEY_PREFIXES for sep in ("", "_", ".", "-")}
# The last three letters of every name a name-anchored rule other than the entropy one
# can end on (azure's AccountKey and SharedAccessKey end in "key" too). One fixed-width
# look-behind checks them all at once.
_NAME_TAILS = sorted({name[-3:] for name in _ASSIGN_NAMES | {"authorization", "sig"}})
# A separator, then a value as long as the entropy rule's shortest (folded).
_LONG_VALUE = (
    r"\\?[\"']?[ \t]*+(?::=|=>|[:=])[ \t]*+\\?[\"']?[a-z0-9+/=_.~\-]{"
    + str(ENTROPY_MIN_LENGTH)
    + r"}()"
)


@dataclass(frozen=True, slots=True)
class NameAnchor:
    """A literal that every secret-ish word of some rules holds, searched in folded text.

    ``near`` matches at a hit of the literal followed by the rest of a name (at most
    ``run`` name characters, possessively) and an assignment; group 1 ends after the
    separator. ``full`` also asks that a value long enough for the entropy rule follow
    (group 2 ends after its first characters) or else that the name end as another rule's
    name can: only then can a rule match there. ``literals``: what ``near`` starts with.
    ``offsets``: how far before the literal each of its words starts.
    """

    near: re.Pattern[str]
    full: re.Pattern[str]
    literals: tuple[str, ...]
    offsets: tuple[int, ...]


def _anchor(literals: tuple[str, ...], run: int, offsets: tuple[int, ...] = (0,)) -> NameAnchor:
    near = rf"(?:{'|'.join(literals)})[\w.\-]{{0,{run}}}+(?=\\?[\"']?[ \t]*+[:=]())"
    full = rf"{near}(?:(?={_LONG_VALUE})|(?<={'|'.join(_NAME_TAILS)}))"
    return NameAnchor(re.compile(near), re.compile(full), literals, offsets)


# Each word with its run of at most 40 more name characters, as the entropy rule reads it,
# five searches for nine words: "ke" in key and token, "cre" in secret and credential
# (also creds), whose runs then count from the literal.
NAME_ANCHORS = (
    _anchor(("ke",), 41, (0, 2)),
    _anchor(("cre",), 47, (0, 2)),
    _anchor(("pass", "pwd", "private"), 40),
    _anchor(("auth",), 40),
    _anchor(("sig",), 40),
)
#: Any of them, loosely: asked of the few characters before one separator.
ANY_NAME = re.compile(r"(?:ke|cre|pass|pwd|private|auth|sig)[\w.\-]{0,47}+\\?[\"']?[ \t]*+[:=]")
#: How far before its separator's blanks a hit's word can start: the longest word and its
#: run, then a backslash and a quote.
NAME_REACH = len("credential") + 40 + 2
#: How far before its name's end a hit reads, to see how the name ends.
ENDS_REACH = len(_NAME_TAILS[0])
_BEARER_ANCHOR = re.compile(r"bearer(?=[ \t])")

# Characters whose presence (memchr, nearly free) decides which rules a text needs.
_PRESENCE = ":=-_AJbB"


def presence(text: str) -> int:
    """A bit per character of ``_PRESENCE`` that occurs in ``text``."""
    return (
        (":" in text)
        | ("=" in text) << 1
        | ("-" in text) << 2
        | ("_" in text) << 3
        | ("A" in text) << 4
        | ("J" in text) << 5
        | ("b" in text) << 6
        | ("B" in text) << 7
    )


def _bits(chars: str) -> int:
    return sum(1 << _PRESENCE.index(char) for char in set(chars))


# -- rules ---------------------------------------------------------------------------------

Decision = tuple[str, int, int]
#: Every place a rule's pattern can match, in order (a superset is fine); None when the
#: text is too crowded with candidates to be worth it, and the whole text is scanned.
Starts = Callable[["Scan"], "list[int] | None"]
#: A replacement: start and end in the old text, and the marker put there.
Span = tuple[int, int, str]
#: Literals one of which must occur (``in`` finds a fixed string faster than ``re``), or a
#: pattern that must.
Gate = tuple[str, ...] | re.Pattern[str]


class Rule(ABC):
    """One secret shape. ``needs``: bits of :func:`presence`, one of which every text the
    shape can occur in has (0: no such promise). Markers add no character a rule needs
    in a way that could complete a match, so a text's presence is decided once."""

    needs = 0

    @abstractmethod
    def apply(self, scan: Scan, guard: Guard) -> Scan:
        """The scan of the text with this shape's secrets replaced (``scan`` when none were)."""


@dataclass(frozen=True, slots=True)
class Guard:
    """What every replacement checks: the allowlist, and a tally of what was replaced."""

    allow: Callable[[str, str], bool]
    counts: Counter[str] | None

    def take(self, kind: str) -> str:
        if self.counts is not None:
            self.counts[kind] += 1
        return marker(kind)


class RegexRule(Rule):
    """A pattern and a decision per match. ``starts`` lists every place the pattern can
    match (a superset is fine); without it the whole text is scanned. A text in which the
    ``gate`` does not occur is skipped; ``needs`` are characters (see :class:`Rule`)."""

    def __init__(
        self,
        pattern: re.Pattern[str],
        decide: Callable[[re.Match[str]], Decision | None],
        *,
        starts: Starts | None = None,
        gate: Gate | None = None,
        needs: str = "",
    ) -> None:
        self.pattern = pattern
        self.decide = decide
        self.starts = starts
        self.gate = gate
        self.needs = _bits(needs)

    def apply(self, scan: Scan, guard: Guard) -> Scan:
        # The common case, nothing to find, returns after one gate lookup or one search.
        if self.gate is not None and not scan.has(self.gate):
            return scan
        text = scan.text
        matches: Iterable[re.Match[str]]
        if self.starts is None:
            if self.pattern.search(text) is None:
                return scan
            matches = self.pattern.finditer(text)
        else:
            starts = self.starts(scan)
            if starts is None:
                matches = self.pattern.finditer(text)
            elif not starts:
                return scan
            else:
                matches = self._at(text, starts)
        spans: list[Span] = []
        pos = 0
        for match in matches:
            decision = self.decide(match)
            if decision is None:
                continue
            kind, start, end = decision
            if end <= start or start < pos:
                continue
            secret = text[start:end]
            if secret.startswith(MARKER_PREFIX) or guard.allow(secret, match.group(0)):
                continue
            spans.append((start, end, guard.take(kind)))
            pos = end
        return scan.replaced(spans) if spans else scan

    def _at(self, text: str, starts: list[int]) -> Iterator[re.Match[str]]:
        # finditer's order: the leftmost match, then the next one from where it ended.
        match, pos = self.pattern.match, 0
        for start in starts:
            if start >= pos and (found := match(text, start)) is not None:
                yield found
                pos = max(found.end(), start + 1)


def _token(
    kind: str,
    pattern: str,
    needs: str,
    gate: Gate | None = None,
    check: Callable[[str], bool] | None = None,
) -> RegexRule:
    """A rule for a self-identifying token (``ghp_...``): the whole match is the secret."""

    def decide(match: re.Match[str]) -> Decision | None:
        if check is not None and not check(match.group(0)):
            return None
        return kind, match.start(), match.end()

    return RegexRule(re.compile(pattern), decide, gate=gate, needs=needs)


class _PrivateKeyRule(Rule):
    """PEM private-key blocks (PKCS#1/8, OpenSSH, EC, encrypted, PGP), BEGIN through END.

    A block cut off before its END line still leaks the key, so without an END the base64
    body after BEGIN is redacted instead. Ends are found once, up front, so many BEGIN lines
    without an END cost one pass, not one pass each.
    """

    needs = _bits("-")
    _gate = ("-----BEGIN ",)
    _begin = re.compile(r"-----BEGIN (?:[A-Z0-9]++ ){0,3}PRIVATE KEY(?: BLOCK)?-----")
    _end = re.compile(r"-----END (?:[A-Z0-9]++ ){0,3}PRIVATE KEY(?: BLOCK)?-----")
    # Base64 lines, real or JSON-escaped line breaks, and RFC 1421 header lines.
    _body = re.compile(
        r"(?:[ \t]*+(?:\\r|\\n|\r?\n)|[A-Za-z0-9+/=]++"
        r"|(?:Proc-Type|DEK-Info|Comment):[^\n]{0,200}+)*+"
    )

    def apply(self, scan: Scan, guard: Guard) -> Scan:
        if not scan.has(self._gate):
            return scan
        text = scan.text
        begins = list(self._begin.finditer(text))
        if not begins:
            return scan
        end_matches = list(self._end.finditer(text))
        ends = [m.start() for m in end_matches]
        spans: list[Span] = []
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
            spans.append((begin.start(), stop, guard.take("private_key")))
            pos = stop
        return scan.replaced(spans) if spans else scan


def _keyword_start(words: Sequence[str]) -> str:
    """A case-insensitive alternation of ``words`` that starts with one character class.

    ``re`` skips ahead over text that cannot start a match only when a pattern starts with a
    literal or a class; ``(?i:a|b)`` hides that, so dispatch on the first letter instead
    (it matters when a crowded text is scanned whole).
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
# Names that always hold a secret (_NAME_ENDINGS), anchored on the word that ends them; the
# rest of the name is read back in _name_before.
_EXPLICIT_WORDS = (
    *_NAME_ENDINGS.split("|"),
    *(rf"{prefix}[_.\-]?key" for prefix in _KEY_PREFIXES),
)
_ASSIGN = re.compile(_keyword_start(_EXPLICIT_WORDS) + _SEPARATOR + _VALUE)
# The explicit name a name ends with (no two end alike), and their last three letters.
_ASSIGN_NAME_END = re.compile(
    "(?:" + "|".join(sorted(map(re.escape, _ASSIGN_NAMES), key=len, reverse=True)) + r")\Z"
)
_ASSIGN_LONGEST = max(map(len, _ASSIGN_NAMES))
_ASSIGN_TAILS = frozenset(name[-3:] for name in _ASSIGN_NAMES)
# Any name with a secret-ish word in it, when the value is a long run of token characters.
_ENTROPY_ASSIGN = re.compile(
    _keyword_start(_ENTROPY_WORDS)
    + r"[\w.\-]{0,40}+"
    + _SEPARATOR
    + r"\\?[\"']?(?P<value>[A-Za-z0-9+/=_.~\-]{20,1024}+)"
)
_LINE_TAIL = re.compile(r"[ \t,;}\]]*(?:\r?\n|\\n|$)")
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")


def _assign_starts(scan: Scan) -> list[int] | None:
    # An explicit name is followed by a quote, blank or separator, so it ends where a name
    # of Scan.hits ends; try each explicit name spelled right before that end.
    ends = scan.name_ends()
    if ends is None:
        return None
    folded = scan.folded
    starts = []
    for end in ends:
        if folded[end - 3 : end] in _ASSIGN_TAILS:
            name = _ASSIGN_NAME_END.search(folded, max(0, end - _ASSIGN_LONGEST), end)
            if name is not None:
                starts.append(name.start())
    starts.sort()
    return starts


def _word_starts(scan: Scan) -> list[int] | None:
    # _ENTROPY_ASSIGN starts at a word followed by at most 40 name characters, a separator
    # and a long value: a hit of NAME_ANCHORS with a long value, at one of its offsets.
    return scan.word_starts()


def _named_at(name: str, before: str = "", *, folded: bool = False) -> Starts:
    """Where ``name`` ends a name of Scan.hits, one of ``before`` (if given) ahead of it:
    every start of a pattern made of that name, a blank or quote, and an assignment."""
    offset = len(name) + (1 if before else 0)

    def starts(scan: Scan) -> list[int] | None:
        ends = scan.name_ends()
        if ends is None:
            return None
        text = scan.folded if folded else scan.text
        return [
            end - offset
            for end in ends
            if end >= offset
            and text.startswith(name, end - len(name))
            and (not before or text[end - offset] in before)
        ]

    return starts


def _azure_starts(scan: Scan) -> list[int] | None:
    account, shared = _named_at("AccountKey")(scan), _named_at("SharedAccessKey")(scan)
    return None if account is None or shared is None else sorted(account + shared)


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
    kind = classify_value(match.group("name"), value, quoted=quoted)
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


def _bearer_starts(scan: Scan) -> list[int]:
    folded = scan.folded
    if "bearer" not in folded:
        return []
    return [hit.start() for hit in _BEARER_ANCHOR.finditer(folded)]


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


# Shared gates: one search says whether any of a few token rules can match.
_AWS_GATE = re.compile(r"A(?:KIA|SIA|BIA|CCA|GPA|IDA|IPA|NPA|NVA|ROA|Iza)")
_GIT_GATE = re.compile(r"g(?:h[pousr]_|ithub_pat_|l(?:pat|dt|rt|ptt|oas)-)")
_SLACK_GATE = ("xox", "xapp-")
_SK_GATE = ("sk-",)
_URL_GATE = ("://",)

BUILTIN: tuple[Rule, ...] = (
    RegexRule(
        _GCP_PRIVATE_KEY,
        _named_value("private_key"),
        starts=_named_at("private_key", '"'),
        needs=":",
    ),
    _PrivateKeyRule(),
    _token(
        "aws_key",
        r"A" + _boundary("A", "A-Za-z0-9") + r"(?:KIA|SIA|BIA|CCA|GPA|IDA|IPA|NPA|NVA|ROA)"
        r"[A-Z0-9]{16}(?![A-Za-z0-9])",
        "A",
        _AWS_GATE,
    ),
    _token("gcp_api_key", r"AIza" + r"(?<![\w\-]AIza)[0-9A-Za-z_\-]{35}(?![\w\-])", "A", _AWS_GATE),
    RegexRule(
        re.compile(
            r"(?:AccountKey|SharedAccessKey)[ \t]*=[ \t]*(?P<value>[A-Za-z0-9+/%]{16,}+={0,2})"
        ),
        _named_value("azure_key"),
        starts=_azure_starts,
        needs="=",
    ),
    RegexRule(
        re.compile(r"[?&]sig=(?P<value>[A-Za-z0-9%+/=_\-]{16,}+)"),
        _named_value("azure_sas"),
        starts=_named_at("sig", "?&"),
        needs="=",
    ),
    _token(
        "github_token",
        r"g"
        + _boundary("g", "A-Za-z0-9_")
        + r"(?:h[pousr]_[A-Za-z0-9]{36,255}+|ithub_pat_[A-Za-z0-9_]{22,255}+)",
        "_",
        _GIT_GATE,
    ),
    _token(
        "gitlab_token",
        r"gl" + r"(?<![A-Za-z0-9_\-]gl)(?:pat|dt|rt|ptt|oas)-[A-Za-z0-9_\-]{20,}+",
        "-",
        _GIT_GATE,
    ),
    RegexRule(
        re.compile(
            r"https://hooks\.slack\.com/(?:services|workflows|triggers)/"
            r"(?P<value>[A-Za-z0-9/_\-]{20,}+)"
        ),
        _named_value("slack_webhook"),
        gate=("hooks.slack.com/",),
        needs=":",
    ),
    _token(
        "slack_token",
        r"x" + _boundary("x") + r"(?:ox[abposr]|app)-[A-Za-z0-9\-]{10,}+",
        "-",
        _SLACK_GATE,
        check=lambda token: any(c.isdigit() for c in token),
    ),
    _token(
        "anthropic_key",
        r"sk-ant-" + r"(?<![A-Za-z0-9_\-]sk-ant-)[A-Za-z0-9_\-]{20,}+",
        "-",
        _SK_GATE,
    ),
    _token(
        "openai_key",
        r"sk-" + r"(?<![A-Za-z0-9_\-]sk-)(?!ant-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}+",
        "-",
        _SK_GATE,
        check=_mixed,
    ),
    _token(
        "stripe_key",
        r"[sr]k_" + r"(?<![A-Za-z0-9_][sr]k_)(?:live|test)_[A-Za-z0-9]{16,}+",
        "_",
        re.compile(r"k_(?:live|test)_"),
    ),
    _token(
        "jwt",
        r"eyJ"
        + r"(?<![A-Za-z0-9_\-]eyJ)[A-Za-z0-9_\-]{4,}+\.[A-Za-z0-9_\-]{4,}+\.[A-Za-z0-9_\-]*+",
        "J",
        ("eyJ",),
    ),
    RegexRule(
        _AUTH_HEADER,
        _decide_auth,
        starts=_named_at("authorization", folded=True),
        needs=":=",
    ),
    RegexRule(_BARE_BEARER, _decide_bearer, starts=_bearer_starts, needs="bB"),
    RegexRule(_CONNECTION, _named_value("connection_string"), gate=_URL_GATE, needs=":"),
    RegexRule(_FLAG, _decide_flag, gate=("--",), needs="-"),
    RegexRule(_ASSIGN, _decide_assignment, starts=_assign_starts, needs=":="),
    RegexRule(_ENTROPY_ASSIGN, _decide_entropy, starts=_word_starts, needs=":="),
)
