"""A text under redaction: its folded copy, and where names are assigned a value.

Shapes anchored on a name (``password=``, ``"api_key":``, ``Authorization:``) are tried
only where a search for a few literals found a secret-ish word, the rest of its name and
an assignment, and either the name ends as one of those shapes' names do or a value long
enough for the entropy rule follows. Trying an expression only at candidate starts, in
order, skipping starts inside the last match, finds exactly what ``finditer`` finds as
long as the candidates include every place the expression can match.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass

from urchin.redact.names import ASSIGN_NAMES, ENTROPY_MIN_LENGTH

__all__ = [
    "ANY_NAME",
    "ENDS_REACH",
    "NAME_ANCHORS",
    "NAME_REACH",
    "NAME_TAILS",
    "Gate",
    "Hit",
    "Known",
    "NameAnchor",
    "Scan",
    "Span",
    "bits",
    "fold",
    "presence",
    "probes",
    "rarest",
]

#: A replacement: start and end in the old text, and the marker put there.
Span = tuple[int, int, str]
#: Literals one of which must occur (``in`` finds a fixed string faster than ``re``), or a
#: pattern that must.
Gate = tuple[str, ...] | re.Pattern[str]

# The last letters of every name a name-anchored rule other than the entropy one can end
# on (azure's AccountKey and SharedAccessKey end in "key" too, as does the "private_key"
# of a service-account file), by length: a fixed-width look-behind per length checks them
# all at once. Four letters, not three, leave out a JSON "key" or a "monkey".
NAME_TAILS = sorted(
    {name[-4:] for name in ASSIGN_NAMES | {"authorization", "sig", "private_key"}},
    key=lambda t: (-len(t), t),
)
_TAIL_BEHIND = "|".join(
    f"(?<={'|'.join(re.escape(t) for t in NAME_TAILS if len(t) == width)})"
    for width in sorted({len(t) for t in NAME_TAILS}, reverse=True)
)
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
    ``offsets``: how far before the literal each of its words starts. ``lead``: how many
    of the literal's characters come before where the patterns' matches start.
    """

    near: re.Pattern[str]
    full: re.Pattern[str]
    literals: tuple[str, ...]
    offsets: tuple[int, ...]
    lead: int = 0


def _anchor(
    literals: tuple[str, ...],
    run: int,
    offsets: tuple[int, ...] = (0,),
    then: str = "",
    lead: int = 0,
) -> NameAnchor:
    # Each opens with its literal: ``re`` skips ahead to the whole literal without trying
    # the rest of the pattern at each first letter (a one-letter start, then a look-behind
    # for the rest, is tried at every occurrence of that letter: slower however rare it is).
    # ``then``: a class the character after the literal is in, in every word it serves.
    # ``lead``: the search opens that far into a lone literal and looks back for the rest.
    # Still opening with several letters ("auth" at "uth"), ``re`` skips ahead as before,
    # from each "u" rather than each far more common "a"; opening with one letter instead
    # would try the pattern at each occurrence of it.
    follow = f"(?=[{then}])" if then else ""
    if lead:
        (literal,) = literals
        opening = f"{re.escape(literal[lead:])}(?<={re.escape(literal)})"
    else:
        opening = f"(?:{'|'.join(literals)})"
    near = rf"{opening}{follow}[\w.\-]{{0,{run}}}+(?=\\?[\"']?[ \t]*+[:=]())"
    full = rf"{near}(?:(?={_LONG_VALUE})|{_TAIL_BEHIND})"
    return NameAnchor(re.compile(near), re.compile(full), literals, offsets, lead)


# Each word with its run of at most 40 more name characters, as the entropy rule reads it,
# five searches for nine words: "ke" in key and token, "cre" in secret and credential
# (also creds), whose runs then count from the literal; "pw" in pwd and the *_pw names.
# Each literal is followed as in its words ("key" and "token"; "secret", "credential" and
# "creds"), so "make", "keep" and JSON's "created_at" are no hits: a name holding a word
# also holds that word's literal, whose own hit ends the name alike.
NAME_ANCHORS = (
    _anchor(("ke",), 41, (0, 2), "yn"),
    _anchor(("cre",), 47, (0, 2), "td"),
    _anchor(("pass", "pw", "private"), 40),
    _anchor(("auth",), 40, lead=1),
    _anchor(("sig",), 40),
)
#: Any of them, loosely: asked of the few characters before one separator.
ANY_NAME = re.compile(r"(?:ke|cre|pass|pw|private|auth|sig)[\w.\-]{0,47}+\\?[\"']?[ \t]*+[:=]")
#: How far before its separator's blanks a hit's word can start: the longest word and its
#: run, then a backslash and a quote.
NAME_REACH = len("credential") + 40 + 2
#: How far before its name's end a hit reads, to see how the name ends.
ENDS_REACH = max(len(t) for t in NAME_TAILS)

# Characters whose presence (memchr, nearly free) decides which rules a text needs.
_PRESENCE = ":=-_AJbB@~<(],EK/.Lzw"


