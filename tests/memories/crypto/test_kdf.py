"""Argon2id password keys, parameter checks, and HKDF subkeys."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import pytest

from memories.crypto import (
    DEFAULT_MEMORY_KIB,
    DEFAULT_PARALLELISM,
    DEFAULT_TIME_COST,
    FLOOR_MEMORY_KIB,
    FLOOR_PARALLELISM,
    FLOOR_TIME_COST,
    KdfParams,
    b64u_encode,
    derive_key,
    derive_subkey,
)
from memories.crypto.kdf import _hkdf_sha256
from memories.errors import IntegrityError, UsageError


def floor_params(salt: bytes = b"\x07" * 16) -> KdfParams:
    return KdfParams(FLOOR_TIME_COST, FLOOR_MEMORY_KIB, FLOOR_PARALLELISM, salt)


# RFC 5869 Appendix A, test cases 1-3 (SHA-256).
RFC5869 = [
    (
        bytes([0x0B] * 22),
        bytes(range(0x00, 0x0D)),
        bytes(range(0xF0, 0xFA)),
        42,
        "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865",
    ),
    (
        bytes(range(0x00, 0x50)),
        bytes(range(0x60, 0xB0)),
        bytes(range(0xB0, 0x100)),
        82,
        "b11e398dc80327a1c8e7f78c596a49344f012eda2d4efad8a050cc4c19afa97c"
        "59045a99cac7827271cb41c65e590e09da3275600c2f09b8367793a9aca3db71"
        "cc30c58179ec3e87c14c01d5c1f3434f1d87",
    ),
    (
        bytes([0x0B] * 22),
        b"",
        b"",
        42,
        "8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8",
    ),
]


@pytest.mark.parametrize(("ikm", "salt", "info", "length", "okm"), RFC5869)
def test_hkdf_matches_rfc5869(ikm: bytes, salt: bytes, info: bytes, length: int, okm: str) -> None:
    assert _hkdf_sha256(ikm, salt=salt, info=info, length=length).hex() == okm


def test_hkdf_without_salt_equals_an_all_zero_salt_as_rfc5869_says() -> None:
    ikm, _, _, length, okm = RFC5869[2]
    assert _hkdf_sha256(ikm, salt=None, info=b"", length=length).hex() == okm


def test_derive_subkey_is_hkdf_with_the_memories_info_prefix() -> None:
    master = bytearray(range(32))
    subkey = derive_subkey(master, "state")
    assert isinstance(subkey, bytearray)
    assert subkey == _hkdf_sha256(master, salt=None, info=b"memories/v1/state", length=32)
    assert derive_subkey(master, "state") == subkey
    assert derive_subkey(master, "checkpoint") != subkey
    assert derive_subkey(bytes(31) + b"\x01", "state") != subkey
    assert len(derive_subkey(master, "long", length=64)) == 64
    # A shorter output is a prefix of a longer one with the same info (HKDF-Expand).
    assert derive_subkey(master, "long", length=64)[:16] == derive_subkey(master, "long", 16)


@pytest.mark.parametrize(
    ("master", "label", "length"),
    [
        (b"short", "state", 32),
        ("text" * 8, "state", 32),
        (bytes(32), "", 32),
        (bytes(32), "\ud800", 32),
        (bytes(32), "state", 0),
        (bytes(32), "state", 255 * 32 + 1),
    ],
)
def test_derive_subkey_rejects_bad_arguments(master: object, label: str, length: int) -> None:
    with pytest.raises(UsageError):
        derive_subkey(master, label, length)  # type: ignore[arg-type]


def _argon2id_with_secret_and_ad(
    password: bytes, salt: bytes, secret: bytes, ad: bytes, t: int, m: int, p: int, length: int
) -> bytes:
    """Drive the argon2 C library that derive_key uses through its full context.

    argon2-cffi's raw API has no secret/associated-data parameters, which RFC 9106's vectors
    need, so this test fills an ``argon2_context`` itself.
    """
    from argon2.low_level import ARGON2_VERSION, Type, core, ffi, lib

    out = ffi.new("uint8_t[]", length)
    buffers = {
        name: ffi.new("uint8_t[]", value)
        for name, value in (("pwd", password), ("salt", salt), ("secret", secret), ("ad", ad))
    }
    ctx = ffi.new(
        "argon2_context *",
        {
            "out": out,
            "outlen": length,
            "pwd": buffers["pwd"],
            "pwdlen": len(password),
            "salt": buffers["salt"],
            "saltlen": len(salt),
            "secret": buffers["secret"],
            "secretlen": len(secret),
            "ad": buffers["ad"],
            "adlen": len(ad),
            "t_cost": t,
            "m_cost": m,
            "lanes": p,
            "threads": p,
            "version": ARGON2_VERSION,
            "allocate_cbk": ffi.NULL,
            "free_cbk": ffi.NULL,
            "flags": lib.ARGON2_DEFAULT_FLAGS,
        },
    )
    assert core(ctx, Type.ID.value) == lib.ARGON2_OK
    return bytes(ffi.buffer(out, length))


def test_argon2id_library_matches_rfc9106_section_5_3() -> None:
    tag = _argon2id_with_secret_and_ad(
        password=b"\x01" * 32,
        salt=b"\x02" * 16,
        secret=b"\x03" * 8,
        ad=b"\x04" * 12,
        t=3,
        m=32,
        p=4,
        length=32,
    )
    assert tag.hex() == "0d640df58d78766c08c037a34a8b53c9d01ef0452d75b65eb52520e96b01e659"


def test_derive_key_equals_the_library_without_secret_or_ad() -> None:
    params = floor_params()
    expected = _argon2id_with_secret_and_ad(
        b"pass phrase", params.salt, b"", b"", params.time_cost, params.memory_kib, 1, 32
    )
    assert derive_key("pass phrase", params) == bytearray(expected)


def test_derive_key_agrees_with_an_independent_argon2id() -> None:
    argon2_module = pytest.importorskip("cryptography.hazmat.primitives.kdf.argon2")
    from cryptography.exceptions import UnsupportedAlgorithm

    params = floor_params()
    try:
        other = argon2_module.Argon2id(
            salt=params.salt, length=32, iterations=1, lanes=1, memory_cost=FLOOR_MEMORY_KIB
        )
    except UnsupportedAlgorithm:
        pytest.skip("this OpenSSL build has no Argon2id")
    assert derive_key(b"pass phrase", params) == bytearray(other.derive(b"pass phrase"))


def test_derive_key_normalizes_str_passwords_to_nfc() -> None:
    params = floor_params()
    composed = derive_key("Caf\u00e9", params)
    assert derive_key("Cafe\u0301", params) == composed
    assert derive_key("Caf\u00e9".encode(), params) == composed
    assert derive_key(bytearray("Caf\u00e9".encode()), params) == composed
    assert isinstance(composed, bytearray)
    assert len(composed) == 32
    assert derive_key("Cafe", params) != composed
    assert derive_key("Caf\u00e9", floor_params(salt=b"\x08" * 16)) != composed


@pytest.mark.parametrize("password", ["", b"", "\ud800", 1234])
def test_derive_key_rejects_bad_passwords(password: object) -> None:
    with pytest.raises(UsageError) as caught:
        derive_key(password, floor_params())  # type: ignore[arg-type]
    assert "1234" not in caught.value.message


def test_generate_uses_rfc9106_defaults_and_fresh_salts() -> None:
    params = KdfParams.generate()
    assert (params.time_cost, params.memory_kib, params.parallelism) == (3, 65536, 4)
    assert (DEFAULT_TIME_COST, DEFAULT_MEMORY_KIB, DEFAULT_PARALLELISM) == (3, 65536, 4)
    assert params.version == 19
    assert len(params.salt) == 16
    assert KdfParams.generate().salt != params.salt
    params.check()


@pytest.mark.parametrize(
    "costs",
    [
        {"time_cost": 0},
        {"memory_kib": FLOOR_MEMORY_KIB - 1},
        {"parallelism": 0},
        {"time_cost": 101},
        {"memory_kib": 4 * 1024 * 1024 + 1},
        {"parallelism": 65},
    ],
)
def test_generate_refuses_parameters_out_of_range(costs: dict[str, int]) -> None:
    base = {
        "time_cost": FLOOR_TIME_COST,
        "memory_kib": FLOOR_MEMORY_KIB,
        "parallelism": FLOOR_PARALLELISM,
    }
    with pytest.raises(UsageError, match="not allowed"):
        KdfParams.generate(**{**base, **costs})


CRAFTED = [
    {"time_cost": 0},
    {"memory_kib": 8},
    {"memory_kib": 2**40},
    {"parallelism": 0},
    {"parallelism": 1000},
    {"time_cost": 10**9},
    {"salt": b"\x00" * 8},
    {"salt": b"\x00" * 65},
    {"version": 16},
    {"time_cost": True},
    {"memory_kib": 65536.0},
    {"salt": "not bytes"},
]


@pytest.mark.parametrize("change", CRAFTED)
def test_check_and_derive_refuse_crafted_parameters(change: dict[str, object]) -> None:
    crafted = dataclasses.replace(floor_params(), **change)  # type: ignore[arg-type]
    with pytest.raises(IntegrityError, match="below the safe minimum") as caught:
        crafted.check()
    assert caught.value.code == "integrity"
    # derive_key checks first, so an absurd header never reaches the allocator.
    with pytest.raises(IntegrityError):
        derive_key("password", crafted)


def test_floor_parameters_pass_the_check() -> None:
    floor_params().check()


def test_to_dict_round_trips() -> None:
    params = KdfParams.generate(time_cost=2, memory_kib=FLOOR_MEMORY_KIB, parallelism=2)
    data = params.to_dict()
    assert data == {
        "alg": "argon2id",
        "version": 19,
        "time_cost": 2,
        "memory_kib": FLOOR_MEMORY_KIB,
        "parallelism": 2,
        "salt": b64u_encode(params.salt),
    }
    assert KdfParams.from_dict(data) == params


def _good() -> dict[str, object]:
    return floor_params().to_dict()


@pytest.mark.parametrize(
    "crafted",
    [
        {k: v for k, v in _good().items() if k != "salt"},
        {**_good(), "extra": 1},
        {**_good(), "alg": "argon2i"},
        {**_good(), "alg": None},
        {**_good(), "time_cost": "3"},
        {**_good(), "time_cost": True},
        {**_good(), "memory_kib": 65536.0},
        {**_good(), "parallelism": None},
        {**_good(), "version": "19"},
        {**_good(), "salt": b"\x07" * 16},
        {**_good(), "salt": b64u_encode(b"\x07" * 16) + "=="},
        {**_good(), "salt": "!!not-base64!!"},
        {**_good(), "salt": b64u_encode(b"\x07" * 8)},
        {**_good(), "memory_kib": 1024},
        {**_good(), "memory_kib": 2**33},
        {**_good(), "time_cost": 0},
        {**_good(), "version": 16},
    ],
)
def test_from_dict_rejects_crafted_headers(crafted: Mapping[str, object]) -> None:
    with pytest.raises(IntegrityError) as caught:
        KdfParams.from_dict(crafted)
    assert "!!not-base64!!" not in caught.value.message


@pytest.mark.parametrize("crafted", [None, [], "argon2id"])
def test_from_dict_rejects_non_mappings(crafted: object) -> None:
    with pytest.raises(IntegrityError):
        KdfParams.from_dict(crafted)  # type: ignore[arg-type]


def test_upgraded_raises_every_cost_to_at_least_the_target_with_a_new_salt() -> None:
    old = floor_params()
    new = old.upgraded()
    assert (new.time_cost, new.memory_kib, new.parallelism) == (3, 65536, 4)
    assert new.salt != old.salt
    assert len(new.salt) == 16
    strong = KdfParams(5, 131072, 2, b"\x09" * 16)
    raised = strong.upgraded()
    assert (raised.time_cost, raised.memory_kib, raised.parallelism) == (5, 131072, 4)
    assert strong.upgraded(time_cost=1, memory_kib=FLOOR_MEMORY_KIB, parallelism=1).memory_kib == (
        131072
    )
