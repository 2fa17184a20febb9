"""Identities: a user Ed25519 key that certifies this device's signing and exchange keys.

Device keys are independent of each other, including devices of the same user; the user key
only vouches for them. A certificate alone never authorizes anything: each vault's policy names
the devices it allows. Pairing more devices later adds certificates of the same shape.
"""

from __future__ import annotations

import socket
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from functools import cached_property

from memories.crypto import (
    ExchangeKey,
    SigningKey,
    b64u_decode,
    b64u_encode,
    fingerprint,
    new_id,
    verify_canonical,
)
from memories.errors import IntegrityError
from memories.memo import Memo

__all__ = ["CERTIFICATE_TAG", "DeviceCertificate", "LocalIdentity", "now"]

CERTIFICATE_TAG = "memories.device_certificate"
_IDENTITY_TAG = "memories.local_identity"
#: Certificates whose user signature verified lately. The verdict depends on a certificate's
#: fields alone, and the same few certificates come with every revision, descriptor and audit
#: record a device signs, so each is checked once rather than once per object.
_VERIFIED: Memo[DeviceCertificate, bool] = Memo(64)
#: Certificates parsed lately, by what they were parsed from (see ``_parse_key``).
_PARSED: Memo[tuple[object, ...], DeviceCertificate] = Memo(64)


