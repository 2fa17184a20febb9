"""Which of the rules' gate literals a text holds, found with a few shared searches.

Most gate literals (``"dapi"``, ``"htpasswd"``, ``"://"``, ``"ookie:"``) are absent from
most texts, yet ``literal in text`` costs a pass over the text each: a pass per gate added
up to a fifth of a redaction. Here each literal is looked for after one of its characters,
its hub, and literals with the same hub share one search:

- A hub absent from the text (a ``memchr``, nearly free) rules its literals out at once.
  Capitals and rare symbols make the best hubs: most texts lack them.
- Otherwise one search that opens with the hub (so ``re`` skips from one occurrence of
  that single character to the next) tries each literal there, as the rest of the literal
  and then a look-behind for the whole of it, and says which occurs first; the others are
  searched for again from there, without it.

Every occurrence of a literal puts its hub at the right place, so none is missed, and each
find is the literal itself, so none is invented: the answers are exactly ``literal in
text``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from urchin.redact.scan import rarest

__all__ = ["HUBS", "Hubs", "Literals", "hub_of"]

#: Hubs ready to search: each character, the search for all its literals, and those.
Hubs = tuple[tuple[str, "re.Pattern[str]", tuple[str, ...]], ...]

#: What to take as a literal's hub, best first: capitals and symbols most texts lack (``A``
#: serves the AWS, Google, Azure, Facebook, Atlassian and Twitter prefixes in one search),
#: then lower-case letters that several literals share (``p`` serves "dapi", "pass:",
#: "sqlplus", "htpasswd" and "passw" in one search), then "//" for "://" and "1//0" (a
#: search that opens with two characters is tried only where both occur). A literal with
#: none of them is looked for after its rarest character. ``p`` and ``P`` come before the
#: other capitals: "passW" joins the other "pass" literals, not a search of its own.
HUBS: tuple[str, ...] = (*"QXJZAKBPpVYWU?&~|\\<>!@#$`^kg", "//")


def hub_of(literal: str) -> str:
    """What ``literal`` is looked for after: one character, or a few."""
    for hub in HUBS:
        if hub in literal:
            return hub
    return rarest(literal)


class Literals:
    """A fixed set of literals, a bit for each, and the searches that find them."""

    __slots__ = ("_bits", "_groups", "_searches")

    def __init__(self, literals: Iterable[str]) -> None:
        members = sorted({literal for literal in literals if literal})
        self._bits = {literal: 1 << index for index, literal in enumerate(members)}
        groups: dict[str, list[str]] = {}
        for literal in members:
            groups.setdefault(hub_of(literal), []).append(literal)
        self._groups = {hub: tuple(group) for hub, group in groups.items()}
        self._searches: dict[tuple[str, ...], tuple[re.Pattern[str], tuple[str, ...]]] = {}

    @property
    def size(self) -> int:
        """How many literals there are (their bits are the lowest ``size``)."""
        return len(self._bits)

    def bits(self, literals: Iterable[str]) -> int:
        """The bits of ``literals``.

        Raises:
            KeyError: one of them is not in the set.
        """
        mask = 0
        for literal in literals:
            mask |= self._bits[literal]
        return mask

    def hubs(self, literals: Iterable[str]) -> Hubs:
        """The hubs to search for ``literals`` (each once), ready for :meth:`present`."""
        return tuple(
            (hub, *self._search(hub, self._groups[hub]))
            for hub in sorted({hub_of(literal) for literal in literals})
        )

    def table(self) -> dict[str, int]:
        """Each literal's bit (shared: not to be changed)."""
        return self._bits

    def groups(self) -> dict[str, tuple[str, ...]]:
        """Each hub and the literals it serves."""
        return dict(self._groups)

    def present(self, text: str, hubs: Hubs) -> int:
        """The bits of the literals of ``hubs`` that ``text`` holds."""
        mask = 0
        for hub, search, members in hubs:
            # Mostly the hub is absent (its first character is, a memchr), or none of its
            # literals is there: no call.
            if hub[0] in text and (match := search.search(text)) is not None:
                mask |= self._found(text, hub, members, match)
        return mask

    def _found(self, text: str, hub: str, left: tuple[str, ...], match: re.Match[str]) -> int:
        """The bits of ``left`` that occur, the first of them found at ``match`` (a match of
        the search for ``left``, whose n-th empty group is the n-th of ``left``)."""
        mask = 0
        while True:
            # lastindex says which literal's branch matched.
            first = left[(match.lastindex or 1) - 1]
            mask |= self._bits[first]
            rest = tuple(literal for literal in left if literal != first)
            if not rest:
                return mask
            # None of the rest occurs with its hub before this one (two may share it).
            search, left = self._search(hub, rest)
            found = search.search(text, match.start())
            if found is None:
                return mask
            match = found

    def _search(
        self, hub: str, literals: tuple[str, ...]
    ) -> tuple[re.Pattern[str], tuple[str, ...]]:
        """The search for ``literals`` after ``hub``, and the literals in the order of the
        empty groups that end their branches."""
        cached = self._searches.get(literals)
        if cached is None:
            items = []
            for literal in literals:
                cut = literal.index(hub)
                behind = f"(?<={re.escape(literal)})" if cut else ""
                items.append((literal[cut + len(hub) :], behind, literal))
            order: list[str] = []
            body = _branches(sorted(items), order)
            cached = (re.compile(f"{re.escape(hub)}(?:{body})"), tuple(order))
            self._searches[literals] = cached
        return cached


def _branches(items: list[tuple[str, str, str]], order: list[str]) -> str:
    """Alternatives for ``(rest, look-behind, literal)`` sorted by rest, the rests that open
    alike sharing a branch: ``re`` tries each alternative whose first character matches,
    so "passw", "passc" and "passp" after a "p" read "ass" once, not once each. Each
    literal's branch ends with an empty group, numbered as ``order`` lists them."""
    branches = []
    index = 0
    while index < len(items):
        rest, behind, literal = items[index]
        if not rest:
            order.append(literal)
            branches.append(f"{behind}()")
            index += 1
            continue
        same = index + 1
        while same < len(items) and items[same][0][:1] == rest[0]:
            same += 1
        if same == index + 1:
            order.append(literal)
            branches.append(f"{re.escape(rest)}{behind}()")
        else:
            group = items[index:same]
            # Sorted, so what the first and last rests share, all of them share.
            first, last = group[0][0], group[-1][0]
            size = 1
            while size < min(len(first), len(last)) and first[size] == last[size]:
                size += 1
            shared = first[:size]
            shorter = [(r[len(shared) :], b, lit) for r, b, lit in group]
            branches.append(f"{re.escape(shared)}(?:{_branches(shorter, order)})")
        index = same
    return "|".join(branches)
