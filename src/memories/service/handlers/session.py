"""Handlers for the store itself: init, lock state, elevation, password, status."""

from __future__ import annotations

import math
from typing import Any, assert_never

from memories import __version__
from memories.devices.pairing import is_joining
from memories.errors import ConflictError, MemoriesError
from memories.service.access import Access
from memories.service.core import Core
from memories.service.requests import (
    ChangePasswordRequest,
    DesktopStatusRequest,
    InitRequest,
    LockRequest,
    RotateKeyRequest,
    SessionRequest,
    StatusRequest,
    SudoRequest,
    UnlockRequest,
)
from memories.store import KdfCost, Mutation, Store, create_store
from memories.text import one_line
from memories.vault import initialize

__all__ = ["handle"]


def handle(core: Core, request: SessionRequest, access: Access) -> dict[str, Any]:
    match request:
        case InitRequest():
            return _init(core, request)
        case UnlockRequest():
            return _unlock(core, request, access)
        case LockRequest():
            core.lock_now()
            return {"locked": True}
        case SudoRequest():
            return _sudo(core, request, access)
        case ChangePasswordRequest():
            core.require_store().change_password(
                request.old_password.get_secret_value(), request.new_password.get_secret_value()
            )
            return {"changed": True}
        case RotateKeyRequest():
            new_password = request.new_password
            seq = core.require_store().rotate_master_key(
                request.password.get_secret_value(),
                None if new_password is None else new_password.get_secret_value(),
            )
            return {"rotated": True, "seq": seq}
        case StatusRequest():
            return _status(core, access)
        case DesktopStatusRequest():
            return _desktop_status(core)
        case _:
            assert_never(request)


def _init(core: Core, request: InitRequest) -> dict[str, Any]:
    path = core.settings.store_path
    if core.store is not None or path.exists():
        raise ConflictError(f"a store already exists at {path}; it was left untouched")
    user_name = one_line(request.user_name, "the user name") or "me"
    device_name = one_line(request.device_name, "the device name")
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

    def setup(mutation: Mutation) -> None:
        initialize(
            mutation, user_name=user_name, device_name=device_name, local_config=local_config
        )

    password = request.password.get_secret_value()
    create_store(path, password, cost=cost, setup=setup)
    store = Store.open(path)
    try:
        store.unlock(password)
    except MemoriesError:
        store.close()
        raise
    core.store = store
    vaults = core.domain()
    return {
        "store": str(path),
        "vaults": [v.to_dict() for v in vaults.vaults()],
        "identity": vaults.identity.public_dict(),
    }


def _unlock(core: Core, request: UnlockRequest, access: Access) -> dict[str, Any]:
    accepted = core.require_store().unlock(
        request.password.get_secret_value(), accept_rollback=request.accept_rollback
    )
    # A remote attach has no terminal session to carry a later sudo: its unlock elevates its
    # own namespace, which local callers never share.
    if access.caller.remote:
        core.elevation.grant(access.caller.namespace, core.settings.elevation_seconds)
    return {
        "unlocked": True,
        "accepted": [
            {
                "anchor": f.anchor,
                "reason": f.reason,
                "anchor_seq": f.anchor_seq,
                "message": f.message,
            }
            for f in accepted
        ],
    }


def _sudo(core: Core, request: SudoRequest, access: Access) -> dict[str, Any]:
    core.require_store().verify_password(request.password.get_secret_value())
    minutes = request.minutes
    seconds = core.settings.elevation_seconds if minutes is None else minutes * 60.0
    granted = core.elevation.grant(access.caller.namespace, seconds)
    return {"elevated_until_seconds": math.ceil(granted)}


def _status(core: Core, access: Access) -> dict[str, Any]:
    left = core.elevation.seconds_left(access.caller.namespace)
    doc: dict[str, Any] = {
        "initialized": core.store is not None,
        "unlocked": core.state == "unlocked",
        "store": str(core.settings.store_path),
        "version": __version__,
        "elevated": left > 0,
        "elevated_seconds_left": math.ceil(left),
        "idle_lock_seconds": _number(core.settings.idle_lock_seconds),
    }
    if core.state == "unlocked" and is_joining(core.require_store()):
        doc["joining"] = True  # device keys only, until `memories device join`
    elif core.state == "unlocked":
        vaults = core.domain()
        doc["identity"] = vaults.identity.public_dict()
        doc["vaults"] = vaults.vault_count()
        doc["assets"] = vaults.asset_count()
    return doc


def _desktop_status(core: Core) -> dict[str, Any]:
    # Counts only: no ids, names, titles or account details, and no commit. The idle timer was
    # deliberately not touched by the service.
    if core.state != "unlocked":
        return {"initialized": core.store is not None, "unlocked": False}
    return {
        "initialized": True,
        "unlocked": True,
        "libraries": core.domain().vault_count(),
        "connections": 0,
        "providers": [],
        "sync_queue": {"pending": 0},
    }


def _number(value: float) -> int | float:
    """Whole numbers as integers, so JSON shows ``900`` rather than ``900.0``."""
    return int(value) if float(value).is_integer() else value
