"""What travels: content-addressed, immutable objects and the signed descriptors announcing them.

An object's id is the SHA-256 of its exact bytes (hex); it is stored as ``objects/<id>``.
A revision object carries one signed revision header and its sealed chunks exactly as the vault
stores them (the content is ciphertext under the vault's epoch key; the header holds ids, the
wrapped data key, the signature and the device certificate, never plaintext).

A descriptor (``descriptors/<id>``, its id the SHA-256 of its bytes) is signed by the device
that published it and lists the objects of one vault it announces, with the revision each
carries and that revision's parents, so a receiver knows what to fetch and in which order
before it fetches anything. A device reads only objects some verified descriptor names.

Both are RFC 8785 canonical JSON with a type tag and a format version (docs/FORMATS.md,
"Sync objects and descriptors"). Every decoding failure raises ``IntegrityError``.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from memories.crypto import b64u_decode, b64u_encode, canonical_bytes, verify_canonical
from memories.errors import IntegrityError, UsageError
from memories.vault.identity import DeviceCertificate, LocalIdentity, now
from memories.vault.revision import Revision

__all__ = [
    "DESCRIPTOR_TAG",
    "OBJECT_TAG",
    "Announced",
    "Descriptor",
    "RevisionObject",
    "descriptor_name",
    "object_id",
    "object_name",
]

OBJECT_TAG: Final = "memories.sync.object"
DESCRIPTOR_TAG: Final = "memories.sync.descriptor"
#: How many objects one descriptor may announce (a pass publishes at most this many).
MAX_ANNOUNCED: Final = 4096
_REVISION_ID = re.compile(r"sha256:[0-9a-f]{64}")
_HEX64 = re.compile(r"[0-9a-f]{64}")
_VAULT_ID = re.compile(r"[0-9a-f]{32}")


def object_id(data: bytes) -> str:
    """The id of exactly these bytes: SHA-256, 64 hex digits."""
    return hashlib.sha256(data).hexdigest()


def object_name(oid: str) -> str:
    return f"objects/{oid}"


def descriptor_name(did: str) -> str:
    return f"descriptors/{did}"


def _load(data: bytes, tag: str, what: str) -> dict[str, object]:
    try:
        doc = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise IntegrityError(f"a sync {what} is malformed") from exc
    if not isinstance(doc, dict) or doc.get("t") != tag or doc.get("v") != 1:
        raise IntegrityError(f"a sync {what} is malformed")
    if canonical_bytes(doc) != data:  # the id names exactly these bytes: one encoding only
        raise IntegrityError(f"a sync {what} is not in canonical form")
    return doc


@dataclass(frozen=True)
class RevisionObject:
    """One signed revision header and its sealed chunks."""

    header: bytes
    chunks: tuple[bytes, ...]

    def __repr__(self) -> str:
        return f"RevisionObject(chunks={len(self.chunks)})"

    def to_bytes(self) -> bytes:
        return canonical_bytes(
            {
                "t": OBJECT_TAG,
                "v": 1,
                "type": "revision",
                "header": b64u_encode(self.header),
                "chunks": [b64u_encode(c) for c in self.chunks],
            }
        )

    @classmethod
    def from_bytes(cls, data: bytes) -> RevisionObject:
        """Raises ``IntegrityError`` for anything but a well-formed revision object."""
        doc = _load(data, OBJECT_TAG, "object")
        try:
            if doc["type"] != "revision" or set(doc) != {"t", "v", "type", "header", "chunks"}:
                raise IntegrityError("a sync object is malformed")
            chunks = doc["chunks"]
            if not isinstance(chunks, list):
                raise IntegrityError("a sync object is malformed")
            return cls(b64u_decode(str(doc["header"])), tuple(b64u_decode(str(c)) for c in chunks))
        except (KeyError, TypeError, ValueError) as exc:
            raise IntegrityError("a sync object is malformed") from exc

    def revision(self) -> Revision:
        """The header, parsed and in canonical form. Raises ``IntegrityError``."""
        revision = Revision.from_bytes(self.header)
        if revision.to_bytes() != self.header:
            raise IntegrityError("a revision is not in canonical form")
        return revision


@dataclass(frozen=True)
class Announced:
    """One object a descriptor announces: its id, the revision it carries, that one's parents."""

    oid: str  # the object's id
    revision: str
    asset: str
    parents: tuple[str, ...]

    def to_dict(self) -> dict[str, object]:
        return {
            "object": self.oid,
            "revision": self.revision,
            "asset": self.asset,
            "parents": list(self.parents),
        }


