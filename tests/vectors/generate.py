"""Write the known-answer vectors for our own formats: ``python -m tests.vectors.generate [DIR]``.

Every input is fixed: keys, nonces, salts and content are SHAKE-256 expansions of a label
(``fixed(label, n)`` below), so the output is byte-for-byte reproducible and another
implementation can regenerate the inputs from the labels alone. The tests rebuild each file with
:func:`build_all` and compare it to the committed JSON, then open/verify the committed values.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

from memories.crypto import (
    CHUNK_SIZE,
    KdfParams,
    SigningKey,
    associated_data,
    b64u_encode,
    canonical_bytes,
    chunks_digest,
    derive_key,
    derive_subkey,
    fingerprint,
    seal_chunks_with_nonces,
    tagged_hash,
    wrap_key,
)
from memories.crypto.aead import NONCE_SIZE, seal_with_nonce
from memories.crypto.kdf import FLOOR_MEMORY_KIB, FLOOR_PARALLELISM, FLOOR_TIME_COST

__all__ = ["VECTOR_DIR", "build_all", "fixed", "main", "render"]

VECTOR_DIR = Path(__file__).resolve().parent
FIXED_PREFIX = b"memories test vector/"
LARGE_CONTENT_LENGTH = 600 * 1024


def fixed(label: str, length: int) -> bytes:
    """Deterministic test bytes: SHAKE-256("memories test vector/" + label), first ``length``."""
    return hashlib.shake_256(FIXED_PREFIX + label.encode("utf-8")).digest(length)


def _nonces(label: str, count: int) -> list[bytes]:
    return [fixed(f"{label}/nonce/{index}", NONCE_SIZE) for index in range(count)]


def _chunk_case(
    name: str, label: str, content: bytes, chunk_size: int, *, full: bool
) -> dict[str, object]:
    key = fixed(f"{label}/key", 32)
    asset_id = fixed(f"{label}/asset", 16).hex()
    revision = tagged_hash("memories.revision", fixed(f"{label}/revision", 32))
    purpose = "revision.content"
    count = max(1, -(-len(content) // chunk_size))
    nonces = _nonces(label, count)
    sealed = seal_chunks_with_nonces(
        key,
        content,
        nonces,
        purpose=purpose,
        asset_id=asset_id,
        revision=revision,
        chunk_size=chunk_size,
    )
    chunks: list[dict[str, object]] = []
    for index, blob in enumerate(sealed):
        aad = associated_data(purpose, asset=asset_id, revision=revision, index=index, count=count)
        entry: dict[str, object] = {
            "index": index,
            "count": count,
            "nonce": nonces[index].hex(),
            "aad": aad.decode("utf-8"),
        }
        if full:
            entry["sealed"] = blob.hex()
        else:
            entry["sealed_length"] = len(blob)
            entry["sealed_sha256"] = hashlib.sha256(blob).hexdigest()
            entry["sealed_head"] = blob[:45].hex()
            entry["tag"] = blob[-16:].hex()
        chunks.append(entry)
    case: dict[str, object] = {
        "name": name,
        "key": key.hex(),
        "purpose": purpose,
        "asset_id": asset_id,
        "revision": revision,
        "chunk_size": chunk_size,
    }
    if full:
        case["plaintext"] = content.hex()
    else:
        case["plaintext_source"] = f"fixed({label + '/content'!r}, {len(content)})"
        case["plaintext_length"] = len(content)
        case["plaintext_sha256"] = hashlib.sha256(content).hexdigest()
    case["chunks"] = chunks
    case["chunks_digest"] = chunks_digest(sealed)
    return case


def build_chunked_aead() -> dict[str, object]:
    large = fixed("chunked/large/content", LARGE_CONTENT_LENGTH)
    return {
        "t": "memories.vectors.chunked_aead",
        "v": 1,
        "layout": "0x01 || nonce(12) || AES-256-GCM ciphertext || tag(16); GCM AAD = 0x01 || aad",
        "fixed": "fixed(label, n) = first n bytes of SHAKE-256('memories test vector/' + label)",
        "cases": [
            _chunk_case(
                "three chunks at a 16-byte chunk size",
                "chunked/small",
                b"memories keeps what matters, sealed in chunks.",
                16,
                full=True,
            ),
            _chunk_case("empty content is one empty chunk", "chunked/empty", b"", 16, full=True),
            _chunk_case(
                "600 KiB at the 256 KiB production chunk size",
                "chunked/large",
                large,
                CHUNK_SIZE,
                full=False,
            ),
        ],
    }


def build_key_wrap() -> dict[str, object]:
    cases: list[dict[str, object]] = []
    examples: list[tuple[str, str, str, dict[str, str | int]]] = [
        (
            "a master key under a password-derived key",
            "wrap/master",
            "store.master_key",
            {"store": fixed("wrap/master/store", 16).hex()},
        ),
        (
            "a revision data key under a vault epoch key",
            "wrap/data",
            "revision.data_key",
            {
                "vault": fixed("wrap/data/vault", 16).hex(),
                "epoch": 3,
                "asset": fixed("wrap/data/asset", 16).hex(),
            },
        ),
    ]
    for name, label, purpose, context in examples:
        kek = fixed(f"{label}/kek", 32)
        key = fixed(f"{label}/key", 32)
        nonce = fixed(f"{label}/nonce", NONCE_SIZE)
        aad = associated_data(purpose, **context)
        wrapped = seal_with_nonce(kek, nonce, key, aad)
        # The deterministic path must agree with what wrap_key would build around a random nonce.
        assert len(wrapped) == len(wrap_key(kek, key, purpose=purpose, **context))
        cases.append(
            {
                "name": name,
                "kek": kek.hex(),
                "key": key.hex(),
                "purpose": purpose,
                "context": context,
                "nonce": nonce.hex(),
                "aad": aad.decode("utf-8"),
                "wrapped": wrapped.hex(),
            }
        )
    return {
        "t": "memories.vectors.key_wrap",
        "v": 1,
        "rule": "wrapped = seal(kek, key, associated_data(purpose, **context))",
        "cases": cases,
    }


def signed_object() -> dict[str, object]:
    """The object signed in signature.json: tags, nesting, numbers, Unicode and encoded bytes."""
    return {
        "t": "memories.vector.signed",
        "v": 1,
        "asset": fixed("signature/asset", 16).hex(),
        "parents": [tagged_hash("memories.revision", fixed("signature/parent", 32))],
        "tombstone": False,
        "summary": "Café ☕ — 日本語 😀",
        "count": 9007199254740991,
        "ratio": 0.5,
        "nothing": None,
        "blob": b64u_encode(fixed("signature/blob", 20)),
        "nested": {"z": [], "a": {}, "\u20ac": "euro", "\r": "cr", "10": 1, "1": 2},
    }


def build_signature() -> dict[str, object]:
    seed = fixed("signature/seed", 32)
    key = SigningKey.from_private_bytes(seed)
    value = signed_object()
    message = canonical_bytes(value)
    return {
        "t": "memories.vectors.signature",
        "v": 1,
        "algorithm": "Ed25519 (RFC 8032) over RFC 8785 canonical JSON",
        "seed": seed.hex(),
        "public_key": key.public_bytes().hex(),
        "fingerprint": fingerprint(key.public_bytes()),
        "object": value,
        "canonical": message.decode("utf-8"),
        "canonical_hex": message.hex(),
        "signature": key.sign(message).hex(),
    }


def build_kdf() -> dict[str, object]:
    password = "Cafe\u0301 horse battery staple"
    params = KdfParams(
        time_cost=FLOOR_TIME_COST,
        memory_kib=FLOOR_MEMORY_KIB,
        parallelism=FLOOR_PARALLELISM,
        salt=fixed("kdf/salt", 16),
    )
    key = derive_key(password, params)
    master = fixed("kdf/master", 32)
    subkeys = [
        {"label": label, "length": 32, "subkey": derive_subkey(master, label).hex()}
        for label in ("state", "checkpoint", "row-id")
    ]
    return {
        "t": "memories.vectors.kdf",
        "v": 1,
        "argon2id": {
            "note": "str passwords are NFC-normalized, then UTF-8 encoded",
            "password": password,
            "password_utf8_after_nfc": "Caf\u00e9 horse battery staple".encode().hex(),
            "params": params.to_dict(),
            "key": key.hex(),
        },
        "hkdf": {
            "rule": "HKDF-SHA256(ikm=master, salt=None, info='memories/v1/' + label)",
            "master": master.hex(),
            "cases": subkeys,
        },
    }


def build_all() -> dict[str, dict[str, object]]:
    """Every vector file, by name."""
    return {
        "chunked_aead.json": build_chunked_aead(),
        "key_wrap.json": build_key_wrap(),
        "signature.json": build_signature(),
        "kdf.json": build_kdf(),
    }


def render(document: dict[str, object]) -> str:
    """The exact text written to disk."""
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Write every file into ``argv[0]`` (default: this folder). Returns the exit status."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) > 1 or (args and args[0].startswith("-")):
        sys.stderr.write("usage: python -m tests.vectors.generate [OUTPUT_DIR]\n")
        return 2
    out = Path(args[0]) if args else VECTOR_DIR
    out.mkdir(parents=True, exist_ok=True)
    for name, document in build_all().items():
        (out / name).write_text(render(document), encoding="utf-8")
        sys.stdout.write(f"wrote {out / name}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
