"""Cryptographic primitives; the only code in the project that imports ``cryptography``/``argon2``.

Modules: :mod:`.canonical` (RFC 8785 bytes, base64url), :mod:`.ids` (ids, hashes, fingerprints,
short ids), :mod:`.kdf` (Argon2id, HKDF), :mod:`.aead` (AES-256-GCM, chunks, key wrap) and
:mod:`.sign` (Ed25519, X25519). Every decryption or verification failure raises
:class:`memories.errors.IntegrityError` with an opaque message.
"""

from __future__ import annotations

from memories.crypto.aead import (
    CHUNK_SIZE,
    KEY_SIZE,
    Sealer,
    associated_data,
    chunks_digest,
    new_key,
    open_chunks,
    seal,
    seal_chunks,
    seal_chunks_with_nonces,
    seal_with_nonce,
    unseal,
    unwrap_key,
    wipe,
    wrap_key,
)
from memories.crypto.canonical import b64u_decode, b64u_encode, canonical_bytes
from memories.crypto.ids import (
    digest,
    fingerprint,
    keyed_digest,
    new_id,
    resolve_short,
    short_id,
    tagged_hash,
)
from memories.crypto.kdf import (
    DEFAULT_MEMORY_KIB,
    DEFAULT_PARALLELISM,
    DEFAULT_TIME_COST,
    FLOOR_MEMORY_KIB,
    FLOOR_PARALLELISM,
    FLOOR_TIME_COST,
    KdfParams,
    derive_key,
    derive_subkey,
)
from memories.crypto.sign import ExchangeKey, SigningKey, verify, verify_canonical

__all__ = [
    "CHUNK_SIZE",
    "DEFAULT_MEMORY_KIB",
    "DEFAULT_PARALLELISM",
    "DEFAULT_TIME_COST",
    "FLOOR_MEMORY_KIB",
    "FLOOR_PARALLELISM",
    "FLOOR_TIME_COST",
    "KEY_SIZE",
    "ExchangeKey",
    "KdfParams",
    "Sealer",
    "SigningKey",
    "associated_data",
    "b64u_decode",
    "b64u_encode",
    "canonical_bytes",
    "chunks_digest",
    "derive_key",
    "derive_subkey",
    "digest",
    "fingerprint",
    "keyed_digest",
    "new_id",
    "new_key",
    "open_chunks",
    "resolve_short",
    "seal",
    "seal_chunks",
    "seal_chunks_with_nonces",
    "seal_with_nonce",
    "short_id",
    "tagged_hash",
    "unseal",
    "unwrap_key",
    "verify",
    "verify_canonical",
    "wipe",
    "wrap_key",
]
