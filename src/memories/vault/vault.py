"""``Vaults``: the vault domain over one unlocked store, as the service uses it.

It composes one class per concern over the shared core (:mod:`memories.vault.base`):
writes (:mod:`.edit`), streamed files (:mod:`.files`), reads and listings (:mod:`.listing`),
links and the graph (:mod:`.links`), verification (:mod:`.verify`) and revisions moving between
devices (:mod:`.replicate`). Access rules that depend on *who* is asking (elevation, grants)
belong to the service; here the caller passes ``elevated`` and gets the matching projection.

When the service locks it must call :meth:`Vaults.close` before dropping the object, so the
epoch keys held here are zeroed and no decrypted record outlives the lock.
"""

from __future__ import annotations

from dataclasses import replace

from memories.vault.edit import Editing
from memories.vault.files import Filing
from memories.vault.links import Linking
from memories.vault.listing import Listing
from memories.vault.replicate import Replicating
from memories.vault.verify import Verification, verify_vaults
from memories.views.verify import Problem

__all__ = ["Vaults"]


class Vaults(Editing, Filing, Listing, Linking, Replicating):
    """The vault domain over an unlocked ``Store``.

    Every method raises ``LockedError`` when the store is locked or the object was closed.
    """

    def verification(self) -> Verification:
        """Check every policy chain, revision, certificate and asset record of the store
        (see :mod:`memories.vault.verify`); the result also lists every referenced blob key.

        Raises ``LockedError``; damage is reported, never raised.
        """
        self._fresh()
        report = verify_vaults(self.store)
        # A recovered store keeps the original histories as archive blobs (see replicate.py).
        archived = self.archive_blob_keys()
        return replace(report, referenced_blobs=report.referenced_blobs | archived)

    def verify(self) -> list[Problem]:
        """Every problem :meth:`verification` finds; empty when all is well."""
        return list(self.verification().problems)
