"""Backup, verification and recovery: a store's signed state under an independent passphrase.

::

    envelope.py    the file: header line, Argon2id passphrase key, wrapped data key, sealed
                   chunks; atomic, owner-only publishing that re-reads before it renames
    payload.py     inside the envelope: the signed manifest and the store records it lists
    check.py       every signature, hash and ciphertext inside, by the vault's own verifier
    restore.py     a recovered store's contents: new device keys, new vaults, live heads
                   re-signed, the original histories archived
    operations.py  create_backup, verify_backup, read_backup, restore_backup

The file format is documented in docs/FORMATS.md ("memories backup file").
"""

from memories.backup.check import BackupCheck, check_snapshot
from memories.backup.envelope import BACKUP_TAG, BACKUP_VERSION, Envelope, open_envelope
from memories.backup.operations import (
    MIN_PASSPHRASE_CHARS,
    Created,
    create_backup,
    read_backup,
    restore_backup,
    verify_backup,
)
from memories.backup.payload import Snapshot, parse_payload
from memories.backup.restore import MEMBERSHIP_NOTE, RestoredVault, RestoreReport

__all__ = [
    "BACKUP_TAG",
    "BACKUP_VERSION",
    "MEMBERSHIP_NOTE",
    "MIN_PASSPHRASE_CHARS",
    "BackupCheck",
    "Created",
    "Envelope",
    "RestoreReport",
    "RestoredVault",
    "Snapshot",
    "check_snapshot",
    "create_backup",
    "open_envelope",
    "parse_payload",
    "read_backup",
    "restore_backup",
    "verify_backup",
]
