"""Secrets assigned to names: ``password=…``, ``"api_key": "…"``, ``FCM_SERVER_KEY=…``,
long random values under any secret-ish name, subscripts (``['PASSWORD'] = "…"``),
calls (``setenv("TOKEN", "…")``, ``smtp.login("u", "pw")``), XML elements and attributes,
``.netrc`` lines and passwords spelled out in a sentence."""

from __future__ import annotations

import re
from collections.abc import Iterator

from urchin.redact.names import (
    ASSIGN_NAMES,
    ENTROPY_WORDS,
    KEY_PREFIXES,
    NAME_ENDINGS,
    classify_value,
    is_placeholder,
    looks_random,
    plausible_secret,
    secret_name_kind,
)
from urchin.redact.rules.base import (
    SEPARATOR,
    VALUE,
    Decision,
    Guard,
    RegexRule,
    Rule,
    keyword_start,
    name_before,
    replace_decisions,
    value_span,
)
from urchin.redact.scan import Scan, bits

__all__ = ["ASSIGNMENT_RULES", "ENTROPY_RULES"]

# Names that always hold a secret (NAME_ENDINGS), anchored on the word that ends them; the
# rest of the name is read back in name_before.
_EXPLICIT_WORDS = (
    *NAME_ENDINGS.split("|"),
    *(rf"{prefix}[_.\-]?key" for prefix in KEY_PREFIXES),
)
_ASSIGN = re.compile(keyword_start(_EXPLICIT_WORDS) + SEPARATOR + VALUE)
# The explicit names a name can end with, found back from its end: the longest one, where
# the rule's pattern starts. Names ending "key" are a key word, maybe one separator, "key"
# (no key word ends another); the few others are keyed by their last three letters.
_KEY_WORDS_BY_LAST: dict[str, tuple[str, ...]] = {}
for _word in sorted(KEY_PREFIXES, key=len, reverse=True):
    _KEY_WORDS_BY_LAST[_word[-1]] = (*_KEY_WORDS_BY_LAST.get(_word[-1], ()), _word)
_BY_TAIL: dict[str, tuple[str, ...]] = {}
for _name in sorted(ASSIGN_NAMES, key=lambda n: (-len(n), n)):
    if not _name.endswith("key") and len(_name) >= 3:
        _BY_TAIL[_name[-3:]] = (*_BY_TAIL.get(_name[-3:], ()), _name)
_SHORT_NAMES = tuple(sorted((n for n in ASSIGN_NAMES if len(n) < 3), key=len, reverse=True))
_LAST_LETTERS = frozenset(name[-1] for name in ASSIGN_NAMES)


def _name_start(folded: str, end: int) -> int:
    """Where the longest explicit name ending at ``end`` starts, or -1."""
    tail = folded[end - 3 : end]
    if tail == "key":
        stop = end - 3
        if stop > 0 and folded[stop - 1] in "_.-":
            stop -= 1
        if stop > 0:
            for word in _KEY_WORDS_BY_LAST.get(folded[stop - 1], ()):
                if folded.endswith(word, 0, stop):
                    return stop - len(word)
        return -1
    for name in (*_BY_TAIL.get(tail, ()), *_SHORT_NAMES):
        if folded.endswith(name, 0, end):
            return end - len(name)
    return -1


# Any name with a secret-ish word in it, when the value is a long run of token characters.
_ENTROPY_ASSIGN = re.compile(
    keyword_start(ENTROPY_WORDS)
    + r"[\w.\-]{0,40}+"
    + SEPARATOR
    + r"\\?[\"']?(?P<value>[A-Za-z0-9+/=_.~\-]{20,1024}+)"
)
_LINE_TAIL = re.compile(r"[ \t,;}\]]*(?:\r?\n|\\n|$)")
_HEX = frozenset("0123456789abcdefABCDEF")
_STRING_PREFIXES = frozenset(["f", "b", "r", "u", "rb", "br", "fr", "rf"])


