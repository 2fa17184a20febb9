"""The pre-filters lose nothing: a redactor that takes every shortcut redacts exactly what
one running every rule's search over the whole text redacts.

The shortcuts under test: the characters a text holds decide which rules run; literal
gates (asked after the rarest character of each literal) skip rules; name-anchored rules
are tried only where a name is assigned (found per separator in sparse text, per anchor in
dense text, and only where the name ends as a rule's names can); explicit names are found
back from their ends; short flags are tried only against commands whose literals occur;
XML attributes only where ``value="`` occurs.
"""

from __future__ import annotations

import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.urchin.redact.corpus import build
from urchin.redact import Redactor, names
from urchin.redact import scan as scan_module
from urchin.redact.names import ASSIGN_NAMES, ENTROPY_WORDS, KEY_PREFIXES
from urchin.redact.rules import assignments, commands, providers
from urchin.redact.rules.base import Guard
from urchin.redact.scan import NAME_TAILS, Scan, rarest

_SAMPLES = build()
_SECRET_TEXTS = [s.text for s in _SAMPLES if s.secrets]
_CLEAN_TEXTS = [s.text for s in _SAMPLES if not s.secrets]
# Pieces that sit next to the shortcuts' edges: separators, quotes, prefixes' last
# characters, gate literals, command words, name words and their endings.
_FRAGMENTS = [
    *(":", "=", ":=", "=>", " = ", '"', "'", "\\", "`", "-", "_", ".", "~", "/", "@", "\n"),
    *("password", "PASSWORD", "passwd", "pw", "_pw", "token", "key", "KEY", "api", "apiKey"),
    *("secret", "cred", "creds", "auth", "Authorization: ", "sig", "private_key", "monkey"),
    *("Bearer ", "Cookie: ", "://", "user:", "@host", "-----BEGIN ", " PRIVATE KEY-----"),
    *(" -p", " -u ", " -a ", "--password ", "mysql", "docker", " login", "curl", "sshpass"),
    *('<add key="ApiKey" ', 'value="', "</password>", "<password>", '["TOKEN"] = ', ", "),
    *("sk-", "hf_", "SG.", "Q~", ":A", "dapi", "EAA", "SK", "AKIA", "AIza", "eyJ", "1//0"),
    *(" set ", "git config ", "sqlplus ", "pass:", "htpasswd -b ", "[REDACTED:token]"),
    *("?sig=", "&sig=", "hooks", "password is ", "PassCode was ", "pa\u017f\u017fword: "),
    *("AccountKey=", "SharedAccessKey=", "ATATT3", "ATBB", "A" * 20, "12345678:A", "7Q~"),
]
_VALUES = st.text(alphabet="abcdefXYZ0123456789+/_-.~", min_size=0, max_size=48)
texts = st.lists(
    st.one_of(
        st.sampled_from(_FRAGMENTS),
        st.sampled_from(_SECRET_TEXTS),
        st.sampled_from(_CLEAN_TEXTS),
        _VALUES,
        st.text(max_size=12),
    ),
    max_size=14,
).map("".join)
FAST = (Redactor(), Redactor(patterns=[r"ACME-\d{4}"], allow=["re:hunter.*"]))
FULL = (
    Redactor(exhaustive=True),
    Redactor(patterns=[r"ACME-\d{4}"], allow=["re:hunter.*"], exhaustive=True),
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts)
def test_shortcuts_redact_what_the_whole_text_search_redacts(text: str) -> None:
    for fast, full in zip(FAST, FULL, strict=True):
        assert fast.redact_counted(text) == full.redact_counted(text)


def test_every_corpus_text_redacts_alike_with_and_without_shortcuts() -> None:
    fast, full = FAST[0], FULL[0]
    for sample in _SAMPLES:
        assert fast.redact(sample.text) == full.redact(sample.text), sample.kind


