"""The service: typed requests, authorization and elevation, audit intents, dispatch.

Front ends parse with :func:`parse_request`, name the caller (:func:`local_cli_caller`,
:data:`WS_REMOTE`, :data:`RELAY_REMOTE`) and call :meth:`Service.handle_stamped`, then
:meth:`Service.deliver` before sending.

:class:`Service` and the whole request set are loaded on first use: a front end that builds
one request (``memories.service.requests``) must not pay for the store, the vault, the crypto
stack or every other request model.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memories.lazy import lazy_attributes
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
from memories.service.requests.base import op_name

if TYPE_CHECKING:
    from memories.service.requests import REQUEST_TYPES, Request, op_names, parse_request
    from memories.service.service import Pending, Service

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
    "Pending",
    "Request",
    "Service",
    "authorize",
    "local_cli_caller",
    "op_name",
    "op_names",
    "parse_request",
]


# Loaded on first use: the whole request set (the parser's) and the service itself.
_LAZY = {
    "REQUEST_TYPES": "memories.service.requests",
    "Request": "memories.service.requests",
    "op_names": "memories.service.requests",
    "parse_request": "memories.service.requests",
    "Pending": "memories.service.service",
    "Service": "memories.service.service",
}


__getattr__ = lazy_attributes(__name__, _LAZY)
