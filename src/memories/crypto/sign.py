"""Ed25519 signatures and X25519 key agreement over raw 32-byte keys.

Keys travel as raw bytes (RFC 8032 §5.1.5 public keys, RFC 7748 u-coordinates); private keys
are returned in wipeable ``bytearray`` buffers. Verification never returns a bool: it returns
``None`` or raises :class:`~memories.errors.IntegrityError`, so a forgotten check cannot pass.
Key objects are immutable (copies return the same object), refuse to be pickled, and their
``repr`` shows only a public-key fingerprint prefix.
"""

from __future__ import annotations

import hmac
from typing import NoReturn, Self

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey

from memories.crypto.canonical import canonical_bytes
from memories.crypto.ids import fingerprint
from memories.errors import IntegrityError, UsageError

__all__ = [
    "PRIVATE_KEY_SIZE",
    "PUBLIC_KEY_SIZE",
    "SIGNATURE_SIZE",
    "ExchangeKey",
    "SigningKey",
    "verify",
    "verify_canonical",
]

PRIVATE_KEY_SIZE = 32
PUBLIC_KEY_SIZE = 32
SIGNATURE_SIZE = 64
SIGNATURE_FAILED = "signature verification failed"
EXCHANGE_FAILED = "key agreement failed: the peer's public key is invalid"
_ZERO = bytes(32)


class _KeyPair:
    """What both key types share: a public half, identity by public key, no copies or pickles."""

    __slots__ = ("_public",)

    def __init__(self, public: bytes) -> None:
        self._public = public

    def public_bytes(self) -> bytes:
        """Return the raw 32-byte public key."""
        return self._public

    def fingerprint(self) -> str:
        """Return the full ``sha256:<hex>`` fingerprint of the public key."""
        return fingerprint(self._public)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(public={_short(self._public)})"

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        assert isinstance(other, _KeyPair)
        return hmac.compare_digest(self._public, other._public)

    def __hash__(self) -> int:
        return hash((type(self), self._public))

    def __copy__(self) -> Self:
        return self

    def __deepcopy__(self, memo: object) -> Self:
        return self

    def __reduce__(self) -> NoReturn:
        # Pickles end up in caches and queues; private keys leave only via private_bytes().
        raise TypeError("key objects cannot be pickled; seal private_bytes() instead")


class SigningKey(_KeyPair):
    """An Ed25519 private key. Equal keys have equal public keys; copies share one object."""

    __slots__ = ("_key",)

    def __init__(self, key: Ed25519PrivateKey) -> None:
        super().__init__(key.public_key().public_bytes_raw())
        self._key = key

    @classmethod
    def generate(cls) -> SigningKey:
        """Return a new random key."""
        return cls(Ed25519PrivateKey.generate())

    @classmethod
    def from_private_bytes(cls, data: bytes | bytearray) -> SigningKey:
        """Load a key from its raw 32-byte seed.

        Raises:
            UsageError: ``data`` is not 32 bytes.
        """
        if not isinstance(data, bytes | bytearray) or len(data) != PRIVATE_KEY_SIZE:
            raise UsageError(f"a signing key must be {PRIVATE_KEY_SIZE} bytes")
        return cls(Ed25519PrivateKey.from_private_bytes(data))

    def private_bytes(self) -> bytearray:
        """Return the raw 32-byte seed in a wipeable buffer; wipe it when done."""
        return bytearray(self._key.private_bytes_raw())

    def sign(self, message: bytes | bytearray) -> bytes:
        """Return the 64-byte Ed25519 signature of ``message``.

        Raises:
            UsageError: ``message`` is not bytes.
        """
        if not isinstance(message, bytes | bytearray):
            raise UsageError("only bytes can be signed")
        return self._key.sign(bytes(message))

    def sign_canonical(self, value: object) -> bytes:
        """Sign ``canonical_bytes(value)``.

        Raises:
            UsageError: ``value`` has no canonical JSON form.
        """
        return self.sign(canonical_bytes(value))


def verify(public_key: bytes, message: bytes, signature: bytes) -> None:
    """Check an Ed25519 signature.

    Raises:
        IntegrityError: for any failure (wrong key length, malformed key or signature, signature
            that does not match), always with the message "signature verification failed".
    """
    if (
        not isinstance(public_key, bytes | bytearray)
        or len(public_key) != PUBLIC_KEY_SIZE
        or not isinstance(signature, bytes | bytearray)
        or len(signature) != SIGNATURE_SIZE
        or not isinstance(message, bytes | bytearray)
    ):
        raise IntegrityError(SIGNATURE_FAILED)
    try:
        key = Ed25519PublicKey.from_public_bytes(bytes(public_key))
        key.verify(bytes(signature), bytes(message))
    except (InvalidSignature, ValueError, TypeError) as exc:
        raise IntegrityError(SIGNATURE_FAILED) from exc


def verify_canonical(public_key: bytes, value: object, signature: bytes) -> None:
    """Check a signature made by :meth:`SigningKey.sign_canonical`.

    Raises:
        IntegrityError: for any failure, including a value with no canonical JSON form.
    """
    try:
        message = canonical_bytes(value)
    except UsageError as exc:
        raise IntegrityError(SIGNATURE_FAILED) from exc
    verify(public_key, message, signature)


class ExchangeKey(_KeyPair):
    """An X25519 private key for key agreement."""

    __slots__ = ("_key",)

    def __init__(self, key: X25519PrivateKey) -> None:
        super().__init__(key.public_key().public_bytes_raw())
        self._key = key

    @classmethod
    def generate(cls) -> ExchangeKey:
        """Return a new random key."""
        return cls(X25519PrivateKey.generate())

    @classmethod
    def from_private_bytes(cls, data: bytes | bytearray) -> ExchangeKey:
        """Load a key from its raw 32-byte scalar.

        Raises:
            UsageError: ``data`` is not 32 bytes.
        """
        if not isinstance(data, bytes | bytearray) or len(data) != PRIVATE_KEY_SIZE:
            raise UsageError(f"an exchange key must be {PRIVATE_KEY_SIZE} bytes")
        return cls(X25519PrivateKey.from_private_bytes(data))

    def private_bytes(self) -> bytearray:
        """Return the raw 32-byte scalar in a wipeable buffer; wipe it when done."""
        return bytearray(self._key.private_bytes_raw())

    def exchange(self, peer_public: bytes) -> bytearray:
        """Return the 32-byte X25519 shared secret with ``peer_public``.

        Feed it through HKDF (``derive_subkey``) before use; never use it as a key directly.

        Raises:
            IntegrityError: the peer key is not 32 bytes or is a low-order point that yields an
                all-zero shared secret.
        """
        if not isinstance(peer_public, bytes | bytearray) or len(peer_public) != PUBLIC_KEY_SIZE:
            raise IntegrityError(EXCHANGE_FAILED)
        try:
            peer = X25519PublicKey.from_public_bytes(bytes(peer_public))
            shared = bytearray(self._key.exchange(peer))
        except (ValueError, TypeError) as exc:
            raise IntegrityError(EXCHANGE_FAILED) from exc
        # RFC 7748 §6.1: an all-zero output means a low-order peer point; refuse it here too
        # rather than rely on the backend alone.
        if hmac.compare_digest(shared, _ZERO):
            raise IntegrityError(EXCHANGE_FAILED)
        return shared


def _short(public: bytes) -> str:
    return fingerprint(public)[:23] + "..."