def _assign_starts(scan: Scan) -> list[int] | None:
    # An explicit name is followed by a quote, blank or separator, so it ends where a name
    # of Scan.hits ends; try each explicit name spelled right before that end.
    ends = scan.name_ends()
    if ends is None:
        return None
    folded = scan.folded
    starts = []
    last = _LAST_LETTERS
    for end in ends:
        if end and folded[end - 1] in last and (start := _name_start(folded, end)) >= 0:
            starts.append(start)
    starts.sort()
    return starts


def _word_starts(scan: Scan) -> list[int] | None:
    # _ENTROPY_ASSIGN starts at a word followed by at most 40 name characters, a separator
    # and a long value: a hit of NAME_ANCHORS with a long value, at one of its offsets.
    return scan.word_starts()


def _decide_assignment(match: re.Match[str]) -> Decision | None:
    value, start, end, quoted = value_span(match)
    text = match.string
    if not quoted and end < len(text) and text[end] in "([{":
        return None  # a call, subscript or ${template}: code, not a value
    if not quoted and end < len(text) and text[end] in "\"'" and value.lower() in _STRING_PREFIXES:
        return None  # f"{user}:{password}" builds a string from variables
    name = name_before(text, match.start(), match.start("kq"))
    kind = secret_name_kind(name)
    if kind is None or is_placeholder(value):
        return None
    prose = (
        not quoted
        and match.group("sep") == ":"
        and not match.group("kq")
        and _LINE_TAIL.match(text, end) is None
    )
    if not plausible_secret(value, kind, quoted=quoted, prose=prose, name=name):
        return None
    return kind, start, end


def _decide_entropy(match: re.Match[str]) -> Decision | None:
    value = match.group("value")
    name = name_before(match.string, match.start(), match.start("kq"))
    kind = secret_name_kind(name)
    # A long hex value counts under a name that always holds a secret (SECRET_KEY_BASE).
    hexed = kind is not None and len(value) >= 32 and all(c in _HEX for c in value)
    if not (looks_random(value) or hexed):
        return None
    start, end = match.span("value")
    if kind is None and not any(w in name.lower() for w in ENTROPY_WORDS):
        return None
    if kind is None and re.search(r"(?i)public|publishable|pubkey", name):
        return None
    return kind or "secret", start, end


# -- quoted names: subscripts and calls ---------------------------------------------------

# `["PASSWORD"] = "…"` and `setenv("TOKEN", "…")`: a quoted name ending as a secret name
# does, `] =` or a comma, then a quoted value. Each search starts at its literal `]` or `,`
# and asks, looking back, for a quote after such an ending.


def _tail_behind(char: str) -> str:
    """Look-behinds for a quote and ``char`` after the end of an explicit secret name."""
    tails = sorted({name[-3:] for name in ASSIGN_NAMES if len(name) >= 3})
    shorts = sorted(name for name in ASSIGN_NAMES if len(name) < 3)
    # One look-behind for the quote first: most commas and brackets follow no quote; then
    # one for the name's last letter ("ok", "bug" and "p2" end as no secret name does).
    last = "".join(sorted({name[-1] for name in ASSIGN_NAMES}))
    behinds = [f"(?<=(?i:{'|'.join(tails)})[\"']{char})"]
    behinds += [f"(?<=(?i:{short})[\"']{char})" for short in shorts]
    return f"(?<=[\"']{char})(?<=(?i:[{last}])[\"']{char})(?:" + "|".join(behinds) + ")"