def test_sparse_and_dense_texts_find_the_same_hits() -> None:
    # A text of many short lines padded apart crosses the sparse/dense threshold as its
    # padding shrinks; both ways of finding hits must agree at every point.
    lines = ('api_key = "Zk4qP9wLr2Xv7TnB5mYc" # x\n', "the password: hunter2x\n")
    for line, pad in ((a, b) for a in lines for b in (0, 40, 120, 400, 3000)):
        text = (line + " " * pad) * 20
        scan = Scan(text)
        hits = scan.hits()
        assert hits is not None
        # The other way: one search per anchor over the whole text.
        dense: list[tuple[int, int, int, int, tuple[int, ...]]] = []
        for anchor in scan_module.NAME_ANCHORS:
            assert scan_module._collect(anchor, scan.folded, dense, 10**9)
        assert sorted(dense) == hits


def test_the_rarest_character_is_one_of_the_literal() -> None:
    for literal in ("-----BEGIN ", "SK", "dapi", "://", " -", "Q~", "ATBB", "sig="):
        assert rarest(literal) in literal
    assert rarest("SK") == "K"
    assert rarest("-----BEGIN ") == "B"


def test_name_tails_cover_every_name_the_anchored_rules_end_on() -> None:
    names = ASSIGN_NAMES | {"authorization", "sig", "private_key", "accountkey"}
    for name in names:
        assert any(name.endswith(tail) for tail in NAME_TAILS), name


_NAME_END = re.compile(
    "(?:" + "|".join(sorted(map(re.escape, ASSIGN_NAMES), key=len, reverse=True)) + r")\Z"
)


@given(
    st.sampled_from([*sorted(ASSIGN_NAMES), "key", "ey", "mykey", "apikeys", "passpw", "x"]),
    st.sampled_from(["", "x", "_", "my_", "api", "s", ".", "-", "db_", "o_auth_", '"']),
)
def test_explicit_names_are_found_back_from_their_end(name: str, before: str) -> None:
    folded = f"{before}{name}"
    end = len(folded)
    found = _NAME_END.search(folded, 0, end)
    assert assignments._name_start(folded, end) == (found.start() if found else -1)


def test_every_key_name_is_a_key_word_a_separator_and_key() -> None:
    key_names = {n for n in ASSIGN_NAMES if n.endswith("key")}
    assert key_names == {f"{w}{sep}key" for w in KEY_PREFIXES for sep in ("", "_", ".", "-")}


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                *("mysql", "mariadb-dump", "sshpass", "redis-cli", "az", "oc", "docker", "helm"),
                *("login", "curl", "https", "httpie", "sqlcmd", "ldapsearch", "smbclient", "zip"),
                *("7z", "unrar", "mongosh", "twine", "ssh-keygen", "snmpwalk", "openssl", "enc"),
                *("lftp", "run", "-p", "-u", " ", " ", "x", "-", "_", "|", ";"),
            ]
        ),
        max_size=8,
    ).map(" ".join)
)
def test_a_command_matches_only_where_its_literals_occur(command: str) -> None:
    for literals, family, _ in commands._FAMILIES:
        if family.search(command) is not None:
            assert any(literal in command for literal in literals), (family.pattern, command)


def test_value_attributes_hold_the_literal_the_xml_rule_asks_first() -> None:
    for text in ('<add key="ApiKey" value="x"/>', '<p name="a"  value = "b">'):
        assert assignments._XML_ATTRS.search(text) is not None
        assert assignments._VALUE_ATTR.search(text) is not None


def _placeholder_by_expressions(value: str) -> bool:
    """is_placeholder as every expression alone decides it, with no literal asked first."""
    stripped = value.strip()
    if not stripped or stripped.startswith(names.MARKER_PREFIX):
        return True
    if stripped.endswith(("...", "…")) or "${" in stripped or "{{" in stripped:
        return True
    if stripped[0] in names._PLACEHOLDER_STARTS and names._PLACEHOLDER.fullmatch(stripped):
        return True
    return (
        (len(stripped) <= 48 and names._STOPWORDS.fullmatch(stripped) is not None)
        or names._FILLER.search(stripped) is not None
        or names._REFERENCE.match(stripped) is not None
        or names._PUBLIC.match(stripped + " ") is not None
    )


