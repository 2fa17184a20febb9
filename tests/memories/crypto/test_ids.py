"""Random ids, tagged hashes, fingerprints, keyed digests and the short-id projection."""

from __future__ import annotations

import hashlib
import hmac
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memories.crypto import (
    digest,
    fingerprint,
    keyed_digest,
    new_id,
    resolve_short,
    short_id,
    tagged_hash,
)
from memories.errors import NotFoundError, UsageError


def test_new_id_is_128_random_bits_in_lowercase_hex() -> None:
    ids = {new_id() for _ in range(1000)}
    assert len(ids) == 1000
    assert all(re.fullmatch(r"[0-9a-f]{32}", value) for value in ids)


def test_tagged_hash_is_sha256_over_tag_nul_data() -> None:
    expected = hashlib.sha256(b"memories.revision\x00payload").hexdigest()
    assert tagged_hash("memories.revision", b"payload") == "sha256:" + expected


def test_tagged_hash_separates_domains() -> None:
    data = b"same bytes"
    assert tagged_hash("memories.revision", data) != tagged_hash("memories.policy", data)
    assert tagged_hash("memories.revision", data) != digest(data)
    # Moving bytes between tag and data cannot produce the same input.
    assert tagged_hash("a", b"bc") != tagged_hash("ab", b"c")


@pytest.mark.parametrize("tag", ["", "bad\x00tag", "\ud800"])
def test_tagged_hash_rejects_ambiguous_tags(tag: str) -> None:
    with pytest.raises(UsageError):
        tagged_hash(tag, b"data")


def test_digest_and_fingerprint_are_full_sha256() -> None:
    assert digest(b"abc") == (
        "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    )
    key = bytes(range(32))
    assert fingerprint(key) == "sha256:" + hashlib.sha256(key).hexdigest()
    assert len(fingerprint(key)) == len("sha256:") + 64


@pytest.mark.parametrize("bad", [b"", "text", None])
def test_fingerprint_rejects_non_keys(bad: object) -> None:
    with pytest.raises(UsageError):
        fingerprint(bad)  # type: ignore[arg-type]


def test_keyed_digest_is_hmac_sha256() -> None:
    key = b"k" * 32
    assert keyed_digest(key, b"row") == hmac.new(key, b"row", hashlib.sha256).digest()
    assert keyed_digest(bytearray(key), b"row") == keyed_digest(key, b"row")
    assert keyed_digest(key, b"row") != keyed_digest(b"j" * 32, b"row")
    assert len(keyed_digest(key, b"")) == 32


def test_keyed_digest_rejects_short_keys() -> None:
    with pytest.raises(UsageError, match="at least 16 bytes"):
        keyed_digest(b"short", b"row")


def test_short_id_is_at_least_the_minimum() -> None:
    full = "sha256:" + "ab" * 32
    assert short_id(full, []) == "abababab"
    assert short_id(full, [], minimum=12) == "abababababab"
    assert short_id("0123456789abcdef0123456789abcdef", [], minimum=4) == "0123"


def test_short_id_grows_past_shared_prefixes() -> None:
    full = "sha256:" + "1234567890" + "a" * 54
    other = "sha256:" + "1234567890" + "b" * 54
    third = "1234567890ab" + "c" * 20
    assert short_id(full, [other]) == "1234567890a"
    assert short_id(full, [other, third]) == "1234567890aa"
    # Ids equal to ``full`` (with or without the algorithm prefix) are ignored.
    assert short_id(full, [full, full.removeprefix("sha256:")]) == "12345678"


def test_short_id_of_an_id_that_prefixes_another_is_the_whole_hex() -> None:
    assert short_id("abcdef12", ["abcdef1234"]) == "abcdef12"


@pytest.mark.parametrize("bad", ["sha256:XYZ", "ABCDEF12", "", "sha256:", "12 34"])
def test_short_id_rejects_non_hex_ids(bad: str) -> None:
    with pytest.raises(UsageError) as caught:
        short_id(bad, [])
    if bad.strip():
        assert bad not in caught.value.message


def test_short_id_rejects_a_bad_minimum() -> None:
    with pytest.raises(UsageError):
        short_id("abcdef12", [], minimum=0)


def test_resolve_short_finds_the_unique_candidate() -> None:
    ids = ["sha256:" + "aa11" + "0" * 60, "sha256:" + "bb22" + "0" * 60, "cc33" + "1" * 28]
    assert resolve_short("aa11", ids) == ids[0]
    assert resolve_short("sha256:bb22", ids) == ids[1]
    assert resolve_short("CC33", ids) == ids[2]
    assert resolve_short("cc33" + "1" * 28, ids) == ids[2]


def test_resolve_short_reports_ambiguity_with_the_count() -> None:
    ids = ["abcd0001" + "0" * 24, "abcd0002" + "0" * 24, "abcd0003" + "0" * 24, "ffff" * 8]
    with pytest.raises(UsageError, match="matches 3 ids") as caught:
        resolve_short("abcd", ids)
    assert not isinstance(caught.value, NotFoundError)
    assert resolve_short("abcd0002", ids) == ids[1]


def test_resolve_short_counts_one_id_spelt_two_ways_once() -> None:
    hexpart = "abcd" * 16
    assert resolve_short("abcd", ["sha256:" + hexpart, hexpart]) == "sha256:" + hexpart


def test_resolve_short_prefers_an_exact_match() -> None:
    assert resolve_short("abcdef12", ["abcdef1234", "abcdef12"]) == "abcdef12"


def test_resolve_short_not_found() -> None:
    with pytest.raises(NotFoundError, match="no id starts with 9999"):
        resolve_short("9999", ["abcd" * 8])


@pytest.mark.parametrize(
    "bad", ["abc", "", "zzzz-secret", "sha256:ab", "abcd ef", "sha256:<script>"]
)
def test_resolve_short_rejects_bad_prefixes_without_echoing_them(bad: str) -> None:
    with pytest.raises(UsageError) as caught:
        resolve_short(bad, ["abcd" * 8])
    assert "at least 4 hexadecimal characters" in caught.value.message
    if len(bad) >= 3:
        assert bad not in caught.value.message


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.text(alphabet="0123456789abcdef", min_size=32, max_size=32), min_size=1, max_size=40
    ),
    st.data(),
)
def test_short_ids_resolve_back_to_their_full_id(ids: list[str], data: st.DataObject) -> None:
    full = data.draw(st.sampled_from(ids))
    short = short_id(full, ids)
    assert len(short) >= 8
    assert full.startswith(short)
    assert resolve_short(short, ids) == full
    if len(short) > 8:
        # One character fewer would be ambiguous: some other id shares that prefix.
        assert any(other != full and other.startswith(short[:-1]) for other in ids)
