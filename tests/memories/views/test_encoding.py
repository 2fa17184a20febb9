"""Bytes inside requests and responses: the views' base64url matches the signed formats'."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memories.crypto.canonical import b64u_decode as crypto_decode
from memories.crypto.canonical import b64u_encode as crypto_encode
from memories.errors import IntegrityError, UsageError
from memories.views.encoding import b64u_decode, b64u_encode


@given(st.binary(max_size=200))
def test_encoding_round_trips_and_spells_bytes_as_the_signed_formats_do(data: bytes) -> None:
    text = b64u_encode(data)
    assert text == crypto_encode(data)
    assert b64u_decode(text) == data == crypto_decode(text)


@pytest.mark.parametrize("text", ["AA==", "A", "AB", "a b", "é", "+/", "AAB"])
def test_only_the_one_canonical_spelling_decodes(text: str) -> None:
    with pytest.raises(IntegrityError) as caught:
        b64u_decode(text)
    assert caught.value.message == "the data is not unpadded base64url"  # never the input


def test_only_bytes_are_encoded() -> None:
    with pytest.raises(UsageError):
        b64u_encode("text")  # type: ignore[arg-type]
