"""The three things a user does with backups: create one, check one, recover from one.

- :func:`create_backup` reads the exported state of the unlocked store in one call (the caller
  holds the service lock, so it is one consistent state even while other requests wait to
  commit), seals it under the passphrase, writes it atomically, re-reads the written file from
  disk and checks it completely before it is published.
- :func:`verify_backup` opens a backup and checks every signature, hash and ciphertext in it.
- :func:`restore_backup` checks a backup the same way and builds a new store from it beside
  the destination, publishing it only when complete (see :mod:`memories.backup.restore`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from memories.backup.check import BackupCheck, check_snapshot
from memories.backup.envelope import open_envelope, read_file, seal_envelope, write_atomically
from memories.backup.payload import Snapshot, build_payload, parse_payload
from memories.backup.restore import RestoreReport, stage_restore
from memories.crypto import KdfParams, new_id
from memories.errors import IntegrityError, UsageError
from memories.store import KdfCost, Mutation, create_store
from memories.vault import Vaults
from memories.vault.identity import now

__all__ = [
    "MIN_PASSPHRASE_CHARS",
    "Created",
    "create_backup",
    "read_backup",
    "restore_backup",
    "verify_backup",
]

#: A backup holds the user's private key; it may be copied anywhere, so its passphrase is the
#: only thing between an offline guesser and everything in it.
MIN_PASSPHRASE_CHARS = 8


@dataclass(frozen=True)
class Created:
    """A backup that was written, read back and checked."""

    path: Path
    size: int
    check: BackupCheck

    def to_dict(self) -> dict[str, object]:
        return {"path": str(self.path), "size": self.size, "verified": True, **self.check.to_dict()}


def _check_passphrase(passphrase: str) -> None:
    if len(passphrase) < MIN_PASSPHRASE_CHARS:
        raise UsageError(
            f"a backup passphrase needs at least {MIN_PASSPHRASE_CHARS} characters; "
            "it is the only protection of the copy"
        )


def _first_problem(check: BackupCheck) -> str:
    problem = check.problems[0]
    more = len(check.problems) - 1
    where = " ".join(
        f"{label} {value}"
        for label, value in (
            ("vault", problem.vault),
            ("asset", problem.asset),
            ("revision", problem.revision),
        )
        if value
    )
    suffix = f" (and {more} more)" if more else ""
    return f"{where + ': ' if where else ''}{problem.message}{suffix}"


def create_backup(
    vaults: Vaults,
    path: Path,
    passphrase: str,
    *,
    cost: KdfCost | None = None,
    overwrite: bool = False,
) -> Created:
    """Write a backup of ``vaults``' store to ``path`` (absolute) under ``passphrase``.

    Raises:
        UsageError: a short passphrase or a relative path.
        ConflictError: ``path`` exists and ``overwrite`` is false.
        NotFoundError: the folder does not exist.
        IntegrityError: the store's records do not check out (then nothing is published:
            ``memories verify`` says what is damaged).
        MemoriesError: the file cannot be written; its cause is named.
    """
    _check_passphrase(passphrase)
    exported = vaults.export_state()
    backup_id, created_at = new_id(), now()
    payload = build_payload(exported, vaults.identity, backup_id=backup_id, created_at=created_at)
    cost = cost or KdfCost()
    kdf = KdfParams.generate(
        time_cost=cost.time_cost, memory_kib=cost.memory_kib, parallelism=cost.parallelism
    )
    data = seal_envelope(payload, passphrase, kdf, backup_id=backup_id, created_at=created_at)
    checked: list[BackupCheck] = []

    def check(written: Path) -> None:
        envelope = open_envelope(read_file(written), passphrase)
        if envelope.payload != payload:
            raise IntegrityError("the backup did not read back as written; nothing was published")
        report = check_snapshot(
            parse_payload(envelope.payload, backup_id=backup_id, created_at=created_at)
        )
        if not report.ok:
            raise IntegrityError(
                "the store's records do not check out, so no backup was published: "
                f"{_first_problem(report)}; `memories verify` lists every problem"
            )
        checked.append(report)

    write_atomically(path, data, check=check, overwrite=overwrite)
    return Created(path, len(data), checked[0])


def read_backup(path: Path, passphrase: str) -> Snapshot:
    """Open the backup at ``path`` and split it into its records (signature checked).

    Raises ``NotFoundError``, ``DeniedError`` (wrong passphrase), ``IntegrityError`` (damaged,
    truncated or not a backup), ``UsageError`` (newer format, relative path).
    """
    envelope = open_envelope(read_file(path), passphrase)
    return parse_payload(
        envelope.payload, backup_id=envelope.backup_id, created_at=envelope.created_at
    )


def verify_backup(path: Path, passphrase: str) -> BackupCheck:
    """Check everything in the backup at ``path``; damage inside is reported in the result.

    Raises what :func:`read_backup` raises for a file that does not open at all.
    """
    return check_snapshot(read_backup(path, passphrase))


def restore_backup(
    store_path: Path,
    backup: Path,
    passphrase: str,
    password: str,
    *,
    cost: KdfCost | None = None,
    device_name: str | None = None,
    local_config: Mapping[str, str] | None = None,
) -> RestoreReport:
    """Create a new store at ``store_path`` (protected by ``password``) from ``backup``.

    The backup is checked completely first; the store is built aside and published only when
    whole, never over an existing one.

    Raises:
        ConflictError: a store exists at ``store_path`` (it is left untouched).
        DeniedError, IntegrityError, NotFoundError, UsageError: as :func:`read_backup`, and
            ``IntegrityError`` when anything in the backup does not check out.
        MemoriesError: the store cannot be written; its cause is named.
    """
    snapshot = read_backup(backup, passphrase)
    report = check_snapshot(snapshot)
    if not report.ok:
        raise IntegrityError(
            f"the backup does not check out, so nothing was restored: {_first_problem(report)}"
        )
    made: list[RestoreReport] = []

    def setup(mutation: Mutation) -> None:
        made.append(
            stage_restore(mutation, snapshot, device_name=device_name, local_config=local_config)
        )

    create_store(store_path, password, cost=cost, setup=setup)
    return made[0]
