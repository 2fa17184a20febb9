"""Stored MCP grants: their records in the encrypted state, their tokens and token hashes.

A grant is minted with a bearer token (:func:`new_token`), shown to the user once. The store
keeps only the token's tagged SHA-256 (:func:`token_hash`): tokens carry 256 random bits, so a
plain hash cannot be inverted by search, and a copy of the store is no copy of the token. The
records live in the encrypted state under ``grant/<id>`` (device-local: never synchronized,
never carried by a backup), one canonical JSON object each (docs/FORMATS.md, "Grant record").
A revoked grant keeps its record, with ``revoked_at`` set, so ``grant ls`` can show it.
"""

from __future__ import annotations

import hmac
import json
import re
import secrets
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final

from memories.crypto import b64u_encode, canonical_bytes
from memories.crypto.ids import new_id, resolve_short, tagged_hash
from memories.errors import ConflictError, IntegrityError, NotFoundError, UsageError
from memories.service.grants import GRANT_SCOPES, TOKEN_PREFIX, Grant, GrantScope

if TYPE_CHECKING:
    from memories.store import Store

__all__ = ["GRANT_PREFIX", "GrantBook", "GrantRecord", "new_token", "token_hash"]

_TOKEN_BYTES: Final = 32  # 256 bits
_TOKEN_HASH_TAG: Final = "memories grant token"  # noqa: S105 - a hash domain tag
#: The store keys of grant records start with this; the rest is the grant id.
GRANT_PREFIX: Final = "grant/"
_RECORD_TYPE: Final = "grant"
_RECORD_VERSION: Final = 1
_RECORD_FIELDS: Final = frozenset(
    {"t", "v", "id", "name", "scope", "vaults", "token_hash", "created_at", "expires_at"}
    | {"revoked_at"}
)
_MALFORMED: Final = "a grant record is malformed; the store is damaged"
_HEX_ID = re.compile(r"[0-9a-f]{32}")
_NO_GRANT: Final = "no grant has that name or id; `memories grant ls` shows them"


def new_token() -> str:
    """A fresh grant token: :data:`TOKEN_PREFIX` and 256 bits from the OS CSPRNG, base64url."""
    return TOKEN_PREFIX + b64u_encode(secrets.token_bytes(_TOKEN_BYTES))


def token_hash(token: str) -> str:
    """The tagged SHA-256 of ``token`` that the store keeps in its place (``sha256:<hex>``).

    Raises:
        UsageError: ``token`` is not text that UTF-8 can encode.
    """
    try:
        data = token.encode("utf-8")
    except (AttributeError, UnicodeEncodeError) as exc:
        raise UsageError("a grant token is text") from exc
    return tagged_hash(_TOKEN_HASH_TAG, data)


def _rfc3339(moment: float) -> str:
    when = datetime.fromtimestamp(moment, UTC)
    return when.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _moment(text: str) -> float:
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError as exc:
        raise IntegrityError(_MALFORMED) from exc


@dataclass(frozen=True)
class GrantRecord:
    """One stored grant. ``token_hash`` never leaves the service; :meth:`view` leaves it out."""

    id: str
    name: str
    scope: GrantScope
    vaults: tuple[str, ...]
    token_hash: str
    created_at: str
    expires_at: str | None = None
    revoked_at: str | None = None

    def live(self, now: float) -> bool:
        """Neither revoked nor past its expiry at wall-clock time ``now``."""
        if self.revoked_at is not None:
            return False
        return self.expires_at is None or now < _moment(self.expires_at)

    def grant(self) -> Grant:
        return Grant(name=self.name, scope=self.scope, vaults=frozenset(self.vaults), id=self.id)

    def view(self) -> dict[str, Any]:
        """GrantView: what ``grant_create``, ``grant_list`` and ``grant_revoke`` answer."""
        return {
            "id": self.id,
            "name": self.name,
            "scope": self.scope,
            "vaults": list(self.vaults),
            "created_at": self.created_at,
            "expires_at": self.expires_at,
            "revoked_at": self.revoked_at,
        }

    def to_bytes(self) -> bytes:
        record: dict[str, Any] = {
            "t": _RECORD_TYPE,
            "v": _RECORD_VERSION,
            "id": self.id,
            "name": self.name,
            "scope": self.scope,
            "vaults": list(self.vaults),
            "token_hash": self.token_hash,
            "created_at": self.created_at,
        }
        # No null keys: absent means never.
        if self.expires_at is not None:
            record["expires_at"] = self.expires_at
        if self.revoked_at is not None:
            record["revoked_at"] = self.revoked_at
        return canonical_bytes(record)

    @classmethod
    def from_bytes(cls, data: bytes) -> GrantRecord:
        """Parse a stored record. Raises ``IntegrityError`` for anything malformed."""
        try:
            value = json.loads(data)
        except ValueError as exc:
            raise IntegrityError(_MALFORMED) from exc
        if (
            not isinstance(value, dict)
            or not _RECORD_FIELDS.issuperset(value)
            or value.get("t") != _RECORD_TYPE
            or value.get("v") != _RECORD_VERSION
            or value.get("scope") not in GRANT_SCOPES
            or not isinstance(value.get("vaults"), list)
        ):
            raise IntegrityError(_MALFORMED)
        texts = ("id", "name", "token_hash", "created_at")
        optional = ("expires_at", "revoked_at")
        if not all(isinstance(value.get(k), str) for k in texts) or not all(
            isinstance(value.get(k, ""), str) for k in optional
        ):
            raise IntegrityError(_MALFORMED)
        vaults = value["vaults"]
        if not all(isinstance(v, str) for v in vaults):
            raise IntegrityError(_MALFORMED)
        return cls(
            id=value["id"],
            name=value["name"],
            scope=value["scope"],
            vaults=tuple(vaults),
            token_hash=value["token_hash"],
            created_at=value["created_at"],
            expires_at=value.get("expires_at"),
            revoked_at=value.get("revoked_at"),
        )


