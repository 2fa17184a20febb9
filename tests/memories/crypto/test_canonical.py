"""Canonical JSON (RFC 8785) and strict unpadded base64url."""

from __future__ import annotations

import base64
import json
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memories.crypto import b64u_decode, b64u_encode, canonical_bytes
from memories.errors import IntegrityError, UsageError

# RFC 8785 §3.2.4 (whitespace and ordering removed, values as the RFC writes them).
RFC8785_INPUT = (
    '{"numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],'
    ' "string": "\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/",'
    ' "literals": [null, true, false]}'
)
RFC8785_OUTPUT = (
    '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],'
    '"string":"\u20ac$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}'
).encode()


def test_rfc8785_sample_matches_byte_for_byte() -> None:
    assert canonical_bytes(json.loads(RFC8785_INPUT)) == RFC8785_OUTPUT


def test_keys_sort_by_utf16_code_units_as_rfc8785_section_3_2_3() -> None:
    value = {
        "\u20ac": "Euro Sign",
        "\r": "Carriage Return",
        "\ufb33": "Hebrew Letter Dalet With Dagesh",
        "1": "One",
        "\U0001f600": "Emoji: Grinning Face",
        "\u0080": "Control",
        "\u00f6": "Latin Small Letter O With Diaeresis",
    }
    expected = (
        '{"\\r":"Carriage Return","1":"One","\u0080":"Control",'
        '"\u00f6":"Latin Small Letter O With Diaeresis","\u20ac":"Euro Sign",'
        '"\U0001f600":"Emoji: Grinning Face","\ufb33":"Hebrew Letter Dalet With Dagesh"}'
    ).encode()
    assert canonical_bytes(value) == expected


@pytest.mark.parametrize(
    ("number", "text"),
    [
        (0.0, b"0"),
        (-0.0, b"0"),
        (1.0, b"1"),
        (-1.5, b"-1.5"),
        (1e20, b"100000000000000000000"),
        (1e21, b"1e+21"),
        (0.000001, b"0.000001"),
        (1e-7, b"1e-7"),
        (5e-324, b"5e-324"),
        (1.7976931348623157e308, b"1.7976931348623157e+308"),
        (9007199254740991, b"9007199254740991"),
        (-9007199254740991, b"-9007199254740991"),
    ],
)
def test_numbers_use_ecmascript_formatting(number: float, text: bytes) -> None:
    assert canonical_bytes(number) == text


def test_nested_structures_and_literals() -> None:
    value = [56, {"d": True, "10": None, "1": []}, ("tuple", "is", "array")]
    assert canonical_bytes(value) == b'[56,{"1":[],"10":null,"d":true},["tuple","is","array"]]'


def test_control_characters_are_escaped_and_unicode_is_raw_utf8() -> None:
    assert canonical_bytes("a\x00\x1f\u2028é") == '"a\\u0000\\u001f\u2028é"'.encode()


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (float("nan"), "NaN or infinite"),
        ({"x": [float("inf")]}, "NaN or infinite"),
        (-float("inf"), "NaN or infinite"),
        (2**53, "outside"),
        ({"n": -(2**53)}, "outside"),
        ({1: "one"}, "keys must be strings"),
        ({("a",): 1}, "keys must be strings"),
        (b"raw", "raw bytes"),
        ([bytearray(b"raw")], "raw bytes"),
        ({"s": {1, 2}}, "set"),
        (Decimal("1.5"), "Decimal"),
        ("\ud800", "unpaired surrogate"),
        ({"\udfff": 1}, "unpaired surrogate"),
        (object(), "object"),
    ],
)
def test_values_without_canonical_form_raise_usage_error(value: object, reason: str) -> None:
    with pytest.raises(UsageError, match="cannot be encoded as canonical JSON") as caught:
        canonical_bytes(value)
    assert reason in caught.value.message


def test_error_never_quotes_the_value() -> None:
    secret = "hunter2-secret-token"
    with pytest.raises(UsageError) as caught:
        canonical_bytes({secret: b"x", "k": secret})
    assert secret not in str(caught.value)
    with pytest.raises(UsageError) as caught:
        canonical_bytes({"value": 123456789123456789123})
    assert "123456789123456789123" not in str(caught.value)


def test_deep_nesting_is_a_usage_error_not_a_crash() -> None:
    value: list[object] = []
    for _ in range(50_000):
        value = [value]
    with pytest.raises(UsageError, match="nested too deeply"):
        canonical_bytes(value)


