"""The epoch keys the vault domain holds while unlocked, in buffers it can zero.

Vault records carry their epoch keys; decoding them for every decryption would leave a trail of
immutable copies. The key ring decodes each (vault, epoch) key once into a ``bytearray`` and
:meth:`KeyRing.wipe` zeroes them when the store locks or the domain object closes.
"""

from __future__ import annotations

from memories.crypto import wipe
from memories.errors import IntegrityError
from memories.vault.records import VaultRecord

__all__ = ["KeyRing"]


class KeyRing:
    def __init__(self) -> None:
        self._keys: dict[tuple[str, int], bytearray] = {}

    def __repr__(self) -> str:
        return f"KeyRing(<{len(self._keys)} keys>)"

    def __len__(self) -> int:
        return len(self._keys)

    def epoch_key(self, record: VaultRecord, epoch: int) -> bytearray:
        """The key of ``epoch`` in ``record``'s vault. An epoch's key never changes (rotation
        adds an epoch), so a cached key stays valid until :meth:`wipe`.

        Raises:
            IntegrityError: the vault holds no key for ``epoch``.
        """
        slot = (record.vault_id, epoch)
        key = self._keys.get(slot)
        if key is None:
            stored = record.keys.get(epoch)
            if stored is None:
                raise IntegrityError("a revision names an epoch whose key this vault does not hold")
            key = self._keys[slot] = bytearray(stored)
        return key

    def wipe(self) -> None:
        """Zero every held key and forget it."""
        for key in self._keys.values():
            wipe(key)
        self._keys.clear()
