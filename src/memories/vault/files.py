"""Files that stream: stored as they arrive and read back in ranges, memory flat in their size.

:meth:`Filing.start_file_upload` checks everything but the bytes and opens a
:class:`FileUpload`: a fresh data key and revision nonce, a :class:`~.filebody.FileSealer`,
and a staging area in the store. Each :meth:`FileUpload.write` seals the chunks the bytes
complete and writes them to the staging area at once (``Store.stage``), so the daemon holds a
chunk or two, not the file. :meth:`Filing.finish_file_upload` seals the first and last chunks,
signs the revision over the digest of every chunk, and commits the header, the asset record
and the staged chunks (re-sealed as the revision's blobs) in one transaction: the file appears
whole or not at all. Cancelling, the idle timeout, a lock or a crash leave only staged rows,
which the store deletes (at once, or at the next unlock).

:meth:`Filing.open_file` gives a :class:`~.filebody.FileOpener` over a stored file's newest
revision, which decrypts only the chunks each range needs.
"""

from __future__ import annotations

from collections.abc import Sequence

from memories.crypto import Sealer, new_id, new_key, wipe
from memories.errors import ConflictError, DeniedError, NotFoundError, UsageError
from memories.store import Store
from memories.store.staging import new_area
from memories.vault.assets import AssetState
from memories.vault.base import VaultBase
from memories.vault.content import Content, FilePayload, make_content
from memories.vault.filebody import FileOpener, FileSealer
from memories.vault.operations import load_policy
from memories.vault.policy import check_write
from memories.vault.records import asset_key, chunk_key, revision_key
from memories.vault.revision import sign_revision, unwrap_data_key, wrap_data_key
from memories.views.assets import Saved

__all__ = ["FileUpload", "Filing"]


class FileUpload:
    """One file being stored as it arrives. Close it (finished or not) to drop its key."""

    def __init__(
        self, store: Store, *, vault_id: str, epoch: int, asset_id: str, content: Content, size: int
    ) -> None:
        self.vault_id = vault_id
        self.epoch = epoch
        self.asset_id = asset_id
        self.nonce = new_id()
        self._store = store
        self._key: bytearray | None = new_key()
        self._sealer = Sealer(self._key)
        self.area = new_area()
        self.sealer = FileSealer(
            self._sealer, asset_id=asset_id, nonce=self.nonce, content=content, size=size
        )
        self.finished = False

    @property
    def received(self) -> int:
        return self.sealer.received

    @property
    def size(self) -> int:
        return self.sealer.size

    @property
    def data_key(self) -> bytearray:
        if self._key is None:
            raise NotFoundError("the upload was closed")
        return self._key

    def write(self, data: bytes) -> int:
        """Seal ``data`` and stage the chunks it completes; returns the bytes received so far.

        Raises:
            UsageError: ``data`` goes past the declared size.
            NotFoundError: the upload was closed.
            MemoriesError: the store cannot be written (the chunk was not taken).
        """
        if self._key is None:
            raise NotFoundError("the upload was closed")
        done = self.sealer.write(data)
        if done:
            self._store.stage(self.area, done)
        return self.received

    def close(self) -> None:
        """Forget the key and, unless the upload was committed, its staged chunks
        (idempotent; after a lock the store deletes them at the next unlock)."""
        if self._key is not None:
            wipe(self._key)
            self._key = None
        self._sealer.close()
        if not self.finished and self._store.unlocked:
            self._store.discard_staged(self.area)
            self.finished = True

    def __repr__(self) -> str:
        return f"FileUpload(size={self.size}, received={self.received})"