def now() -> str:
    """The current time as RFC 3339 UTC with milliseconds (the format every record uses)."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class DeviceCertificate:
    """The user's signed statement that a device's keys belong to them."""

    user_key: bytes
    device_id: str
    device_name: str
    signing_key: bytes
    exchange_key: bytes
    not_before: str
    not_after: str | None
    signature: bytes

    @cached_property
    def user(self) -> str:  # computed once: asked for every object a device signs
        """The user's full fingerprint."""
        return fingerprint(self.user_key)

    @cached_property
    def device(self) -> str:
        """The device signing key's full fingerprint."""
        return fingerprint(self.signing_key)

    @cached_property
    def _body(self) -> dict[str, object]:
        # Built once: every revision, descriptor and audit record carries its certificate.
        doc: dict[str, object] = {
            "t": CERTIFICATE_TAG,
            "v": 1,
            "user_key": b64u_encode(self.user_key),
            "user": self.user,
            "device_id": self.device_id,
            "device_name": self.device_name,
            "signing_key": b64u_encode(self.signing_key),
            "signing": self.device,
            "exchange_key": b64u_encode(self.exchange_key),
            "exchange": fingerprint(self.exchange_key),
            "not_before": self.not_before,
        }
        if self.not_after is not None:
            doc["not_after"] = self.not_after
        return doc

    def body(self) -> dict[str, object]:
        """The canonical object the user key signs (a fresh copy: callers may change it)."""
        return dict(self._body)

    def to_dict(self) -> dict[str, object]:
        return {"certificate": self.body(), "signature": b64u_encode(self.signature)}

    @classmethod
    def from_dict(cls, doc: object) -> DeviceCertificate:
        """Parse a certificate (not yet verified). Raises ``IntegrityError`` if malformed."""
        # Every revision and descriptor a device writes carries the same certificate: one
        # parsed lately from exactly these fields (their types included) is that one again.
        key = _parse_key(doc)
        found = None if key is None else _PARSED.get(key)
        if found is not None:
            return found
        cert = cls._parse(doc)
        if key is not None:
            _PARSED.put(key, cert)
        return cert

    @classmethod
    def _parse(cls, doc: object) -> DeviceCertificate:
        try:
            if not isinstance(doc, Mapping):
                raise TypeError("not an object")
            body = doc["certificate"]
            if not isinstance(body, Mapping) or body.get("t") != CERTIFICATE_TAG:
                raise ValueError("not a certificate")
            cert = cls(
                user_key=b64u_decode(str(body["user_key"])),
                device_id=str(body["device_id"]),
                device_name=str(body["device_name"]),
                signing_key=b64u_decode(str(body["signing_key"])),
                exchange_key=b64u_decode(str(body["exchange_key"])),
                not_before=str(body["not_before"]),
                not_after=None if body.get("not_after") is None else str(body["not_after"]),
                signature=b64u_decode(str(doc["signature"])),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise IntegrityError("a device certificate is malformed") from exc
        if cert.body() != dict(body):
            raise IntegrityError("a device certificate is malformed")
        return cert

    def verify(self, at: str | None = None) -> None:
        """Check the user's signature and the validity window at ``at`` (default: now).

        Raises ``IntegrityError``; never returns a verdict.
        """
        self.verify_signature()
        self.check_window(at)

    def verify_signature(self) -> None:
        """Check the user's signature alone. Raises ``IntegrityError``."""
        if _VERIFIED.get(self):
            return
        verify_canonical(self.user_key, self.body(), self.signature)
        _VERIFIED.put(self, True)

    def check_window(self, at: str | None = None) -> None:
        """Check that ``at`` (default: now) is inside the validity window. Raises
        ``IntegrityError``."""
        moment = at or now()
        if moment < self.not_before or (self.not_after is not None and moment > self.not_after):
            raise IntegrityError("a device certificate is not valid at this time")


def _parse_key(doc: object) -> tuple[object, ...] | None:
    """What :meth:`DeviceCertificate.from_dict` reads of ``doc``, hashable, or None."""
    if not isinstance(doc, Mapping):
        return None
    body, signature = doc.get("certificate"), doc.get("signature")
    if not isinstance(body, Mapping) or type(signature) is not str:
        return None
    key: list[object] = [signature]
    for name, value in body.items():
        if type(value) is not str and type(value) is not int:
            return None
        key += (name, type(value), value)
    return tuple(key)


class LocalIdentity:
    """This device's private keys and certificate, kept only in the encrypted state."""

    def __init__(
        self,
        user: SigningKey,
        device: SigningKey,
        exchange: ExchangeKey,
        certificate: DeviceCertificate,
        user_name: str,
    ) -> None:
        self.user = user
        self.device = device
        self.exchange = exchange
        self.certificate = certificate
        self.user_name = user_name

    def __repr__(self) -> str:
        return f"LocalIdentity(user={self.certificate.user[:15]}…, device={self.device_id})"

    @property
    def device_id(self) -> str:
        return self.certificate.device_id

    @property
    def user_fingerprint(self) -> str:
        return self.certificate.user

    @property
    def device_fingerprint(self) -> str:
        return self.certificate.device

    @classmethod
    def generate(cls, *, user_name: str = "me", device_name: str | None = None) -> LocalIdentity:
        """A new user key and a first device certified by it."""
        user = SigningKey.generate()
        device = SigningKey.generate()
        exchange = ExchangeKey.generate()
        unsigned = DeviceCertificate(
            user_key=user.public_bytes(),
            device_id=new_id(),
            device_name=device_name or socket.gethostname() or "this device",
            signing_key=device.public_bytes(),
            exchange_key=exchange.public_bytes(),
            not_before=now(),
            not_after=None,
            signature=b"",
        )
        signature = user.sign_canonical(unsigned.body())
        certificate = replace(unsigned, signature=signature)
        certificate.verify()
        return cls(user, device, exchange, certificate, user_name)

    def certify(
        self,
        signing_key: bytes,
        exchange_key: bytes,
        *,
        device_name: str,
        device_id: str | None = None,
        at: str | None = None,
    ) -> DeviceCertificate:
        """A certificate by this user for another device's public keys (pairing).

        Raises:
            IntegrityError: a key is not 32 bytes (the certificate would not verify).
        """
        if len(signing_key) != 32 or len(exchange_key) != 32:
            raise IntegrityError("a device certificate needs 32-byte public keys")
        unsigned = DeviceCertificate(
            user_key=self.user.public_bytes(),
            device_id=device_id or new_id(),
            device_name=device_name,
            signing_key=bytes(signing_key),
            exchange_key=bytes(exchange_key),
            not_before=at or now(),
            not_after=None,
            signature=b"",
        )
        return replace(unsigned, signature=self.user.sign_canonical(unsigned.body()))

    def new_device(self, *, device_name: str = "another device") -> LocalIdentity:
        """Another device of this user, with its own keys, certified by the user key."""
        device = SigningKey.generate()
        exchange = ExchangeKey.generate()
        certificate = self.certify(
            device.public_bytes(), exchange.public_bytes(), device_name=device_name
        )
        return LocalIdentity(self.user, device, exchange, certificate, self.user_name)

    def to_dict(self) -> dict[str, object]:
        """The private form stored in the encrypted state (never shown or sent)."""
        return {
            "t": _IDENTITY_TAG,
            "v": 1,
            "user_name": self.user_name,
            "user_private": b64u_encode(bytes(self.user.private_bytes())),
            "device_private": b64u_encode(bytes(self.device.private_bytes())),
            "exchange_private": b64u_encode(bytes(self.exchange.private_bytes())),
            "certificate": self.certificate.to_dict(),
        }

    @classmethod
    def from_dict(cls, doc: Mapping[str, object]) -> LocalIdentity:
        """Raises ``IntegrityError`` if the stored identity is malformed or inconsistent."""
        try:
            if doc.get("t") != _IDENTITY_TAG:
                raise ValueError("not an identity")
            user = SigningKey.from_private_bytes(b64u_decode(str(doc["user_private"])))
            device = SigningKey.from_private_bytes(b64u_decode(str(doc["device_private"])))
            exchange = ExchangeKey.from_private_bytes(b64u_decode(str(doc["exchange_private"])))
            certificate = DeviceCertificate.from_dict(doc["certificate"])
            user_name = str(doc["user_name"])
        except (KeyError, TypeError, ValueError) as exc:
            raise IntegrityError("the stored identity is malformed") from exc
        if (
            user.public_bytes() != certificate.user_key
            or device.public_bytes() != certificate.signing_key
            or exchange.public_bytes() != certificate.exchange_key
        ):
            raise IntegrityError("the stored identity does not match its certificate")
        return cls(user, device, exchange, certificate, user_name)

    def public_dict(self) -> dict[str, object]:
        """What status output may show: names and full fingerprints, no keys."""
        return {
            "user_name": self.user_name,
            "user": self.user_fingerprint,
            "device_id": self.device_id,
            "device_name": self.certificate.device_name,
            "device": self.device_fingerprint,
            "exchange": fingerprint(self.certificate.exchange_key),
        }
