"""AES-256-GCM blobs, chunked content and key wrapping: layout, round trips and tampering."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from hypothesis import given, settings
from hypothesis import strategies as st

from memories.crypto import (
    CHUNK_SIZE,
    KEY_SIZE,
    Sealer,
    associated_data,
    canonical_bytes,
    chunks_digest,
    digest,
    new_key,
    open_chunks,
    seal,
    seal_chunks,
    seal_chunks_with_nonces,
    seal_with_nonce,
    tagged_hash,
    unseal,
    unwrap_key,
    wipe,
    wrap_key,
)
from memories.crypto.aead import chunk_count
from memories.errors import IntegrityError, UsageError

OPAQUE = "decryption failed: the data is corrupt or the key is wrong"
KEY = bytes(range(32))
OTHER_KEY = bytes(range(1, 33))
CONTEXT = {"purpose": "revision.content", "asset_id": "a" * 32, "revision": "sha256:" + "b" * 64}


def assert_opaque_failure(action: Callable[[], object]) -> None:
    with pytest.raises(IntegrityError) as caught:
        action()
    assert caught.value.message == OPAQUE


def test_constants() -> None:
    assert KEY_SIZE == 32
    assert CHUNK_SIZE == 256 * 1024


def test_blob_layout_is_marker_nonce_ciphertext_tag() -> None:
    aad = associated_data("test", n=1)
    blob = seal(KEY, b"hello world", aad)
    assert blob[0] == 0x01
    assert len(blob) == 1 + 12 + len(b"hello world") + 16
    # Any AES-GCM implementation opens it from the documented layout: AAD = marker || aad.
    plain = AESGCM(KEY).decrypt(blob[1:13], blob[13:], b"\x01" + aad)
    assert plain == b"hello world"
    with pytest.raises(InvalidTag):
        AESGCM(KEY).decrypt(blob[1:13], blob[13:], aad)


def test_nonces_are_random() -> None:
    blobs = {seal(KEY, b"same", b"aad") for _ in range(50)}
    assert len(blobs) == 50
    assert len({blob[1:13] for blob in blobs}) == 50


@settings(max_examples=150, deadline=None)
@given(
    key=st.binary(min_size=32, max_size=32),
    plaintext=st.binary(max_size=600),
    aad=st.binary(max_size=80),
)
def test_seal_unseal_round_trip(key: bytes, plaintext: bytes, aad: bytes) -> None:
    blob = seal(bytearray(key), plaintext, aad)
    assert unseal(key, blob, aad) == plaintext
    assert unseal(bytearray(key), bytearray(blob), aad) == plaintext


@settings(max_examples=200, deadline=None)
@given(plaintext=st.binary(max_size=100), data=st.data())
def test_any_flipped_bit_is_detected(plaintext: bytes, data: st.DataObject) -> None:
    blob = bytearray(seal(KEY, plaintext, b"ctx"))
    index = data.draw(st.integers(min_value=0, max_value=len(blob) - 1))
    blob[index] ^= data.draw(st.sampled_from([0x01, 0x80, 0xFF]))
    assert_opaque_failure(lambda: unseal(KEY, bytes(blob), b"ctx"))


@pytest.mark.parametrize(
    ("key", "mangle", "aad"),
    [
        (OTHER_KEY, lambda b: b, b"ctx"),
        (KEY, lambda b: b, b"other ctx"),
        (KEY, lambda b: b, b""),
        (KEY, lambda b: b[:-1], b"ctx"),
        (KEY, lambda b: b + b"\x00", b"ctx"),
        (KEY, lambda b: b[:28], b"ctx"),
        (KEY, lambda b: b[:1], b"ctx"),
        (KEY, lambda b: b"", b"ctx"),
        (KEY, lambda b: b"\x02" + b[1:], b"ctx"),
        (KEY, lambda b: b"\x00" + b[1:], b"ctx"),
        (KEY[:16], lambda b: b, b"ctx"),
        (KEY + b"\x00", lambda b: b, b"ctx"),
        (b"", lambda b: b, b"ctx"),
        ("k" * 32, lambda b: b, b"ctx"),
        (KEY, lambda b: b.hex(), b"ctx"),
        (KEY, lambda b: None, b"ctx"),
        (KEY, lambda b: b, "ctx"),
    ],
)
def test_unseal_failures_are_one_opaque_integrity_error(
    key: object, mangle: Callable[[bytes], object], aad: object
) -> None:
    blob = seal(KEY, b"secret plaintext", b"ctx")
    assert_opaque_failure(lambda: unseal(key, mangle(blob), aad))  # type: ignore[arg-type]


def test_failure_message_reveals_nothing() -> None:
    blob = seal(KEY, b"top secret plaintext", b"ctx")
    with pytest.raises(IntegrityError) as caught:
        unseal(OTHER_KEY, blob, b"ctx")
    text = str(caught.value) + repr(caught.value)
    assert "top secret" not in text
    assert KEY.hex() not in text
    assert blob.hex()[:16] not in text


@pytest.mark.parametrize("key", [bytes(16), bytes(33), b"", "k" * 32])
def test_seal_rejects_bad_keys_as_usage_errors(key: object) -> None:
    with pytest.raises(UsageError, match="32 bytes"):
        seal(key, b"x", b"")  # type: ignore[arg-type]


def test_seal_rejects_non_bytes() -> None:
    with pytest.raises(UsageError):
        seal(KEY, "text", b"")  # type: ignore[arg-type]
    with pytest.raises(UsageError):
        seal(KEY, b"x", "aad")  # type: ignore[arg-type]


def test_seal_with_nonce_is_deterministic_and_opens_normally() -> None:
    nonce = bytes(range(12))
    first = seal_with_nonce(KEY, nonce, b"payload", b"aad")
    assert first == seal_with_nonce(KEY, nonce, b"payload", b"aad")
    assert first[1:13] == nonce
    assert unseal(KEY, first, b"aad") == b"payload"
    for bad in (bytes(11), bytes(13), b""):
        with pytest.raises(UsageError):
            seal_with_nonce(KEY, bad, b"payload", b"aad")


def test_associated_data_is_canonical_json_with_type_and_version() -> None:
    aad = associated_data("revision.content", asset="a1", revision="r1", index=0, count=2)
    assert aad == (
        b'{"asset":"a1","count":2,"index":0,"purpose":"revision.content",'
        b'"revision":"r1","t":"memories.aad","v":1}'
    )
    assert associated_data("x") == b'{"purpose":"x","t":"memories.aad","v":1}'
    assert associated_data("x", n=1) != associated_data("x", n="1")


_FIELD_NAMES = st.text(min_size=1, max_size=12).filter(lambda n: n not in ("t", "v", "purpose"))
_FIELD_VALUES = st.one_of(
    st.text(max_size=40),
    st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=40),
    st.integers(min_value=-(2**53) + 1, max_value=2**53 - 1),
)


@settings(max_examples=300)
@given(
    purpose=st.text(min_size=1, max_size=30),
    fields=st.dictionaries(_FIELD_NAMES, _FIELD_VALUES, max_size=6),
)
def test_associated_data_is_exactly_the_rfc8785_encoding(
    purpose: str, fields: dict[str, str | int]
) -> None:
    # The plain-text shortcut and the general encoder must never disagree on a single byte.
    try:
        expected = canonical_bytes({"t": "memories.aad", "v": 1, "purpose": purpose, **fields})
    except UsageError:  # lone surrogates have no canonical form either way
        with pytest.raises(UsageError):
            associated_data(purpose, **fields)
        return
    assert associated_data(purpose, **fields) == expected


def test_associated_data_outside_safe_integers_is_refused() -> None:
    with pytest.raises(UsageError):
        associated_data("x", n=2**53)


@pytest.mark.parametrize(
    ("purpose", "fields"),
    [
        ("", {}),
        ("x", {"t": "memories.other"}),
        ("x", {"v": 2}),
        ("x", {"flag": True}),
        ("x", {"value": 1.5}),
        ("x", {"value": b"bytes"}),
        ("x", {"value": None}),
    ],
)
def test_associated_data_rejects_bad_fields(purpose: str, fields: dict[str, object]) -> None:
    with pytest.raises(UsageError):
        associated_data(purpose, **fields)  # type: ignore[arg-type]


def test_new_key_and_wipe() -> None:
    key = new_key()
    assert isinstance(key, bytearray)
    assert len(key) == 32
    assert new_key() != key
    alias = key
    wipe(key)
    assert alias is key
    assert key == bytearray(32)
    with pytest.raises(UsageError):
        wipe(b"immutable")  # type: ignore[arg-type]


def test_wipe_zeroes_several_buffers_in_place() -> None:
    first, second = new_key(), bytearray(b"subkey material!")
    wipe(first, second)
    assert first == bytearray(32) and second == bytearray(16)
    third = new_key()
    with pytest.raises(UsageError):
        wipe(third, b"immutable")  # type: ignore[arg-type]
    assert third == bytearray(32), "buffers before the bad argument are wiped all the same"


def test_a_closed_sealer_forgets_its_cipher_and_refuses_to_work() -> None:
    sealer = Sealer(KEY)
    aad = associated_data("test")
    blob = sealer.seal(b"data", aad)
    assert sealer.unseal(blob, aad) == b"data"
    sealer.close()
    assert sealer.closed and "hidden" not in repr(sealer)
    with pytest.raises(UsageError):
        sealer.seal(b"data", aad)
    with pytest.raises(IntegrityError, match=OPAQUE):
        sealer.unseal(blob, aad)
    sealer.close()  # idempotent


def test_chunk_count_boundaries() -> None:
    assert chunk_count(0) == 1
    assert chunk_count(1) == 1
    assert chunk_count(CHUNK_SIZE) == 1
    assert chunk_count(CHUNK_SIZE + 1) == 2
    assert chunk_count(600 * 1024) == 3


@pytest.mark.parametrize(
    ("length", "sizes"),
    [
        (0, [0]),
        (CHUNK_SIZE, [CHUNK_SIZE]),
        (CHUNK_SIZE + 1, [CHUNK_SIZE, 1]),
        (600 * 1024, [CHUNK_SIZE, CHUNK_SIZE, 600 * 1024 - 2 * CHUNK_SIZE]),
    ],
)
def test_chunks_are_256_kib_and_round_trip(length: int, sizes: list[int]) -> None:
    content = bytes(i % 251 for i in range(length))
    chunks = seal_chunks(KEY, content, **CONTEXT)
    assert [len(chunk) - 29 for chunk in chunks] == sizes
    assert all(chunk[0] == 0x01 for chunk in chunks)
    assert open_chunks(KEY, chunks, **CONTEXT) == content


def test_each_chunk_binds_position_count_and_context() -> None:
    chunks = seal_chunks(KEY, b"0123456789abcdefXYZ", chunk_size=8, **CONTEXT)
    assert len(chunks) == 3
    for index, chunk in enumerate(chunks):
        aad = associated_data(
            CONTEXT["purpose"],
            asset=CONTEXT["asset_id"],
            revision=CONTEXT["revision"],
            index=index,
            count=3,
        )
        assert unseal(KEY, chunk, aad) == b"0123456789abcdefXYZ"[index * 8 : index * 8 + 8]


def _small_chunks(**overrides: str) -> list[bytes]:
    context = {**CONTEXT, **overrides}
    return seal_chunks(KEY, b"A" * 20 + b"B" * 20 + b"C" * 20, chunk_size=20, **context)


TAMPERS: dict[str, Callable[[list[bytes]], list[bytes]]] = {
    "flip a byte in chunk 0": lambda c: [
        bytes([c[0][0]]) + bytes([c[0][1] ^ 1]) + c[0][2:],
        *c[1:],
    ],
    "flip the last byte of chunk 1": lambda c: [c[0], c[1][:-1] + bytes([c[1][-1] ^ 1]), c[2]],
    "flip a ciphertext byte in chunk 2": lambda c: [
        c[0],
        c[1],
        c[2][:20] + bytes([c[2][20] ^ 1]) + c[2][21:],
    ],
    "drop the last chunk": lambda c: c[:2],
    "drop the first chunk": lambda c: c[1:],
    "keep only the first chunk": lambda c: c[:1],
    "swap two chunks": lambda c: [c[1], c[0], c[2]],
    "reverse": lambda c: c[::-1],
    "duplicate a chunk in place": lambda c: [c[0], c[0], c[2]],
    "append a duplicate": lambda c: [*c, c[2]],
    "empty list": lambda c: [],
    "splice from another revision": lambda c: [
        c[0],
        _small_chunks(revision="sha256:" + "c" * 64)[1],
        c[2],
    ],
    "splice from another asset": lambda c: [c[0], c[1], _small_chunks(asset_id="d" * 32)[2]],
    "splice from another purpose": lambda c: [_small_chunks(purpose="file.content")[0], c[1], c[2]],
    "append a chunk from another revision": lambda c: [
        *c,
        _small_chunks(revision="sha256:" + "c" * 64)[2],
    ],
    "truncate a chunk": lambda c: [c[0], c[1][:28], c[2]],
}


@pytest.mark.parametrize("tamper", sorted(TAMPERS))
def test_chunk_tampering_is_detected(tamper: str) -> None:
    chunks = _small_chunks()
    assert open_chunks(KEY, chunks, **CONTEXT) == b"A" * 20 + b"B" * 20 + b"C" * 20
    assert_opaque_failure(lambda: open_chunks(KEY, TAMPERS[tamper](chunks), **CONTEXT))


@pytest.mark.parametrize(
    "context",
    [
        {**CONTEXT, "purpose": "file.content"},
        {**CONTEXT, "asset_id": "e" * 32},
        {**CONTEXT, "revision": "sha256:" + "f" * 64},
    ],
)
def test_opening_under_another_context_fails(context: dict[str, str]) -> None:
    assert_opaque_failure(lambda: open_chunks(KEY, _small_chunks(), **context))


def test_opening_with_the_wrong_key_fails() -> None:
    assert_opaque_failure(lambda: open_chunks(OTHER_KEY, _small_chunks(), **CONTEXT))
    assert_opaque_failure(lambda: open_chunks(KEY[:31], _small_chunks(), **CONTEXT))


def test_chunks_passed_as_one_blob_fail() -> None:
    chunks = _small_chunks()
    assert_opaque_failure(lambda: open_chunks(KEY, chunks[0], **CONTEXT))  # type: ignore[arg-type]


@pytest.mark.parametrize("field", ["purpose", "asset_id", "revision"])
def test_chunk_context_must_be_named(field: str) -> None:
    context = {**CONTEXT, field: ""}
    with pytest.raises(UsageError):
        seal_chunks(KEY, b"x", **context)
    with pytest.raises(UsageError):
        open_chunks(KEY, _small_chunks(), **context)


@pytest.mark.parametrize("size", [0, -1, True])
def test_chunk_size_must_be_positive(size: int) -> None:
    with pytest.raises(UsageError):
        seal_chunks(KEY, b"x", chunk_size=size, **CONTEXT)


def test_chunks_digest_covers_every_chunk_in_order() -> None:
    chunks = _small_chunks()
    expected = tagged_hash("memories.chunks", canonical_bytes([digest(chunk) for chunk in chunks]))
    assert chunks_digest(chunks) == expected
    assert chunks_digest(list(chunks)) == expected
    assert chunks_digest(chunks[::-1]) != expected
    assert chunks_digest(chunks[:2]) != expected
    assert chunks_digest([chunks[0], chunks[1], chunks[2] + b"\x00"]) != expected
    # Fresh nonces make every sealing of the same content distinct.
    assert chunks_digest(_small_chunks()) != expected


WRAP_CONTEXT = {"vault": "v" * 32, "epoch": 7}


def test_wrap_unwrap_round_trip() -> None:
    data_key = new_key()
    wrapped = wrap_key(KEY, data_key, purpose="revision.data_key", **WRAP_CONTEXT)
    assert len(wrapped) == 1 + 12 + 32 + 16
    assert data_key.hex() not in wrapped.hex()
    opened = unwrap_key(bytearray(KEY), wrapped, purpose="revision.data_key", **WRAP_CONTEXT)
    assert isinstance(opened, bytearray)
    assert opened == data_key
    # wrap_key is exactly seal() with the canonical associated data.
    aad = associated_data("revision.data_key", **WRAP_CONTEXT)
    assert unseal(KEY, wrapped, aad) == bytes(data_key)


@pytest.mark.parametrize(
    ("kek", "purpose", "context"),
    [
        (OTHER_KEY, "revision.data_key", WRAP_CONTEXT),
        (KEY[:16], "revision.data_key", WRAP_CONTEXT),
        (KEY, "store.master_key", WRAP_CONTEXT),
        (KEY, "revision.data_key", {**WRAP_CONTEXT, "epoch": 8}),
        (KEY, "revision.data_key", {"vault": "v" * 32}),
        (KEY, "revision.data_key", {**WRAP_CONTEXT, "asset": "x"}),
    ],
)
def test_unwrap_fails_for_another_key_purpose_or_context(
    kek: bytes, purpose: str, context: dict[str, str | int]
) -> None:
    wrapped = wrap_key(KEY, new_key(), purpose="revision.data_key", **WRAP_CONTEXT)
    assert_opaque_failure(lambda: unwrap_key(kek, wrapped, purpose=purpose, **context))


def test_unwrap_rejects_tampered_or_wrong_sized_keys() -> None:
    wrapped = wrap_key(KEY, new_key(), purpose="p")
    for index in (0, 1, 13, 40, len(wrapped) - 1):
        tampered = bytearray(wrapped)
        tampered[index] ^= 0x01
        assert_opaque_failure(lambda t=tampered: unwrap_key(KEY, bytes(t), purpose="p"))
    # A valid ciphertext under the right key and context whose plaintext is not a 32-byte key.
    for size in (16, 31, 33, 64):
        not_a_key = seal(KEY, bytes(size), associated_data("p"))
        assert_opaque_failure(lambda b=not_a_key: unwrap_key(KEY, b, purpose="p"))
    assert_opaque_failure(lambda: unwrap_key(KEY, wrapped.hex(), purpose="p"))  # type: ignore[arg-type]


@pytest.mark.parametrize("key", [bytes(16), bytes(33), b"", "k" * 32])
def test_wrap_key_only_wraps_32_byte_keys(key: object) -> None:
    with pytest.raises(UsageError):
        wrap_key(KEY, key, purpose="p")  # type: ignore[arg-type]


def test_deterministic_chunk_sealing_needs_one_good_nonce_per_chunk() -> None:
    nonces = [bytes([i]) * 12 for i in range(3)]
    chunks = seal_chunks_with_nonces(KEY, b"x" * 40, nonces, chunk_size=16, **CONTEXT)
    assert [chunk[1:13] for chunk in chunks] == nonces
    assert open_chunks(KEY, chunks, **CONTEXT) == b"x" * 40
    with pytest.raises(UsageError, match="3 nonces are needed"):
        seal_chunks_with_nonces(KEY, b"x" * 40, nonces[:2], chunk_size=16, **CONTEXT)
    with pytest.raises(UsageError, match="12 bytes"):
        seal_chunks_with_nonces(KEY, b"x" * 40, [*nonces[:2], b"short"], chunk_size=16, **CONTEXT)
