"""Who is asking, and whether they are elevated.

A :class:`Caller` is identified by an *elevation namespace*. Local CLI callers get
``cli:{session}@{start}``, where the session is the parent process of the connecting command
(the shell that ran it) named by its pid and start time, so successive one-shot commands from
one terminal share an elevation the way sudo's per-terminal tickets do, while another terminal
(or a later process given a recycled pid) does not. Remote transports use the fixed
namespaces ``ws:remote`` and ``relay:remote``: they are separate keys in the :class:`Elevation`
table and never see an elevation granted to a local namespace, nor the other way round.

Elevations expire on a monotonic clock and are all dropped when the store locks.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal, Protocol

from memories.errors import DeniedError, LockedError, NotFoundError, UsageError
from memories.processes import process_start_time
from memories.service.grants import Grant
from memories.service.requests.base import ROLE_ORDER, Needs, RequestModel, VaultRole, op_name

__all__ = [
    "LOCKED_MESSAGE",
    "NO_STORE_MESSAGE",
    "RELAY_REMOTE",
    "REMOTE_NAMESPACES",
    "WS_REMOTE",
    "Access",
    "AssetFacts",
    "Caller",
    "Directory",
    "Elevation",
    "StoreState",
    "authorize",
    "local_cli_caller",
    "session_of",
]

REMOTE_NAMESPACES: Final = frozenset({"ws:remote", "relay:remote"})
_MAX_NAMESPACE = 100


@dataclass(frozen=True)
class Caller:
    """The party a request comes from, named by its elevation namespace.

    Raises:
        UsageError: the namespace is empty or too long, or ``remote`` does not match whether
            the namespace is one of :data:`REMOTE_NAMESPACES`.
    """

    namespace: str
    remote: bool = False
    #: Set for an authenticated MCP client; such a caller may send only what its grant allows.
    grant: Grant | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.namespace, str) or not 0 < len(self.namespace) <= _MAX_NAMESPACE:
            raise UsageError("a caller namespace is 1 to 100 characters")
        if (self.namespace in REMOTE_NAMESPACES) != self.remote:
            raise UsageError("remote callers use the ws:remote or relay:remote namespace")


WS_REMOTE: Final = Caller("ws:remote", remote=True)
RELAY_REMOTE: Final = Caller("relay:remote", remote=True)


def session_of(pid: int, proc: Path = Path("/proc")) -> int:
    """The session a local process belongs to: its parent's pid, or ``pid`` itself.

    The parent is read from ``/proc/<pid>/stat``. Without /proc (macOS), when the process is
    gone, or when its parent is pid 1 or 0 (which every orphaned or daemonized process shares),
    the process's own pid is the session, so nothing is shared.
    """
    try:
        stat = (proc / str(pid) / "stat").read_text(encoding="utf-8", errors="replace")
        # The command name in parentheses may itself hold spaces and parentheses.
        fields = stat[stat.rindex(")") + 2 :].split()
        parent = int(fields[1])
    except (OSError, ValueError, IndexError):
        return pid
    return parent if parent > 1 else pid


def local_cli_caller(peer_pid: int) -> Caller:
    """The caller for a local IPC connection from process ``peer_pid``.

    The namespace is ``cli:{session}@{start}``: the session's pid and its start time in clock
    ticks since boot, so a process that is later given the same pid shares nothing with the
    one that held it. Where the start time cannot be read (no /proc, as on macOS) it is
    ``cli:{session}``, and there the session is always the connecting process itself.
    """
    session = session_of(peer_pid)
    started = process_start_time(session)
    return Caller(f"cli:{session}" if started is None else f"cli:{session}@{started}")


class Elevation:
    """Elevation deadlines by namespace, on a monotonic ``clock``. Thread-safe."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._until: dict[str, float] = {}
        self._guard = threading.Lock()

    def grant(self, namespace: str, seconds: float) -> float:
        """Elevate ``namespace`` for ``seconds`` from now; returns the seconds granted."""
        if seconds <= 0:
            raise UsageError("an elevation must last a positive time")
        with self._guard:
            self._until[namespace] = self._clock() + seconds
        return seconds

    def seconds_left(self, namespace: str) -> float:
        """How long ``namespace`` stays elevated; 0 when it is not."""
        with self._guard:
            until = self._until.get(namespace)
            if until is None:
                return 0.0
            left = until - self._clock()
            if left <= 0:
                del self._until[namespace]
                return 0.0
            return left

    def active(self, namespace: str) -> bool:
        """Whether ``namespace`` is elevated right now."""
        return self.seconds_left(namespace) > 0

    def revoke(self, namespace: str) -> None:
        with self._guard:
            self._until.pop(namespace, None)

    def clear(self) -> None:
        """End every elevation (the store locked)."""
        with self._guard:
            self._until.clear()

    def prune(self) -> None:
        """Forget expired entries."""
        with self._guard:
            now = self._clock()
            for namespace in [n for n, until in self._until.items() if until <= now]:
                del self._until[namespace]


# -- authorization ---------------------------------------------------------------------------

