"""Ed25519 signatures (RFC 8032) and X25519 key agreement (RFC 7748)."""

from __future__ import annotations

import copy
import pickle

import pytest

from memories.crypto import (
    ExchangeKey,
    SigningKey,
    derive_subkey,
    fingerprint,
    verify,
    verify_canonical,
)
from memories.errors import IntegrityError, UsageError

SIGNATURE_FAILED = "signature verification failed"

# RFC 8032 §7.1: TEST 1, TEST 2, TEST 3 and TEST SHA(abc).
RFC8032 = [
    (
        "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
        "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a",
        "",
        "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46b"
        "d25bf5f0595bbe24655141438e7a100b",
    ),
    (
        "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb",
        "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c",
        "72",
        "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c"
        "387b2eaeb4302aeeb00d291612bb0c00",
    ),
    (
        "c5aa8df43f9f837bedb7442f31dcb7b166d38535076f094b85ce3a2e0b4458f7",
        "fc51cd8e6218a1a38da47ed00230f0580816ed13ba3303ac5deb911548908025",
        "af82",
        "6291d657deec24024827e69c3abe01a30ce548a284743a445e3680d7db5ac3ac18ff9b538d16f290ae67f760984dc659"
        "4a7c15e9716ed28dc027beceea1ec40a",
    ),
    (
        "833fe62409237b9d62ec77587520911e9a759cec1d19755b7da901b96dca3d42",
        "ec172b93ad5e563bf4932c70e1245034c35467ef2efd4d64ebf819683467e2bf",
        "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd"
        "454d4423643ce80e2a9ac94fa54ca49f",
        "dc2a4459e7369633a52b1bf277839a00201009a3efbf3ecb69bea2186c26b58909351fc9ac90b3ecfdfbc7c66431e030"
        "3dca179c138ac17ad9bef1177331a704",
    ),
]


@pytest.mark.parametrize(("seed", "public", "message", "signature"), RFC8032)
def test_ed25519_matches_rfc8032(seed: str, public: str, message: str, signature: str) -> None:
    key = SigningKey.from_private_bytes(bytes.fromhex(seed))
    assert key.public_bytes().hex() == public
    assert key.sign(bytes.fromhex(message)).hex() == signature
    assert verify(bytes.fromhex(public), bytes.fromhex(message), bytes.fromhex(signature)) is None
    assert key.private_bytes() == bytearray.fromhex(seed)
    assert key.fingerprint() == fingerprint(bytes.fromhex(public))


def _signed() -> tuple[SigningKey, bytes, bytes]:
    key = SigningKey.from_private_bytes(bytes.fromhex(RFC8032[2][0]))
    message = b"revision bytes"
    return key, message, key.sign(message)


def _flip(data: bytes, index: int) -> bytes:
    return data[:index] + bytes([data[index] ^ 0x01]) + data[index + 1 :]


@pytest.mark.parametrize(
    ("public", "message", "signature"),
    [
        ("key", "other message", "sig"),
        ("key", "message+1", "sig"),
        ("key", "empty", "sig"),
        ("key", "message", "sig flipped 0"),
        ("key", "message", "sig flipped 63"),
        ("key", "message", "sig truncated"),
        ("key", "message", "sig extended"),
        ("key", "message", "zero sig"),
        ("key", "message", "hex sig"),
        ("other key", "message", "sig"),
        ("key flipped", "message", "sig"),
        ("short key", "message", "sig"),
        ("long key", "message", "sig"),
        ("zero key", "message", "sig"),
        ("str key", "message", "sig"),
        ("key", "str message", "sig"),
        ("key", "message", "none sig"),
    ],
)
def test_verification_failures_raise_one_opaque_error(
    public: str, message: str, signature: str
) -> None:
    key, msg, sig = _signed()
    publics: dict[str, object] = {
        "key": key.public_bytes(),
        "other key": SigningKey.generate().public_bytes(),
        "key flipped": _flip(key.public_bytes(), 5),
        "short key": key.public_bytes()[:31],
        "long key": key.public_bytes() + b"\x00",
        "zero key": bytes(32),
        "str key": key.public_bytes().hex(),
    }
    messages: dict[str, object] = {
        "message": msg,
        "other message": b"another revision",
        "message+1": msg + b"\x00",
        "empty": b"",
        "str message": msg.decode(),
    }
    signatures: dict[str, object] = {
        "sig": sig,
        "sig flipped 0": _flip(sig, 0),
        "sig flipped 63": _flip(sig, 63),
        "sig truncated": sig[:63],
        "sig extended": sig + b"\x00",
        "zero sig": bytes(64),
        "hex sig": sig.hex(),
        "none sig": None,
    }
    with pytest.raises(IntegrityError) as caught:
        verify(publics[public], messages[message], signatures[signature])  # type: ignore[arg-type]
    assert caught.value.message == SIGNATURE_FAILED


def test_verify_accepts_the_untampered_triple() -> None:
    key, message, signature = _signed()
    assert verify(key.public_bytes(), message, signature) is None
    assert verify(bytearray(key.public_bytes()), bytearray(message), bytearray(signature)) is None


def test_canonical_signatures_ignore_key_order_but_not_values() -> None:
    key = SigningKey.generate()
    value = {"t": "memories.revision", "v": 1, "parents": ["sha256:" + "0" * 64], "n": 3}
    signature = key.sign_canonical(value)
    reordered = {"n": 3, "parents": ["sha256:" + "0" * 64], "v": 1, "t": "memories.revision"}
    assert verify_canonical(key.public_bytes(), reordered, signature) is None
    for changed in ({**value, "n": 4}, {**value, "extra": None}, {**value, "parents": []}):
        with pytest.raises(IntegrityError, match=SIGNATURE_FAILED):
            verify_canonical(key.public_bytes(), changed, signature)