_QUOTED_VALUE = r"(?P<v>[\"'])(?P<value>(?:[^\"'\\\n]|\\.){1,1024}+)(?P=v)"
_SUBSCRIPT = re.compile(
    r"\]" + _tail_behind("\\]") + r"[ \t]*(?::=|=(?!=)|\+=)[ \t]*" + _QUOTED_VALUE
)
_CALL_PAIR = re.compile(r"," + _tail_behind(",") + r"[ \t]*" + _QUOTED_VALUE)
_QUOTED_NAME = re.compile(r"[A-Za-z_][\w.\-]{0,63}")
# `smtp.login("user", "pw")`, `HTTPBasicAuth("u", "pw")`, `auth=("u", "pw")`. Code opens
# a paren every few dozen characters: the two characters before it ("in", "th", "h=",
# "= ", "te", "ls"), in one look-behind, turn nearly all away before the words are tried.
_LOGIN_CALL = re.compile(
    r"\((?<=(?:in|th|h=|= |te|ls)\()"
    r"(?:(?<=login\()|(?<=Auth\()|(?<=auth\()|(?<=auth=\()|(?<=auth = \()"
    r"|(?<=authenticate\()|(?<=credentials\()|(?<=Credentials\())"
    r"[ \t]*(?:\"[^\"\n]{0,128}\"|'[^'\n]{0,128}'|[\w.]{1,64})[ \t]*,[ \t]*"
    r"(?P<v>[\"'])(?P<value>[^\"'\n]{1,256}+)(?P=v)"
)


class _QuotedNameRule(Rule):
    """Subscript assignments and calls that name a secret in quotes, then give its value."""

    needs = bits("],(")

    def run(self, scan: Scan, guard: Guard) -> Scan:
        text = scan.text
        found: list[tuple[Decision, str]] = []
        for char, pattern in (("]", _SUBSCRIPT), (",", _CALL_PAIR)):
            if char in text and pattern.search(text) is not None:
                found.extend(_quoted_names(text, pattern))
        if "(" in text and _LOGIN_CALL.search(text) is not None:
            for match in _LOGIN_CALL.finditer(text):
                value = match.group("value")
                if not is_placeholder(value):
                    found.append((("password", *match.span("value")), value))
        if not found:
            return scan
        found.sort(key=lambda item: item[0][1])
        return replace_decisions(scan, guard, found)


def _quoted_names(text: str, pattern: re.Pattern[str]) -> Iterator[tuple[Decision, str]]:
    for match in pattern.finditer(text):
        close = match.start() - 1  # the quote that closes the name
        quote = text[close]
        opened = text.rfind(quote, max(0, close - 65), close)
        if opened < 0:
            continue
        name = text[opened + 1 : close]
        if _QUOTED_NAME.fullmatch(name) is None:
            continue
        value = match.group("value")
        kind = classify_value(name, value, quoted=True)
        if kind is not None:
            yield (kind, *match.span("value")), value


# -- XML -------------------------------------------------------------------------------------

_XML_CLOSE = re.compile(r"</(?P<name>[A-Za-z_][\w.:\-]{0,63})>")
_XML_ATTRS = re.compile(
    r"(?:key|name|id|property)[ \t]*=[ \t]*\"(?P<name>[^\"\n]{1,64})\"[ \t]+"
    r"value[ \t]*=[ \t]*\"(?P<value>[^\"\n]{1,1024})\""
)
# What every match of _XML_ATTRS holds; opening with a literal, it is found much faster
# than the attribute pattern, which opens with an alternation, scans a text.
_VALUE_ATTR = re.compile(r"value[ \t]*=[ \t]*\"")


class _XmlRule(Rule):
    """``<password>…</password>`` and ``<add key="ApiKey" value="…"/>``."""

    needs = bits("<=")

    def run(self, scan: Scan, guard: Guard) -> Scan:
        text = scan.text
        # "<" is rare enough to look for first; then the search for a closing tag, which
        # opens with "</" (faster than asking `in` for two characters); the attribute
        # search opens with "value".
        closing = _XML_CLOSE.search(text) if "<" in text else None
        attrs = scan.exhaustive or _VALUE_ATTR.search(text) is not None
        if closing is None and not attrs:
            return scan
        found: list[tuple[Decision, str]] = []
        if closing is not None:
            for match in _XML_CLOSE.finditer(text, closing.start()):
                name = match.group("name")
                kind = secret_name_kind(name.rsplit(":", 1)[-1])
                if kind is None:
                    continue
                close = match.start()
                opened = text.rfind(">", max(0, close - 1100), close)
                if opened < 0 or text.rfind(f"<{name}", max(0, opened - 600), opened) < 0:
                    continue
                value = text[opened + 1 : close]
                if "<" in value or "\n" in value.strip() or is_placeholder(value):
                    continue
                found.append(((kind, opened + 1, close), value))
        if attrs:
            for match in _XML_ATTRS.finditer(text):
                kind = classify_value(match.group("name"), match.group("value"), quoted=True)
                if kind is not None:
                    found.append(((kind, *match.span("value")), match.group("value")))
        if not found:
            return scan
        found.sort(key=lambda item: item[0][1])
        return replace_decisions(scan, guard, found)


