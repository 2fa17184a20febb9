"""Audit records that travel in bundles: the audit entries other devices wrote about a vault.

Every store keeps its own audit trail (hash-chained checkpoints, :mod:`memories.store.checkpoints`)
that never leaves it. A bundle carries, for its vault, a copy of the entries that concern the
vault, each signed by the device that wrote it::

    {"record": {"t": "memories.audit_record", "v": 1, "vault": vault id,
                "device": the writing device's fingerprint, "seq": its checkpoint number,
                "at", "action", "details": {name: text | integer | boolean}},
     "signature": Ed25519 of that device over the canonical ``record``}

A record holds exactly what its checkpoint holds — the action, the ids in its details, its time
and number — never content, values or keys (checkpoints hold none), and not the chain's own
hashes. An entry *concerns* a vault when its ``vault`` detail is the vault's id, its ``asset``,
``source`` or ``target`` detail names an asset of the vault, or its ``revision`` detail a
revision of the vault; an entry that names no such id (unlock, grants, failures, another vault)
stays on its device. Only entries the store vouches for travel (none that is damaged, missing
or unlinked).

A device re-exports the records it accepted from others with their original signatures, so a
record reaches a third device through a second. An importer checks every record before any is
stored: its shape, that it names the bundle's vault, that its signer is a device the vault's
(validated) policy chain names, its signature under that device's certificate, that the device
was not revoked at the record's time, and that it does not contradict a record held already
(same device and number, other content). One bad record refuses the whole bundle.

Accepted records are encrypted store entries ``peer_audit/<vault>/<device>/<seq>`` (device-local,
like the trail itself: never in backups), one per device and number, so importing the same
record twice stores it once. A device's own records coming back are checked and not stored.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Protocol

from memories.crypto import b64u_decode, b64u_encode, canonical_bytes, verify_canonical
from memories.errors import DeniedError, IntegrityError, NotFoundError, UsageError
from memories.store import Checkpoint, Store
from memories.vault.identity import DeviceCertificate, LocalIdentity
from memories.vault.policy import Policy
from memories.views.format import short_ids

__all__ = [
    "AUDIT_RECORD_TAG",
    "CONCERNING_DETAILS",
    "PEER_AUDIT_PREFIX",
    "AuditRecord",
    "accept_records",
    "concerns",
    "local_records",
    "peer_listing",
    "record_key",
    "revoked_since",
    "stored_records",
    "trail_since",
]

AUDIT_RECORD_TAG: Final = "memories.audit_record"
PEER_AUDIT_PREFIX: Final = "peer_audit/"
#: The detail names whose value ties an entry to a vault, and what kind of id each holds.
CONCERNING_DETAILS: Final = {
    "vault": "vault",
    "asset": "asset",
    "source": "asset",
    "target": "asset",
    "revision": "revision",
}
#: How many checkpoints one page of the local trail reads while selecting entries to export.
_PAGE: Final = 1000
_MAX_DETAILS: Final = 64
_MAX_TEXT: Final = 1000
_ACTION = re.compile(r"[a-z0-9_][a-z0-9_.]{0,79}")
_DETAIL_NAME = re.compile(r"[a-z_][a-z0-9_]{0,39}")
_AT = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z")
_DEVICE = re.compile(r"sha256:[0-9a-f]{64}")
_VAULT = re.compile(r"[0-9a-f]{32}")
_MALFORMED: Final = "an audit record in the bundle is malformed; nothing was imported"

Detail = str | int | bool


def record_key(vault_id: str, device: str, seq: int) -> str:
    """Where this store keeps the record ``seq`` of ``device`` about ``vault_id``."""
    return f"{PEER_AUDIT_PREFIX}{vault_id}/{device}/{seq}"


@dataclass(frozen=True)
class AuditRecord:
    """One device's audit entry about one vault, with that device's signature."""

    vault_id: str
    device: str  # fingerprint of the device that wrote the entry and signs the record
    seq: int  # the entry's number in that device's trail
    at: str
    action: str
    details: Mapping[str, Detail]
    signature: bytes = b""

    def body(self) -> dict[str, object]:
        """The canonical object the device signs."""
        return {
            "t": AUDIT_RECORD_TAG,
            "v": 1,
            "vault": self.vault_id,
            "device": self.device,
            "seq": self.seq,
            "at": self.at,
            "action": self.action,
            "details": dict(self.details),
        }

    def to_dict(self) -> dict[str, object]:
        """The record as a bundle carries it: ``{record, signature}``."""
        return {"record": self.body(), "signature": b64u_encode(self.signature)}

    def to_bytes(self) -> bytes:
        return canonical_bytes(self.to_dict())

    @property
    def key(self) -> str:
        return record_key(self.vault_id, self.device, self.seq)

    @classmethod
    def signed(cls, identity: LocalIdentity, vault_id: str, entry: Checkpoint) -> AuditRecord:
        """This device's checkpoint ``entry`` as a record about ``vault_id``, signed.

        Raises:
            IntegrityError: the entry does not fit a record's shape (it is then not exported).
        """
        unsigned = cls(
            vault_id=vault_id,
            device=identity.device_fingerprint,
            seq=entry.seq,
            at=entry.at,
            action=entry.action,
            details=dict(entry.details),
        )
        _check_shape(unsigned)
        return cls(
            **{**unsigned.__dict__, "signature": identity.device.sign_canonical(unsigned.body())}
        )

    @classmethod
    def from_dict(cls, doc: object) -> AuditRecord:
        """Parse ``{record, signature}`` (the signature is not checked here).

        Raises:
            IntegrityError: it is not a well-formed record.
        """
        try:
            if not isinstance(doc, dict) or set(doc) != {"record", "signature"}:
                raise ValueError("not a record")
            body = doc["record"]
            if not isinstance(body, dict) or set(body) != {
                "t",
                "v",
                "vault",
                "device",
                "seq",
                "at",
                "action",
                "details",
            }:
                raise ValueError("not a record")
            if body["t"] != AUDIT_RECORD_TAG or body["v"] != 1:
                raise ValueError("not a record")
            details = body["details"]
            if not isinstance(details, dict):
                raise ValueError("bad details")
            seq = body["seq"]
            if not isinstance(seq, int) or isinstance(seq, bool):
                raise ValueError("bad seq")
            fields = (body["vault"], body["device"], body["at"], body["action"])
            if not all(isinstance(f, str) for f in fields):
                raise ValueError("bad field")
            record = cls(
                vault_id=str(body["vault"]),
                device=str(body["device"]),
                seq=seq,
                at=str(body["at"]),
                action=str(body["action"]),
                details=details,
                signature=b64u_decode(str(doc["signature"])),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise IntegrityError(_MALFORMED) from exc
        except IntegrityError as exc:  # a bad base64url signature
            raise IntegrityError(_MALFORMED) from exc
        _check_shape(record)
        return record

    def verify(self, certificate: DeviceCertificate) -> None:
        """Check the signature under ``certificate`` (which must be the signer's).

        Raises:
            IntegrityError: the certificate is not the signer's or the signature does not verify.
        """
        if certificate.device != self.device:
            raise IntegrityError("an audit record names another device than its signer")
        verify_canonical(certificate.signing_key, self.body(), self.signature)


def _check_shape(record: AuditRecord) -> None:
    """Raises ``IntegrityError`` unless every field has the shape a checkpoint gives it."""
    problem = (
        not _VAULT.fullmatch(record.vault_id)
        or not _DEVICE.fullmatch(record.device)
        or not 0 < record.seq < 2**63
        or not _AT.fullmatch(record.at)
        or not _ACTION.fullmatch(record.action)
        or len(record.details) > _MAX_DETAILS
    )
    for name, value in record.details.items():
        if not isinstance(name, str) or not _DETAIL_NAME.fullmatch(name):
            problem = True
        elif isinstance(value, bool):
            continue
        elif isinstance(value, int):
            problem = problem or not -(2**63) <= value < 2**63
        elif isinstance(value, str):
            problem = problem or len(value) > _MAX_TEXT
        else:
            problem = True
    if problem:
        raise IntegrityError(_MALFORMED)


def concerns(
    entry: Checkpoint, vault_id: str, assets: Collection[str], revisions: Collection[str]
) -> bool:
    """Whether the checkpoint ``entry`` is about vault ``vault_id``, whose asset ids are
    ``assets`` and revision ids ``revisions`` (the rule in the module docstring)."""
    for name, kind in CONCERNING_DETAILS.items():
        value = entry.details.get(name)
        if not isinstance(value, str):
            continue
        if (
            (kind == "vault" and value == vault_id)
            or (kind == "asset" and value in assets)
            or (kind == "revision" and value in revisions)
        ):
            return True
    return False


def _trail(store: Store, after: int = 0) -> Iterator[Checkpoint]:
    """Every checkpoint of the local trail the store vouches for, newest first; only those
    numbered above ``after``."""
    before: int | None = None
    while True:
        page = store.checkpoints(limit=_PAGE, before=before)
        rows = [c for c in page if c.problem != "gap"]  # a gap marker is no row
        yield from (c for c in rows if c.ok and c.seq > after)
        if len(rows) < _PAGE or not rows:
            return
        before = min(c.seq for c in rows)
        if before <= max(1, after + 1):
            return


def trail_since(store: Store, after: int) -> list[Checkpoint]:
    """The checkpoints of the local trail numbered above ``after`` that the store vouches for,
    oldest first (what sync publishes as audit records, a pass at a time).

    Raises ``LockedError``.
    """
    found = list(_trail(store, after))
    found.reverse()
    return found


def local_records(
    store: Store,
    identity: LocalIdentity,
    vault_id: str,
    assets: Collection[str],
    revisions: Collection[str],
) -> list[AuditRecord]:
    """This device's entries about ``vault_id``, oldest first, each signed by this device.

    An entry whose details do not fit a record's bounds is left out (none the service writes
    comes close). Raises ``LockedError``.
    """
    records = []
    for entry in _trail(store):
        if not concerns(entry, vault_id, assets, revisions):
            continue
        try:
            records.append(AuditRecord.signed(identity, vault_id, entry))
        except IntegrityError:
            continue  # an oversized detail: the local trail still shows it
    records.reverse()
    return records


def stored_records(store: Store, vault_id: str) -> list[AuditRecord]:
    """The records of other devices about ``vault_id`` this store accepted, by device and number.

    Raises:
        IntegrityError: a stored record is malformed or filed under another key.
    """
    found = []
    for key, value in store.entries(f"{PEER_AUDIT_PREFIX}{vault_id}/"):
        record = _load(value)
        if record.key != key:
            raise IntegrityError("an imported audit record is filed under another key")
        found.append(record)
    found.sort(key=lambda r: (r.device, r.seq))
    return found


def _load(value: bytes) -> AuditRecord:
    try:
        doc = json.loads(value)
    except ValueError as exc:
        raise IntegrityError("an imported audit record is malformed") from exc
    return AuditRecord.from_dict(doc)


def revoked_since(chain: Sequence[Policy]) -> dict[str, str]:
    """For each device the chain revokes, the time of the first entry that revoked it."""
    since: dict[str, str] = {}
    for entry in chain:
        for device in entry.revoked:
            since.setdefault(device, entry.created_at)
    return since


class Reader(Protocol):
    """Where held records are looked up: a store, or a mutation staged over one."""

    def get(self, key: str) -> bytes | None: ...


def accept_records(
    store: Reader,
    docs: Sequence[object],
    *,
    vault_id: str,
    chain: Sequence[Policy],
    certificates: Mapping[str, DeviceCertificate],
    me: str,
) -> list[AuditRecord]:
    """Check every record of a bundle; the ones this store does not hold yet, to store.

    ``chain`` is the vault's validated (merged) policy chain and ``certificates`` the device
    certificates it names; ``me`` is this device's fingerprint (its own records are checked,
    never stored). Nothing is written here.

    Raises:
        IntegrityError: a record is malformed, names another vault, does not verify, or
            contradicts a record held already or another one of the bundle.
        DeniedError: a record is signed by a device the chain never names, or by one the
            chain had revoked at the record's time.
    """
    revoked = revoked_since(chain)
    checked: set[str] = set()
    fresh: dict[str, AuditRecord] = {}
    for doc in docs:
        record = AuditRecord.from_dict(doc)
        if record.vault_id != vault_id:
            raise IntegrityError(
                "an audit record in the bundle is about another vault; nothing was imported"
            )
        certificate = certificates.get(record.device)
        if certificate is None:
            raise DeniedError(
                "an audit record in the bundle is signed by a device this vault never allowed; "
                "nothing was imported"
            )
        try:
            if record.device not in checked:
                certificate.verify_signature()
                checked.add(record.device)
            record.verify(certificate)
        except IntegrityError as exc:
            raise IntegrityError(
                "an audit record in the bundle does not verify (altered or forged); "
                "nothing was imported"
            ) from exc
        since = revoked.get(record.device)
        if since is not None and record.at >= since:
            raise DeniedError(
                "the bundle holds an audit record a revoked device wrote after its revocation; "
                "nothing was imported"
            )
        if record.device == me:
            continue  # this device's own trail holds it already
        value = record.to_bytes()
        held = store.get(record.key)
        earlier = fresh.get(record.key)
        if (held is not None and held != value) or (
            earlier is not None and earlier.to_bytes() != value
        ):
            raise IntegrityError(
                "an audit record in the bundle contradicts one this device holds (same device "
                "and number, other content); nothing was imported"
            )
        if held is None:
            fresh[record.key] = record
    return list(fresh.values())


def _origins(origin: str, certificates: Mapping[str, DeviceCertificate]) -> set[str]:
    """The devices ``origin`` names: a fingerprint (full, or 8+ hex of it) or a device name.

    Raises:
        NotFoundError: the vault's policy chain names no such device.
        UsageError: a fingerprint prefix that more than one device shares.
    """
    wanted = origin.strip().lower()
    bare = wanted.removeprefix("sha256:")
    if len(bare) >= 8 and all(c in "0123456789abcdef" for c in bare):
        found = {d for d in certificates if d.removeprefix("sha256:").startswith(bare)}
        if len(found) > 1:
            raise UsageError("that fingerprint prefix names more than one device; give more")
        if found:
            return found
    named = {d for d, cert in certificates.items() if cert.device_name.lower() == wanted}
    if not named:
        raise NotFoundError("the vault names no device by that fingerprint or name")
    return named


def peer_listing(
    records: Sequence[AuditRecord],
    certificates: Mapping[str, DeviceCertificate],
    *,
    origin: str | None = None,
    limit: int = 50,
) -> list[dict[str, object]]:
    """Up to ``limit`` of ``records`` (from :func:`stored_records`), newest first, each with
    its device's fingerprint, short form and name; only ``origin``'s with ``origin``.

    Raises:
        NotFoundError: ``origin`` names no device of the vault.
        UsageError: ``origin`` is an ambiguous fingerprint prefix.
    """
    chosen = records if origin is None else _filter(records, _origins(origin, certificates))
    ordered = sorted(chosen, key=lambda r: (r.at, r.device, r.seq), reverse=True)[:limit]
    shorts = short_ids(certificates.keys() | {r.device for r in records})
    rows: list[dict[str, object]] = []
    for record in ordered:
        cert = certificates.get(record.device)
        rows.append(
            {
                "device": record.device,
                "short": shorts[record.device],
                "name": "" if cert is None else cert.device_name,
                "seq": record.seq,
                "at": record.at,
                "action": record.action,
                "details": dict(record.details),
            }
        )
    return rows


def _filter(records: Sequence[AuditRecord], devices: set[str]) -> list[AuditRecord]:
    return [r for r in records if r.device in devices]
