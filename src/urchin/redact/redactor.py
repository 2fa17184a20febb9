"""The redactor: every rule over a text, every text field of an event.

Every event passes through a :class:`Redactor` before it reaches the journal (see
:mod:`urchin.recorder`). Ordinary text pays a few literal searches and presence checks;
a rule's regular expression is tried only where those found a place it can match. Short
strings found clean are remembered, so a title or workspace repeated on every event is
checked once. Redaction is idempotent: a marker is never matched again.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from urchin.event import Actor, Event, JsonValue
from urchin.redact.literals import Hubs, Literals
from urchin.redact.names import MARKER_PREFIX, classify_value, marker
from urchin.redact.rules import BUILTIN, Guard, Rule
from urchin.redact.scan import Scan, presence
from urchin.redact.user import compile_allowlist, compile_patterns, custom_rule

if TYPE_CHECKING:
    from urchin.config import Settings

__all__ = [
    "Redactor",
    "count_markers",
    "default_redactor",
    "event_marker_counts",
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
    """Markers per kind across every text field of an event: content, source, a free-word
    kind, brain, title, workspace, session, tags, every actor field and every string of meta.
    """
    counts: Counter[str] = Counter()
    for text in _event_texts(event):
        if MARKER_PREFIX in text:
            counts.update(count_markers(text))
    return counts


def _event_texts(event: Event) -> Iterable[str]:
    # The same fields redact_event redacts: a marker anywhere it writes one is counted.
    yield event.content
    for _, value in _event_fields(event):
        if value:
            yield value
    if not isinstance(event.kind, str):
        yield event.kind.name
    yield from event.tags
    if event.actor is not None:
        for _, value in _actor_fields(event.actor):
            if value:
                yield value
    if event.meta:
        yield from _json_texts(dict(event.meta))


def _event_fields(event: Event) -> tuple[tuple[str, str | None], ...]:
    return (
        ("source", event.source),
        ("brain", event.brain),
        ("title", event.title),
        ("workspace", event.workspace),
        ("session", event.session),
    )


def _actor_fields(actor: Actor) -> tuple[tuple[str, str | None], ...]:
    return (
        ("account", actor.account),
        ("device", actor.device),
        ("workspace", actor.workspace),
        ("node_id", actor.node_id),
    )


def _json_texts(value: JsonValue) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from _json_texts(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _json_texts(item)


#: A rule's work, and whether it is tried only where names are assigned.
_Run = tuple[Callable[[Scan, Guard], Scan], bool]
#: A rule's work, the bits of its gate (0: none) and whether it needs names.
_Step = tuple[Callable[[Scan, Guard], Scan], int, bool]
# Gate answers a plan remembers its runs for; past this many it starts afresh.
_ACTIVE_ENTRIES = 256


class _Plan:
    """What texts holding the same telling characters run: the steps, the hubs that find
    their gates' literals, the patterns other gates are (each with its bit), and per set
    of gates passed, the runs left."""

    __slots__ = ("active", "hubs", "looked", "patterns", "steps")

    def __init__(
        self,
        steps: tuple[_Step, ...],
        hubs: Hubs,
        looked: int,
        patterns: tuple[tuple[int, re.Pattern[str]], ...],
    ) -> None:
        self.steps = steps
        self.hubs = hubs
        #: The bits of every literal the hubs' searches answer for.
        self.looked = looked
        self.patterns = patterns
        self.active: dict[int, tuple[_Run, ...]] = {}

    def runs(self, held: int) -> tuple[_Run, ...]:
        """The runs of the steps whose gate ``held`` passes (every ungated one)."""
        runs = self.active.get(held)
        if runs is None:
            if len(self.active) >= _ACTIVE_ENTRIES:
                self.active.clear()
            runs = self.active[held] = tuple(
                (run, named) for run, bits, named in self.steps if not bits or bits & held
            )
        return runs


@functools.cache
def _literals(gates: frozenset[str]) -> Literals:
    """The searches for a rule set's gate literals (built once per set)."""
    return Literals(gates)


