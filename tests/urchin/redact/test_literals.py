"""The shared searches for gate literals answer exactly what ``literal in text`` answers.

A gate that wrongly reported its literal absent would skip a rule and let a secret through;
one that wrongly reported it present would only cost time. Both are checked here, on texts
built around the literals' own pieces: hubs, overlaps, repeats and near misses.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from urchin.redact import Redactor
from urchin.redact.literals import HUBS, Literals, hub_of
from urchin.redact.rules import BUILTIN
from urchin.redact.scan import Scan

GATE_LITERALS = sorted(
    {literal for rule in BUILTIN if isinstance(rule.gate, tuple) for literal in rule.gate}
)
INDEX = Literals(GATE_LITERALS)
ALL_HUBS = INDEX.hubs(GATE_LITERALS)

# Every literal, its halves, every character of it, and the hubs alone.
_PIECES = sorted(
    {
        *GATE_LITERALS,
        *(literal[:cut] for literal in GATE_LITERALS for cut in range(1, len(literal))),
        *(literal[cut:] for literal in GATE_LITERALS for cut in range(1, len(literal))),
        *"".join(GATE_LITERALS),
        *HUBS,
    }
)
texts = st.lists(st.one_of(st.sampled_from(_PIECES), st.text(max_size=4)), max_size=24).map("".join)


def _expected(text: str, literals: list[str]) -> int:
    return INDEX.bits(literal for literal in literals if literal in text)


@settings(max_examples=1500, deadline=None)
@given(texts)
def test_the_shared_searches_find_exactly_the_literals_a_text_holds(text: str) -> None:
    assert INDEX.present(text, ALL_HUBS) == _expected(text, GATE_LITERALS)


@settings(max_examples=300, deadline=None)
@given(texts, st.sampled_from(GATE_LITERALS))
def test_one_hub_answers_for_its_own_literals_only(text: str, literal: str) -> None:
    hub = hub_of(literal)
    members = INDEX.groups()[hub]
    assert literal in members
    assert INDEX.present(text, INDEX.hubs([literal])) == _expected(text, list(members))


def test_literals_that_share_a_hub_are_all_found_however_they_overlap() -> None:
    index = Literals(["dapi", "pass:", "sqlplus", "htpasswd", "://", "1//0", "ab", "b"])
    assert [hub for hub, *_ in index.hubs(["dapi", "pass:", "sqlplus", "htpasswd"])] == ["p"]
    hubs = index.hubs(["dapi", "pass:", "sqlplus", "htpasswd", "://", "1//0", "ab", "b"])
    everything = index.bits(["dapi", "pass:", "sqlplus", "htpasswd", "://", "1//0"])
    # Each found once, in any order, several at one hub character, repeated.
    text = "htpasswd dapi://x sqlplus pass: 1//0 dapi"
    assert index.present(text, hubs) & everything == everything
    assert index.present("https://x https://y", hubs) == index.bits(["://"])
    assert index.present("1///0 pass : dap i", hubs) == 0
    assert index.present("ab", hubs) == index.bits(["ab", "b"])


def test_every_built_in_gate_literal_is_searched_for() -> None:
    redactor = Redactor()
    for literal in GATE_LITERALS:
        assert redactor._gates.bits([literal])
        assert hub_of(literal) in literal
    # The capitals and rare symbols a gate holds are its hub: absent, nothing is searched.
    assert hub_of("SK") == "K" and hub_of("eyJ") == "J" and hub_of("?sig=") == "?"
    # Two characters, when every literal of the hub shares them.
    assert hub_of("://") == hub_of("1//0") == "//"
    only = Literals(["SK"])
    assert only.present("no capital k here", only.hubs(["SK"])) == 0
    assert only.present("an SK here", only.hubs(["SK"])) == only.bits(["SK"])


def test_a_scan_answers_gates_from_the_literals_already_looked_for() -> None:
    bits = INDEX.table()
    looked = INDEX.bits(["SK", "eyJ"])
    # What was looked for is answered as found; "dapi" was not, so it is asked of the text.
    scan = Scan("a dapi here", known=(bits, looked, INDEX.bits(["eyJ"])))
    assert scan.has(("eyJ",)) and not scan.has(("SK",))
    assert scan.has(("SK", "eyJ"))
    assert scan.has(("dapi",)) and not scan.has(("hooks",))
    # Carried over to the scan after a replacement.
    assert scan.replaced([(0, 1, "b")]).has(("eyJ",))


def test_literals_that_open_alike_share_a_branch_and_are_all_found() -> None:
    literals = ["pass", "pass:", "passw", "passwd", "htpasswd", "dapi", "passC"]
    index = Literals(literals)
    ((hub, search, order),) = index.hubs(["pass"])
    assert hub == "p" and sorted(order) == sorted(literals)
    # "ass" is read once for every literal that goes on with it.
    assert search.pattern.startswith("p(?:ass(?:") and search.pattern.count("ass(") == 1
    for text in ("htpasswd", "pass:", "passwd x", "a pass", "dapi passw", "passC passc"):
        found = index.present(text, index.hubs(["pass"]))
        assert found == index.bits(literal for literal in literals if literal in text), text
