"""What every rule is made of: the rule protocol, regex rules tried at candidate starts,
the guard each replacement passes, and the pattern pieces rules share."""

from __future__ import annotations

import itertools
import re
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

from urchin.redact.names import MARKER_PREFIX, is_placeholder, marker
from urchin.redact.scan import Gate, Scan, Span, bits

__all__ = [
    "MAX_VALUE",
    "NAME_CHARS",
    "SEPARATOR",
    "VALUE",
    "Decision",
    "Guard",
    "RegexRule",
    "Rule",
    "Starts",
    "boundary",
    "keyword_start",
    "name_before",
    "named_at",
    "named_value",
    "token",
    "value_span",
]

MAX_VALUE = 1024

#: A kind and the span of the secret in the matched text.
Decision = tuple[str, int, int]
#: Every place a rule's pattern can match, in order (a superset is fine); None when the
#: text is too crowded with candidates to be worth it, and the whole text is scanned.
Starts = Callable[[Scan], "list[int] | None"]


class Rule(ABC):
    """One secret shape. ``needs``: bits of :func:`~urchin.redact.scan.presence`, one of
    which every text the shape can occur in has (0: no such promise). Markers add no
    character a rule needs in a way that could complete a match, so a text's presence is
    decided once. ``gate``: literals one of which (or a pattern that) every text the shape
    can occur in holds; the redactor finds every gate's literals at once (see
    :mod:`~urchin.redact.literals`) and :meth:`apply` asks :meth:`Scan.has`, so a rule
    whose gate is absent costs a lookup. ``literals``: more literals :meth:`run` asks
    :meth:`Scan.has` about, looked for with the gates'. ``named``: the shape is tried only
    where :meth:`Scan.hits` found a name assigned, so a text without any skips it."""

    needs = 0
    gate: Gate | None = None
    literals: tuple[str, ...] = ()
    named = False

    def apply(self, scan: Scan, guard: Guard) -> Scan:
        """The scan of the text with this shape's secrets replaced (``scan`` when none were)."""
        if self.gate is not None and not scan.has(self.gate):
            return scan
        return self.run(scan, guard)

    @abstractmethod
    def run(self, scan: Scan, guard: Guard) -> Scan:
        """Like :meth:`apply`, for a text already known to pass :attr:`gate`."""


@dataclass(frozen=True, slots=True)
class Guard:
    """What every replacement checks: the allowlist, and a tally of what was replaced."""

    allow: Callable[[str, str], bool]
    counts: Counter[str] | None

    def take(self, kind: str) -> str:
        """The marker for one secret of ``kind``, counted."""
        if self.counts is not None:
            self.counts[kind] += 1
        return marker(kind)


def replace_decisions(scan: Scan, guard: Guard, decisions: Iterable[tuple[Decision, str]]) -> Scan:
    """The scan with each ``(decision, whole match)`` replaced, in order, skipping overlaps,
    markers and allowed secrets."""
    text = scan.text
    spans: list[Span] = []
    pos = 0
    for (kind, start, end), whole in decisions:
        if end <= start or start < pos:
            continue
        secret = text[start:end]
        if secret.startswith(MARKER_PREFIX) or guard.allow(secret, whole):
            continue
        spans.append((start, end, guard.take(kind)))
        pos = end
    return scan.replaced(spans) if spans else scan


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
        named: bool = False,
    ) -> None:
        self.pattern = pattern
        self.decide = decide
        self.starts = starts
        self.gate: Gate | None = gate
        self.needs = bits(needs)
        self.named = named

    def run(self, scan: Scan, guard: Guard) -> Scan:
        # The common case, nothing to find, returns after one search.
        text = scan.text
        matches: Iterable[re.Match[str]]
        if self.starts is None or scan.exhaustive:
            found = self.pattern.search(text)
            if found is None:
                return scan
            # finditer would find this first match again: go on from where it ended.
            matches = (
                itertools.chain((found,), self.pattern.finditer(text, found.end()))
                if found.end() > found.start()
                else self.pattern.finditer(text)
            )
        else:
            starts = self.starts(scan)
            if starts is None:
                matches = self.pattern.finditer(text)
            elif not starts:
                return scan
            else:
                matches = self._at(text, starts)
        return replace_decisions(scan, guard, self._decided(matches))

    def _decided(self, matches: Iterable[re.Match[str]]) -> Iterator[tuple[Decision, str]]:
        for match in matches:
            decision = self.decide(match)
            if decision is not None:
                yield decision, match.group(0)

    def _at(self, text: str, starts: list[int]) -> Iterator[re.Match[str]]:
        # finditer's order: the leftmost match, then the next one from where it ended.
        match, pos = self.pattern.match, 0
        for start in starts:
            if start >= pos and (found := match(text, start)) is not None:
                yield found
                pos = max(found.end(), start + 1)


def token(
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


def keyword_start(words: Sequence[str]) -> str:
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


def boundary(first: str, before: str = r"A-Za-z0-9_\-") -> str:
    """Just after a one-character ``first``: the character before it is not in ``before``.

    Put after the first character (not before it) so the pattern keeps a literal or class
    start, which ``re`` uses to skip ahead quickly.
    """
    return f"(?<![{before}]{first})"


# A quoted or bare value after a separator; the marker is refused by the callers. A quoted
# value must close on its line: an unclosed quote (`getpass("Password: ")`) is no value.
_N = f"{{1,{MAX_VALUE}}}+"
VALUE = (
    r"(?:\\\"(?P<eq>[^\"\\\n]" + _N + r")(?=\\\")"
    r"|\"(?P<dq>(?:[^\"\\\n]|\\.)" + _N + r")(?=\")"
    r"|'(?P<sq>[^'\n]" + _N + r")(?=')"
    r"|`(?P<bq>[^`\n$]" + _N + r")(?=`)"
    r"|(?P<bare>[^\s\"'`,;&|<>(){}\[\]]" + _N + "))"
)
#: Between a name and its value: an optional closing quote, blanks, and ``:``, ``=``,
#: ``:=`` or ``=>`` (never ``==`` or ``::``).
SEPARATOR = r"(?P<kq>\\?[\"']?)[ \t]*(?P<sep>:=|=>|=(?!=)|:(?!:))[ \t]*"
NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")


def name_before(text: str, start: int, name_end: int) -> str:
    """The name ending at ``name_end`` whose secret word starts at ``start`` (at most 40
    name characters before it)."""
    begin = start
    limit = max(0, start - 40)
    while begin > limit and text[begin - 1] in NAME_CHARS:
        begin -= 1
    return text[begin:name_end]


def value_span(match: re.Match[str]) -> tuple[str, int, int, bool]:
    """The value a :data:`VALUE` matched, its span, and whether it was quoted."""
    # The value groups close last, so lastgroup names the one that matched.
    group = match.lastgroup or "bare"
    start, end = match.span(group)
    return match.string[start:end], start, end, group != "bare"


def named_at(name: str, before: str = "", *, folded: bool = False) -> Starts:
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


def named_value(kind: str) -> Callable[[re.Match[str]], Decision | None]:
    """The ``value`` group is the secret, unless it is a placeholder such as ``${PASSWORD}``."""

    def decide(match: re.Match[str]) -> Decision | None:
        start, end = match.span("value")
        if is_placeholder(match.string[start:end]):
            return None
        return kind, start, end

    return decide