# -- passwords written out: .netrc lines and sentences ---------------------------------------

_SPELLED = re.compile(
    r"ass(?<=[Pp]ass)(?P<word>(?i:word|wd|phrase|code))[ \t]++"
    r"(?:(?P<verb>(?i:is|was|=|:|to|set[ \t]++to|of|would[ \t]++be|will[ \t]++be))[ \t]++)?"
    r"(?:`(?P<bq>[^`\n]{1,256}+)`|\"(?P<dq>[^\"\n]{1,256}+)\"|'(?P<sq>[^'\n]{1,256}+)'"
    # A bare word counts only with a digit or symbol in it ("password flow" is prose).
    r"|(?P<bare>(?=[^\s`\"']{0,255}[0-9!@#$%^&*+=?~])[^\s`\"']{6,256}+))"
)
_NETRC_CONTEXT = re.compile(
    r"(?:\b(?:machine|default|login|user(?:name)?)[ \t]+\S+[ \t]+|\bnmcli\b|\bwifi\b)"
)
_SYMBOLS = frozenset("!@#$%^&*+=?~<>|")
# A name and "=" opening a bare word: "password reset=true" sets another thing.
_SETTING = re.compile(r"[A-Za-z_][\w.\-]{0,63}=")


def _password_shaped(value: str) -> bool:
    """Whether a bare word in a sentence reads as a password (``hunter2``, ``Tr0ub4dor&3``)."""
    value = value.rstrip(".,;:!?)")
    if len(value) < 6 or value.startswith(("/", "~/", "http", "$", "-", "<", "[")):
        return False
    letters = any(c.isalpha() for c in value)
    digits = any(c.isdigit() for c in value)
    symbols = any(c in _SYMBOLS for c in value)
    if re.fullmatch(r"\d+[-_ ]?(?:bit|char|character|digit|letter|byte)s?", value, re.I):
        return False
    return letters and (digits or symbols)


def _decide_spelled(match: re.Match[str]) -> Decision | None:
    group = match.lastgroup or "bare"
    start, end = match.span(group)
    value = match.string[start:end]
    if is_placeholder(value):
        return None
    text = match.string
    line_start = text.rfind("\n", 0, match.start()) + 1
    before = text[line_start : match.start()]
    if group == "bare":
        verb = match.group("verb")
        if _NETRC_CONTEXT.search(before) is not None and not verb:
            return "password", start, end
        if not verb and _SETTING.match(value) is not None:
            return None  # "password reset=true", "password length=12": prose about a setting
        if not _password_shaped(value):
            return None
        end = start + len(value.rstrip(".,;:!?)"))
    elif not match.group("verb") and group != "bq":
        return None  # password "reset" links; a quoted word after the noun is not a value
    return "password", start, end


# Every match holds "pass" or "Pass" and the first letter of word, wd, phrase or code, in
# either case (no other character matches those letters ignoring case): gate literals,
# looked for with the others, so that "5 passed" or "pass the value" runs no search.
_SPELLED_GATE = tuple(f"{p}ass{c}" for p in "pP" for c in "wWpPcC")

ASSIGNMENT_RULES: tuple[Rule, ...] = (
    RegexRule(_ASSIGN, _decide_assignment, starts=_assign_starts, needs=":=", named=True),
    _QuotedNameRule(),
    _XmlRule(),
    RegexRule(_SPELLED, _decide_spelled, gate=_SPELLED_GATE),
)
ENTROPY_RULES: tuple[Rule, ...] = (
    RegexRule(_ENTROPY_ASSIGN, _decide_entropy, starts=_word_starts, needs=":=", named=True),
)
