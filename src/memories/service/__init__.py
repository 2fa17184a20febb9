"""The service: typed requests, authorization and elevation, audit intents, dispatch.

Front ends parse with :func:`parse_request`, name the caller (:func:`local_cli_caller`,
:data:`WS_REMOTE`, :data:`RELAY_REMOTE`) and call :meth:`Service.handle_stamped`, then
:meth:`Service.deliver` before sending.

:class:`Service` is loaded on first use: a front end that only builds requests
(``memories.service.requests``) must not pay for the store, the vault and the crypto stack.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memories.service.access import (
    LOCKED_MESSAGE,
    RELAY_REMOTE,
    REMOTE_NAMESPACES,
    WS_REMOTE,
    Access,
    Caller,
    Elevation,
    authorize,
    local_cli_caller,
)
from memories.service.grants import Grant, GrantScope
from memories.service.requests import REQUEST_TYPES, Request, op_name, op_names, parse_request

if TYPE_CHECKING:
    from memories.service.service import Service

__all__ = [
    "LOCKED_MESSAGE",
    "RELAY_REMOTE",
    "REMOTE_NAMESPACES",
    "REQUEST_TYPES",
    "WS_REMOTE",
    "Access",
    "Caller",
    "Elevation",
    "Grant",
    "GrantScope",
    "Request",
    "Service",
    "authorize",
    "local_cli_caller",
    "op_name",
    "op_names",
    "parse_request",
]


def __getattr__(name: str) -> Any:
    if name == "Service":
        from memories.service.service import Service

        return Service
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
