"""Sealed envelopes: a payload encrypted to one device's X25519 key and signed by another's
Ed25519 key (the pairing approval, vault keys handed to a new device or member).

Layout (every integer big-endian; see docs/FORMATS.md, "Sealed envelope")::

    version        1 byte   0x01 = X25519 + HKDF-SHA256 + AES-256-GCM + Ed25519
    purpose_len    1 byte   1..64
    purpose        ASCII    what the payload is for, e.g. "device.approval"
    sender         32       the sender device's Ed25519 public key
    recipient      32       the recipient device's X25519 public key
    ephemeral      32       a fresh X25519 public key, one per envelope
    payload_len    4        length of the payload that follows
    payload        ...      marker || nonce || ciphertext || tag (crypto.aead layout)
    signature      64       Ed25519 by ``sender`` over SIGNATURE_CONTEXT || every byte above

The transport key is ``HKDF-SHA256(ikm = X25519(ephemeral, recipient), salt = ephemeral ||
recipient, info = "memories/v1/envelope/" || purpose)``. The AEAD's associated data is
``associated_data("envelope", purpose, sender, recipient, ephemeral)``, so the recipient's
identity, the ephemeral key and the sender are authenticated twice: by the signature and by the
tag. Re-signing someone else's envelope with another device key changes the associated data, so
the payload no longer opens even when the caller forgets to pin the sender.

Every failure to open raises :class:`~memories.errors.IntegrityError` with one message; which
check failed is never revealed.
"""

from __future__ import annotations

import hmac
import os
import re
import struct
from dataclasses import dataclass
from typing import Final

from memories.crypto.aead import NONCE_SIZE, associated_data, seal_with_nonce, unseal, wipe
from memories.crypto.canonical import b64u_encode
from memories.crypto.kdf import _hkdf_sha256
from memories.crypto.sign import PUBLIC_KEY_SIZE, SIGNATURE_SIZE, ExchangeKey, SigningKey, verify
from memories.errors import IntegrityError, UsageError

__all__ = [
    "ENVELOPE_VERSION",
    "MAX_PAYLOAD",
    "SIGNATURE_CONTEXT",
    "EnvelopeHeader",
    "Opened",
    "open_envelope",
    "peek_envelope",
    "seal_envelope",
    "seal_envelope_deterministic",
]

ENVELOPE_VERSION: Final = 0x01
#: Envelopes carry keys and certificates, never content; this bounds what a reader allocates.
MAX_PAYLOAD: Final = 4 * 1024 * 1024
SIGNATURE_CONTEXT: Final = b"memories envelope v1 signature\x00"
KEY_INFO_PREFIX: Final = b"memories/v1/envelope/"
OPEN_FAILED: Final = (
    "the envelope could not be opened: it is damaged, forged or not for this device"
)
_PURPOSE = re.compile(r"[a-z][a-z0-9._-]{0,63}")
_FIXED = 1 + 1  # version, purpose length
_KEYS = 3 * PUBLIC_KEY_SIZE


@dataclass(frozen=True)
class EnvelopeHeader:
    """The public part of an envelope: who sent it, to whom, for what. Not yet verified."""

    version: int
    purpose: str
    sender: bytes
    recipient: bytes
    ephemeral: bytes


@dataclass(frozen=True)
class Opened:
    """A verified, decrypted envelope."""

    sender: bytes  # the sender device's Ed25519 public key (already checked)
    purpose: str
    plaintext: bytes

    def __repr__(self) -> str:
        return f"Opened(purpose={self.purpose!r}, <{len(self.plaintext)} bytes>)"


def _check_purpose(purpose: str) -> bytes:
    if not isinstance(purpose, str) or not _PURPOSE.fullmatch(purpose):
        raise UsageError("an envelope purpose is 1 to 64 lowercase ASCII letters, digits, . _ -")
    return purpose.encode("ascii")


def _aad(purpose: str, sender: bytes, recipient: bytes, ephemeral: bytes) -> bytes:
    return associated_data(
        "envelope",
        kind=purpose,
        sender=b64u_encode(sender),
        recipient=b64u_encode(recipient),
        ephemeral=b64u_encode(ephemeral),
    )


def _transport_key(
    shared: bytearray, ephemeral: bytes, recipient: bytes, purpose: bytes
) -> bytearray:
    return _hkdf_sha256(
        shared, salt=ephemeral + recipient, info=KEY_INFO_PREFIX + purpose, length=32
    )


def seal_envelope(
    sender: SigningKey, recipient: bytes, plaintext: bytes | bytearray, *, purpose: str
) -> bytes:
    """Encrypt ``plaintext`` to the device whose X25519 public key is ``recipient`` and sign it
    with ``sender``.

    Raises:
        UsageError: a bad purpose, a recipient key that is not 32 bytes, or a payload larger
            than :data:`MAX_PAYLOAD`.
        IntegrityError: the recipient key is a low-order point.
    """
    return seal_envelope_deterministic(
        sender,
        recipient,
        plaintext,
        purpose=purpose,
        ephemeral=ExchangeKey.generate(),
        nonce=os.urandom(NONCE_SIZE),
    )


