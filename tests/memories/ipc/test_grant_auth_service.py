"""Grant connections against the real service, as the daemon composes them (in this process, so
a request can be held at a known point while a revocation or a lock lands)."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from memories.config import Settings, load_settings
from memories.daemon.main import _Dispatcher
from memories.errors import (
    DeniedError,
    LockedError,
    MemoriesError,
    NotFoundError,
    UnauthorizedError,
)
from memories.ipc import IpcClient, IpcServer
from memories.service import Service
from memories.service.requests import REQUEST_TYPES, op_name
from memories.store import Store
from tests.memories.service.support import CLI1, FAST, PASSWORD, call, put, sudo
from tests.memories.service.test_grants_matrix import sample
from tests.memories.store.support import DEADLINE, GatedCommits, WatchedLock


class HeldCommit(GatedCommits):
    """A gated commit that also remembers which thread it holds (it holds the store's I/O lock)."""

    holder: int | None = None

    def execute(self, sql: str, *args: Any) -> Any:
        if sql == "COMMIT" and self._armed:
            self.holder = threading.get_ident()
        return super().execute(sql, *args)


@dataclasses.dataclass
class Daemon:
    service: Service
    socket_path: Path

    def grant(self, name: str = "agent", **fields: Any) -> str:
        fields.setdefault("scope", "read")
        made = call(self.service, {"op": "grant_create", "name": name, **fields})
        return str(made["token"])

    def client(self, token: str) -> IpcClient:
        return IpcClient(self.socket_path, timeout=DEADLINE, grant_token=token)


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[Daemon]:
    settings: Settings = load_settings()
    service = Service(settings, kdf_cost=FAST)
    call(service, {"op": "init", "password": PASSWORD, "device_name": "test device"})
    sudo(service)
    dispatcher = _Dispatcher(service)
    socket_path = tmp_path / "run" / "daemon.sock"
    server = IpcServer(socket_path, dispatcher, authenticate=dispatcher.authenticate)
    server.start()
    try:
        yield Daemon(service, socket_path)
    finally:
        server.stop()
        service.close()


def in_thread(work: Callable[[], object]) -> tuple[threading.Thread, list[object]]:
    outcome: list[object] = []

    def run() -> None:
        try:
            outcome.append(work())
        except MemoriesError as exc:
            outcome.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    return thread, outcome


def test_a_revocation_takes_effect_on_the_next_request_of_an_open_connection(
    daemon: Daemon,
) -> None:
    put(daemon.service, title="shared")
    token = daemon.grant()
    with daemon.client(token) as agent:
        assert [s["title"] for s in agent.call({"op": "list"})["summaries"]] == ["shared"]
        call(daemon.service, {"op": "grant_revoke", "grant": "agent"})
        with pytest.raises(UnauthorizedError):
            agent.call({"op": "list"})
        with pytest.raises(UnauthorizedError):
            agent.call({"op": "list"})  # and a new connection is refused at once
    with daemon.client(token) as again, pytest.raises(UnauthorizedError):
        again.call({"op": "vault_list"})


def test_a_lock_answers_locked_until_the_unlock_and_keeps_the_connection(
    daemon: Daemon,
) -> None:
    with daemon.client(daemon.grant()) as agent:
        assert agent.call({"op": "list"}) == {"summaries": []}
        call(daemon.service, {"op": "lock"})
        with pytest.raises(LockedError):
            agent.call({"op": "list"})
        call(daemon.service, {"op": "unlock", "password": PASSWORD})
        assert agent.call({"op": "list"}) == {"summaries": []}
    call(daemon.service, {"op": "lock"})
    with daemon.client("mem_grant_" + "A" * 43) as late, pytest.raises(LockedError):
        late.call({"op": "list"})  # a locked store cannot check any token, right or wrong


@pytest.mark.parametrize("interrupt", ["revoke", "lock"])
def test_an_answer_in_flight_is_withheld_when_the_grant_is_revoked_or_the_store_locks(
    daemon: Daemon, interrupt: str
) -> None:
    service = daemon.service
    saved = put(service, title="held", body="the body")
    agent = daemon.client(daemon.grant())
    agent.call({"op": "list"})  # connected and authenticated before anything is held
    store = service.store
    assert isinstance(store, Store)
    real_conn, real_io = store._conn, store._io
    gate = HeldCommit(real_conn)
    store._conn = gate  # type: ignore[assignment]
    try:
        gate.arm()
        # The read is answered under the service lock; its intent is written after it, and
        # that write is held here, outside the lock, before anything is delivered.
        reader, read_out = in_thread(lambda: agent.call({"op": "read", "ref": saved["asset"]}))
        assert gate.reached.wait(DEADLINE)
        assert gate.holder is not None
        watched = WatchedLock(real_io, owner=gate.holder)
        store._io = watched  # type: ignore[assignment]
        request = (
            {"op": "grant_revoke", "grant": "agent"} if interrupt == "revoke" else {"op": "lock"}
        )
        other, other_out = in_thread(lambda: call(service, request, CLI1))
        # The revocation (or lock) holds the service lock and waits for the held write: it
        # lands before the reader can deliver, which needs the service lock to check again.
        assert watched.contended.wait(DEADLINE)
        gate.release.set()
        reader.join(DEADLINE)
        other.join(DEADLINE)
    finally:
        gate.release.set()
        store._conn, store._io = real_conn, real_io
        agent.close()
    assert not isinstance(other_out[0], MemoriesError), other_out
    expected = UnauthorizedError if interrupt == "revoke" else LockedError
    assert isinstance(read_out[0], expected), read_out
    if interrupt == "lock":
        call(service, {"op": "unlock", "password": PASSWORD})
    actions = [e["action"] for e in call(service, {"op": "audit_list", "limit": 20})["entries"]]
    assert "read.intent" in actions  # recorded, though never delivered


def test_write_needs_a_write_scope_and_a_foreign_vault_looks_missing(daemon: Daemon) -> None:
    service = daemon.service
    call(service, {"op": "vault_create", "name": "work"})
    hidden = put(service, vault="work", title="work only")
    with daemon.client(daemon.grant("reader")) as reader:
        with pytest.raises(DeniedError, match="does not allow write"):
            reader.call({"op": "put", "title": "from the agent"})
        with pytest.raises(NotFoundError) as outside:
            reader.call({"op": "read", "ref": hidden["asset"]})
        with pytest.raises(NotFoundError) as missing:
            reader.call({"op": "read", "ref": "e" * 32})
        assert outside.value.message == missing.value.message
        with pytest.raises(NotFoundError) as outside_vault:
            reader.call({"op": "list", "vault": "work"})
        with pytest.raises(NotFoundError) as missing_vault:
            reader.call({"op": "list", "vault": "nowhere"})
        assert outside_vault.value.message == missing_vault.value.message
    with daemon.client(daemon.grant("writer", scope="write", vaults=["work"])) as writer:
        saved = writer.call({"op": "put", "vault": "work", "title": "from the agent"})
    assert call(service, {"op": "read", "ref": saved["asset"]})["title"] == "from the agent"


def test_nothing_mcp_may_never_send_gets_through_a_grant_connection(daemon: Daemon) -> None:
    never = [m for m in REQUEST_TYPES if m.NEEDS.mcp is None]
    assert len(never) > 20
    with daemon.client(daemon.grant("all", scope="allow_all")) as agent:
        for model in never:
            with pytest.raises(DeniedError, match="is not available to MCP clients"):
                agent.call(sample(model))
        assert agent.call({"op": "list"}) == {"summaries": []}  # the connection is still good
    assert daemon.service.unlocked
    assert [g["name"] for g in call(daemon.service, {"op": "grant_list"})["grants"]] == ["all"]
    assert {"init", "sudo", "grant_create", "credential_put"} <= {op_name(m) for m in never}