def test_verify_canonical_turns_unencodable_values_into_integrity_errors() -> None:
    key = SigningKey.generate()
    signature = key.sign_canonical({"x": 1})
    with pytest.raises(IntegrityError, match=SIGNATURE_FAILED):
        verify_canonical(key.public_bytes(), {"x": float("nan")}, signature)


def test_sign_canonical_rejects_unencodable_values() -> None:
    with pytest.raises(UsageError):
        SigningKey.generate().sign_canonical({"raw": b"bytes"})


def test_signing_key_round_trips_and_compares_by_public_key() -> None:
    key = SigningKey.generate()
    seed = key.private_bytes()
    assert isinstance(seed, bytearray)
    assert len(seed) == 32
    again = SigningKey.from_private_bytes(seed)
    assert again == key
    assert hash(again) == hash(key)
    assert again.public_bytes() == key.public_bytes()
    assert SigningKey.generate() != key
    assert copy.deepcopy(key) is key
    assert copy.copy(key) is key


@pytest.mark.parametrize("data", [bytes(31), bytes(33), b"", "0" * 32, None])
def test_private_bytes_must_be_32_bytes(data: object) -> None:
    with pytest.raises(UsageError):
        SigningKey.from_private_bytes(data)  # type: ignore[arg-type]
    with pytest.raises(UsageError):
        ExchangeKey.from_private_bytes(data)  # type: ignore[arg-type]


def test_sign_rejects_text() -> None:
    with pytest.raises(UsageError):
        SigningKey.generate().sign("text")  # type: ignore[arg-type]


@pytest.mark.parametrize("factory", [SigningKey.generate, ExchangeKey.generate])
def test_repr_and_str_hide_private_key_material(factory: type) -> None:
    key = factory()
    seed = bytes(key.private_bytes())
    for text in (repr(key), str(key), f"{key!r:>10}", repr([key])):
        assert seed.hex() not in text
        assert seed.hex()[:8] not in text
        assert repr(seed) not in text
        assert key.fingerprint()[:23] in text
    with pytest.raises(TypeError, match="cannot be pickled"):
        pickle.dumps(key)


# RFC 7748 §5.2 (two scalar multiplications) and §6.1 (Alice and Bob).
RFC7748_SCALAR_MULT = [
    (
        "a546e36bf0527c9d3b16154b82465edd62144c0ac1fc5a18506a2244ba449ac4",
        "e6db6867583030db3594c1a424b15f7c726624ec26b3353b10a903a6d0ab1c4c",
        "c3da55379de9c6908e94ea4df28d084f32eccf03491c71f754b4075577a28552",
    ),
    (
        "4b66e9d4d1b4673c5ad22691957d6af5c11b6421e0ea01d42ca4169e7918ba0d",
        "e5210f12786811d3f4b7959d0538ae2c31dbe7106fc03c3efc4cd549c715a493",
        "95cbde9476e8907d7aade45cb4b873f88b595a68799fa152e6f8f7647aac7957",
    ),
]


@pytest.mark.parametrize(("scalar", "u", "output"), RFC7748_SCALAR_MULT)
def test_x25519_matches_rfc7748_scalar_multiplication(scalar: str, u: str, output: str) -> None:
    key = ExchangeKey.from_private_bytes(bytes.fromhex(scalar))
    assert key.exchange(bytes.fromhex(u)).hex() == output


def test_x25519_matches_rfc7748_alice_and_bob() -> None:
    alice = ExchangeKey.from_private_bytes(
        bytes.fromhex("77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a")
    )
    bob = ExchangeKey.from_private_bytes(
        bytes.fromhex("5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb")
    )
    assert alice.public_bytes().hex() == (
        "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a"
    )
    assert bob.public_bytes().hex() == (
        "de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f"
    )
    shared = "4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742"
    assert alice.exchange(bob.public_bytes()).hex() == shared
    assert bob.exchange(alice.public_bytes()).hex() == shared
    assert isinstance(alice.exchange(bob.public_bytes()), bytearray)


def test_exchange_then_hkdf_gives_both_sides_one_transport_key() -> None:
    alice, bob = ExchangeKey.generate(), ExchangeKey.generate()
    left = derive_subkey(alice.exchange(bob.public_bytes()), "transport")
    right = derive_subkey(bob.exchange(alice.public_bytes()), "transport")
    assert left == right
    assert left != derive_subkey(alice.exchange(ExchangeKey.generate().public_bytes()), "transport")


# Points of small order on Curve25519; each forces an all-zero shared secret.
LOW_ORDER_POINTS = [
    "0000000000000000000000000000000000000000000000000000000000000000",
    "0100000000000000000000000000000000000000000000000000000000000000",
    "e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800",
    "5f9c95bca3508c24b1d0b1559c83ef5b04445cc4581c8e86d8224eddd09f1157",
    "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
]


@pytest.mark.parametrize("point", LOW_ORDER_POINTS)
def test_exchange_refuses_low_order_points(point: str) -> None:
    with pytest.raises(IntegrityError, match="key agreement failed"):
        ExchangeKey.generate().exchange(bytes.fromhex(point))


@pytest.mark.parametrize("peer", [bytes(31), bytes(33), b"", "k" * 32, None])
def test_exchange_refuses_malformed_peer_keys(peer: object) -> None:
    with pytest.raises(IntegrityError, match="key agreement failed"):
        ExchangeKey.generate().exchange(peer)  # type: ignore[arg-type]


def test_exchange_key_round_trips() -> None:
    key = ExchangeKey.generate()
    again = ExchangeKey.from_private_bytes(key.private_bytes())
    assert again == key
    assert again.public_bytes() == key.public_bytes()
    assert ExchangeKey.generate() != key
    assert copy.deepcopy(key) is key
