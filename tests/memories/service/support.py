"""Helpers for service tests: a fast KDF, callers, a clock the test moves, request calls."""

from __future__ import annotations

from typing import Any

from memories.service import Caller, Service, parse_request
from memories.store import KdfCost

FAST = KdfCost(time_cost=1, memory_kib=19456, parallelism=1)
PASSWORD = "service test password"
CLI1 = Caller("cli:1")
CLI2 = Caller("cli:2")


class Clock:
    """A monotonic clock that only moves when told to."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def call(service: Service, data: dict[str, Any], caller: Caller = CLI1) -> dict[str, Any]:
    """Parse ``data`` like a front end does and hand it to the service."""
    return service.handle(parse_request(data), caller)


def put(service: Service, caller: Caller = CLI1, **fields: Any) -> dict[str, Any]:
    """Save a memory titled "a memory" unless ``fields`` say otherwise."""
    return call(service, {"op": "put", "title": "a memory", **fields}, caller)


def sudo(service: Service, caller: Caller = CLI1, minutes: int | None = None) -> None:
    request: dict[str, Any] = {"op": "sudo", "password": PASSWORD}
    if minutes is not None:
        request["minutes"] = minutes
    call(service, request, caller)
