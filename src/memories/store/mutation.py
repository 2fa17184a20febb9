"""A mutation: changes staged against the store, committed by ``Store.commit`` all at once."""

from __future__ import annotations

from typing import Protocol

__all__ = ["Mutation"]


class _Readable(Protocol):
    def get(self, key: str) -> bytes | None: ...

    def get_blob(self, key: str) -> bytes: ...


class Mutation:
    """Changes staged against the store; nothing happens until ``Store.commit``.

    Reads see the staged changes on top of the store, so a mutation can be built step by step.
    """

    def __init__(self, store: _Readable) -> None:
        self._store = store
        self.entries: dict[str, bytes | None] = {}
        self.blobs: dict[str, bytes] = {}
        #: Staging areas to publish: (area, the blob key of each part in order).
        self.adopted: list[tuple[bytes, tuple[str, ...]]] = []

    def get(self, key: str) -> bytes | None:
        if key in self.entries:
            return self.entries[key]
        return self._store.get(key)

    def put(self, key: str, value: bytes) -> None:
        self.entries[key] = bytes(value)

    def delete(self, key: str) -> None:
        self.entries[key] = None

    def get_blob(self, key: str) -> bytes:
        if key in self.blobs:
            return self.blobs[key]
        return self._store.get_blob(key)

    def put_blob(self, key: str, value: bytes) -> None:
        """Stage a write-once blob; committing one whose key exists raises ``ConflictError``."""
        self.blobs[key] = bytes(value)

    def adopt(self, area: bytes, blob_keys: tuple[str, ...]) -> None:
        """Publish the staged parts of ``area`` (see ``Store.stage``) as the blobs
        ``blob_keys`` (part ``i`` becomes ``blob_keys[i]``) when this mutation commits.

        The parts are not readable through this overlay: they are published only by the commit.
        """
        self.adopted.append((bytes(area), tuple(blob_keys)))

    @property
    def empty(self) -> bool:
        return not self.entries and not self.blobs and not self.adopted
