"""Key derivation: Argon2id for passwords, HKDF-SHA256 for subkeys.

The password-derived key only wraps a random master key (see ``aead.wrap_key``), so changing the
password or raising the cost re-wraps one key instead of re-encrypting the store. Argon2id
parameters travel in the store header as :meth:`KdfParams.to_dict`; a header is attacker-
controlled input, so :meth:`KdfParams.from_dict` and :meth:`KdfParams.check` refuse parameters
below the floor (a crafted header must not downgrade the work an attacker needs per guess) and
absurd ones (a crafted header must not make unlock allocate unbounded memory or spin forever).

Defaults follow the second recommended option of RFC 9106 §4 (t=3, m=64 MiB, p=4). The floor is
the OWASP minimum for Argon2id (t=1, m=19 MiB, p=1); the test suite runs at exactly the floor.
"""

from __future__ import annotations

import logging
import secrets
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass

from argon2.exceptions import HashingError
from argon2.low_level import (  # type: ignore[attr-defined]
    ARGON2_VERSION,
    Type,
    error_to_str,
    ffi,
    lib,  # the CFFI library argon2-cffi documents for low-level use (not in its __all__)
)
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from memories.crypto.canonical import b64u_decode, b64u_encode
from memories.errors import IntegrityError, MemoriesError, UsageError

__all__ = [
    "DEFAULT_MEMORY_KIB",
    "DEFAULT_PARALLELISM",
    "DEFAULT_TIME_COST",
    "FLOOR_MEMORY_KIB",
    "FLOOR_PARALLELISM",
    "FLOOR_TIME_COST",
    "KDF_ALGORITHM",
    "KEY_LENGTH",
    "MAX_MEMORY_KIB",
    "MAX_PARALLELISM",
    "MAX_SALT_SIZE",
    "MAX_TIME_COST",
    "SALT_SIZE",
    "SUBKEY_INFO_PREFIX",
    "KdfParams",
    "derive_key",
    "derive_subkey",
]

_log = logging.getLogger(__name__)

KDF_ALGORITHM = "argon2id"
DEFAULT_TIME_COST = 3
DEFAULT_MEMORY_KIB = 65536
DEFAULT_PARALLELISM = 4
FLOOR_TIME_COST = 1
FLOOR_MEMORY_KIB = 19456
FLOOR_PARALLELISM = 1
MAX_TIME_COST = 100
MAX_MEMORY_KIB = 4 * 1024 * 1024
MAX_PARALLELISM = 64
SALT_SIZE = 16
MAX_SALT_SIZE = 64
KEY_LENGTH = 32
SUBKEY_INFO_PREFIX = b"memories/v1/"
_HKDF_MAX_LENGTH = 255 * 32

_FIELDS = frozenset({"alg", "version", "time_cost", "memory_kib", "parallelism", "salt"})
_MALFORMED = (
    "the key-derivation parameters are malformed; the file may be damaged or crafted, "
    "restore it from a backup"
)
_UNSAFE = (
    "the key-derivation parameters are below the safe minimum or out of range; the file may "
    "be damaged or crafted, restore it from a backup"
)


