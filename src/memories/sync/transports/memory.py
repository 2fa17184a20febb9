"""An in-memory transport: objects in a dict, for tests and as the model the others follow."""

from __future__ import annotations

import threading

from memories.sync.errors import ObjectMissing, TransportError
from memories.sync.transports.base import MAX_OBJECT_BYTES, check_name

__all__ = ["MemoryTransport"]


class MemoryTransport:
    """Objects kept in memory. Several devices in one test may share one instance."""

    def __init__(self, name: str = "memory") -> None:
        self._name = name
        self._objects: dict[str, bytes] = {}
        self._guard = threading.Lock()

    @property
    def description(self) -> str:
        return self._name

    def put(self, name: str, data: bytes) -> None:
        """Store ``data`` under ``name``. Raises ``UsageError``, ``TransportError`` (too large)."""
        check_name(name)
        if len(data) > MAX_OBJECT_BYTES:
            raise TransportError("an object is too large to store")
        with self._guard:
            self._objects.setdefault(name, bytes(data))

    def get(self, name: str) -> bytes:
        """The bytes under ``name``. Raises ``ObjectMissing``, ``UsageError``."""
        check_name(name)
        with self._guard:
            data = self._objects.get(name)
        if data is None:
            raise ObjectMissing(f"{self._name} does not hold that object yet")
        return data

    def list(self) -> list[str]:
        with self._guard:
            return sorted(self._objects)

    def names(self) -> frozenset[str]:
        """Every stored name (for tests that inspect the storage)."""
        with self._guard:
            return frozenset(self._objects)

    def raw(self) -> dict[str, bytes]:
        """A copy of every stored object (for tests that tamper with or grep the storage)."""
        with self._guard:
            return dict(self._objects)

    def replace(self, name: str, data: bytes) -> None:
        """Overwrite an object in place: what a hostile storage can do (tests only)."""
        with self._guard:
            self._objects[name] = data
