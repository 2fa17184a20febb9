"""Write the known-answer vectors for the vault's signed formats:
``python -m tests.vectors.generate_vault [DIR]``.

Three files, every input fixed (``fixed(label, n)`` from :mod:`tests.vectors.generate`):

- ``certificate.json``: a user Ed25519 key certifying a device's Ed25519 signing key and X25519
  exchange key.
- ``policy.json``: the genesis policy entry of a vault, signed by that device.
- ``revision.json``: two revisions of one asset under that policy: a memory, and a tombstone that
  names it as its parent. Content is sealed in chunks under a data key, the data key is wrapped
  under the vault's epoch key, and the device signs the header.

Ed25519 signatures are deterministic, so with fixed keys, times and nonces every byte is
reproducible. The records are built from the project's own dataclasses (their ``body()`` is the
signed form); the tests open and verify them with the production code.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

from memories.crypto import (
    ExchangeKey,
    SigningKey,
    associated_data,
    canonical_bytes,
    chunks_digest,
    fingerprint,
    seal_chunks_with_nonces,
    seal_with_nonce,
    tagged_hash,
)
from memories.crypto.aead import NONCE_SIZE, chunk_count
from memories.vault.content import Content, make_content
from memories.vault.identity import CERTIFICATE_TAG, DeviceCertificate, LocalIdentity
from memories.vault.policy import POLICY_TAG, Policy
from memories.vault.revision import CONTENT_PURPOSE, DATA_KEY_PURPOSE, REVISION_TAG, Revision
from tests.vectors.generate import VECTOR_DIR, fixed, render

__all__ = [
    "ASSET_ID",
    "VAULT_ID",
    "build_all",
    "build_certificate",
    "build_policy",
    "build_revision",
    "epoch_key",
    "genesis",
    "identity",
    "main",
    "memory_content",
]

NOT_BEFORE = "2025-01-01T00:00:00.000Z"
POLICY_AT = "2025-01-01T00:00:01.000Z"
MEMORY_AT = "2025-01-02T09:30:00.000Z"
TOMBSTONE_AT = "2025-01-03T18:45:00.000Z"
DEVICE_ID = fixed("vault/device-id", 16).hex()
VAULT_ID = fixed("vault/vault-id", 16).hex()
ASSET_ID = fixed("vault/asset-id", 16).hex()
EPOCH = 1


def _keys() -> tuple[SigningKey, SigningKey, ExchangeKey]:
    return (
        SigningKey.from_private_bytes(fixed("vault/user/seed", 32)),
        SigningKey.from_private_bytes(fixed("vault/device/seed", 32)),
        ExchangeKey.from_private_bytes(fixed("vault/exchange/seed", 32)),
    )


def identity() -> LocalIdentity:
    """The fixed user and device: the certificate is signed by the user key."""
    user, device, exchange = _keys()
    unsigned = DeviceCertificate(
        user_key=user.public_bytes(),
        device_id=DEVICE_ID,
        device_name="vector device",
        signing_key=device.public_bytes(),
        exchange_key=exchange.public_bytes(),
        not_before=NOT_BEFORE,
        not_after=None,
        signature=b"",
    )
    certificate = replace(unsigned, signature=user.sign_canonical(unsigned.body()))
    return LocalIdentity(user, device, exchange, certificate, "vector user")


def genesis(who: LocalIdentity) -> Policy:
    """The vault's first policy entry: this user Owner, this device allowed, epoch 1."""
    unsigned = Policy(
        vault_id=VAULT_ID,
        seq=1,
        prev="",
        epoch=EPOCH,
        members={who.user_fingerprint: "owner"},
        devices=(who.device_fingerprint,),
        revoked=(),
        created_at=POLICY_AT,
        certificate=who.certificate,
        signature=b"",
    )
    return replace(unsigned, signature=who.device.sign_canonical(unsigned.body()))


def epoch_key() -> bytes:
    return fixed("vault/epoch-key", 32)


def memory_content() -> Content:
    return make_content(
        "memory",
        title="Café notes ☕",
        body="Deploys go out on Tuesdays.\n日本語も大丈夫。\n",
        tags=["ops", "release"],
        source="https://example.com/runbook",
    )


