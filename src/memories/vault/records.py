"""Where the vault domain keeps things in the store, and the small records it reads back.

::

    entry  identity                 this device's keys and certificate (LocalIdentity)
    entry  local                    device-local state: device-only vaults, the personal vault
    entry  vault/<vault id>         name, policy chain ids, epoch keys, user card types
    entry  asset/<kind>/<asset id>  AssetState: heads, summary, links
    blob   policy/<vault>/<seq>     one signed policy entry (``/<id hex>`` appended for an
                                    entry a fork resolution adopted in place of another)
    blob   rev/<revision id>        one signed revision header
    blob   rev/<revision id>/<i>    its i-th sealed content chunk

Entries are mutable and live in memory while unlocked; blobs are written once.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal, TypeAlias

from memories.crypto import b64u_decode, b64u_encode, canonical_bytes
from memories.errors import IntegrityError
from memories.views.cards import CardType

__all__ = [
    "BLOB_KINDS",
    "KEY_KINDS",
    "KeyKind",
    "LocalState",
    "VaultRecord",
    "asset_key",
    "asset_prefix",
    "chunk_key",
    "key_kind",
    "policy_key",
    "revision_key",
    "vault_key",
]

IDENTITY_KEY = "identity"
LOCAL_KEY = "local"

#: What a store key holds, by the layout above.
KeyKind: TypeAlias = Literal["identity", "local", "vault", "asset", "policy", "revision", "chunk"]
KEY_KINDS: tuple[KeyKind, ...] = (
    "identity",
    "local",
    "vault",
    "asset",
    "policy",
    "revision",
    "chunk",
)
#: The kinds stored as write-once blobs; the rest are entries.
BLOB_KINDS: frozenset[KeyKind] = frozenset({"policy", "revision", "chunk"})


def key_kind(key: str) -> KeyKind:
    """What the store key ``key`` holds, e.g. to name an orphaned blob in a report.

    Raises:
        IntegrityError: ``key`` does not follow the vault domain's layout.
    """
    parts = key.split("/")
    match parts:
        case ["identity"]:
            return "identity"
        case ["local"]:
            return "local"
        case ["vault", vault] if vault:
            return "vault"
        case ["asset", kind, asset] if kind and asset:
            return "asset"
        case ["policy", vault, seq] if vault and seq.isdigit():
            return "policy"
        case ["policy", vault, seq, _] if vault and seq.isdigit():
            return "policy"
        case ["rev", revision] if revision:
            return "revision"
        case ["rev", revision, index] if revision and index.isdigit():
            return "chunk"
    raise IntegrityError("a store key does not belong to the vault domain")


def vault_key(vault_id: str) -> str:
    return f"vault/{vault_id}"


def asset_prefix(kind: str) -> str:
    return f"asset/{kind}/"


def asset_key(kind: str, asset_id: str) -> str:
    # Grouped by kind, so a graph of cards reads only card records.
    return f"asset/{kind}/{asset_id}"


def policy_key(vault_id: str, seq: int, policy_id: str | None = None) -> str:
    """Where entry ``seq`` of a vault's chain is stored: ``policy/<vault>/<seq>``, or, given
    ``policy_id``, ``policy/<vault>/<seq>/<id hex>`` — the key of an entry adopted when a
    permission fork was resolved for another branch, whose number a discarded entry holds
    (blobs are written once; the discarded one stays)."""
    if policy_id is None:
        return f"policy/{vault_id}/{seq}"
    return f"policy/{vault_id}/{seq}/{policy_id.removeprefix('sha256:')}"


def revision_key(revision_id: str) -> str:
    return f"rev/{revision_id}"


def chunk_key(revision_id: str, index: int) -> str:
    return f"rev/{revision_id}/{index}"


def _load(data: bytes, tag: str, what: str) -> dict[str, object]:
    try:
        doc = json.loads(data)
    except ValueError as exc:
        raise IntegrityError(f"the {what} record is malformed") from exc
    if not isinstance(doc, dict) or doc.get("t") != tag:
        raise IntegrityError(f"the {what} record is malformed")
    return doc


@dataclass(frozen=True)
class VaultRecord:
    vault_id: str
    name: str
    created_at: str
    local: bool
    policies: tuple[str, ...]  # policy entry ids, oldest first
    epoch: int
    keys: Mapping[int, bytes] = field(repr=False)  # epoch -> vault key
    card_types: Mapping[str, CardType] = field(default_factory=dict)

    def __repr__(self) -> str:
        return f"VaultRecord(id={self.vault_id[:8]}, name={self.name!r}, epoch={self.epoch})"

    def to_bytes(self) -> bytes:
        return canonical_bytes(
            {
                "t": "memories.vault",
                "v": 1,
                "id": self.vault_id,
                "name": self.name,
                "created_at": self.created_at,
                "local": self.local,
                "policies": list(self.policies),
                "epoch": self.epoch,
                "keys": {str(epoch): b64u_encode(key) for epoch, key in self.keys.items()},
                "card_types": {name: ct.to_dict() for name, ct in self.card_types.items()},
            }
        )

    @classmethod
    def from_bytes(cls, data: bytes) -> VaultRecord:
        doc = _load(data, "memories.vault", "vault")
        try:
            keys = doc["keys"]
            types = doc["card_types"]
            policies = doc["policies"]
            if not isinstance(keys, dict) or not isinstance(types, dict):
                raise TypeError("bad maps")
            if not isinstance(policies, list):
                raise TypeError("bad policies")
            return cls(
                vault_id=str(doc["id"]),
                name=str(doc["name"]),
                created_at=str(doc["created_at"]),
                local=bool(doc["local"]),
                policies=tuple(str(p) for p in policies),
                epoch=int(str(doc["epoch"])),
                keys={int(epoch): b64u_decode(str(key)) for epoch, key in keys.items()},
                card_types={str(name): CardType.from_dict(ct) for name, ct in types.items()},
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise IntegrityError("the vault record is malformed") from exc


@dataclass(frozen=True)
class LocalState:
    """Device-local facts that are never synchronized or exported.

    ``run_bindings`` maps a program's absolute path to the variables ``memories run`` may give
    it (``NAME`` -> a protected card's label, or text with ``{{secret:LABEL}}`` placeholders).
    It is written only when not empty, so stores without bindings keep their bytes.
    """

    personal: str
    local_vaults: tuple[str, ...]
    run_bindings: Mapping[str, Mapping[str, str]] = field(default_factory=dict)

    def to_bytes(self) -> bytes:
        doc: dict[str, object] = {
            "t": "memories.local",
            "v": 1,
            "personal": self.personal,
            "local_vaults": list(self.local_vaults),
        }
        if self.run_bindings:
            doc["run_bindings"] = {p: dict(env) for p, env in self.run_bindings.items()}
        return canonical_bytes(doc)

    @classmethod
    def from_bytes(cls, data: bytes) -> LocalState:
        doc = _load(data, "memories.local", "local state")
        try:
            vaults = doc["local_vaults"]
            bindings = doc.get("run_bindings", {})
            if not isinstance(vaults, list) or not isinstance(bindings, dict):
                raise TypeError("bad list")
            run_bindings: dict[str, dict[str, str]] = {}
            for program, env in bindings.items():
                if not isinstance(env, dict):
                    raise TypeError("bad binding")
                run_bindings[str(program)] = {str(k): str(v) for k, v in env.items()}
            return cls(
                personal=str(doc["personal"]),
                local_vaults=tuple(str(v) for v in vaults),
                run_bindings=run_bindings,
            )
        except (KeyError, TypeError) as exc:
            raise IntegrityError("the local state record is malformed") from exc
