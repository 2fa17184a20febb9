"""Revisions: signed, content-addressed nodes of an asset's history.

Saving an asset seals its content under a fresh random data key, split into 256 KiB chunks whose
associated data binds the asset and a per-revision nonce; the data key is wrapped under the
vault's epoch key. The device then signs a header covering the asset id, parents, policy head,
tombstone flag, the ciphertext digest and its certificate. The revision id is the tagged hash of
the signed header's canonical bytes, so parents name their exact content.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cached_property

from memories.crypto import (
    b64u_decode,
    b64u_encode,
    canonical_bytes,
    chunks_digest,
    new_id,
    new_key,
    open_chunks,
    seal_chunks,
    tagged_hash,
    unwrap_key,
    verify,
    wipe,
    wrap_key,
)
from memories.errors import DeniedError, IntegrityError, UsageError
from memories.vault.content import KINDS, Content, Kind
from memories.vault.filebody import CONTENT_PURPOSE, content_plaintext, parse_plaintext
from memories.vault.identity import DeviceCertificate, LocalIdentity, now
from memories.vault.policy import Policy, check_write

__all__ = [
    "REVISION_TAG",
    "Revision",
    "open_content",
    "seal_revision",
    "sign_revision",
    "unwrap_data_key",
    "wrap_data_key",
]

REVISION_TAG = "memories.revision"
DATA_KEY_PURPOSE = "revision.data-key"


@dataclass(frozen=True)
class Revision:
    vault_id: str
    asset_id: str
    kind: Kind
    parents: tuple[str, ...]  # sorted revision ids
    policy: str  # id of the policy entry in force when written
    epoch: int
    tombstone: bool
    wrapped_key: bytes  # the data key, wrapped under the epoch key
    nonce: str  # binds the chunks to this revision before its id exists
    chunks: int
    size: int
    ciphertext: str  # chunks_digest of the sealed chunks
    created_at: str
    certificate: DeviceCertificate
    signature: bytes

    def body(self) -> dict[str, object]:
        return {
            "t": REVISION_TAG,
            "v": 1,
            "vault": self.vault_id,
            "asset": self.asset_id,
            "kind": self.kind,
            "parents": list(self.parents),
            "policy": self.policy,
            "epoch": self.epoch,
            "tombstone": self.tombstone,
            "key": b64u_encode(self.wrapped_key),
            "nonce": self.nonce,
            "chunks": self.chunks,
            "size": self.size,
            "ciphertext": self.ciphertext,
            "created_at": self.created_at,
            "certificate": self.certificate.to_dict(),
        }

    def to_dict(self) -> dict[str, object]:
        return {"revision": self.body(), "signature": b64u_encode(self.signature)}

    @cached_property
    def signed_bytes(self) -> bytes:
        """The canonical bytes of :meth:`body`: what the device signs (computed once)."""
        return canonical_bytes(self._signed)

    @cached_property
    def _signed(self) -> dict[str, object]:
        # The body, built once for the encoding above (``from_bytes`` builds it to compare).
        return self.body()

    def to_bytes(self) -> bytes:
        # RFC 8785 of ``to_dict()``: its two keys in order, each value in its canonical form
        # (a base64url string needs no escaping), so the signed part is encoded only once.
        signature = b64u_encode(self.signature)
        return b'{"revision":' + self.signed_bytes + b',"signature":"' + signature.encode() + b'"}'

    @cached_property
    def id(self) -> str:  # computed once: canonical encoding is costly and the value is frozen
        return tagged_hash(REVISION_TAG, self.to_bytes())

    @property
    def author_user(self) -> str:
        return self.certificate.user

    @property
    def author_device(self) -> str:
        return self.certificate.device

    @classmethod
    def from_stored(cls, data: bytes, revision_id: str) -> Revision:
        """Parse a header this store wrote (always canonical bytes) and check it is
        ``revision_id`` by hashing those bytes, without re-encoding them.

        Raises ``IntegrityError`` when the bytes are not that revision.
        """
        if tagged_hash(REVISION_TAG, data) != revision_id:
            raise IntegrityError("a revision does not match its id")
        revision = cls.from_bytes(data)
        vars(revision)["id"] = revision_id  # prime the cached property with the checked id
        return revision

    @classmethod
    def from_bytes(cls, data: bytes) -> Revision:
        """Parse a stored or received header (not yet verified). Raises ``IntegrityError``."""
        try:
            doc = json.loads(data)
            body = doc["revision"]
            if body.get("t") != REVISION_TAG or body.get("kind") not in KINDS:
                raise ValueError("not a revision")
            if not isinstance(body["tombstone"], bool) or not isinstance(body["parents"], list):
                raise ValueError("bad fields")
            revision = cls(
                vault_id=str(body["vault"]),
                asset_id=str(body["asset"]),
                kind=body["kind"],
                parents=tuple(str(p) for p in body["parents"]),
                policy=str(body["policy"]),
                epoch=int(body["epoch"]),
                tombstone=body["tombstone"],
                wrapped_key=b64u_decode(str(body["key"])),
                nonce=str(body["nonce"]),
                chunks=int(body["chunks"]),
                size=int(body["size"]),
                ciphertext=str(body["ciphertext"]),
                created_at=str(body["created_at"]),
                certificate=DeviceCertificate.from_dict(body["certificate"]),
                signature=b64u_decode(str(doc["signature"])),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise IntegrityError("a revision is malformed") from exc
        if revision._signed != body or list(revision.parents) != sorted(set(revision.parents)):
            raise IntegrityError("a revision is malformed")
        return revision

    def verify(self, policy: Policy, chunks: Sequence[bytes] | None = None) -> None:
        """Check certificate, signature, the policy in force and (if given) the ciphertext.

        Raises ``IntegrityError``: a revision that does not verify is never accepted.
        """
        self.certificate.verify(self.created_at)
        self.verify_signature()
        self.verify_policy(policy)
        if chunks is not None:
            self.verify_chunks(chunks)

    def verify_signature(self) -> None:
        """Check the device's signature over this header (not its certificate).

        Raises ``IntegrityError`` when it does not verify.
        """
        try:
            message = self.signed_bytes
        except UsageError as exc:  # a parsed header with no canonical form was never signed
            raise IntegrityError("signature verification failed") from exc
        verify(self.certificate.signing_key, message, self.signature)

    def verify_policy(self, policy: Policy) -> None:
        """Check that ``policy`` is the entry this revision names and that it let the author's
        device write. Raises ``IntegrityError``."""
        if policy.id != self.policy or policy.vault_id != self.vault_id:
            raise IntegrityError("a revision names a policy this vault does not have")
        if self.epoch != policy.epoch:
            raise IntegrityError("a revision was written under another permission epoch")
        try:
            check_write(policy, self.author_user, self.author_device)
        except DeniedError as exc:
            raise IntegrityError(
                "a revision was signed by a device the vault does not allow"
            ) from exc

    def verify_chunks(self, chunks: Sequence[bytes]) -> None:
        """Check that ``chunks`` are the sealed content this header signs (count and digest).

        Raises ``IntegrityError`` when they are not.
        """
        if len(chunks) != self.chunks or chunks_digest(chunks) != self.ciphertext:
            raise IntegrityError("a revision's content does not match its signature")


def seal_revision(
    identity: LocalIdentity,
    *,
    vault_id: str,
    asset_id: str,
    kind: Kind,
    parents: Sequence[str],
    policy: Policy,
    epoch_key: bytes | bytearray,
    content: Content | None,
) -> tuple[Revision, list[bytes]]:
    """Encrypt ``content`` (None: a tombstone) and sign the header; returns it and the chunks."""
    plaintext = b"" if content is None else content_plaintext(content)
    nonce = new_id()
    data_key = new_key()
    try:
        chunks = seal_chunks(
            data_key, plaintext, purpose=CONTENT_PURPOSE, asset_id=asset_id, revision=nonce
        )
        wrapped = wrap_data_key(
            epoch_key,
            data_key,
            vault_id=vault_id,
            asset_id=asset_id,
            nonce=nonce,
            epoch=policy.epoch,
        )
    finally:
        wipe(data_key)
    revision = sign_revision(
        identity,
        vault_id=vault_id,
        asset_id=asset_id,
        kind=kind,
        parents=parents,
        policy=policy,
        tombstone=content is None,
        wrapped_key=wrapped,
        nonce=nonce,
        chunks=len(chunks),
        size=len(plaintext),
        ciphertext=chunks_digest(chunks),
    )
    return revision, chunks


def wrap_data_key(
    epoch_key: bytes | bytearray,
    data_key: bytes | bytearray,
    *,
    vault_id: str,
    asset_id: str,
    nonce: str,
    epoch: int,
) -> bytes:
    """A revision's data key wrapped under its vault's epoch key. Raises ``UsageError``."""
    return wrap_key(
        epoch_key,
        data_key,
        purpose=DATA_KEY_PURPOSE,
        vault=vault_id,
        asset=asset_id,
        nonce=nonce,
        epoch=epoch,
    )


def unwrap_data_key(revision: Revision, epoch_key: bytes | bytearray) -> bytearray:
    """The data key of ``revision`` (wipe it after use). Raises ``IntegrityError``."""
    return unwrap_key(
        epoch_key,
        revision.wrapped_key,
        purpose=DATA_KEY_PURPOSE,
        vault=revision.vault_id,
        asset=revision.asset_id,
        nonce=revision.nonce,
        epoch=revision.epoch,
    )


def sign_revision(
    identity: LocalIdentity,
    *,
    vault_id: str,
    asset_id: str,
    kind: Kind,
    parents: Sequence[str],
    policy: Policy,
    tombstone: bool,
    wrapped_key: bytes,
    nonce: str,
    chunks: int,
    size: int,
    ciphertext: str,
) -> Revision:
    """Sign the header of content already sealed (``ciphertext`` is its ``chunks_digest``)."""
    unsigned = Revision(
        vault_id=vault_id,
        asset_id=asset_id,
        kind=kind,
        parents=tuple(sorted(set(parents))),
        policy=policy.id,
        epoch=policy.epoch,
        tombstone=tombstone,
        wrapped_key=wrapped_key,
        nonce=nonce,
        chunks=chunks,
        size=size,
        ciphertext=ciphertext,
        created_at=now(),
        certificate=identity.certificate,
        signature=b"",
    )
    return replace(unsigned, signature=identity.device.sign_canonical(unsigned.body()))


def open_content(
    revision: Revision, chunks: Sequence[bytes], epoch_key: bytes | bytearray
) -> Content | None:
    """Decrypt a revision's content (None for a tombstone). Raises ``IntegrityError``."""
    revision.verify_chunks(chunks)
    data_key = unwrap_data_key(revision, epoch_key)
    try:
        plaintext = open_chunks(
            data_key,
            chunks,
            purpose=CONTENT_PURPOSE,
            asset_id=revision.asset_id,
            revision=revision.nonce,
        )
    finally:
        wipe(data_key)
    if revision.tombstone:
        if plaintext:
            raise IntegrityError("a tombstone carries content")
        return None
    return parse_plaintext(plaintext)
