"""Capture-time secret redaction: known secret shapes become ``[REDACTED:<kind>]``.

Every event passes through a :class:`Redactor` before it reaches the journal
(see :mod:`urchin.recorder`), so a token pasted into a prompt, an ``.env`` file
echoed by an agent or a connection string in a shell command never lands on
disk. Kinds are short stable words (``private_key``, ``aws_key``,
``github_token``, ``jwt``, ``password``, ``bearer``, ``connection_string``, ...)
so readers can count them. The shapes live in :mod:`urchin.redact_patterns`.

Speed: ordinary text pays a lower-casing and a couple of dozen literal searches;
a rule's regular expression is tried only where those found a place it can
match (see :mod:`urchin.redact_patterns`). Short strings found clean are
remembered, so a title or workspace repeated on every event is checked once.
Every pattern is linear on adversarial input: token patterns start only at the
start of a token run (a look-behind), repeats are bounded or possessive, and the
private-key block is found with two linear scans instead of a lazy match.

Redaction is idempotent: a marker is never matched again, because every value
pattern refuses text starting with ``[REDACTED:``.
"""

from __future__ import annotations

import functools
import re
from bisect import bisect_right
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from urchin.errors import ConfigError
from urchin.event import Actor, Event, JsonValue
from urchin.redact_patterns import (
    ANY_NAME,
    BUILTIN,
    ENDS_REACH,
    ENTROPY_MIN_LENGTH,
    ENTROPY_THRESHOLD,
    MARKER_PREFIX,
    NAME_ANCHORS,
    NAME_REACH,
    Decision,
    Gate,
    Guard,
    NameAnchor,
    RegexRule,
    Rule,
    Span,
    classify_value,
    marker,
    presence,
)

if TYPE_CHECKING:
    from urchin.config import Settings

__all__ = [
    "ENTROPY_MIN_LENGTH",
    "ENTROPY_THRESHOLD",
    "MARKER_PREFIX",
    "Redactor",
    "Scan",
    "compile_allowlist",
    "compile_patterns",
    "count_markers",
    "default_redactor",
    "event_marker_counts",
    "marker",
    "redact",
]

_MARKER_RE = re.compile(r"\[REDACTED:([a-z0-9_]{1,40})\]")
# Clean strings up to this length are remembered, up to this many per redactor.
_CLEAN_LENGTH = 256
_CLEAN_ENTRIES = 4096


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


# -- one text under redaction ------------------------------------------------------------


def fold(text: str) -> str:
    """``text`` lower-cased one character for one, so positions carry over to ``text``.

    Every character ``re.IGNORECASE`` equates with an ASCII letter folds to that letter:
    ``str.lower`` handles the Kelvin sign; the dotted capital I (which lowers to two
    characters), the dotless i and the long s are mapped by hand.
    """
    if text.isascii():
        return text.lower()
    if "\u0130" in text:
        text = text.replace("\u0130", "i")
    folded = text.lower()
    if "\u0131" in folded:
        folded = folded.replace("\u0131", "i")
    if "\u017f" in folded:
        folded = folded.replace("\u017f", "s")
    return folded


# Below one separator per this many characters, looking before each separator beats one
# search per anchor over the whole text.
_SPARSE = 80
# Above one hit per this many characters (and a few), trying rules at each hit costs more
# than scanning the whole text (``key=key=key=...``), so the rules do that instead.
_CROWDED = 64

#: Where a name is assigned: where the anchor's literal starts, where the name ends, the
#: stretch of text the anchor read to decide, and (when a long value follows, so the entropy
#: rule may match) how far before the literal its words start.
Hit = tuple[int, int, int, int, tuple[int, ...]]


