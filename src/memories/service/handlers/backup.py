"""Handlers for backups, recovery and the archive.

``backup_create`` runs entirely inside one request, under the service lock: every record it
exports is from the same committed state, whatever other clients are waiting to write. An
intent is committed before the file is written (a backup holds every key), and the file is
published only after it was read back and checked.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, assert_never

from memories import __version__
from memories.backup import create_backup, restore_backup, verify_backup
from memories.errors import ConflictError, MemoriesError, UsageError
from memories.service.access import Access
from memories.service.core import Core
from memories.service.requests import (
    ArchiveListRequest,
    ArchiveShowRequest,
    BackupCreateRequest,
    BackupRequest,
    BackupRestoreRequest,
    BackupVerifyRequest,
)
from memories.store import KdfCost, Store
from memories.text import one_line

__all__ = ["handle"]


def handle(core: Core, request: BackupRequest, access: Access) -> dict[str, Any]:
    match request:
        case BackupCreateRequest():
            return _create(core, request, access)
        case BackupVerifyRequest():
            check = verify_backup(_path(request.path), request.passphrase.get_secret_value())
            return check.to_dict()
        case BackupRestoreRequest():
            return _restore(core, request, access)
        case ArchiveListRequest():
            vaults = core.domain()
            return {
                "vaults": [v.to_dict() for v in vaults.archive_vaults()],
                "assets": [a.to_dict() for a in vaults.archive_assets(elevated=access.elevated)],
            }
        case ArchiveShowRequest():
            info, entries = core.domain().archive_history(request.ref, elevated=access.elevated)
            core.intend_read("archive_show", info.id, access.caller)
            return {"asset": info.to_dict(), "entries": [e.to_dict() for e in entries]}
        case _:
            assert_never(request)


def _path(text: str) -> Path:
    """Raises ``UsageError`` for a relative path: the daemon's working folder is not the
    caller's."""
    path = Path(text)
    if not path.is_absolute() or "\x00" in text:
        raise UsageError("the backup path must be absolute")
    return path


def _create(core: Core, request: BackupCreateRequest, access: Access) -> dict[str, Any]:
    vaults = core.domain()
    path = _path(request.path)
    # No record, no export: the intent is durable before any key leaves the store.
    core.require_store().record_intent("backup.create", {"caller": access.caller.namespace})
    made = create_backup(
        vaults,
        path,
        request.passphrase.get_secret_value(),
        cost=core.kdf_cost,
        overwrite=request.overwrite,
    )
    return made.to_dict()


def _restore(core: Core, request: BackupRestoreRequest, access: Access) -> dict[str, Any]:
    path = core.settings.store_path
    if core.store is not None or path.exists():
        raise ConflictError(f"a store already exists at {path}; it was left untouched")
    backup = _path(request.path)
    if core.kdf_cost is not None:
        cost = core.kdf_cost
    elif request.kdf is not None:
        cost = KdfCost(**request.kdf.model_dump())
    else:
        cost = KdfCost()
    local_config = {
        "client_version": __version__,
        "data_home": str(core.settings.data_home),
        "config_file": str(core.settings.config_file),
    }
    password = request.password.get_secret_value()
    report = restore_backup(
        path,
        backup,
        request.passphrase.get_secret_value(),
        password,
        cost=cost,
        device_name=_device_name(request.device_name),
        local_config=local_config,
    )
    store = Store.open(path)
    try:
        store.unlock(password)
        store.record_intent(
            "backup.restore", {"backup": report.backup_id, "caller": access.caller.namespace}
        )
    except MemoriesError:
        store.close()
        raise
    core.store = store
    return {"store": str(path), **report.to_dict()}


def _device_name(value: str | None) -> str | None:
    return one_line(value, "the device name")
