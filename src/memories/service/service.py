"""The service: the one place that authorizes and dispatches requests.

Front ends (IPC, and later HTTP/WebSocket, relay and MCP) hand a parsed
:data:`~memories.service.requests.Request` and a :class:`~memories.service.access.Caller` to
:meth:`Service.handle`. Everything runs under one service lock: the store is not thread-safe and
each request sees one consistent state.

Rules enforced here, and only here:

- lock state: every request except ``init``, ``unlock``, ``lock``, ``status`` and
  ``desktop_status`` needs the store unlocked (``LockedError``);
- elevation: reading or editing private assets, writing credentials and changing the password
  need the caller's namespace elevated with ``sudo`` (``DeniedError``); remote namespaces never
  inherit a local elevation;
- audit: content reads (read, file_get, history, diff) commit a read intent before the plaintext
  is returned, and are denied when it cannot be written; failed writes are recorded as
  ``<op>.failed`` without content;
- idle lock: :meth:`Service.tick` locks after ``idle_lock_seconds`` without requests
  (``status`` and ``desktop_status`` do not count as activity);
- stale delivery: locking advances :attr:`Service.generation`; :meth:`Service.deliver` refuses a
  response computed under an earlier generation.
"""

from __future__ import annotations

import logging
import math
import re
import threading
import time
from collections.abc import Callable
from typing import Any, assert_never

from memories import __version__
from memories.config import Settings
from memories.crypto.canonical import b64u_decode, b64u_encode
from memories.errors import (
    ConflictError,
    DeniedError,
    IntegrityError,
    LockedError,
    MemoriesError,
    NotFoundError,
    UsageError,
)
from memories.service.access import Caller, Elevation
from memories.service.audit import audit_entry, record_failure, record_read
from memories.service.requests import (
    AuditListRequest,
    CardPutRequest,
    CardTypeDefineRequest,
    CardTypesRequest,
    ChangePasswordRequest,
    ConflictsRequest,
    CredentialPutRequest,
    DesktopStatusRequest,
    DiffRequest,
    FileGetRequest,
    FilePutRequest,
    GraphRequest,
    HistoryRequest,
    InitRequest,
    LinkRequest,
    ListRequest,
    LockRequest,
    PutRequest,
    ReadRequest,
    Request,
    RequestModel,
    ResolveRequest,
    StatusRequest,
    SudoRequest,
    TombstoneRequest,
    UnlinkRequest,
    UnlockRequest,
    UpdateRequest,
    VaultCreateRequest,
    VaultListRequest,
    op_name,
)
from memories.store import KdfCost, Mutation, Store, create_store
from memories.vault import FilePayload, Saved, Vaults, initialize

__all__ = ["LOCKED_MESSAGE", "Service"]

log = logging.getLogger(__name__)

LOCKED_MESSAGE = "the vault is locked; run `memories unlock`"
_NO_STORE = "there is no store yet; create one with `memories init`"
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