class Filing(VaultBase):
    """Streamed file uploads and ranged file reads."""

    def start_file_upload(
        self,
        vault: str | None,
        *,
        name: str,
        media_type: str,
        size: int,
        title: str | None = None,
        tags: Sequence[str] = (),
        private: bool = False,
    ) -> FileUpload:
        """Check a file's name, type, size, title and tags and this device's write access,
        and open an upload of ``size`` bytes into ``vault`` (None: personal).

        Raises:
            UsageError: invalid content or a size over ``max_file_bytes``.
            DeniedError: this device may not write to the vault.
            NotFoundError: no such vault.
        """
        record = self.resolve_vault(vault)
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            raise UsageError("the file size must be a non-negative integer")
        content = make_content(
            "file",
            title=name if title is None else title,
            tags=tuple(tags),
            private=private,
            file=FilePayload(name=name, media_type=media_type, stored=(size, "sha256:" + "0" * 64)),
            max_file_bytes=self.max_file_bytes,
        )
        policy = load_policy(self.store, record)
        certificate = self.identity.certificate
        check_write(policy, certificate.user, certificate.device)
        return FileUpload(
            self.store,
            vault_id=record.vault_id,
            epoch=record.epoch,
            asset_id=new_id(),
            content=content,
            size=size,
        )

    def finish_file_upload(self, upload: FileUpload) -> Saved:
        """Seal the rest, sign and commit the file as a new asset; the upload is then closed.

        Raises:
            UsageError: fewer bytes than declared have arrived.
            ConflictError: the vault's permissions changed during the upload (upload again).
            DeniedError: this device may no longer write to the vault.
            MemoriesError: the store cannot be written (nothing was stored).
        """
        record = self._record(upload.vault_id)
        if record.epoch != upload.epoch:
            raise ConflictError(
                "the vault's permissions changed during the upload; nothing was stored, "
                "upload the file again"
            )
        done, ciphertext, sha = upload.sealer.finish()
        self.store.stage(upload.area, done)
        m = self.store.mutation()
        policy = load_policy(m, record)
        wrapped = wrap_data_key(
            self._keys.epoch_key(record, record.epoch),
            upload.data_key,
            vault_id=record.vault_id,
            asset_id=upload.asset_id,
            nonce=upload.nonce,
            epoch=policy.epoch,
        )
        sealer = upload.sealer
        revision = sign_revision(
            self.identity,
            vault_id=record.vault_id,
            asset_id=upload.asset_id,
            kind="file",
            parents=(),
            policy=policy,
            tombstone=False,
            wrapped_key=wrapped,
            nonce=upload.nonce,
            chunks=sealer.count,
            size=sealer.plaintext_size,
            ciphertext=ciphertext,
        )
        certificate = self.identity.certificate
        check_write(policy, certificate.user, certificate.device)
        revision.verify(policy)
        revision_id = revision.id
        m.put_blob(revision_key(revision_id), revision.to_bytes())
        m.adopt(upload.area, tuple(chunk_key(revision_id, i) for i in range(sealer.count)))
        state = AssetState.first(
            asset_id=upload.asset_id,
            vault_id=record.vault_id,
            kind="file",
            revision_id=revision_id,
            content=sealer.content(sha),
            at=revision.created_at,
            author=self.identity.user_fingerprint,
        )
        m.put(asset_key("file", upload.asset_id), state.to_bytes())
        self._commit(
            m, "asset.put", [(state, revision_id)], asset=state.asset_id, revision=revision_id
        )
        upload.finished = True
        upload.close()
        return Saved(state.asset_id, revision_id, record.vault_id, state.heads)

    def open_file(self, ref: str, *, elevated: bool = False) -> tuple[str, FileOpener]:
        """The asset id of the file ``ref`` and an opener over its newest revision.

        Close the opener's sealer with :meth:`close_file` (or let it go at lock).

        Raises:
            NotFoundError: no such asset, or it is deleted.
            UsageError: it is not a file.
            DeniedError: it is private and the caller is not elevated.
            IntegrityError: its content is damaged (opaque).
        """
        state = self.resolve_asset(ref)
        self._check_private(state, elevated)
        if state.deleted:
            raise NotFoundError("that memory was deleted; `memories history` shows its past")
        if state.kind != "file":
            raise UsageError("that asset is not a file")
        revision = self._revision(state.newest)
        record = self._record(revision.vault_id)
        data_key = unwrap_data_key(revision, self._keys.epoch_key(record, revision.epoch))
        try:
            sealer = Sealer(data_key)
        finally:
            wipe(data_key)
        store = self.store
        try:
            opener = FileOpener(
                sealer,
                lambda i: store.get_blob(chunk_key(revision.id, i)),
                count=revision.chunks,
                ciphertext=revision.ciphertext,
                asset_id=revision.asset_id,
                nonce=revision.nonce,
            )
        except BaseException:
            sealer.close()
            raise
        if opener.content.private and not elevated:
            sealer.close()
            raise DeniedError("this revision is private; run `memories sudo` to see it")
        return state.asset_id, opener