_VALUE_PIECES = [
    *("your", "YOUR", "my", "set", "Insert", "own", "-", "_", " ", "here", "HERE", "goes"),
    *("placeholder", "xxxx", "XXXX", "****", "<", ">", "token", "Key", "change", "me", "~"),
    *("op://", "vault:", "ARN:AWS:", "arn:aws:kms:", "ENC[", "projects/p/secrets/", "!Ref"),
    *("ssh-ed25519 ", "ecdsa-sha2-nistp256 ", "pk_live_", "pk.eyJ", "npub1", "age1"),
    *("-----BEGIN PUBLIC", "credentials", "None", "\u212a", "\u017f", "\u0130", "\u0131"),
]


@settings(max_examples=500, deadline=None)
@given(
    st.lists(st.one_of(st.sampled_from(_VALUE_PIECES), st.text(max_size=6)), max_size=6).map(
        "".join
    )
)
def test_placeholder_literals_asked_first_change_no_answer(value: str) -> None:
    assert names.is_placeholder(value) == _placeholder_by_expressions(value)


def test_name_tails_are_matched_as_written() -> None:
    # ".key" is a tail (``api.key``); a dot in it must not stand for any character, or
    # every JSON ``"key":`` would be a place to try the name-anchored rules.
    assert Scan('{"key": "retry", "id": 3}').hits() == []
    assert Scan("x;key= 1").hits() == []
    assert Scan('{"api.key": "retry"}').hits()
    assert Scan("config.api-key = 1").hits()


def test_anchors_follow_their_literals_as_every_word_they_serve_does() -> None:
    # An anchor may ask what follows its literal ("key", "token": "y" or "n"), so long as
    # every occurrence of the literal in every name a rule reads is followed alike.
    words = {*ENTROPY_WORDS, *ASSIGN_NAMES, "authorization", "private_key", "creds"}
    for anchor in scan_module.NAME_ANCHORS:
        for word in words:
            for literal in anchor.literals:
                at = word.find(literal)
                while at >= 0:
                    assert anchor.near.match(f"{word}=x", at + anchor.lead), (literal, word)
                    at = word.find(literal, at + 1)
    # What no rule reads is no hit: JSON's created_at, a Makefile's target.
    assert Scan('{"created_at": "2026-05-04T10:31:00.000000Z", "make": 1}').hits() == []
    assert Scan("make: all\nkeep: 1").hits() == []


def test_anchors_opening_inside_their_literal_hit_where_it_starts() -> None:
    value = "Zk4qP9wLr2Xv7TnB5mYcQ8hJ"
    text = f'my_sig = "{value}"; oauth: "{value}"; sigsig={value}'
    hits = Scan(text).hits()
    assert hits is not None
    starts = {hit[0] for hit in hits}
    assert {text.index("sig"), text.index("auth"), text.index("sigsig"), text.index("sig=")} <= (
        starts
    )
    assert all(text.startswith(("sig", "auth"), start) for start in starts)
    assert value not in Redactor().redact(text)


def test_a_name_whose_first_literal_serves_no_word_still_hits_at_its_word() -> None:
    value = "Zk4qP9wLr2Xv7TnB5mYcQ8hJ"
    for text in (f"created_secret = {value}", f"make_token={value}", f"makeKey: {value}"):
        assert value not in Redactor().redact(text), text
        assert Redactor().redact(text) == Redactor(exhaustive=True).redact(text)


def test_spelled_out_passwords_pass_their_gate_in_any_case() -> None:
    # The gate asks for "pass" or "Pass" and the next letter in either case.
    for first in "pP":
        for word in ("word", "WORD", "Wd", "wD", "phrase", "PHRASE", "code", "CODE"):
            text = f"the {first}ass{word} is Tr0ub4dor&3 now"
            assert "Tr0ub4dor" not in Redactor().redact(text), text
            assert Redactor().redact(text) == Redactor(exhaustive=True).redact(text)
    assert Redactor().redact("5 passed; pass the value on") == "5 passed; pass the value on"