_json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53) + 1, max_value=2**53 - 1)
    | st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E))
)
_json_values = st.recursive(
    _json_scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(alphabet="abcdefXYZ019_-", max_size=6), inner, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None)
@given(_json_values)
def test_ascii_values_match_sorted_compact_json_and_round_trip(value: object) -> None:
    encoded = canonical_bytes(value)
    assert encoded == json.dumps(value, sort_keys=True, separators=(",", ":")).encode("ascii")
    assert json.loads(encoded) == value
    assert canonical_bytes(json.loads(encoded)) == encoded


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_b64u_round_trips_without_padding(data: bytes) -> None:
    text = b64u_encode(data)
    assert "=" not in text
    assert set(text) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
    assert text == base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")
    assert b64u_decode(text) == data


def test_b64u_known_values() -> None:
    assert b64u_encode(b"") == ""
    assert b64u_encode(b"\xfb\xff") == "-_8"
    assert b64u_decode("-_8") == b"\xfb\xff"
    assert b64u_encode(bytearray(b"foob")) == "Zm9vYg"


@pytest.mark.parametrize(
    "text",
    [
        "Zm9vYg==",  # padding
        "Zm9vYg=",
        "+/8",  # standard alphabet, not url-safe
        "Zm9v Yg",  # whitespace
        "Zm9vYg\n",
        "Z",  # impossible length (one character cannot carry a byte)
        "Zm9vY",
        "AB",  # non-zero trailing bits: canonical spelling of b"\x00" is "AA"
        "Zm9vYh",  # canonical is "Zm9vYg"
        "-_9",  # canonical is "-_8"
        "Zm9vYgé",  # non-ASCII
        "Zm9v\x00",
    ],
)
def test_b64u_decode_rejects_non_canonical_text(text: str) -> None:
    with pytest.raises(IntegrityError) as caught:
        b64u_decode(text)
    # One fixed message that never quotes the input.
    assert caught.value.message == "the data is not valid unpadded base64url; it may be corrupt"


@pytest.mark.parametrize("value", [b"Zm9v", None, 42])
def test_b64u_decode_rejects_non_strings(value: object) -> None:
    with pytest.raises(IntegrityError):
        b64u_decode(value)  # type: ignore[arg-type]


def test_b64u_encode_rejects_non_bytes() -> None:
    with pytest.raises(UsageError):
        b64u_encode("text")  # type: ignore[arg-type]


@settings(max_examples=300, deadline=None)
@given(
    st.text(
        alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_=+/ ", max_size=12
    )
)
def test_b64u_decode_accepts_only_the_one_canonical_spelling(text: str) -> None:
    try:
        data = b64u_decode(text)
    except IntegrityError:
        return
    assert b64u_encode(data) == text


# Every kind of value, including those the fast encoder hands to the general one: floats,
# integers past the safe range, keys outside ASCII (astral and high-BMP, which sort
# differently by code point and by UTF-16 code unit), control characters, lone surrogates.
_any_text = st.text(alphabet=st.characters(codec=None, min_codepoint=0), max_size=8)
_any_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**54), max_value=2**54)
    | st.floats(allow_nan=True, allow_infinity=True)
    | _any_text
    | st.sampled_from(["\ue000", "\U0001f600", "\x00\x1f\x7f\u2028", '"\\/\b\f\n\r\t'])
)
_any_values = st.recursive(
    _any_scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.dictionaries(_any_text | st.sampled_from(["\ue000", "\U0001f600"]), inner, max_size=4)
    ),
    max_leaves=24,
)


@settings(max_examples=500, deadline=None)
@given(_any_values)
def test_encoding_is_exactly_rfc8785_or_refused_as_rfc8785_refuses(value: object) -> None:
    import rfc8785

    try:
        expected = rfc8785.dumps(value)  # type: ignore[arg-type]
    except (rfc8785.CanonicalizationError, ValueError):
        with pytest.raises(UsageError):
            canonical_bytes(value)
        return
    assert canonical_bytes(value) == expected


def test_subclasses_and_deep_values_take_the_general_encoder_with_the_same_bytes() -> None:
    import enum

    import rfc8785

    class Word(enum.StrEnum):
        A = "a"

    class Number(enum.IntEnum):
        ONE = 1

    deep: list[object] = ["leaf"]
    for _ in range(100):
        deep = [deep]
    for value in ({"k": Word.A, "n": Number.ONE}, deep, [True, 1, None, "x"]):
        assert canonical_bytes(value) == rfc8785.dumps(value)  # type: ignore[arg-type]