@dataclass(frozen=True)
class KdfParams:
    """Argon2id parameters and salt (version 0x13 = 19). Salt is public; nothing here is secret."""

    time_cost: int
    memory_kib: int
    parallelism: int
    salt: bytes
    version: int = ARGON2_VERSION

    @classmethod
    def generate(
        cls,
        time_cost: int = DEFAULT_TIME_COST,
        memory_kib: int = DEFAULT_MEMORY_KIB,
        parallelism: int = DEFAULT_PARALLELISM,
    ) -> KdfParams:
        """Return parameters with a fresh random 16-byte salt.

        Raises:
            UsageError: a parameter is below the floor or above the sane maximum.
        """
        params = cls(time_cost, memory_kib, parallelism, secrets.token_bytes(SALT_SIZE))
        problem = params._problem()
        if problem:
            raise UsageError(f"the key-derivation parameters are not allowed: {problem}")
        return params

    def check(self) -> None:
        """Refuse unsafe parameters, e.g. from a crafted header.

        Raises:
            IntegrityError: below the floor (t=1, m=19456 KiB, p=1), above the maximum
                (t=100, m=4 GiB, p=64), salt shorter than 16 bytes, or version other than 19.
        """
        problem = self._problem()
        if problem:
            _log.debug("rejected key-derivation parameters: %s", problem)
            raise IntegrityError(_UNSAFE)

    def _problem(self) -> str | None:
        for name in ("time_cost", "memory_kib", "parallelism", "version"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                return f"{name} must be an integer"
        if not isinstance(self.salt, bytes):
            return "the salt must be bytes"
        if self.version != ARGON2_VERSION:
            return f"only Argon2 version {ARGON2_VERSION} is supported"
        limits = (
            ("time_cost", self.time_cost, FLOOR_TIME_COST, MAX_TIME_COST),
            ("memory_kib", self.memory_kib, FLOOR_MEMORY_KIB, MAX_MEMORY_KIB),
            ("parallelism", self.parallelism, FLOOR_PARALLELISM, MAX_PARALLELISM),
            ("salt length", len(self.salt), SALT_SIZE, MAX_SALT_SIZE),
        )
        for name, value, low, high in limits:
            if not low <= value <= high:
                return f"{name} must be between {low} and {high}"
        return None

    def to_dict(self) -> dict[str, object]:
        """Return the header form: ``alg``, ``version``, costs, and the salt as base64url."""
        return {
            "alg": KDF_ALGORITHM,
            "version": self.version,
            "time_cost": self.time_cost,
            "memory_kib": self.memory_kib,
            "parallelism": self.parallelism,
            "salt": b64u_encode(self.salt),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> KdfParams:
        """Parse and check the header form written by :meth:`to_dict`.

        Raises:
            IntegrityError: a field is missing, unknown, of the wrong type, the algorithm is not
                Argon2id, the salt is not canonical base64url, or :meth:`check` refuses the values.
        """
        if not isinstance(data, Mapping) or set(data) != _FIELDS:
            raise IntegrityError(_MALFORMED)
        if data["alg"] != KDF_ALGORITHM:
            raise IntegrityError(_MALFORMED)
        numbers: dict[str, int] = {}
        for name in ("version", "time_cost", "memory_kib", "parallelism"):
            value = data[name]
            if isinstance(value, bool) or not isinstance(value, int):
                raise IntegrityError(_MALFORMED)
            numbers[name] = value
        salt_text = data["salt"]
        if not isinstance(salt_text, str):
            raise IntegrityError(_MALFORMED)
        params = cls(
            time_cost=numbers["time_cost"],
            memory_kib=numbers["memory_kib"],
            parallelism=numbers["parallelism"],
            salt=b64u_decode(salt_text),
            version=numbers["version"],
        )
        params.check()
        return params

    def upgraded(
        self,
        time_cost: int = DEFAULT_TIME_COST,
        memory_kib: int = DEFAULT_MEMORY_KIB,
        parallelism: int = DEFAULT_PARALLELISM,
    ) -> KdfParams:
        """Return parameters with a fresh salt and each cost raised to at least the given one.

        Used on password change so costs only ever go up.

        Raises:
            UsageError: the resulting parameters are out of range.
        """
        return KdfParams.generate(
            time_cost=max(self.time_cost, time_cost),
            memory_kib=max(self.memory_kib, memory_kib),
            parallelism=max(self.parallelism, parallelism),
        )


def derive_key(password: str | bytes | bytearray, params: KdfParams) -> bytearray:
    """Derive the 32-byte password key with Argon2id.

    A ``str`` password is normalized to Unicode NFC and encoded as UTF-8 first, so the same
    password typed on systems that compose accents differently derives the same key.

    Raises:
        IntegrityError: ``params`` fail :meth:`KdfParams.check`.
        UsageError: the password is empty, not valid Unicode, or not str/bytes.
        MemoriesError: the machine could not provide the memory the parameters require.
    """
    params.check()
    secret = _password_bytes(password)
    out = bytearray(KEY_LENGTH)
    try:
        _argon2id_into(out, secret, params)
    except (HashingError, MemoryError) as exc:
        raise MemoriesError(
            "key derivation failed: not enough memory for the stored parameters; "
            "close other programs and try again"
        ) from exc
    return out


def _argon2id_into(out: bytearray, secret: bytes, params: KdfParams) -> None:
    """Argon2id straight into ``out``, so the derived key never exists as immutable bytes.

    ``argon2.low_level.hash_secret_raw`` returns ``bytes`` and leaves its copy of the password
    in a C buffer; this calls the same library function with our own buffers and zeroes the
    password copy afterwards. Raises ``HashingError`` when the library reports a failure.
    """
    password = ffi.new("uint8_t[]", secret)
    try:
        result = lib.argon2_hash(
            params.time_cost,
            params.memory_kib,
            params.parallelism,
            password,
            len(secret),
            params.salt,
            len(params.salt),
            ffi.from_buffer("uint8_t[]", out),
            len(out),
            ffi.NULL,
            0,
            Type.ID.value,
            params.version,
        )
    finally:
        ffi.memmove(password, bytes(len(secret)), len(secret))
    if result != lib.ARGON2_OK:
        raise HashingError(error_to_str(result))


def _password_bytes(password: str | bytes | bytearray) -> bytes:
    if isinstance(password, str):
        try:
            secret = unicodedata.normalize("NFC", password).encode("utf-8")
        except UnicodeEncodeError as exc:
            raise UsageError("the password is not valid Unicode; type it again") from exc
    elif isinstance(password, bytes | bytearray):
        secret = bytes(password)
    else:
        raise UsageError("the password must be text")
    if not secret:
        raise UsageError("the password is empty; give a password")
    return secret


def derive_subkey(master: bytes | bytearray, label: str, length: int = KEY_LENGTH) -> bytearray:
    """Derive an independent subkey: HKDF-SHA256, no salt, info ``b"memories/v1/" + label``.

    Raises:
        UsageError: ``master`` is shorter than 16 bytes, ``label`` is empty or not valid Unicode,
            or ``length`` is outside 1..8160.
    """
    if not isinstance(master, bytes | bytearray) or len(master) < 16:
        raise UsageError("a master key must be at least 16 bytes")
    if not isinstance(label, str) or not label:
        raise UsageError("a subkey label must be a non-empty string")
    try:
        info = SUBKEY_INFO_PREFIX + label.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise UsageError("a subkey label must be valid Unicode") from exc
    return _hkdf_sha256(master, salt=None, info=info, length=length)


def _hkdf_sha256(
    ikm: bytes | bytearray, *, salt: bytes | None, info: bytes, length: int
) -> bytearray:
    """RFC 5869 HKDF with SHA-256; the known-answer tests drive this with salt and info."""
    if (
        isinstance(length, bool)
        or not isinstance(length, int)
        or not 1 <= length <= _HKDF_MAX_LENGTH
    ):
        raise UsageError(f"a derived key length must be between 1 and {_HKDF_MAX_LENGTH} bytes")
    out = bytearray(length)
    # derive_into writes straight into a wipeable buffer; derive() would leave an immutable copy.
    HKDF(algorithm=hashes.SHA256(), length=length, salt=salt, info=info).derive_into(ikm, out)
    return out