_PRESENCE_BITS = tuple((char, 1 << index) for index, char in enumerate(_PRESENCE))


def presence(text: str) -> int:
    """A bit per character of ``_PRESENCE`` that occurs in ``text``."""
    mask = 0
    for char, bit in _PRESENCE_BITS:
        if char in text:
            mask |= bit
    return mask


# Characters from the most to the least frequent in transcripts (prose, code, logs); any
# other character is rarer still. Upper-case letters follow English letter frequency.
_FREQUENT = " etaoinsrlcdhupmf_g.-y/b:=w,\"'kv()0123456789x[]jqz{}ETAOINSRHLDCUMFPGWYBVKXJQZ"
_RANK = {char: rank for rank, char in enumerate(_FREQUENT)}
_RAREST: dict[str, str] = {}


def rarest(literal: str) -> str:
    """The character of ``literal`` least likely to occur in a text.

    Looking for one character is a ``memchr``, many times faster than looking for a
    string, and a text without it cannot hold the literal: a gate asks that first.
    """
    found = _RAREST.get(literal)
    if found is None:
        found = _RAREST[literal] = max(literal, key=lambda c: _RANK.get(c, len(_RANK)))
    return found


_PROBES: dict[tuple[str, ...], tuple[tuple[str, str], ...]] = {}


def probes(gate: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """Each literal of ``gate`` after its rarest character (worked out once per gate)."""
    probes = _PROBES.get(gate)
    if probes is None:
        probes = _PROBES[gate] = tuple((rarest(literal), literal) for literal in gate)
    return probes


def bits(chars: str) -> int:
    """The :func:`presence` bits of ``chars``."""
    return sum(1 << _PRESENCE.index(char) for char in set(chars))


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
_SPARSE = 250
# Above one hit per this many characters (and a few), trying rules at each hit costs more
# than scanning the whole text (``key=key=key=...``), so the rules do that instead.
_CROWDED = 64

#: Literals already looked for in a text: each one's bit, the bits looked for, those found.
Known = tuple[dict[str, int], int, int]

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

    ``known`` holds literals already looked for (see :mod:`~urchin.redact.literals`):
    the bit of each literal, the bits of those looked for, and of those found; gates on
    them are answered from it. ``exhaustive`` turns every shortcut off: each gate passes
    and there are no hits, so every rule searches the whole text (see
    :class:`~urchin.redact.Redactor`).
    """

    __slots__ = (
        "_crowded",
        "_ends",
        "_folded",
        "_gates",
        "_hits",
        "_known",
        "_starts",
        "exhaustive",
        "text",
    )

    def __init__(
        self,
        text: str,
        gates: dict[Gate, bool] | None = None,
        *,
        exhaustive: bool = False,
        known: Known | None = None,
    ) -> None:
        self.text = text
        self.exhaustive = exhaustive
        self._known = known
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
        """Every hit of :data:`NAME_ANCHORS` by start, or None when
        there are too many to be worth it.

        Hits may overlap (``make_key=``): a literal inside another hit's name is a hit too,
        with the same end and everything after it.
        """
        if self.exhaustive:
            return None
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
        if self.exhaustive:
            return True
        if self._known is not None and isinstance(gate, tuple):
            bits, looked, held = self._known
            asked = 0
            for literal in gate:
                asked |= bits.get(literal, 0)
            if asked & held:
                return True
            if asked & looked == asked and len(gate) == asked.bit_count():
                return False
        found = self._gates.get(gate)
        if found is None:
            text = self.text
            if isinstance(gate, tuple):
                found = False
                for rare, literal in probes(gate):
                    if rare in text and literal in text:
                        found = True
                        break
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
        scan = Scan("".join(pieces), self._gates, exhaustive=self.exhaustive, known=self._known)
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
    start -= anchor.lead
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
    # The search opens with the literal, so ``re`` skips ahead to it as fast as
    # ``str.find`` would (faster for two or three characters): no find first. Mostly
    # there is no hit, and a search costs less to start than finditer; each goes on where
    # the last hit ended, as finditer would (a hit is never empty, and look-behinds still
    # see the text before the position searched from).
    search = anchor.full.search
    hit = search(folded)
    while hit is not None:
        _record(anchor, folded, hit, hits)
        if len(hits) > limit:
            return False
        hit = search(folded, hit.end())
    return True


# How much of a text's start is counted to guess whether it is sparse.
_HEAD = 512


def _separators(folded: str, limit: int) -> list[int] | None:
    """Where ``:`` and ``=`` are, or None when there are more than ``limit``.

    Both ways of finding hits find the same ones, so this only picks the faster: a text
    crowded with separators near its start (code, JSON, logs) is taken as crowded without
    counting the rest, and the search for separators stops once it passes the limit.
    """
    head = min(len(folded), _HEAD)
    if folded.count(":", 0, head) + folded.count("=", 0, head) > head // _SPARSE + 4:
        return None
    found: list[int] = []
    for char in ":=":
        index = folded.find(char)
        while index >= 0:
            found.append(index)
            if len(found) > limit:
                return None
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
