"""Our own known-answer vectors in tests/vectors/: reproducible, and they open and verify."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from memories.crypto import (
    KdfParams,
    SigningKey,
    associated_data,
    canonical_bytes,
    chunks_digest,
    derive_key,
    derive_subkey,
    fingerprint,
    open_chunks,
    seal_chunks_with_nonces,
    seal_with_nonce,
    unwrap_key,
    verify,
    verify_canonical,
)
from memories.errors import IntegrityError
from tests.vectors import generate

VECTORS = Path(generate.__file__).resolve().parent
REPO = VECTORS.parent.parent
NAMES = ["chunked_aead.json", "key_wrap.json", "signature.json", "kdf.json"]


def load(name: str) -> Any:
    return json.loads((VECTORS / name).read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def rebuilt() -> dict[str, dict[str, object]]:
    return generate.build_all()


@pytest.mark.parametrize("name", NAMES)
def test_committed_vectors_are_reproduced_byte_for_byte(
    name: str, rebuilt: dict[str, dict[str, object]]
) -> None:
    committed = (VECTORS / name).read_text(encoding="utf-8")
    assert generate.render(rebuilt[name]) == committed
    assert len(committed.encode("utf-8")) < 50_000


def test_generator_runs_as_a_module(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "tests.vectors.generate", str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    for name in NAMES:
        written = (tmp_path / name).read_text(encoding="utf-8")
        assert written == (VECTORS / name).read_text(encoding="utf-8")


def _chunk_cases(full: bool) -> list[dict[str, Any]]:
    return [case for case in load("chunked_aead.json")["cases"] if ("plaintext" in case) == full]


@pytest.mark.parametrize("case", _chunk_cases(full=True), ids=lambda case: case["name"])
def test_small_chunk_vectors_open_and_match_the_layout(case: dict[str, Any]) -> None:
    key = bytes.fromhex(case["key"])
    sealed = [bytes.fromhex(chunk["sealed"]) for chunk in case["chunks"]]
    context = {
        "purpose": case["purpose"],
        "asset_id": case["asset_id"],
        "revision": case["revision"],
    }
    plaintext = bytes.fromhex(case["plaintext"])
    assert open_chunks(key, sealed, **context) == plaintext
    assert chunks_digest(sealed) == case["chunks_digest"]
    pieces = []
    for chunk, blob in zip(case["chunks"], sealed, strict=True):
        aad = associated_data(
            case["purpose"],
            asset=case["asset_id"],
            revision=case["revision"],
            index=chunk["index"],
            count=chunk["count"],
        )
        assert chunk["aad"].encode("utf-8") == aad
        assert blob[0] == 0x01
        assert blob[1:13].hex() == chunk["nonce"]
        # Straight from the documented layout with a plain AES-GCM implementation.
        pieces.append(AESGCM(key).decrypt(blob[1:13], blob[13:], b"\x01" + aad))
    assert b"".join(pieces) == plaintext
    nonces = [bytes.fromhex(chunk["nonce"]) for chunk in case["chunks"]]
    again = seal_chunks_with_nonces(
        key, plaintext, nonces, chunk_size=case["chunk_size"], **context
    )
    assert again == sealed
    with pytest.raises(IntegrityError):
        open_chunks(key, sealed[::-1] if len(sealed) > 1 else [sealed[0][:-1]], **context)


@pytest.mark.parametrize("case", _chunk_cases(full=False), ids=lambda case: case["name"])
def test_production_size_chunk_vector_matches_its_digests(case: dict[str, Any]) -> None:
    key = bytes.fromhex(case["key"])
    content = generate.fixed("chunked/large/content", case["plaintext_length"])
    assert hashlib.sha256(content).hexdigest() == case["plaintext_sha256"]
    nonces = [bytes.fromhex(chunk["nonce"]) for chunk in case["chunks"]]
    context = {
        "purpose": case["purpose"],
        "asset_id": case["asset_id"],
        "revision": case["revision"],
    }
    sealed = seal_chunks_with_nonces(key, content, nonces, **context)
    assert case["chunk_size"] == 256 * 1024
    assert len(sealed) == len(case["chunks"]) == 3
    for chunk, blob in zip(case["chunks"], sealed, strict=True):
        assert len(blob) == chunk["sealed_length"]
        assert hashlib.sha256(blob).hexdigest() == chunk["sealed_sha256"]
        assert blob[:45].hex() == chunk["sealed_head"]
        assert blob[-16:].hex() == chunk["tag"]
    assert chunks_digest(sealed) == case["chunks_digest"]
    assert open_chunks(key, sealed, **context) == content


@pytest.mark.parametrize("case", load("key_wrap.json")["cases"], ids=lambda case: case["name"])
def test_key_wrap_vectors_unwrap_and_reproduce(case: dict[str, Any]) -> None:
    kek = bytes.fromhex(case["kek"])
    wrapped = bytes.fromhex(case["wrapped"])
    aad = associated_data(case["purpose"], **case["context"])
    assert case["aad"].encode("utf-8") == aad
    key = unwrap_key(kek, wrapped, purpose=case["purpose"], **case["context"])
    assert key.hex() == case["key"]
    assert seal_with_nonce(kek, bytes.fromhex(case["nonce"]), bytes(key), aad) == wrapped
    with pytest.raises(IntegrityError):
        unwrap_key(kek, wrapped, purpose=case["purpose"] + ".other", **case["context"])


def test_signature_vector_verifies_and_reproduces() -> None:
    vector = load("signature.json")
    public = bytes.fromhex(vector["public_key"])
    signature = bytes.fromhex(vector["signature"])
    message = canonical_bytes(vector["object"])
    assert message.hex() == vector["canonical_hex"]
    assert message.decode("utf-8") == vector["canonical"]
    key = SigningKey.from_private_bytes(bytes.fromhex(vector["seed"]))
    assert key.public_bytes() == public
    assert fingerprint(public) == vector["fingerprint"]
    assert key.sign(message) == signature
    verify(public, message, signature)
    verify_canonical(public, vector["object"], signature)
    tampered = {**vector["object"], "tombstone": True}
    with pytest.raises(IntegrityError):
        verify_canonical(public, tampered, signature)


def test_kdf_vector_derives_the_pinned_keys() -> None:
    vector = load("kdf.json")
    argon = vector["argon2id"]
    params = KdfParams.from_dict(argon["params"])
    assert derive_key(argon["password"], params).hex() == argon["key"]
    assert derive_key(bytes.fromhex(argon["password_utf8_after_nfc"]), params).hex() == argon["key"]
    master = bytes.fromhex(vector["hkdf"]["master"])
    for case in vector["hkdf"]["cases"]:
        assert derive_subkey(master, case["label"], case["length"]).hex() == case["subkey"]
