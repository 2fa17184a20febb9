"""The backup payload (what the envelope seals): a signed manifest, then the store records.

::

    canonical JSON {"manifest": {...}, "signature": b64u}   then one "\\n"
    the records' bytes, back to back, in the manifest's order

The manifest is ``{"t": "memories.backup.manifest", "v": 1, "backup", "created_at", "seq",
"personal", "certificate", "records": [[key, size, digest], ...]}``, records sorted by key, and
is signed by the backed-up device's Ed25519 key (its certificate, signed by the user key, is
inside). Each record is one store record exactly as the store held it (see the vault records
in docs/FORMATS.md): ``identity``, ``vault/<id>``, ``asset/<kind>/<id>``,
``policy/<vault>/<seq>``, ``rev/<id>`` and ``rev/<id>/<i>``; ``digest`` is its ``sha256:``.
For one store state the payload is the same bytes every time but for ``created_at`` and the
backup id (Ed25519 signatures are deterministic).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from memories.crypto import b64u_decode, b64u_encode, canonical_bytes, digest, verify_canonical
from memories.errors import IntegrityError, UsageError
from memories.vault.identity import DeviceCertificate, LocalIdentity
from memories.vault.records import IDENTITY_KEY, LOCAL_KEY, KeyKind, LocalState, key_kind
from memories.vault.replicate import ExportedState

__all__ = ["MANIFEST_TAG", "Snapshot", "build_payload", "parse_payload"]

MANIFEST_TAG = "memories.backup.manifest"
_MANIFEST_KEYS = frozenset(
    {"t", "v", "backup", "created_at", "seq", "personal", "certificate", "records"}
)
#: What a backup may carry; never the device state, never anything outside the vault layout.
_CARRIED: frozenset[KeyKind] = frozenset(
    {"identity", "vault", "asset", "policy", "revision", "chunk"}
)
_MALFORMED = "the backup's contents are malformed; it cannot be used"


@dataclass(frozen=True)
class Snapshot:
    """The records of one backup, checked against the signed manifest.

    It reads like the store it came from (``get``, ``get_blob``, ``entries``), so the vault
    domain's own verification can check it record by record. The device state is synthesized
    from ``personal`` with no device-only vaults: a backup carries none.
    """

    backup_id: str
    created_at: str
    seq: int
    personal: str
    certificate: DeviceCertificate
    records: Mapping[str, bytes] = field(repr=False)

    def __repr__(self) -> str:
        return f"Snapshot(id={self.backup_id[:8]}, records=<{len(self.records)}>)"

    def identity(self) -> LocalIdentity:
        """The backed-up identity with its private keys. Raises ``IntegrityError``."""
        try:
            return LocalIdentity.from_dict(json.loads(self.records[IDENTITY_KEY]))
        except (KeyError, ValueError, TypeError) as exc:
            raise IntegrityError("the backup's identity is missing or malformed") from exc

    # -- the store-like reading the vault verifier uses ------------------------------------

    def get(self, key: str) -> bytes | None:
        if key == LOCAL_KEY:
            return LocalState(self.personal, ()).to_bytes()
        if key_kind(key) in ("policy", "revision", "chunk"):
            return None
        return self.records.get(key)

    def get_blob(self, key: str) -> bytes:
        """Raises ``IntegrityError`` when the backup lacks the blob (as the store does)."""
        if key_kind(key) not in ("policy", "revision", "chunk") or key not in self.records:
            raise IntegrityError("a record the backup refers to is missing")
        return self.records[key]

    def entries(self, prefix: str = "") -> Iterator[tuple[str, bytes]]:
        found = [
            (key, value)
            for key, value in self.records.items()
            if key.startswith(prefix) and key_kind(key) not in ("policy", "revision", "chunk")
        ]
        return iter(sorted(found))

    def blob_keys(self) -> frozenset[str]:
        return frozenset(k for k in self.records if key_kind(k) in ("policy", "revision", "chunk"))


def build_payload(
    exported: ExportedState, identity: LocalIdentity, *, backup_id: str, created_at: str
) -> bytes:
    """The payload bytes for ``exported``, signed by this device's key."""
    manifest = {
        "t": MANIFEST_TAG,
        "v": 1,
        "backup": backup_id,
        "created_at": created_at,
        "seq": exported.seq,
        "personal": exported.personal,
        "certificate": identity.certificate.to_dict(),
        "records": [[key, len(value), digest(value)] for key, value in exported.records],
    }
    signed = {
        "manifest": manifest,
        "signature": b64u_encode(identity.device.sign_canonical(manifest)),
    }
    return b"".join([canonical_bytes(signed), b"\n", *(value for _, value in exported.records)])