class Service:
    """The request dispatcher over one store file.

    The store is opened (taking its single-writer lock) when it exists; otherwise the service
    waits for ``init``. Raises ``BusyError`` when another process holds the store, and what
    ``Store.open`` raises for an unreadable file.
    """

    def __init__(
        self,
        settings: Settings,
        *,
        kdf_cost: KdfCost | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.settings = settings
        self._kdf_cost = kdf_cost
        self._clock = clock
        self._lock = threading.RLock()
        self._elevation = Elevation(clock)
        self._store: Store | None = None
        self._vaults: Vaults | None = None
        self._generation = 0
        self._last_active = clock()
        if settings.store_path.exists():
            self._store = Store.open(settings.store_path)

    # -- state --------------------------------------------------------------------------------

    @property
    def generation(self) -> int:
        """Advances every time the store locks; responses carry the one they were made under."""
        return self._generation

    @property
    def initialized(self) -> bool:
        return self._store is not None

    @property
    def unlocked(self) -> bool:
        store = self._store
        return store is not None and store.unlocked

    @property
    def elevation(self) -> Elevation:
        return self._elevation

    # -- entry points -------------------------------------------------------------------------

    def handle(self, request: Request, caller: Caller) -> dict[str, Any]:
        """Answer ``request`` for ``caller``; see :meth:`handle_stamped`."""
        return self.handle_stamped(request, caller)[1]

    def handle_stamped(self, request: Request, caller: Caller) -> tuple[int, dict[str, Any]]:
        """Answer ``request``; returns the generation it was answered under and the response.

        A front end passes both to :meth:`deliver` right before sending, so a response made
        before a lock (idle or explicit) is not delivered after it.

        Everything happens under the service lock. Work that may block (models, network, child
        processes) belongs outside it: such an op would be split into a prepare step here
        (authorize, decrypt what it needs, record its intent), the slow part in the caller's
        thread with no lock held, and a finish step under the lock again, which calls
        :meth:`deliver` with the generation of the prepare step before anything is returned.

        Raises:
            LockedError: the store is locked and the op needs it unlocked.
            DeniedError: elevation is missing, a password is wrong, or an audit record could
                not be written before delivery.
            NotFoundError, UsageError, ConflictError, IntegrityError, MemoriesError: as the
                store and the vault domain raise them; messages carry no secrets or content.
        """
        op = op_name(type(request))
        with self._lock:
            # Polling the state (a status bar, a tray) must not keep the vault open forever.
            if not isinstance(request, DesktopStatusRequest | StatusRequest):
                self._last_active = self._clock()
            try:
                response = self._dispatch(request, caller)
            except MemoriesError as exc:  # a bug is logged where it surfaces, by type only
                record_failure(self._store, op, exc, caller)
                raise
            return self._generation, response

    def deliver(self, generation: int, response: dict[str, Any]) -> dict[str, Any]:
        """Return ``response`` if no lock happened since ``generation``.

        Raises:
            LockedError: the store locked after the response was computed; it is dropped.
        """
        if generation != self._generation:
            raise LockedError(LOCKED_MESSAGE)
        return response

    def tick(self) -> bool:
        """Lock when idle for longer than ``idle_lock_seconds``; returns whether it locked.

        The daemon calls this about once a second. Expired elevations are forgotten too.
        """
        with self._lock:
            self._elevation.prune()
            if not self.unlocked:
                return False
            if self._clock() - self._last_active <= self.settings.idle_lock_seconds:
                return False
            self._lock_now()
            log.info("locked after %.0f seconds without requests", self.settings.idle_lock_seconds)
            return True

    def close(self) -> None:
        """Lock, close the store and release its single-writer lock (idempotent)."""
        with self._lock:
            self._lock_now()
            store, self._store = self._store, None
            if store is not None:
                store.close()

    # -- helpers ------------------------------------------------------------------------------

    def _lock_now(self) -> None:
        store = self._store
        was_unlocked = store is not None and store.unlocked
        if store is not None:
            store.lock()
        self._elevation.clear()
        self._vaults = None
        if was_unlocked:
            self._generation += 1

    def _require_store(self) -> Store:
        if self._store is None:
            raise NotFoundError(_NO_STORE)
        return self._store

    def _domain(self) -> Vaults:
        store = self._require_store()
        if not store.unlocked:
            raise LockedError(LOCKED_MESSAGE)
        if self._vaults is None:
            self._vaults = Vaults(store, max_file_bytes=self.settings.max_file_bytes)
        return self._vaults

    def _require_elevation(self, caller: Caller, what: str) -> None:
        if not self._elevation.active(caller.namespace):
            raise DeniedError(f"{what} needs elevation; run `memories sudo` first")

    def _saved(self, saved: Saved) -> dict[str, Any]:
        return {**saved.to_dict(), "short_id": self._domain().short_id(saved.asset_id)}

    # -- dispatch -----------------------------------------------------------------------------

    def _dispatch(self, request: Request, caller: Caller) -> dict[str, Any]:
        model: type[RequestModel] = type(request)
        if model.UNLOCKED:
            self._domain()  # raises NotFoundError or LockedError
        match request:
            case InitRequest():
                return self._init(request)
            case UnlockRequest():
                return self._unlock(request, caller)
            case LockRequest():
                self._lock_now()
                return {"locked": True}
            case SudoRequest():
                return self._sudo(request, caller)
            case ChangePasswordRequest():
                self._require_elevation(caller, "changing the password")
                self._require_store().change_password(
                    request.old_password.get_secret_value(),
                    request.new_password.get_secret_value(),
                )
                return {"changed": True}
            case StatusRequest():
                return self._status(caller)
            case DesktopStatusRequest():
                return self._desktop_status()
            case VaultCreateRequest():
                return dict(
                    self._domain().create_vault(request.name, local=request.local).to_dict()
                )
            case VaultListRequest():
                return {"vaults": [v.to_dict() for v in self._domain().vaults()]}
            case PutRequest():
                return self._put(request, caller)
            case ReadRequest():
                return self._read(request, caller)
            case UpdateRequest():
                return self._update(request, caller)
            case TombstoneRequest():
                elevated = self._edit_check(request.ref, caller)
                return self._saved(
                    self._domain().tombstone(request.ref, base=request.base, elevated=elevated)
                )
            case ResolveRequest():
                return self._resolve(request, caller)
            case HistoryRequest():
                return self._history(request, caller)
            case DiffRequest():
                return self._diff(request, caller)
            case ListRequest():
                summaries = self._domain().list_assets(
                    request.vault,
                    kind=request.kind,
                    card_type=request.card_type,
                    tag=request.tag,
                    elevated=self._elevation.active(caller.namespace),
                    all_vaults=request.all_vaults,
                )
                return {"summaries": [s.to_dict() for s in summaries]}
            case ConflictsRequest():
                elevated = self._elevation.active(caller.namespace)
                found = self._domain().conflicts(request.vault, elevated=elevated)
                return {"summaries": [s.to_dict() for s in found]}
            case CardPutRequest():
                return self._card_put(request)
            case CardTypesRequest():
                types = self._domain().card_types(request.vault)
                return {"card_types": [t.to_dict() for t in types]}
            case CardTypeDefineRequest():
                fields = [f.model_dump(exclude_none=True) for f in request.fields]
                defined = self._domain().define_card_type(
                    request.vault, request.name, fields, request.description
                )
                return dict(defined.to_dict())
            case LinkRequest():
                self._edit_check(request.source, caller, credential=False)
                self._edit_check(request.target, caller, credential=False)
                link = self._domain().link(request.source, request.target, request.relation)
                return dict(link.to_dict())
            case UnlinkRequest():
                self._edit_check(request.source, caller, credential=False)
                removed = self._domain().unlink(request.source, request.target, request.relation)
                return {"removed": removed}
            case GraphRequest():
                elevated = self._elevation.active(caller.namespace)
                return dict(self._domain().graph(request.vault, elevated=elevated).to_dict())
            case FilePutRequest():
                return self._file_put(request)
            case FileGetRequest():
                return self._file_get(request, caller)
            case CredentialPutRequest():
                return self._credential_put(request, caller)
            case AuditListRequest():
                entries = self._require_store().checkpoints(limit=request.limit)
                return {"entries": [audit_entry(c) for c in entries]}
            case _:
                assert_never(request)

    # -- lock state ---------------------------------------------------------------------------

    def _init(self, request: InitRequest) -> dict[str, Any]:
        path = self.settings.store_path
        if self._store is not None or path.exists():
            raise ConflictError(f"a store already exists at {path}; it was left untouched")
        user_name = _one_line(request.user_name, "the user name") or "me"
        device_name = _one_line(request.device_name, "the device name")
        if self._kdf_cost is not None:
            cost = self._kdf_cost
        elif request.kdf is not None:
            cost = KdfCost(**request.kdf.model_dump())
        else:
            cost = KdfCost()
        local_config = {
            "client_version": __version__,
            "data_home": str(self.settings.data_home),
            "config_file": str(self.settings.config_file),
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
        self._store = store
        vaults = self._domain()
        return {
            "store": str(path),
            "vaults": [v.to_dict() for v in vaults.vaults()],
            "identity": vaults.identity.public_dict(),
        }

    def _unlock(self, request: UnlockRequest, caller: Caller) -> dict[str, Any]:
        store = self._require_store()
        store.unlock(request.password.get_secret_value())
        # A remote attach has no terminal session to carry a later sudo: its unlock elevates
        # its own namespace, which local callers never share.
        if caller.remote:
            self._elevation.grant(caller.namespace, self.settings.elevation_seconds)
        return {"unlocked": True}

    def _sudo(self, request: SudoRequest, caller: Caller) -> dict[str, Any]:
        self._require_store().verify_password(request.password.get_secret_value())
        if request.minutes is None:
            seconds = self.settings.elevation_seconds
        else:
            seconds = request.minutes * 60.0
        granted = self._elevation.grant(caller.namespace, seconds)
        return {"elevated_until_seconds": math.ceil(granted)}

    def _status(self, caller: Caller) -> dict[str, Any]:
        left = self._elevation.seconds_left(caller.namespace)
        doc: dict[str, Any] = {
            "initialized": self.initialized,
            "unlocked": self.unlocked,
            "store": str(self.settings.store_path),
            "version": __version__,
            "elevated": left > 0,
            "elevated_seconds_left": math.ceil(left),
            "idle_lock_seconds": _number(self.settings.idle_lock_seconds),
        }
        if self.unlocked:
            vaults = self._domain()
            doc["identity"] = vaults.identity.public_dict()
            doc["vaults"] = vaults.vault_count()
            doc["assets"] = vaults.asset_count()
        return doc

    def _desktop_status(self) -> dict[str, Any]:
        # Counts only: no ids, names, titles or account details, and no commit. The idle timer
        # was deliberately not touched by handle().
        if not self.unlocked:
            return {"initialized": self.initialized, "unlocked": False}
        return {
            "initialized": True,
            "unlocked": True,
            "libraries": self._domain().vault_count(),
            "connections": 0,
            "providers": [],
            "sync_queue": {"pending": 0},
        }

    # -- content ------------------------------------------------------------------------------

    def _edit_check(self, ref: str, caller: Caller, *, credential: bool = True) -> bool:
        """Authorize an edit of ``ref``; returns whether the caller is elevated.

        Private assets need elevation (the domain checks again with the flag); so do
        credentials, because changing or deleting one is a credential write.
        """
        elevated = self._elevation.active(caller.namespace)
        state = self._domain().resolve_asset(ref)
        if credential and state.kind == "credential" and not elevated:
            raise DeniedError("changing a credential needs elevation; run `memories sudo` first")
        if state.private and not elevated:
            raise DeniedError("this memory is private; run `memories sudo` to change it")
        return elevated

    def _put(self, request: PutRequest, caller: Caller) -> dict[str, Any]:
        if request.kind == "file":
            raise UsageError("put: files are stored with file_put")
        if request.kind == "credential":
            self._require_elevation(caller, "storing a credential")
        fields: dict[str, object] = {
            "title": request.title,
            "body": request.body,
            "tags": tuple(request.tags or ()),
            "source": request.source,
            "private": request.private,
        }
        if request.card_type is not None:
            fields["card_type"] = request.card_type
        if request.metadata is not None:
            fields["metadata"] = request.metadata
        return self._saved(self._domain().put(request.vault, request.kind, **fields))

    def _read(self, request: ReadRequest, caller: Caller) -> dict[str, Any]:
        elevated = self._elevation.active(caller.namespace)
        view = self._domain().get(request.ref, revision=request.revision, elevated=elevated)
        record_read(self._require_store(), "read", view.asset_id, caller, revision=view.revision)
        return dict(view.to_dict())

    @staticmethod
    def _changes(request: UpdateRequest | ResolveRequest) -> dict[str, object]:
        changes: dict[str, object] = {}
        for name in ("title", "body", "source", "metadata", "private"):
            value = getattr(request, name)
            if value is not None:
                changes[name] = value
        if request.tags is not None:
            changes["tags"] = tuple(request.tags)
        return changes

    def _update(self, request: UpdateRequest, caller: Caller) -> dict[str, Any]:
        elevated = self._edit_check(request.ref, caller)
        saved = self._domain().update(
            request.ref,
            base=request.base,
            fork=request.fork,
            elevated=elevated,
            **self._changes(request),
        )
        return self._saved(saved)

    def _resolve(self, request: ResolveRequest, caller: Caller) -> dict[str, Any]:
        elevated = self._edit_check(request.ref, caller)
        changes = self._changes(request)
        if request.delete:
            changes["delete"] = True
        saved = self._domain().resolve(
            request.ref, parents=request.parents, elevated=elevated, **changes
        )
        return self._saved(saved)

    def _history(self, request: HistoryRequest, caller: Caller) -> dict[str, Any]:
        elevated = self._elevation.active(caller.namespace)
        vaults = self._domain()
        asset_id = vaults.resolve_asset(request.ref).asset_id
        entries = vaults.history(asset_id, elevated=elevated)
        record_read(self._require_store(), "history", asset_id, caller)
        return {"asset": asset_id, "entries": [e.to_dict() for e in entries]}

    def _diff(self, request: DiffRequest, caller: Caller) -> dict[str, Any]:
        elevated = self._elevation.active(caller.namespace)
        vaults = self._domain()
        asset_id = vaults.resolve_asset(request.ref).asset_id
        text = vaults.diff(asset_id, request.old, request.new, elevated=elevated)
        record_read(self._require_store(), "diff", asset_id, caller)
        return {"asset": asset_id, "diff": text}

    def _card_put(self, request: CardPutRequest) -> dict[str, Any]:
        saved = self._domain().put(
            request.vault,
            "card",
            title=request.title,
            card_type=request.card_type,
            metadata=request.metadata or {},
            body=request.body,
            tags=tuple(request.tags or ()),
            source=request.source,
            private=request.private,
        )
        return self._saved(saved)

    def _file_put(self, request: FilePutRequest) -> dict[str, Any]:
        try:
            data = b64u_decode(request.data)
        except IntegrityError:
            raise UsageError("file_put: field 'data' must be unpadded base64url") from None
        payload = FilePayload(name=request.name, media_type=request.media_type, data=data)
        saved = self._domain().put(
            request.vault,
            "file",
            title=request.name if request.title is None else request.title,
            file=payload,
            tags=tuple(request.tags or ()),
            private=request.private,
        )
        return self._saved(saved)

    def _file_get(self, request: FileGetRequest, caller: Caller) -> dict[str, Any]:
        elevated = self._elevation.active(caller.namespace)
        vaults = self._domain()
        asset_id = vaults.resolve_asset(request.ref).asset_id
        payload = vaults.file_payload(asset_id, elevated=elevated)
        record_read(self._require_store(), "file_get", asset_id, caller)
        return {
            "asset": asset_id,
            "name": payload.name,
            "media_type": payload.media_type,
            "data": b64u_encode(payload.data),
            "size": payload.size,
        }

    def _credential_put(self, request: CredentialPutRequest, caller: Caller) -> dict[str, Any]:
        self._require_elevation(caller, "storing a credential")
        fields: dict[str, object] = {
            "title": request.title,
            "body": request.secret.get_secret_value(),
            "tags": tuple(request.tags or ()),
        }
        if request.metadata:
            fields["metadata"] = request.metadata
        return self._saved(self._domain().put(request.vault, "credential", **fields))


def _one_line(value: str | None, what: str) -> str | None:
    """A name as the identity stores it: stripped, one line; None when blank."""
    if value is None:
        return None
    text = value.strip()
    if _CONTROL.search(text):
        raise UsageError(f"{what} contains control characters; use a single line of plain text")
    return text or None


def _number(value: float) -> int | float:
    """Whole numbers as integers, so JSON shows ``900`` rather than ``900.0``."""
    return int(value) if float(value).is_integer() else value