def test_short_flags_of_commands_not_on_the_line_are_left_alone() -> None:
    text = "$ docker run --rm -e WORKERS=3 -p 8080:8080 app\n$ mysql -u root -pPw9kq2zz db\n"
    assert Redactor().redact(text) == text.replace("Pw9kq2zz", "[REDACTED:password]")


def _code_value_by_expressions(name: str, value: str) -> bool:
    """is_code_value as first written: character tests per character, per call."""
    if ("." in value or ":" in value or "->" in value) and names._CODE_PATH.fullmatch(value):
        return not any(c.isdigit() for c in value.split(".")[-1][:1])
    if names._IDENTIFIER.fullmatch(value) is None:
        return False
    lowered = value.lower()
    tail = names._NON_ALNUM.split(name.lower().strip("\"'"))[-1] if name else ""
    if lowered in names._TYPE_WORDS or value.startswith("_") or (tail and lowered == tail):
        return True
    flat = names._NAME_SEPARATORS.sub("", name.lower())
    if lowered == flat or lowered.replace("_", "") == flat:
        return True
    if any(c.isdigit() for c in value):
        return False
    return any(word in lowered for word in names._VARIABLE_WORDS) and (
        "_" in value or any(c.isupper() for c in value[1:])
    )


_CODE_PIECES = [
    *("db_", "pass", "word", "Token", "api", "Key", "_", ".", "::", "->", "()", "1", "x"),
    *("self", "cfg", "secret", "str", "None", "\u0661", "\u212a", "-", '"', "'", "[", " "),
]


@settings(max_examples=500, deadline=None)
@given(
    st.lists(st.sampled_from(_CODE_PIECES), max_size=5).map("".join),
    st.lists(st.one_of(st.sampled_from(_CODE_PIECES), st.text(max_size=3)), max_size=5).map(
        "".join
    ),
)
def test_code_values_are_told_apart_as_before(name: str, value: str) -> None:
    assert names.is_code_value(name, value) == _code_value_by_expressions(name, value)


_TOKEN_PIECES = [
    *("-", "--", " -", "-us1", "us", "0123456789abcdef", "sk-", "xoxb-", "glpat-", "key-"),
    *("pul-", "PMAK-", "v1.0-", "pypi-AgE", ":", "12345678:", "A", "Q~", "9Q~", "~", "r", "w"),
    *("abcDEF0123456789", "Zz9Zz9Zz9Zz9Zz9Zz9", "_", "."),
]


@settings(max_examples=400, deadline=None)
@given(
    st.lists(
        st.one_of(st.sampled_from(_TOKEN_PIECES), st.sampled_from(_SECRET_TEXTS)), max_size=14
    ).map("".join)
)
def test_the_probe_guards_lose_no_token(text: str) -> None:
    # A probe first asks what may come before its character; built without that question
    # the rule must decide exactly the same.
    guarded = providers.ProviderTokens()
    original = providers._guard
    providers._guard = lambda char, members: ""  # type: ignore[assignment]
    try:
        unguarded = providers.ProviderTokens()
    finally:
        providers._guard = original
    assert any(len(c) == 1 and "(?<=[" in p.pattern for c, p, _, _ in guarded._probes)
    assert any("(?!us))" in p.pattern for c, p, _, _ in guarded._probes)
    guard = Guard(lambda secret, whole: False, None)
    assert guarded.run(Scan(text), guard).text == unguarded.run(Scan(text), guard).text


def test_a_character_only_a_before_lets_through_is_asked_for_what_follows() -> None:
    # Mailchimp's hex digits before "-us": a UUID's or a date's dash after a digit is no
    # probe hit, the key still is.
    dashes = next(p for c, p, _, _ in providers.ProviderTokens()._probes if c == "-")
    assert dashes.search("19180341-2b2d-4964-9a20-e105802451c7 2026-05-04") is None
    key = "0123456789abcdef" * 2 + "-us12"
    assert Redactor().redact(f"MAILCHIMP={key} ok") == "MAILCHIMP=[REDACTED:mailchimp_key] ok"
