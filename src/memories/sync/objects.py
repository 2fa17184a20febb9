"""What travels: content-addressed, immutable objects and the signed descriptors announcing them.

An object's id is the SHA-256 of its exact bytes (hex); it is stored as ``objects/<id>``.
Three types of object exist:

- a **revision** object carries one signed revision header and its sealed chunks exactly as the
  vault stores them (the content is ciphertext under the vault's epoch key; the header holds
  ids, the wrapped data key, the signature and the device certificate, never plaintext);
- a **policy** object carries one signed entry of a vault's policy chain, and the vault's epoch
  keys (up to the entry's epoch) sealed to each other device the entry allows, so a rotation
  reaches exactly the devices still allowed;
- an **audit** object carries signed audit records one device wrote about one vault
  (:mod:`memories.devices.audit_records`).

A descriptor (``descriptors/<id>``, its id the SHA-256 of its bytes) is signed by the device
that published it and lists the objects of one vault it announces — for a revision the revision
and its parents, for a policy entry its id and number — so a receiver knows what to fetch and in
which order before it fetches anything. A device reads only objects some verified descriptor
names.

All are RFC 8785 canonical JSON with a type tag and a format version (docs/FORMATS.md,
"Sync objects and descriptors"). Every decoding failure raises ``IntegrityError``.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final, TypeAlias

from memories.crypto import (
    b64u_decode,
    b64u_encode,
    canonical_bytes,
    tagged_hash,
    verify_canonical,
)
from memories.errors import IntegrityError, UsageError
from memories.memo import Memo
from memories.vault.identity import DeviceCertificate, LocalIdentity, now
from memories.vault.policy import Policy
from memories.vault.revision import REVISION_TAG, Revision

__all__ = [
    "DESCRIPTOR_TAG",
    "DESCRIPTOR_VERSION",
    "MAX_ANNOUNCED",
    "MAX_AUDIT_RECORDS",
    "OBJECT_TAG",
    "Announced",
    "Announcement",
    "AuditAnnounced",
    "AuditObject",
    "Descriptor",
    "PolicyAnnounced",
    "PolicyObject",
    "RevisionObject",
    "descriptor_name",
    "object_id",
    "object_name",
]

OBJECT_TAG: Final = "memories.sync.object"
DESCRIPTOR_TAG: Final = "memories.sync.descriptor"
#: The descriptor version written; version 1 (revisions only, no ``type``) is still read.
DESCRIPTOR_VERSION: Final = 2
_DESCRIPTOR_VERSIONS: Final = frozenset({1, 2})
#: How many objects one descriptor may announce (a pass publishes at most this many).
MAX_ANNOUNCED: Final = 4096
#: How many audit records one audit object carries.
MAX_AUDIT_RECORDS: Final = 512
#: Descriptors verified lately, by the SHA-256 of their bytes (parsed, never re-verified).
_VERIFIED: Memo[bytes, Descriptor] = Memo(16)
_ID = re.compile(r"sha256:[0-9a-f]{64}")
_HEX64 = re.compile(r"[0-9a-f]{64}")
_VAULT_ID = re.compile(r"[0-9a-f]{32}")


def object_id(data: bytes) -> str:
    """The id of exactly these bytes: SHA-256, 64 hex digits."""
    return hashlib.sha256(data).hexdigest()


def object_name(oid: str) -> str:
    return f"objects/{oid}"


def descriptor_name(did: str) -> str:
    return f"descriptors/{did}"


def _load(
    data: bytes, tag: str, what: str, versions: frozenset[int] = frozenset({1})
) -> dict[str, object]:
    try:
        doc = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise IntegrityError(f"a sync {what} is malformed") from exc
    if not isinstance(doc, dict) or doc.get("t") != tag:
        raise IntegrityError(f"a sync {what} is malformed")
    version = doc.get("v")
    if isinstance(version, bool) or version not in versions:
        raise IntegrityError(f"a sync {what} is malformed")
    if canonical_bytes(doc) != data:  # the id names exactly these bytes: one encoding only
        raise IntegrityError(f"a sync {what} is not in canonical form")
    return doc


def _object(data: bytes, kind: str, keys: set[str]) -> dict[str, object]:
    doc = _load(data, OBJECT_TAG, "object")
    if doc.get("type") != kind or set(doc) != {"t", "v", "type", *keys}:
        raise IntegrityError(f"a sync object is not a well-formed {kind} object")
    return doc


def _revision_bytes(header: str, chunks: Sequence[str]) -> bytes:
    """RFC 8785 of a revision object, built directly: its keys sorted, its strings base64url
    (which JSON never escapes). Equal to ``canonical_bytes`` of the same object (tested),
    without walking megabytes of chunk text character by character."""
    items = ",".join(f'"{c}"' for c in chunks)
    tail = f'"t":"{OBJECT_TAG}","type":"revision","v":1}}'
    return f'{{"chunks":[{items}],"header":"{header}",{tail}'.encode("ascii")


@dataclass(frozen=True)
class RevisionObject:
    """One signed revision header and its sealed chunks."""

    header: bytes
    chunks: tuple[bytes, ...]

    def __repr__(self) -> str:
        return f"RevisionObject(chunks={len(self.chunks)})"

    def to_bytes(self) -> bytes:
        return _revision_bytes(b64u_encode(self.header), [b64u_encode(c) for c in self.chunks])

    @classmethod
    def from_bytes(cls, data: bytes) -> RevisionObject:
        """Raises ``IntegrityError`` for anything but a well-formed revision object in
        canonical form."""
        try:
            doc = json.loads(data)
            if not isinstance(doc, dict) or set(doc) != {"t", "v", "type", "header", "chunks"}:
                raise ValueError("keys")
            if (doc["t"], doc["v"], doc["type"]) != (OBJECT_TAG, 1, "revision"):
                raise ValueError("tag")
            header, chunks = doc["header"], doc["chunks"]
            if not isinstance(header, str) or not isinstance(chunks, list):
                raise ValueError("fields")
            if not all(isinstance(c, str) for c in chunks) or isinstance(doc["v"], bool):
                raise ValueError("chunks")
            obj = cls(b64u_decode(header), tuple(b64u_decode(c) for c in chunks))
        except (ValueError, UnicodeDecodeError) as exc:
            raise IntegrityError("a sync object is not a well-formed revision object") from exc
        # Strict base64url has one spelling per byte string, so this is the one encoding.
        if _revision_bytes(header, chunks) != data:
            raise IntegrityError("a sync object is not in canonical form")
        return obj

    def revision(self) -> Revision:
        """The header, parsed and in canonical form. Raises ``IntegrityError``."""
        # Its id is the hash of exactly these bytes once they are shown to be canonical.
        revision = Revision.from_stored(self.header, tagged_hash(REVISION_TAG, self.header))
        try:
            canonical = revision.to_bytes() == self.header
        except UsageError as exc:  # e.g. a lone surrogate escaped in a string
            raise IntegrityError("a revision is not in canonical form") from exc
        if not canonical:
            raise IntegrityError("a revision is not in canonical form")
        return revision


@dataclass(frozen=True)
class PolicyObject:
    """One signed policy entry and the vault's epoch keys sealed to the devices it allows.

    ``keys`` maps a device fingerprint to an envelope (purpose ``vault.keys``) from the
    publishing device; the publisher holds no envelope of its own.
    """

    entry: Policy
    keys: Mapping[str, bytes] = field(default_factory=dict)
    #: For a fork resolution: the entire branch it discards, so any device can check it.
    discarded: tuple[Policy, ...] = ()

    def __repr__(self) -> str:
        return f"PolicyObject(seq={self.entry.seq}, keys=<{len(self.keys)}>)"

    def to_bytes(self) -> bytes:
        doc: dict[str, object] = {
            "t": OBJECT_TAG,
            "v": 1,
            "type": "policy",
            "entry": self.entry.to_dict(),
            "keys": [
                {"device": d, "envelope": b64u_encode(e)} for d, e in sorted(self.keys.items())
            ],
        }
        if self.discarded:
            doc["discarded"] = [p.to_dict() for p in self.discarded]
        return canonical_bytes(doc)

    @classmethod
    def from_bytes(cls, data: bytes) -> PolicyObject:
        """Parse (not verify) a policy object. Raises ``IntegrityError`` when malformed."""
        doc = _load(data, OBJECT_TAG, "object")
        extra = {"discarded"} if "discarded" in doc else set()
        doc = _object(data, "policy", {"entry", "keys", *extra})
        entry = Policy.from_dict(doc["entry"])
        raw = doc.get("discarded", [])
        if not isinstance(raw, list) or (extra and not raw):
            raise IntegrityError("a sync policy object is malformed")
        discarded = tuple(Policy.from_dict(p) for p in raw)
        if tuple(p.id for p in discarded) != entry.discarded:
            raise IntegrityError("a sync policy object is malformed")
        keys: dict[str, bytes] = {}
        try:
            raw = doc["keys"]
            if not isinstance(raw, list):
                raise TypeError("keys")
            for item in raw:
                if not isinstance(item, dict) or set(item) != {"device", "envelope"}:
                    raise TypeError("key")
                device = item["device"]
                if not isinstance(device, str) or not _ID.fullmatch(device) or device in keys:
                    raise TypeError("device")
                keys[device] = b64u_decode(str(item["envelope"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise IntegrityError("a sync policy object is malformed") from exc
        if list(keys) != sorted(keys):
            raise IntegrityError("a sync policy object is malformed")
        return cls(entry, keys, discarded)


@dataclass(frozen=True)
class AuditObject:
    """Signed audit records about one vault, as ``{record, signature}`` objects (checked by
    :func:`memories.devices.audit_records.accept_records` when merged)."""

    vault_id: str
    records: tuple[Mapping[str, object], ...]

    def __repr__(self) -> str:
        return f"AuditObject(records={len(self.records)})"

    def to_bytes(self) -> bytes:
        return canonical_bytes(
            {
                "t": OBJECT_TAG,
                "v": 1,
                "type": "audit",
                "vault": self.vault_id,
                "records": [dict(r) for r in self.records],
            }
        )

    @classmethod
    def from_bytes(cls, data: bytes) -> AuditObject:
        """Parse the envelope of an audit object (records are checked when merged).

        Raises ``IntegrityError`` when malformed.
        """
        doc = _object(data, "audit", {"vault", "records"})
        vault_id, records = doc["vault"], doc["records"]
        if not isinstance(vault_id, str) or not _VAULT_ID.fullmatch(vault_id):
            raise IntegrityError("a sync audit object is malformed")
        if not isinstance(records, list) or not 0 < len(records) <= MAX_AUDIT_RECORDS:
            raise IntegrityError("a sync audit object is malformed")
        if not all(isinstance(r, dict) for r in records):
            raise IntegrityError("a sync audit object is malformed")
        return cls(vault_id, tuple(records))


# -- announcements ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Announced:
    """A revision object a descriptor announces: its id, the revision, that one's parents."""

    oid: str  # the object's id
    revision: str
    asset: str
    parents: tuple[str, ...]

    def to_dict(self) -> dict[str, object]:
        return {
            "type": "revision",
            "object": self.oid,
            "revision": self.revision,
            "asset": self.asset,
            "parents": list(self.parents),
        }


