"""Handlers for joining, approving, bundles, members and revocation (``requests.devices``).

Strings and bundles carry only public keys and ciphertext; the user signing key and vault keys
leave a store only inside envelopes sealed to one device. Responses name devices and users by
full fingerprint and never include a key.
"""

from __future__ import annotations

import os
import socket
from datetime import timedelta
from pathlib import Path
from typing import Any, assert_never

from memories import __version__
from memories.devices.bundle import export_bundle, import_bundle
from memories.devices.membership import (
    devices_of_vault,
    export_identity,
    members_of_vault,
    read_identity,
    remove_member,
    revoke_device,
    set_role,
    share,
)
from memories.devices.pairing import (
    approve,
    issue_request,
    join,
    read_request,
    stage_join,
)
from memories.errors import ConflictError, MemoriesError, UsageError
from memories.service.access import Access
from memories.service.core import Core
from memories.service.requests.devices import (
    DeviceApproveRequest,
    DeviceInspectRequest,
    DeviceJoinRequest,
    DeviceListRequest,
    DeviceRequest,
    DeviceRequestRequest,
    DeviceRevokeRequest,
    IdentityExportRequest,
    InitJoinRequest,
    MemberListRequest,
    MemberRemoveRequest,
    MemberRoleRequest,
    VaultExportRequest,
    VaultImportRequest,
    VaultShareRequest,
)
from memories.store import KdfCost, Mutation, Store, create_store
from memories.text import one_line

__all__ = ["handle"]


def handle(core: Core, request: DeviceRequest, access: Access) -> dict[str, Any]:
    match request:
        case InitJoinRequest():
            return _init_join(core, request)
        case DeviceRequestRequest():
            issued = issue_request(
                core.require_store(),
                approver=request.approver,
                ttl=timedelta(minutes=request.expires_minutes),
            )
            return {
                "request": issued.text,
                "fingerprint": issued.fingerprint,
                "expires_at": issued.expires_at,
            }
        case DeviceInspectRequest():
            return read_request(request.request).public_dict()
        case DeviceApproveRequest():
            return _approve(core, request)
        case DeviceJoinRequest():
            return _join(core, request)
        case DeviceListRequest():
            return {"devices": devices_of_vault(core.domain(), request.vault)}
        case DeviceRevokeRequest():
            entry = revoke_device(core.domain(), request.vault, request.device)
            core.search.clear()
            return {"vault": entry.vault_id, "epoch": entry.epoch, "revoked": list(entry.revoked)}
        case IdentityExportRequest():
            text, fingerprint = export_identity(core.domain())
            return {"identity": text, "fingerprint": fingerprint}
        case VaultShareRequest():
            person = read_identity(request.identity)
            entry = share(
                core.domain(),
                request.vault,
                person,
                request.role,
                confirmed_fingerprint=request.fingerprint,
            )
            return {
                "vault": entry.vault_id,
                "member": person.fingerprint,
                "role": request.role,
                "epoch": entry.epoch,
            }
        case MemberListRequest():
            return {"members": members_of_vault(core.domain(), request.vault)}
        case MemberRoleRequest():
            entry = set_role(core.domain(), request.vault, request.user, request.role)
            return {"vault": entry.vault_id, "role": request.role, "epoch": entry.epoch}
        case MemberRemoveRequest():
            entry = remove_member(core.domain(), request.vault, request.user)
            core.search.clear()
            return {"vault": entry.vault_id, "removed": True, "epoch": entry.epoch}
        case VaultExportRequest():
            return _export(core, request)
        case VaultImportRequest():
            data = _read(_path(request.path))
            imported = import_bundle(core.domain(), data)
            core.search.clear()
            return imported.to_dict()
        case _:
            assert_never(request)


def _path(text: str) -> Path:
    """Raises ``UsageError`` for a relative path: the daemon's folder is not the caller's."""
    path = Path(text)
    if not path.is_absolute() or "\x00" in text:
        raise UsageError("the bundle path must be absolute")
    return path


def _read(path: Path) -> bytes:
    try:
        with path.open("rb") as handle:
            data = handle.read(256 * 1024 * 1024 + 1)
    except OSError as exc:
        raise UsageError("the bundle file cannot be read") from exc
    return data


def _write_new(path: Path, data: bytes) -> None:
    """Write ``data`` to a new file (never over an existing one), synced, mode 0600."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError as exc:
        raise ConflictError("that file exists already; choose a new path") from exc
    except OSError as exc:
        raise UsageError("the bundle file cannot be created there") from exc
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
    except OSError as exc:
        path.unlink(missing_ok=True)
        raise MemoriesError("the bundle could not be written; the disk may be full") from exc


def _export(core: Core, request: VaultExportRequest) -> dict[str, Any]:
    path = _path(request.path)
    vaults = core.domain()
    data = export_bundle(vaults, request.vault)
    record = vaults.resolve_vault(request.vault)
    _write_new(path, data)
    core.require_store().record_intent("bundle.export", {"vault": record.vault_id})
    return {
        "path": str(path),
        "vault": record.vault_id,
        "policies": len(record.policies),
        "bytes": len(data),
    }


def _approve(core: Core, request: DeviceApproveRequest) -> dict[str, Any]:
    parsed = read_request(request.request)
    vaults = core.domain()
    approval = approve(
        vaults,
        parsed,
        confirmed_fingerprint=request.fingerprint,
        vault_refs=request.vaults or None,
    )
    core.search.clear()
    shared = [
        r.vault_id
        for r in vaults._records()
        if not r.local and r.vault_id not in vaults._local().local_vaults
    ]
    chosen = [vaults.resolve_vault(ref).vault_id for ref in request.vaults] or shared
    return {"approval": approval, "device": parsed.public_dict()["device"], "vaults": chosen}


def _join(core: Core, request: DeviceJoinRequest) -> dict[str, Any]:
    local_config = {
        "client_version": __version__,
        "data_home": str(core.settings.data_home),
        "config_file": str(core.settings.config_file),
    }
    vaults = core.domain()
    joined = join(vaults.store, request.approval, local_config=local_config)
    # The join committed identity and vaults beside the domain object: drop what it cached.
    vaults._forget()
    core.search.clear()
    return {"identity": joined.identity, "vaults": list(joined.vaults)}


def _init_join(core: Core, request: InitJoinRequest) -> dict[str, Any]:
    path = core.settings.store_path
    if core.store is not None or path.exists():
        raise ConflictError(f"a store already exists at {path}; it was left untouched")
    device_name = one_line(request.device_name, "the device name") or socket.gethostname()
    if core.kdf_cost is not None:
        cost = core.kdf_cost
    elif request.kdf is not None:
        cost = KdfCost(**request.kdf.model_dump())
    else:
        cost = KdfCost()

    def setup(mutation: Mutation) -> None:
        stage_join(mutation, device_name=device_name or "new device")

    password = request.password.get_secret_value()
    create_store(path, password, cost=cost, setup=setup)
    store = Store.open(path)
    try:
        store.unlock(password)
    except MemoriesError:
        store.close()
        raise
    core.store = store
    return {"store": str(path), "joining": True}