class Scan:
    """A text under redaction, its folded copy, and the places names are assigned a value.

    Everything is computed on first use and shared by every rule. When a rule replaces
    spans, :meth:`replaced` carries the hits over, shifted, instead of searching again:
    an anchor reads only name characters, blanks, quotes, separators and value characters,
    none of which starts or ends a marker (``[REDACTED:kind]``), so a hit whose stretch no
    replacement touched stands and no new one can appear. (When one is touched, the hits
    are searched again.) Gates found absent stay absent for the same reason.
    """

    __slots__ = ("_crowded", "_ends", "_folded", "_gates", "_hits", "_starts", "text")

    def __init__(self, text: str, gates: dict[Gate, bool] | None = None) -> None:
        self.text = text
        self._folded: str | None = None
        self._hits: list[Hit] | None = None
        self._crowded = False
        self._starts: list[int] | None = None
        self._ends: list[int] | None = None
        self._gates: dict[Gate, bool] = {} if gates is None else gates

    @property
    def folded(self) -> str:
        if self._folded is None:
            self._folded = fold(self.text)
        return self._folded

    def hits(self) -> list[Hit] | None:
        """Every hit of :data:`~urchin.redact_patterns.NAME_ANCHORS` by start, or None when
        there are too many to be worth it.

        Hits may overlap (``make_key=``): a literal inside another hit's name is a hit too,
        with the same end and everything after it.
        """
        if self._hits is None and not self._crowded:
            hits: list[Hit] = []
            text = self.text
            if ":" in text or "=" in text:
                folded = self.folded
                limit = len(folded) // _CROWDED + 16
                separators = _separators(folded, len(folded) // _SPARSE + 4)
                if separators is None:
                    for anchor in NAME_ANCHORS:
                        if not _collect(anchor, folded, hits, limit):
                            break
                else:
                    for separator in separators:
                        _collect_before(folded, separator, hits)
                self._crowded = len(hits) > limit
                hits.sort()
            if not self._crowded:
                self._hits = hits
        return self._hits

    def word_starts(self) -> list[int] | None:
        """Sorted places a secret-ish word of a hit with a long value may start (None: see
        :meth:`hits`)."""
        if self._starts is None and (hits := self.hits()) is not None:
            self._starts = sorted(
                {
                    start - offset
                    for start, *_, offsets in hits
                    for offset in offsets
                    if offset <= start
                }
            )
        return self._starts

    def name_ends(self) -> list[int] | None:
        """Sorted ends of the names of :meth:`hits`, where a quote, blank or separator is."""
        if self._ends is None and (hits := self.hits()) is not None:
            self._ends = sorted({hit[1] for hit in hits})
        return self._ends

    def has(self, gate: Gate) -> bool:
        """Whether the text passes ``gate`` (the answer is remembered)."""
        found = self._gates.get(gate)
        if found is None:
            text = self.text
            if isinstance(gate, tuple):
                found = any(literal in text for literal in gate)
            else:
                found = gate.search(text) is not None
            self._gates[gate] = found
        return found

    def replaced(self, spans: list[Span]) -> Scan:
        """A Scan of the text with ``spans`` (in order, not overlapping) replaced."""
        text = self.text
        pieces: list[str] = []
        pos = 0
        for start, end, mark in spans:
            pieces.append(text[pos:start])
            pieces.append(mark)
            pos = end
        pieces.append(text[pos:])
        scan = Scan("".join(pieces), self._gates)
        # Replacing removes hits and adds none, so crowded stays (safely) crowded.
        scan._crowded = self._crowded
        if self._hits:
            scan._hits = _shifted(self._hits, spans)
        elif self._hits is not None:
            scan._hits = []
        return scan


def _record(anchor: NameAnchor, folded: str, hit: re.Match[str], hits: list[Hit]) -> None:
    """Add ``hit`` and every literal inside its name, which all end and go on alike."""
    (start, end), (_, separator_end), (_, value_end) = hit.regs[:3]
    inner = start + 1
    while True:  # once per literal, usually once
        if value_end >= 0:
            hits.append((start, end, start, value_end, anchor.offsets))
        else:
            # Decided by how the name ends (read back from its end) once the value fell
            # short; a replacement can only shorten a value further, so that answer stands.
            hits.append((start, end, min(start, end - ENDS_REACH), separator_end, ()))
        start = -1
        for literal in anchor.literals:
            index = folded.find(literal, inner, end)
            if index >= 0 and (start < 0 or index < start):
                start = index
        if start < 0:
            return
        inner = start + 1


def _collect(anchor: NameAnchor, folded: str, hits: list[Hit], limit: int) -> bool:
    """Add the anchor's hits; False once there are more than ``limit``."""
    for hit in anchor.full.finditer(folded):
        _record(anchor, folded, hit, hits)
        if len(hits) > limit:
            return False
    return True


def _separators(folded: str, limit: int) -> list[int] | None:
    """Where ``:`` and ``=`` are, or None when there are more than ``limit``."""
    if folded.count(":") + folded.count("=") > limit:
        return None
    found: list[int] = []
    for char in ":=":
        index = folded.find(char)
        while index >= 0:
            found.append(index)
            index = folded.find(char, index + 1)
    return found


def _collect_before(folded: str, separator: int, hits: list[Hit]) -> None:
    """The hits whose assignment is the one at ``separator``.

    A name's word starts at most NAME_REACH before the separator's blanks, and the near
    pattern reads nothing past the separator, so searching only that stretch finds every
    such hit; the full pattern, which may read on into the value, then decides each (and
    :func:`_record` adds the literals inside its name, which end and go on alike).
    """
    blank = separator
    while blank > 0 and folded[blank - 1] in " \t":
        blank -= 1
    start, stop = max(0, blank - NAME_REACH), separator + 1
    if ANY_NAME.search(folded, start, stop) is None:
        return
    for anchor in NAME_ANCHORS:
        full = anchor.full.match
        for hit in anchor.near.finditer(folded, start, stop):
            if hit.end(1) == stop and (found := full(folded, hit.start())) is not None:
                _record(anchor, folded, found, hits)


def _shifted(hits: list[Hit], spans: list[Span]) -> list[Hit] | None:
    """The hits moved to their places after the replacements; None if a span touches one."""
    ends = [end for _, end, _ in spans]
    shifts = [0]
    for start, end, mark in spans:
        shifts.append(shifts[-1] + len(mark) - (end - start))
    moved: list[Hit] = []
    for start, name_end, read_from, read_to, offsets in hits:
        # spans[index] is the first span ending after read_from; ordered and disjoint, it
        # is the only one that can reach into the hit's stretch.
        index = bisect_right(ends, read_from)
        if index < len(spans) and spans[index][0] < read_to:
            return None
        delta = shifts[index]
        moved.append((start + delta, name_end + delta, read_from + delta, read_to + delta, offsets))
    return moved


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


def _custom_rule(pattern: re.Pattern[str]) -> RegexRule:
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

    return RegexRule(pattern, decide)


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
        self._rules: tuple[Rule, ...] = (*custom, *BUILTIN)
        self._clean: set[str] = set()
        # The rules a text can need, by which of the telling characters it holds.
        self._plans: dict[int, tuple[Rule, ...]] = {}

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
        short = len(text) <= _CLEAN_LENGTH
        if short and text in self._clean:
            return text
        mask = presence(text)
        plan = self._plans.get(mask)
        if plan is None:
            plan = tuple(r for r in self._rules if not r.needs or r.needs & mask)
            self._plans[mask] = plan
        guard = Guard(self._allowed, counts)
        first = scan = Scan(text)
        for rule in plan:
            scan = rule.apply(scan, guard)
        if scan is not first:
            return scan.text
        if short:
            # Clearing beats eviction bookkeeping: refilling costs one check per string.
            if len(self._clean) >= _CLEAN_ENTRIES:
                self._clean.clear()
            self._clean.add(text)
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
                kind = classify_value(key, value)
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