def seal_envelope_deterministic(
    sender: SigningKey,
    recipient: bytes,
    plaintext: bytes | bytearray,
    *,
    purpose: str,
    ephemeral: ExchangeKey,
    nonce: bytes,
) -> bytes:
    """:func:`seal_envelope` with a given ephemeral key and nonce, for known-answer vectors
    ONLY: reusing either with another payload breaks the encryption.

    Raises:
        UsageError, IntegrityError: as :func:`seal_envelope`; UsageError for a bad nonce.
    """
    label = _check_purpose(purpose)
    if not isinstance(recipient, bytes) or len(recipient) != PUBLIC_KEY_SIZE:
        raise UsageError("an envelope recipient is a 32-byte X25519 public key")
    if not isinstance(plaintext, bytes | bytearray) or len(plaintext) > MAX_PAYLOAD:
        raise UsageError("an envelope payload is bytes, at most 4 MiB")
    ephemeral_public = ephemeral.public_bytes()
    shared = ephemeral.exchange(recipient)
    key = _transport_key(shared, ephemeral_public, recipient, label)
    try:
        sender_public = sender.public_bytes()
        aad = _aad(purpose, sender_public, recipient, ephemeral_public)
        payload = seal_with_nonce(key, nonce, plaintext, aad)
    finally:
        wipe(shared, key)
    signed = b"".join(
        (
            bytes([ENVELOPE_VERSION, len(label)]),
            label,
            sender_public,
            recipient,
            ephemeral_public,
            struct.pack(">I", len(payload)),
            payload,
        )
    )
    return signed + sender.sign(SIGNATURE_CONTEXT + signed)


def _parse(data: object) -> tuple[EnvelopeHeader, bytes, bytes, bytes]:
    """Split an envelope into header, payload, signed bytes and signature. Strict: the lengths
    must account for every byte."""
    if not isinstance(data, bytes | bytearray):
        raise IntegrityError(OPEN_FAILED)
    blob = bytes(data)
    if len(blob) < _FIXED:
        raise IntegrityError(OPEN_FAILED)
    version, purpose_len = blob[0], blob[1]
    if version != ENVELOPE_VERSION or not 1 <= purpose_len <= 64:
        raise IntegrityError(OPEN_FAILED)
    at = _FIXED + purpose_len
    if len(blob) < at + _KEYS + 4:
        raise IntegrityError(OPEN_FAILED)
    try:
        purpose = blob[_FIXED:at].decode("ascii")
    except UnicodeDecodeError as exc:
        raise IntegrityError(OPEN_FAILED) from exc
    if not _PURPOSE.fullmatch(purpose):
        raise IntegrityError(OPEN_FAILED)
    sender = blob[at : at + PUBLIC_KEY_SIZE]
    recipient = blob[at + PUBLIC_KEY_SIZE : at + 2 * PUBLIC_KEY_SIZE]
    ephemeral = blob[at + 2 * PUBLIC_KEY_SIZE : at + _KEYS]
    at += _KEYS
    (payload_len,) = struct.unpack(">I", blob[at : at + 4])
    at += 4
    if payload_len > MAX_PAYLOAD + 64 or len(blob) != at + payload_len + SIGNATURE_SIZE:
        raise IntegrityError(OPEN_FAILED)
    payload = blob[at : at + payload_len]
    signed = blob[: at + payload_len]
    signature = blob[at + payload_len :]
    return (
        EnvelopeHeader(version, purpose, sender, recipient, ephemeral),
        payload,
        signed,
        signature,
    )


def peek_envelope(data: bytes) -> EnvelopeHeader:
    """Read an envelope's header without verifying or opening it (to route it or to say whom
    it is for). Nothing in it may be trusted until :func:`open_envelope` succeeds.

    Raises:
        IntegrityError: the bytes are not a well-formed envelope.
    """
    return _parse(data)[0]


def open_envelope(
    recipient: ExchangeKey, data: bytes, *, purpose: str, sender: bytes | None = None
) -> Opened:
    """Verify and decrypt an envelope addressed to ``recipient``.

    ``purpose`` must be the one it was sealed for; ``sender``, when given, pins the sender
    device's Ed25519 public key (callers that know whom they expect always pass it).

    Raises:
        IntegrityError: for every failure (malformed, truncated or extended bytes, another
            version, purpose, recipient or sender, a bad signature, a swapped ephemeral key, a
            tampered payload), always with one message.
    """
    header, payload, signed, signature = _parse(data)
    if not isinstance(purpose, str) or not hmac.compare_digest(
        header.purpose.encode("ascii"), purpose.encode("ascii", "replace")
    ):
        raise IntegrityError(OPEN_FAILED)
    if not hmac.compare_digest(header.recipient, recipient.public_bytes()):
        raise IntegrityError(OPEN_FAILED)
    if sender is not None and not hmac.compare_digest(header.sender, bytes(sender)):
        raise IntegrityError(OPEN_FAILED)
    try:
        verify(header.sender, SIGNATURE_CONTEXT + signed, signature)
        shared = recipient.exchange(header.ephemeral)
    except IntegrityError as exc:
        raise IntegrityError(OPEN_FAILED) from exc
    key = _transport_key(shared, header.ephemeral, header.recipient, header.purpose.encode("ascii"))
    try:
        aad = _aad(header.purpose, header.sender, header.recipient, header.ephemeral)
        plaintext = unseal(key, payload, aad)
    except IntegrityError as exc:
        raise IntegrityError(OPEN_FAILED) from exc
    finally:
        wipe(shared, key)
    return Opened(header.sender, header.purpose, plaintext)