LOCKED_MESSAGE: Final = "the vault is locked; run `memories unlock`"
#: What a grant caller reads for a vault or asset outside its grant: word for word what the
#: vault domain says for one that does not exist, so the answer is no existence oracle.
NO_VAULT_MESSAGE: Final = "no vault has that name; `memories vault list` shows them"
NO_ASSET_MESSAGE: Final = "no memory has that id; `memories ls` shows them"
NO_STORE_MESSAGE: Final = "there is no store yet; create one with `memories init`"

#: Whether there is a store, and whether it is unlocked.
StoreState = Literal["absent", "locked", "unlocked"]


@dataclass(frozen=True)
class AssetFacts:
    """What the authorizer needs to know about an asset a request touches."""

    vault_id: str
    kind: str
    private: bool


class Directory(Protocol):
    """Look-ups the authorizer needs from the unlocked vault. Both raise ``NotFoundError`` and
    ``UsageError`` (ambiguous prefix) for references that name nothing."""

    def vault_role(self, ref: str | None) -> tuple[str, str]:
        """The vault's id and this identity's role in it (``"none"`` when it has none)."""
        ...

    def asset_facts(self, ref: str) -> AssetFacts: ...


@dataclass(frozen=True)
class Access:
    """What :func:`authorize` decided: the caller may go on, elevated or not."""

    caller: Caller
    needs: Needs
    elevated: bool


def authorize(
    request: RequestModel,
    caller: Caller,
    *,
    state: StoreState,
    elevated: bool,
    directory: Directory | None = None,
) -> Access:
    """Check ``request`` against its declared :class:`Needs`; the one authorizer.

    The order is fixed so that a caller learns nothing it may not know: the channel (MCP grant,
    remote transport) first, then the lock state, then elevation, then the vault and assets the
    request names (their role, their grant coverage, whether they are private or credentials).
    ``directory`` is consulted only when the store is unlocked.

    Raises:
        DeniedError: the channel may not send this request, elevation is missing, or the role
            does not cover the vault.
        NotFoundError: there is no store (for requests that need one), a reference names
            nothing, or it names a vault or asset outside the caller's grant (the same answer).
        LockedError: the request needs the store unlocked.
        UsageError: a reference is ambiguous.
    """
    model = type(request)
    needs = model.NEEDS
    op = op_name(model)
    grant = caller.grant
    if grant is not None:
        if needs.mcp is None:
            raise DeniedError(f"{op} is not available to MCP clients")
        if not grant.allows(needs.mcp):
            raise DeniedError(f"this client's grant does not allow {needs.mcp} access")
    if caller.remote and not needs.remote:
        raise DeniedError(f"{op} is not available over a remote connection")
    if needs.unlocked and state != "unlocked":
        raise NotFoundError(NO_STORE_MESSAGE) if state == "absent" else LockedError(LOCKED_MESSAGE)
    if not elevated and needs.elevation == "always":
        raise DeniedError(f"{op} needs elevation; run `memories sudo` first")
    if (
        not elevated
        and needs.elevation == "credential_kind"
        and getattr(request, "kind", None) == "credential"
    ):
        raise DeniedError("storing a credential needs elevation; run `memories sudo` first")
    access = Access(caller=caller, needs=needs, elevated=elevated)
    if state != "unlocked" or directory is None:
        return access
    if _names_a_vault(model) and (needs.role is not None or grant is not None):
        vault_id, role = directory.vault_role(getattr(request, "vault", None))
        _check_vault(needs, grant, vault_id, role, NO_VAULT_MESSAGE)
    for name in needs.subjects:
        ref = getattr(request, name, None)
        if ref is None:
            continue
        facts = directory.asset_facts(ref)
        if needs.role is not None or grant is not None:
            role = directory.vault_role(facts.vault_id)[1]
            _check_vault(needs, grant, facts.vault_id, role, NO_ASSET_MESSAGE)
        if not elevated:
            _check_asset(needs, facts)
    return access


@functools.cache
def _names_a_vault(model: type[RequestModel]) -> bool:
    # Asked for every request; pydantic's field table is not free to consult each time.
    return "vault" in model.model_fields


def _check_vault(needs: Needs, grant: Grant | None, vault_id: str, role: str, missing: str) -> None:
    if grant is not None and not grant.covers(vault_id):
        raise NotFoundError(missing)
    if needs.role is not None and not _role_at_least(role, needs.role):
        raise DeniedError(f"your role in this vault does not allow this (needs {needs.role})")


def _check_asset(needs: Needs, facts: AssetFacts) -> None:
    if needs.elevation == "private_or_credential" and facts.kind == "credential":
        raise DeniedError("changing a credential needs elevation; run `memories sudo` first")
    if needs.elevation in ("private", "private_or_credential") and facts.private:
        raise DeniedError("this memory is private; run `memories sudo` first")


def _role_at_least(role: str, needed: VaultRole) -> bool:
    return role in ROLE_ORDER and ROLE_ORDER.index(role) >= ROLE_ORDER.index(needed)
