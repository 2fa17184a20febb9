"""How much regular-expression work a redaction does, counted instead of timed.

:func:`counting` swaps every expression the built-in rules reach (each rule's own, the
name anchors of :mod:`urchin.redact.scan`, the provider probes, and the module-level
expressions rules and decisions call) for a proxy that counts calls and the matches they
yield. A redaction whose count grows faster than its text (a rule tried at every start of
a crowded text, each try reading on to the end) shows up as a count, on any machine.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import pytest

from urchin.redact import names
from urchin.redact import scan as scan_module
from urchin.redact.rules import BUILTIN, assignments, base, commands, headers, providers, structure
from urchin.redact.rules.providers import ProviderTokens
from urchin.redact.scan import NameAnchor

__all__ = ["MODULES", "Tally", "counting"]

#: The modules whose expressions rules and their decisions call.
MODULES: tuple[ModuleType, ...] = (
    names,
    scan_module,
    base,
    assignments,
    commands,
    headers,
    providers,
    structure,
)


@dataclass
class Tally:
    """Calls made, matches yielded and the characters those matches span, over every
    counted expression. (A try that reads far and fails is not seen: the nesting check in
    tests/urchin/test_redact.py stands for that.)"""

    calls: int = 0
    matches: int = 0
    spanned: int = 0

    @property
    def work(self) -> int:
        return self.calls + self.matches

    def reset(self) -> None:
        self.calls = self.matches = self.spanned = 0

    def saw(self, found: re.Match[str]) -> None:
        self.matches += 1
        self.spanned += found.end() - found.start()


class _Counted:
    """A compiled expression that counts what is asked of it (and forwards the rest)."""

    def __init__(self, pattern: re.Pattern[str], tally: Tally) -> None:
        self._pattern = pattern
        self._tally = tally

    def _one(self, method: Callable[..., re.Match[str] | None], *args: Any) -> Any:
        self._tally.calls += 1
        found = method(*args)
        if found is not None:
            self._tally.saw(found)
        return found

    def search(self, *args: Any) -> re.Match[str] | None:
        return self._one(self._pattern.search, *args)  # type: ignore[no-any-return]

    def match(self, *args: Any) -> re.Match[str] | None:
        return self._one(self._pattern.match, *args)  # type: ignore[no-any-return]

    def fullmatch(self, *args: Any) -> re.Match[str] | None:
        return self._one(self._pattern.fullmatch, *args)  # type: ignore[no-any-return]

    def finditer(self, *args: Any) -> Iterator[re.Match[str]]:
        self._tally.calls += 1
        for found in self._pattern.finditer(*args):
            self._tally.saw(found)
            yield found

    def split(self, *args: Any) -> list[str]:
        self._tally.calls += 1
        return self._pattern.split(*args)

    def sub(self, *args: Any) -> str:
        self._tally.calls += 1
        return self._pattern.sub(*args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._pattern, name)


def counting(monkeypatch: pytest.MonkeyPatch) -> Tally:
    """Count, until the test ends, the work of every expression the built-in rules use.

    Redactors built after this call and the shared one alike are counted (the rules are
    shared objects).
    """
    tally = Tally()

    def wrap(pattern: re.Pattern[str]) -> Any:
        return _Counted(pattern, tally)

    for module in MODULES:
        for name, value in list(vars(module).items()):
            if isinstance(value, re.Pattern):
                monkeypatch.setattr(module, name, wrap(value))
    monkeypatch.setattr(
        scan_module,
        "NAME_ANCHORS",
        tuple(
            NameAnchor(wrap(a.near), wrap(a.full), a.literals, a.offsets, a.lead)
            for a in scan_module.NAME_ANCHORS
        ),
    )
    for rule in BUILTIN:
        for name in ("pattern", "_begin", "_end", "_body"):
            value = getattr(rule, name, None)
            if isinstance(value, re.Pattern):
                monkeypatch.setattr(rule, name, wrap(value), raising=False)
        if isinstance(rule, ProviderTokens):
            probes = [
                (
                    char,
                    wrap(probe),
                    {k: [(p, wrap(e)) for p, e in v] for k, v in keyed.items()},
                    [(p, wrap(e)) for p, e in always],
                )
                for char, probe, keyed, always in rule._probes
            ]
            monkeypatch.setattr(rule, "_probes", probes)
    return tally