class Redactor:
    """Replaces secrets in text and events. Build once; thread-safe; patterns compiled once.

    ``patterns`` are extra regular expressions (a ``secret`` group or group 1 is what gets
    replaced, else the whole match; kind ``custom``). ``allow`` entries are literal strings,
    or regular expressions when prefixed ``re:``; a candidate equal to a literal, or fully
    matched by an allow pattern, is left alone.

    ``exhaustive`` runs every rule's search over the whole of every text, with none of the
    pre-filters (characters present, literal gates, name anchors) that let ordinary text
    skip most rules: many times slower, and what the pre-filters are checked against.
    """

    def __init__(
        self,
        *,
        enabled: bool = True,
        patterns: Sequence[str] = (),
        allow: Sequence[str] = (),
        exhaustive: bool = False,
    ) -> None:
        """Raises:
        ConfigError: a pattern or ``re:`` allow entry is invalid (named by its index).
        """
        self.enabled = enabled
        self.exhaustive = exhaustive
        self.extra_patterns = len(patterns)
        self.allow_entries = len(allow)
        custom = tuple(custom_rule(p) for p in compile_patterns(patterns))
        self._literals, self._allow_patterns = compile_allowlist(allow)
        self._rules: tuple[Rule, ...] = (*custom, *BUILTIN)
        self._gates = _literals(
            frozenset(
                literal
                for rule in self._rules
                for literal in (
                    *(rule.gate if isinstance(rule.gate, tuple) else ()),
                    *rule.literals,
                )
            )
        )
        self._gate_bits = self._gates.table()
        self._guard = Guard(self._allowed, None)
        self._clean: set[str] = set()
        # The rules a text can need, by which of the telling characters it holds.
        self._plans: dict[int, _Plan] = {}

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
        if self.exhaustive:
            return self._redact_exhaustive(text, counts)
        short = len(text) <= _CLEAN_LENGTH
        if short and text in self._clean:
            return text
        mask = presence(text)
        plan = self._plans.get(mask)
        if plan is None:
            plan = self._plans[mask] = self._plan(mask)
        # Which gates the text passes, all at once: a few searches for every literal (see
        # urchin.redact.literals), one per pattern. Asked of the text before any
        # replacement: one never adds what a gate looks for (see Scan), and one that
        # removes it only lets a rule search in vain.
        held = self._gates.present(text, plan.hubs)
        for bit, pattern in plan.patterns:
            if pattern.search(text) is not None:
                held |= bit
        guard = self._guard if counts is None else Guard(self._allowed, counts)
        first = scan = Scan(text, known=(self._gate_bits, plan.looked, held))
        nameless: bool | None = None
        for run, named in plan.runs(held):
            if named:
                # Asked once: a replacement removes names and adds none (see Scan).
                if nameless is None:
                    nameless = scan.hits() == []
                if nameless:
                    continue
            scan = run(scan, guard)
        if scan is not first:
            return scan.text
        if short:
            # Clearing beats eviction bookkeeping: refilling costs one check per string.
            if len(self._clean) >= _CLEAN_ENTRIES:
                self._clean.clear()
            self._clean.add(text)
        return text

    def _plan(self, mask: int) -> _Plan:
        """The steps for a text whose :func:`presence` is ``mask``."""
        steps: list[_Step] = []
        literals: list[str] = []
        # Pattern gates take the bits above the literals' own.
        patterns: dict[re.Pattern[str], int] = {}
        for rule in self._rules:
            if rule.needs and not rule.needs & mask:
                continue
            gate = rule.gate
            if gate is None:
                bits = 0
            elif isinstance(gate, tuple):
                bits = self._gates.bits(gate)
                literals.extend(gate)
            else:
                bits = patterns.setdefault(gate, 1 << (self._gates.size + len(patterns)))
            steps.append((rule.run, bits, rule.named))
            literals.extend(rule.literals)
        hubs = self._gates.hubs(literals)
        return _Plan(
            tuple(steps),
            hubs,
            self._gates.bits(literal for _, _, members in hubs for literal in members),
            tuple((bit, pattern) for pattern, bit in patterns.items()),
        )

    def _redact_exhaustive(self, text: str, counts: Counter[str] | None) -> str:
        guard = Guard(self._allowed, counts)
        scan = Scan(text, exhaustive=True)
        for rule in self._rules:
            scan = rule.apply(scan, guard)
        return scan.text

    def redact_event(self, event: Event) -> Event:
        """The event with secrets removed from every text it holds: content, source, a
        free-word kind, brain, title, workspace, session, tags, every actor field and meta.

        Ids, timestamps and the built-in kinds are typed values, not text, and are kept.
        Returns the same object when nothing changed.
        """
        if not self.enabled:
            return event
        # Source, workspace, session, title and the actor repeat on event after event:
        # a string already found clean is skipped here without a call.
        clean = self._clean
        changes: dict[str, object] = {}
        content = self.redact(event.content)
        if content != event.content:
            changes["content"] = content
        for name, value in _event_fields(event):
            if value and value not in clean:
                redacted = self.redact(value)
                if redacted != value:
                    changes[name] = redacted
        kind = event.kind
        # The built-in kinds are a StrEnum; anything else is an OtherKind holding a free word.
        if not isinstance(kind, str) and kind.name not in clean:
            name = self.redact(kind.name)
            if name != kind.name:
                changes["kind"] = replace(kind, name=name)
        tags = event.tags
        for tag in tags:
            # Tags repeat like the fields above: redacted only once one is not known clean.
            if tag not in clean:
                redacted_tags = tuple(self.redact(item) for item in tags)
                if redacted_tags != tags:
                    changes["tags"] = redacted_tags
                break
        actor = event.actor
        if actor is not None:
            fixed = {}
            for name, value in _actor_fields(actor):
                if value and value not in clean:
                    redacted = self.redact(value)
                    if redacted != value:
                        fixed[name] = redacted
            if fixed:
                changes["actor"] = replace(actor, **fixed)
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


@functools.cache
def default_redactor() -> Redactor:
    """The built-in rules with no extra patterns or allowlist; shared, built once."""
    return Redactor()


def redact(text: str) -> str:
    """Redact ``text`` with the built-in rules (see :class:`Redactor` for configured ones)."""
    return default_redactor().redact(text)