@dataclass(frozen=True)
class Descriptor:
    """A device's signed announcement of objects of one vault."""

    vault_id: str
    objects: tuple[Announced, ...]
    created_at: str
    certificate: DeviceCertificate
    signature: bytes

    def body(self) -> dict[str, object]:
        return {
            "t": DESCRIPTOR_TAG,
            "v": 1,
            "vault": self.vault_id,
            "objects": [a.to_dict() for a in self.objects],
            "created_at": self.created_at,
            "certificate": self.certificate.to_dict(),
        }

    def to_bytes(self) -> bytes:
        return canonical_bytes({**self.body(), "signature": b64u_encode(self.signature)})

    @property
    def device(self) -> str:
        return self.certificate.device

    @property
    def user(self) -> str:
        return self.certificate.user

    @classmethod
    def sign(
        cls, identity: LocalIdentity, vault_id: str, objects: Sequence[Announced]
    ) -> Descriptor:
        """A descriptor for ``objects`` signed by this device. Raises ``UsageError`` when there
        are more than ``MAX_ANNOUNCED``."""
        if len(objects) > MAX_ANNOUNCED:
            raise UsageError("too many objects for one descriptor")
        unsigned = cls(vault_id, tuple(objects), now(), identity.certificate, b"")
        signature = identity.device.sign_canonical(unsigned.body())
        return cls(vault_id, tuple(objects), unsigned.created_at, identity.certificate, signature)

    @classmethod
    def from_bytes(cls, data: bytes) -> Descriptor:
        """Parse and verify a descriptor: its form, its device's certificate (signed by the
        user key it names) and its signature.

        Whether that device may write to the vault is the receiver's policy question, asked
        separately. Raises ``IntegrityError`` for anything that does not verify.
        """
        doc = _load(data, DESCRIPTOR_TAG, "descriptor")
        try:
            keys = {"t", "v", "vault", "objects", "created_at", "certificate", "signature"}
            if set(doc) != keys:
                raise IntegrityError("a sync descriptor is malformed")
            vault_id = str(doc["vault"])
            raw = doc["objects"]
            if not _VAULT_ID.fullmatch(vault_id) or not isinstance(raw, list):
                raise IntegrityError("a sync descriptor is malformed")
            if not raw or len(raw) > MAX_ANNOUNCED:
                raise IntegrityError("a sync descriptor is malformed")
            announced = []
            for item in raw:
                if not isinstance(item, dict) or set(item) != {
                    "object",
                    "revision",
                    "asset",
                    "parents",
                }:
                    raise IntegrityError("a sync descriptor is malformed")
                parents = item["parents"]
                if not isinstance(parents, list):
                    raise IntegrityError("a sync descriptor is malformed")
                entry = Announced(
                    str(item["object"]),
                    str(item["revision"]),
                    str(item["asset"]),
                    tuple(str(p) for p in parents),
                )
                if not _HEX64.fullmatch(entry.oid) or not _REVISION_ID.fullmatch(entry.revision):
                    raise IntegrityError("a sync descriptor is malformed")
                if not all(_REVISION_ID.fullmatch(p) for p in entry.parents):
                    raise IntegrityError("a sync descriptor is malformed")
                announced.append(entry)
            descriptor = cls(
                vault_id,
                tuple(announced),
                str(doc["created_at"]),
                DeviceCertificate.from_dict(doc["certificate"]),
                b64u_decode(str(doc["signature"])),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise IntegrityError("a sync descriptor is malformed") from exc
        descriptor.certificate.verify(descriptor.created_at)
        certificate = descriptor.certificate
        verify_canonical(certificate.signing_key, descriptor.body(), descriptor.signature)
        return descriptor