@dataclass(frozen=True)
class PolicyAnnounced:
    """A policy object a descriptor announces: its id, the entry's id and number."""

    oid: str
    policy: str
    seq: int

    def to_dict(self) -> dict[str, object]:
        return {"type": "policy", "object": self.oid, "policy": self.policy, "seq": self.seq}


@dataclass(frozen=True)
class AuditAnnounced:
    """An audit object a descriptor announces: its id and how many records it holds."""

    oid: str
    records: int

    def to_dict(self) -> dict[str, object]:
        return {"type": "audit", "object": self.oid, "records": self.records}


Announcement: TypeAlias = Announced | PolicyAnnounced | AuditAnnounced


def _announcement(item: object, version: int) -> Announcement:
    """Raises ``IntegrityError``, ``KeyError``, ``TypeError`` or ``ValueError`` when malformed."""
    if not isinstance(item, dict):
        raise TypeError("announcement")
    kind = "revision" if version == 1 else item.get("type")
    rest = set(item) - ({"type"} if version > 1 else set())
    oid = item.get("object")
    if not isinstance(oid, str) or not _HEX64.fullmatch(oid):
        raise ValueError("object id")
    if kind == "revision" and rest == {"object", "revision", "asset", "parents"}:
        parents = item["parents"]
        if not isinstance(parents, list):
            raise TypeError("parents")
        revision = Announced(
            oid, str(item["revision"]), str(item["asset"]), tuple(str(p) for p in parents)
        )
        if not _ID.fullmatch(revision.revision) or not all(
            _ID.fullmatch(p) for p in revision.parents
        ):
            raise ValueError("revision id")
        return revision
    if kind == "policy" and rest == {"object", "policy", "seq"}:
        seq = item["seq"]
        if not isinstance(seq, int) or isinstance(seq, bool) or not 0 < seq < 2**53:
            raise ValueError("seq")
        policy = str(item["policy"])
        if not _ID.fullmatch(policy):
            raise ValueError("policy id")
        return PolicyAnnounced(oid, policy, seq)
    if kind == "audit" and rest == {"object", "records"}:
        count = item["records"]
        if not isinstance(count, int) or isinstance(count, bool):
            raise ValueError("records")
        if not 0 < count <= MAX_AUDIT_RECORDS:
            raise ValueError("records")
        return AuditAnnounced(oid, count)
    raise ValueError("announcement")