def parse_payload(payload: bytes, *, backup_id: str, created_at: str) -> Snapshot:
    """Split ``payload`` into its records and check them against the signed manifest.

    Checks the manifest's form, that it belongs to this envelope (id and time), the device
    certificate and the signature, that every record is of a kind a backup may carry, listed
    once, sorted, and of its stated size and digest, and that nothing is left over.

    Raises:
        IntegrityError: any of that fails (messages name no content).
    """
    end = payload.find(b"\n")
    if end < 0:
        raise IntegrityError(_MALFORMED)
    try:
        signed = json.loads(payload[:end])
        manifest = signed["manifest"]
        signature = b64u_decode(str(signed["signature"]))
        if set(signed) != {"manifest", "signature"} or not isinstance(manifest, dict):
            raise ValueError("bad envelope")
    except (ValueError, KeyError, TypeError):
        raise IntegrityError(_MALFORMED) from None
    if set(manifest) != _MANIFEST_KEYS or manifest["t"] != MANIFEST_TAG or manifest["v"] != 1:
        raise IntegrityError(_MALFORMED)
    try:
        if canonical_bytes(signed) != payload[:end]:
            raise IntegrityError(_MALFORMED)
    except UsageError:
        raise IntegrityError(_MALFORMED) from None
    if manifest["backup"] != backup_id or manifest["created_at"] != created_at:
        raise IntegrityError("the backup's contents belong to another backup file")
    certificate = DeviceCertificate.from_dict(manifest["certificate"])
    try:
        certificate.verify(created_at)
        verify_canonical(certificate.signing_key, manifest, signature)
    except IntegrityError:
        raise IntegrityError("the backup's signature does not verify; it cannot be used") from None
    seq, personal, listed = manifest["seq"], manifest["personal"], manifest["records"]
    if (
        isinstance(seq, bool)
        or not isinstance(seq, int)
        or not isinstance(personal, str)
        or not isinstance(listed, list)
    ):
        raise IntegrityError(_MALFORMED)
    records: dict[str, bytes] = {}
    at = end + 1
    previous = ""
    for item in listed:
        if not (
            isinstance(item, list)
            and len(item) == 3
            and isinstance(item[0], str)
            and isinstance(item[1], int)
            and not isinstance(item[1], bool)
            and isinstance(item[2], str)
        ):
            raise IntegrityError(_MALFORMED)
        key, size, expected = item
        if key <= previous or size < 0 or at + size > len(payload):
            raise IntegrityError(_MALFORMED)
        try:
            kind = key_kind(key)
        except IntegrityError:
            raise IntegrityError(_MALFORMED) from None
        if kind not in _CARRIED:
            raise IntegrityError(_MALFORMED)
        value = payload[at : at + size]
        if digest(value) != expected:
            raise IntegrityError("a record in the backup does not match its digest")
        records[key] = value
        previous, at = key, at + size
    if at != len(payload) or IDENTITY_KEY not in records:
        raise IntegrityError(_MALFORMED)
    snapshot = Snapshot(backup_id, created_at, seq, personal, certificate, records)
    if snapshot.identity().certificate != certificate:
        raise IntegrityError("the backup's identity is not the device that signed it")
    return snapshot
