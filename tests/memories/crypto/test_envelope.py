"""Sealed envelopes: round trips, strict parsing, and every tampering refused opaquely."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memories.crypto.envelope import (
    MAX_PAYLOAD,
    OPEN_FAILED,
    open_envelope,
    peek_envelope,
    seal_envelope,
)
from memories.crypto.sign import ExchangeKey, SigningKey
from memories.errors import IntegrityError, UsageError

SENDER = SigningKey.generate()
RECIPIENT = ExchangeKey.generate()
PURPOSES = st.from_regex(r"[a-z][a-z0-9._-]{0,20}", fullmatch=True)


def test_round_trip_returns_sender_purpose_and_plaintext() -> None:
    sealed = seal_envelope(SENDER, RECIPIENT.public_bytes(), b"keys", purpose="device.approval")
    opened = open_envelope(
        RECIPIENT, sealed, purpose="device.approval", sender=SENDER.public_bytes()
    )
    assert opened.plaintext == b"keys"
    assert opened.sender == SENDER.public_bytes()
    assert opened.purpose == "device.approval"
    assert "keys" not in repr(opened)


def test_two_seals_of_one_payload_differ() -> None:
    one = seal_envelope(SENDER, RECIPIENT.public_bytes(), b"same", purpose="vault.key")
    two = seal_envelope(SENDER, RECIPIENT.public_bytes(), b"same", purpose="vault.key")
    assert one != two
    assert peek_envelope(one).ephemeral != peek_envelope(two).ephemeral


def test_header_names_sender_and_recipient() -> None:
    sealed = seal_envelope(SENDER, RECIPIENT.public_bytes(), b"x", purpose="vault.key")
    header = peek_envelope(sealed)
    assert header.sender == SENDER.public_bytes()
    assert header.recipient == RECIPIENT.public_bytes()
    assert header.purpose == "vault.key"


def test_plaintext_never_appears_in_the_envelope() -> None:
    secret = b"canary-vault-key-0123456789abcdef"
    sealed = seal_envelope(SENDER, RECIPIENT.public_bytes(), secret, purpose="vault.key")
    assert secret not in sealed
    assert secret.hex().encode() not in sealed.hex().encode()


@pytest.mark.parametrize("purpose", ["", "Upper", "with space", "x" * 65, "é"])
def test_a_bad_purpose_is_a_usage_error(purpose: str) -> None:
    with pytest.raises(UsageError):
        seal_envelope(SENDER, RECIPIENT.public_bytes(), b"", purpose=purpose)


def test_bad_recipient_and_oversized_payload_are_refused() -> None:
    with pytest.raises(UsageError):
        seal_envelope(SENDER, b"short", b"", purpose="vault.key")
    with pytest.raises(UsageError):
        seal_envelope(SENDER, RECIPIENT.public_bytes(), bytes(MAX_PAYLOAD + 1), purpose="vault.key")
    with pytest.raises(IntegrityError):
        seal_envelope(SENDER, bytes(32), b"", purpose="vault.key")


@settings(max_examples=40, deadline=None)
@given(payload=st.binary(max_size=2048), purpose=PURPOSES)
def test_any_payload_and_purpose_round_trip(payload: bytes, purpose: str) -> None:
    sealed = seal_envelope(SENDER, RECIPIENT.public_bytes(), payload, purpose=purpose)
    assert open_envelope(RECIPIENT, sealed, purpose=purpose).plaintext == payload


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_any_single_bit_flip_is_refused_with_one_message(data: st.DataObject) -> None:
    sealed = bytearray(
        seal_envelope(SENDER, RECIPIENT.public_bytes(), b"payload", purpose="vault.key")
    )
    index = data.draw(st.integers(0, len(sealed) - 1))
    bit = data.draw(st.integers(0, 7))
    sealed[index] ^= 1 << bit
    with pytest.raises(IntegrityError) as caught:
        open_envelope(RECIPIENT, bytes(sealed), purpose="vault.key")
    assert str(caught.value) == OPEN_FAILED


@settings(max_examples=60, deadline=None)
@given(cut=st.integers(0, 200), extra=st.binary(min_size=1, max_size=8))
def test_truncation_or_extension_is_refused(cut: int, extra: bytes) -> None:
    sealed = seal_envelope(SENDER, RECIPIENT.public_bytes(), b"payload", purpose="vault.key")
    for blob in (sealed[: min(cut, len(sealed) - 1)], sealed + extra):
        with pytest.raises(IntegrityError):
            open_envelope(RECIPIENT, blob, purpose="vault.key")


def test_non_bytes_are_refused_opaquely() -> None:
    with pytest.raises(IntegrityError):
        open_envelope(RECIPIENT, "text", purpose="vault.key")  # type: ignore[arg-type]
    with pytest.raises(IntegrityError):
        peek_envelope(b"\x01")