@dataclass(frozen=True)
class Descriptor:
    """A device's signed announcement of objects of one vault."""

    vault_id: str
    objects: tuple[Announcement, ...]
    created_at: str
    certificate: DeviceCertificate
    signature: bytes
    version: int = DESCRIPTOR_VERSION

    def body(self) -> dict[str, object]:
        items = [a.to_dict() for a in self.objects]
        if self.version == 1:
            for item in items:
                item.pop("type")
        return {
            "t": DESCRIPTOR_TAG,
            "v": self.version,
            "vault": self.vault_id,
            "objects": items,
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
        cls, identity: LocalIdentity, vault_id: str, objects: Sequence[Announcement]
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
        separately. The verdict depends on the bytes alone, so descriptors verified lately are
        remembered by their hash (a waiting one is read again every pass). Raises
        ``IntegrityError`` for anything that does not verify.
        """
        digest = hashlib.sha256(data).digest()
        found = _VERIFIED.get(digest)
        if found is not None:
            return found
        descriptor = cls._verify(data)
        _VERIFIED.put(digest, descriptor)
        return descriptor

    @classmethod
    def _verify(cls, data: bytes) -> Descriptor:
        doc = _load(data, DESCRIPTOR_TAG, "descriptor", _DESCRIPTOR_VERSIONS)
        try:
            keys = {"t", "v", "vault", "objects", "created_at", "certificate", "signature"}
            if set(doc) != keys:
                raise IntegrityError("a sync descriptor is malformed")
            version = int(str(doc["v"]))
            vault_id = str(doc["vault"])
            raw = doc["objects"]
            if not _VAULT_ID.fullmatch(vault_id) or not isinstance(raw, list):
                raise IntegrityError("a sync descriptor is malformed")
            if not raw or len(raw) > MAX_ANNOUNCED:
                raise IntegrityError("a sync descriptor is malformed")
            announced = tuple(_announcement(item, version) for item in raw)
            descriptor = cls(
                vault_id,
                announced,
                str(doc["created_at"]),
                DeviceCertificate.from_dict(doc["certificate"]),
                b64u_decode(str(doc["signature"])),
                version,
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise IntegrityError("a sync descriptor is malformed") from exc
        if len({a.oid for a in descriptor.objects}) != len(descriptor.objects):
            raise IntegrityError("a sync descriptor is malformed")
        descriptor.certificate.verify(descriptor.created_at)
        certificate = descriptor.certificate
        verify_canonical(certificate.signing_key, descriptor.body(), descriptor.signature)
        return descriptor