def _seal(
    who: LocalIdentity,
    policy: Policy,
    label: str,
    *,
    parents: tuple[str, ...],
    content: Content | None,
    created_at: str,
) -> dict[str, object]:
    plaintext = b"" if content is None else canonical_bytes(content.to_dict())
    nonce = fixed(f"{label}/nonce", 16).hex()
    data_key = fixed(f"{label}/data-key", 32)
    count = chunk_count(len(plaintext))
    chunk_nonces = [fixed(f"{label}/chunk-nonce/{i}", NONCE_SIZE) for i in range(count)]
    chunks = seal_chunks_with_nonces(
        data_key,
        plaintext,
        chunk_nonces,
        purpose=CONTENT_PURPOSE,
        asset_id=ASSET_ID,
        revision=nonce,
    )
    wrap_nonce = fixed(f"{label}/wrap-nonce", NONCE_SIZE)
    wrap_aad = associated_data(
        DATA_KEY_PURPOSE, vault=VAULT_ID, asset=ASSET_ID, nonce=nonce, epoch=policy.epoch
    )
    wrapped = seal_with_nonce(epoch_key(), wrap_nonce, data_key, wrap_aad)
    unsigned = Revision(
        vault_id=VAULT_ID,
        asset_id=ASSET_ID,
        kind="memory",
        parents=parents,
        policy=policy.id,
        epoch=policy.epoch,
        tombstone=content is None,
        wrapped_key=wrapped,
        nonce=nonce,
        chunks=len(chunks),
        size=len(plaintext),
        ciphertext=chunks_digest(chunks),
        created_at=created_at,
        certificate=who.certificate,
        signature=b"",
    )
    signed_body = canonical_bytes(unsigned.body())
    revision = replace(unsigned, signature=who.device.sign(signed_body))
    header = revision.to_bytes()
    return {
        "content": None if content is None else content.to_dict(),
        "plaintext": plaintext.decode("utf-8"),
        "data_key": data_key.hex(),
        "nonce": nonce,
        "chunk_nonces": [n.hex() for n in chunk_nonces],
        "chunk_aads": [
            associated_data(
                CONTENT_PURPOSE, asset=ASSET_ID, revision=nonce, index=i, count=count
            ).decode("utf-8")
            for i in range(count)
        ],
        "chunks": [chunk.hex() for chunk in chunks],
        "chunks_digest": revision.ciphertext,
        "wrap_nonce": wrap_nonce.hex(),
        "wrap_aad": wrap_aad.decode("utf-8"),
        "wrapped_key": wrapped.hex(),
        "signed_body": signed_body.decode("utf-8"),
        "signature": revision.signature.hex(),
        "header": header.decode("utf-8"),
        "id": tagged_hash(REVISION_TAG, header),
    }


def build_certificate() -> dict[str, object]:
    who = identity()
    user, device, exchange = _keys()
    certificate = who.certificate
    body = canonical_bytes(certificate.body())
    return {
        "t": "memories.vectors.certificate",
        "v": 1,
        "rule": f"Ed25519(user key) over RFC 8785 of the body tagged {CERTIFICATE_TAG!r}",
        "user_seed": bytes(user.private_bytes()).hex(),
        "device_seed": bytes(device.private_bytes()).hex(),
        "exchange_private": bytes(exchange.private_bytes()).hex(),
        "user_public": user.public_bytes().hex(),
        "device_public": device.public_bytes().hex(),
        "exchange_public": exchange.public_bytes().hex(),
        "user_fingerprint": fingerprint(user.public_bytes()),
        "device_fingerprint": fingerprint(device.public_bytes()),
        "signed_body": body.decode("utf-8"),
        "signature": certificate.signature.hex(),
        "certificate": certificate.to_dict(),
    }


def build_policy() -> dict[str, object]:
    policy = genesis(identity())
    encoded = policy.to_bytes()
    return {
        "t": "memories.vectors.policy",
        "v": 1,
        "rule": (
            "Ed25519(device key of certificate.json) over RFC 8785 of the body; "
            f"id = tagged_hash({POLICY_TAG!r}, canonical {{policy, signature}})"
        ),
        "signed_body": canonical_bytes(policy.body()).decode("utf-8"),
        "signature": policy.signature.hex(),
        "entry": encoded.decode("utf-8"),
        "id": policy.id,
    }


def build_revision() -> dict[str, object]:
    who = identity()
    policy = genesis(who)
    memory = _seal(
        who,
        policy,
        "vault/revision/memory",
        parents=(),
        content=memory_content(),
        created_at=MEMORY_AT,
    )
    memory_id = str(memory["id"])
    tombstone = _seal(
        who,
        policy,
        "vault/revision/tombstone",
        parents=(memory_id,),
        content=None,
        created_at=TOMBSTONE_AT,
    )
    return {
        "t": "memories.vectors.revision",
        "v": 1,
        "rules": {
            "content": "chunks = seal_chunks(data_key, RFC 8785 content, purpose, asset, "
            "revision=nonce)",
            "data_key": "wrapped_key = seal(epoch_key, data_key, wrap_aad)",
            "signature": "Ed25519(device key) over RFC 8785 of the revision body",
            "id": f"tagged_hash({REVISION_TAG!r}, header) where header is RFC 8785 of "
            "{revision, signature}",
        },
        "policy": policy.id,
        "epoch": policy.epoch,
        "epoch_key": epoch_key().hex(),
        "cases": [
            {"name": "a memory, the asset's first revision", **memory},
            {"name": "a tombstone naming the memory as its parent", **tombstone},
        ],
    }


def build_all() -> dict[str, dict[str, object]]:
    """Every vault vector file, by name."""
    return {
        "certificate.json": build_certificate(),
        "policy.json": build_policy(),
        "revision.json": build_revision(),
    }


def main(argv: list[str] | None = None) -> int:
    """Write every file into ``argv[0]`` (default: tests/vectors). Returns the exit status."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) > 1 or (args and args[0].startswith("-")):
        sys.stderr.write("usage: python -m tests.vectors.generate_vault [OUTPUT_DIR]\n")
        return 2
    out = Path(args[0]) if args else VECTOR_DIR
    out.mkdir(parents=True, exist_ok=True)
    for name, document in build_all().items():
        (out / name).write_text(render(document), encoding="utf-8")
        sys.stdout.write(f"wrote {out / name}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
