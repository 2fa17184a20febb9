"""The store header: the few plaintext rows read before any key exists.

``format`` marks the file, ``store_id`` names it, ``kdf`` holds the Argon2id parameters and
salt, ``master`` the master key wrapped under the password key, ``root`` the sealed root, and
after a master-key rotation ``row_key``/``anchor_key`` hold the carried keys. Everything here is
attacker-controlled input until the root (which binds the rows that matter) has been opened, so
reading it only classifies what is wrong; it trusts nothing.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from memories.crypto import KdfParams, b64u_decode, canonical_bytes, derive_key, wipe, wrap_key
from memories.errors import IntegrityError
from memories.store.errors import MalformedHeaderError, NotAStoreError, UnsafeKdfError
from memories.store.schema import FORMAT_NAME

__all__ = [
    "Header",
    "kdf_bytes",
    "master_context",
    "read_header",
    "wrap_master",
    "wrap_master_for",
]

_REQUIRED = ("store_id", "kdf", "master", "root")
_KDF_FIELDS = frozenset({"alg", "version", "time_cost", "memory_kib", "parallelism", "salt"})
_MALFORMED = "the store header is malformed ({}); restore the store from a backup"
_UNSAFE = (
    "the store header asks for key-derivation parameters below the safe minimum or out of "
    "range; the file may be damaged or crafted; restore the store from a backup"
)


@dataclass(frozen=True)
class Header:
    rows: dict[str, bytes]
    store_id: str
    kdf: KdfParams


def read_header(conn: sqlite3.Connection, path: Path) -> Header:
    """Read and classify the header rows.

    Raises ``NotAStoreError`` (no header table, or not marked as a memories store),
    ``MalformedHeaderError`` (a row is missing or unparsable), ``UnsafeKdfError`` (parameters
    below the floor or absurd) and ``sqlite3.Error`` for the caller's boundary to translate.
    """
    try:
        rows = conn.execute("SELECT name, value FROM header").fetchall()
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):
            raise NotAStoreError(f"{path} is not a memories store") from exc
        raise
    header = {str(name): bytes(value) for name, value in rows}
    if header.get("format") != FORMAT_NAME:
        raise NotAStoreError(f"{path} is not a memories store")
    for name in _REQUIRED:
        if name not in header:
            raise MalformedHeaderError(_MALFORMED.format(f"the {name} row is missing"))
    return Header(rows=header, store_id=_store_id(header), kdf=_kdf(header["kdf"]))


def kdf_bytes(kdf: KdfParams) -> bytes:
    return json.dumps(kdf.to_dict(), sort_keys=True).encode("utf-8")


def master_context(store_id: str, kdf: KdfParams) -> dict[str, str | int]:
    return {"store": store_id, "kdf": canonical_bytes(kdf.to_dict()).decode("utf-8")}


def wrap_master(kek: bytearray, master: bytearray, store_id: str, kdf: KdfParams) -> bytes:
    return wrap_key(kek, master, purpose="master", **master_context(store_id, kdf))


def wrap_master_for(password: str, master: bytearray, store_id: str, kdf: KdfParams) -> bytes:
    """``master`` wrapped under the key ``password`` derives with ``kdf`` (wiped after use)."""
    kek = derive_key(password, kdf)
    try:
        return wrap_master(kek, master, store_id, kdf)
    finally:
        wipe(kek)


def _store_id(header: Mapping[str, bytes]) -> str:
    text = header["store_id"].decode("ascii", errors="replace")
    if len(text) != 32 or any(c not in "0123456789abcdef" for c in text):
        raise MalformedHeaderError(_MALFORMED.format("the store id is not valid"))
    return text


def _kdf(raw: bytes) -> KdfParams:
    """Tell a malformed parameter row from a well-formed one asking for too little work."""
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise MalformedHeaderError(_MALFORMED.format("the kdf row is not JSON")) from exc
    well_formed = (
        isinstance(data, dict)
        and set(data) == _KDF_FIELDS
        and isinstance(data["salt"], str)
        and all(
            isinstance(data[name], int) and not isinstance(data[name], bool)
            for name in ("version", "time_cost", "memory_kib", "parallelism")
        )
    )
    if not well_formed or data["alg"] != "argon2id":
        raise MalformedHeaderError(_MALFORMED.format("the kdf row is not valid"))
    try:
        b64u_decode(data["salt"])
    except IntegrityError as exc:
        raise MalformedHeaderError(_MALFORMED.format("the kdf salt is not valid")) from exc
    try:
        return KdfParams.from_dict(data)
    except IntegrityError as exc:
        raise UnsafeKdfError(_UNSAFE) from exc
