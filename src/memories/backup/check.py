"""Checking everything inside a backup, as thoroughly as a store is checked.

The records are handed to the vault domain's own verification
(:func:`memories.vault.verify_vaults`), which reads them through the same ``get``,
``get_blob`` and ``entries`` calls it makes on a store: the identity and its certificate,
every policy chain (signatures, links, authority, epochs and their keys), every revision
reachable from every asset's heads (its id, certificate, signature, the policy it was written
under, its chunks against the signed digest, and that they decrypt under their epoch key),
and every asset record against its DAG and links. On top of that a backup must carry no
device-only vault and no record nothing refers to.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

from memories.backup.payload import Snapshot
from memories.errors import IntegrityError
from memories.store import Store
from memories.vault import Problem, verify_vaults
from memories.vault.records import VaultRecord

__all__ = ["BackupCheck", "check_snapshot"]


@dataclass(frozen=True)
class BackupCheck:
    """What :func:`check_snapshot` found: counts and every problem (empty when intact)."""

    backup_id: str
    created_at: str
    seq: int
    vaults: int
    policies: int
    assets: int
    revisions: int
    problems: tuple[Problem, ...]

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict[str, object]:
        return {
            "ok": self.ok,
            "backup": self.backup_id,
            "created_at": self.created_at,
            "seq": self.seq,
            "vaults": self.vaults,
            "policies": self.policies,
            "assets": self.assets,
            "revisions": self.revisions,
            "problems": [problem.to_dict() for problem in self.problems],
        }


def check_snapshot(snapshot: Snapshot) -> BackupCheck:
    """Check every record of ``snapshot``; see the module docstring. Never raises for damage:
    each finding is a :class:`~memories.vault.Problem` naming ids only."""
    # The verifier only reads (get, get_blob, entries); a Snapshot offers exactly those.
    report = verify_vaults(cast(Store, snapshot))
    problems = list(report.problems)
    for _, value in snapshot.entries("vault/"):
        try:
            record = VaultRecord.from_bytes(value)
        except IntegrityError:  # the verifier above has reported it already
            continue
        if record.local:
            problems.append(
                Problem("record", record.vault_id, None, None, "a device-only vault is in it")
            )
    for key in sorted(snapshot.blob_keys() - report.referenced_blobs):
        problems.append(
            Problem("record", None, None, None, f"it carries a record nothing refers to ({key})")
        )
    return BackupCheck(
        backup_id=snapshot.backup_id,
        created_at=snapshot.created_at,
        seq=snapshot.seq,
        vaults=report.vaults,
        policies=report.policies,
        assets=report.assets,
        revisions=report.revisions,
        problems=tuple(problems),
    )