class GrantBook:
    """The grant records of one unlocked store. Called only under the service lock.

    Parsed records are kept while the stored bytes are unchanged, so the check that runs
    before every MCP request costs a dictionary look-up and a byte comparison.
    """

    def __init__(self, store: Store) -> None:
        self._store = store
        self._parsed: dict[str, tuple[bytes, GrantRecord]] = {}

    def records(self) -> list[GrantRecord]:
        """Every grant, live or not, oldest first. Raises ``LockedError``, ``IntegrityError``."""
        found = [self._parse(key, value) for key, value in self._store.entries(GRANT_PREFIX)]
        return sorted(found, key=lambda r: (r.created_at, r.id))

    def get(self, grant_id: str) -> GrantRecord | None:
        """The grant with id ``grant_id``, or None. Raises ``LockedError``, ``IntegrityError``."""
        key = GRANT_PREFIX + grant_id
        data = self._store.get(key)
        return None if data is None else self._parse(key, data)

    def authenticate(self, token: str, now: float) -> GrantRecord | None:
        """The live grant ``token`` was minted for, or None.

        Every stored hash is compared, each in constant time, so the time taken does not
        depend on which grant (if any) matched or how much of a hash agreed.
        """
        presented = token_hash(token).encode("ascii")
        match: GrantRecord | None = None
        for record in self.records():
            if hmac.compare_digest(presented, record.token_hash.encode("ascii")):
                match = record
        if match is None or not match.live(now):
            return None
        return match

    def create(
        self,
        name: str,
        scope: GrantScope,
        vaults: Iterable[str],
        *,
        now: float,
        expires_seconds: int | None,
        caller: str,
    ) -> tuple[GrantRecord, str]:
        """Mint a grant and commit its record; returns it and its token (the only copy).

        Raises:
            ConflictError: a live grant already has this name.
            MemoriesError: the commit failed (nothing was stored).
        """
        if any(r.name == name and r.live(now) for r in self.records()):
            raise ConflictError(
                "a live grant already has that name; revoke it first or choose another name"
            )
        token = new_token()
        record = GrantRecord(
            id=new_id(),
            name=name,
            scope=scope,
            vaults=tuple(sorted(set(vaults))),
            token_hash=token_hash(token),
            created_at=_rfc3339(now),
            expires_at=None if expires_seconds is None else _rfc3339(now + expires_seconds),
        )
        self._put(record, "grant.create", caller)
        return record, token

    def revoke(self, ref: str, *, now: float, caller: str) -> GrantRecord:
        """Revoke the grant ``ref`` names (a live grant's name, an id or an id prefix).

        Revoking a grant that is already revoked changes nothing and returns it.

        Raises:
            NotFoundError: no grant has that name or id.
            UsageError: the id prefix matches several grants.
            MemoriesError: the commit failed (the grant stays live).
        """
        record = self.resolve(ref, now)
        if record.revoked_at is not None:
            return record
        revoked = replace(record, revoked_at=_rfc3339(now))
        self._put(revoked, "grant.revoke", caller)
        return revoked

    def resolve(self, ref: str, now: float) -> GrantRecord:
        """The grant ``ref`` names: a live grant's name first, then a name any grant had, then
        an id or id prefix. Raises ``NotFoundError``, ``UsageError`` (ambiguous)."""
        records = self.records()
        named = [r for r in records if r.name == ref]
        live = [r for r in named if r.live(now)]
        if live:
            return live[0]  # names are unique among live grants
        if len(named) == 1:
            return named[0]
        if len(named) > 1:
            raise UsageError("several past grants had that name; give the id (`memories grant ls`)")
        lowered = ref.lower()
        if not re.fullmatch(r"[0-9a-f]{4,32}", lowered):
            raise NotFoundError(_NO_GRANT)
        try:
            found = resolve_short(lowered, [r.id for r in records])
        except NotFoundError:
            raise NotFoundError(_NO_GRANT) from None
        return next(r for r in records if r.id == found)

    def _put(self, record: GrantRecord, action: str, caller: str) -> None:
        m = self._store.mutation()
        m.put(GRANT_PREFIX + record.id, record.to_bytes())
        self._store.commit(m, action=action, details={"grant": record.id, "caller": caller})

    def _parse(self, key: str, data: bytes) -> GrantRecord:
        cached = self._parsed.get(key)
        if cached is not None and cached[0] == data:
            return cached[1]
        record = GrantRecord.from_bytes(data)
        if GRANT_PREFIX + record.id != key or not _HEX_ID.fullmatch(record.id):
            raise IntegrityError(_MALFORMED)
        self._parsed[key] = (data, record)
        return record

    def forget(self) -> None:
        """Drop the parsed records (the store locked)."""
        self._parsed.clear()
