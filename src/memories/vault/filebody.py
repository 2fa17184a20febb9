"""The plaintext layout of a revision's content, and files sealed and opened chunk by chunk.

A revision's plaintext is split into 256 KiB chunks sealed one by one (chunk ``i`` of ``n``
binds ``purpose``, asset, revision nonce, ``index=i`` and ``count=n`` in its associated data;
see :mod:`memories.crypto.aead`). What the plaintext holds:

- a memory, card or credential, and a file written before streaming (content version 1): the
  RFC 8785 bytes of the content document, a file's bytes base64url inside it;
- a file (content version 2): the RFC 8785 bytes of the document, which names the file's size
  and ``sha256:<hex>`` but not its bytes, then one ``\\n`` (RFC 8785 output never holds a raw
  line feed), then the file's raw bytes.

Version 2 lets a file be sealed as it arrives (:class:`FileSealer`) and read back in ranges
(:class:`FileOpener`) with memory bounded by a few chunks, whatever the file's size. The
revision header still signs the digest of every sealed chunk (``chunks_digest``), so the
signature covers the document and every byte of the file; the document's ``sha256`` of the
plaintext is checked as the bytes are read back.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Callable

from memories.crypto import (
    CHUNK_SIZE,
    Sealer,
    associated_data,
    canonical_bytes,
    digest,
    tagged_hash,
)
from memories.errors import IntegrityError, UsageError
from memories.vault.content import Content, FilePayload, file_document

__all__ = [
    "CHUNKS_TAG",
    "CONTENT_PURPOSE",
    "SEPARATOR",
    "FileOpener",
    "FileSealer",
    "chunk_count",
    "content_plaintext",
    "digest_of_chunks",
    "parse_plaintext",
]

CONTENT_PURPOSE = "revision.content"
CHUNKS_TAG = "memories.chunks"
SEPARATOR = b"\n"
_PLACEHOLDER_DIGEST = "sha256:" + "0" * 64
_MALFORMED = "a revision's content is malformed"


def chunk_count(length: int) -> int:
    """Chunks for ``length`` plaintext bytes: at least one."""
    return max(1, -(-length // CHUNK_SIZE))


def digest_of_chunks(digests: list[str]) -> str:
    """``chunks_digest`` from the chunks' own digests (what the revision header signs)."""
    return tagged_hash(CHUNKS_TAG, canonical_bytes(digests))


def content_plaintext(content: Content) -> bytes:
    """The plaintext a new revision of ``content`` seals (version 2 for a file).

    Raises:
        UsageError: a file's bytes are not loaded.
    """
    payload = content.file
    if payload is None:
        return canonical_bytes(content.to_dict())
    if not payload.loaded:
        raise UsageError("the file's bytes are not loaded")
    return canonical_bytes(file_document(content)) + SEPARATOR + payload.data


def parse_plaintext(plaintext: bytes) -> Content:
    """The content of a revision's whole plaintext, either version.

    Raises:
        IntegrityError: the plaintext is malformed, or a file's bytes do not match the size
            and digest its document names (opaque message).
    """
    head, sep, body = plaintext.partition(SEPARATOR)
    content = _parse_document(head)
    payload = content.file
    if not sep:
        if payload is not None and not payload.loaded:
            raise IntegrityError(_MALFORMED)  # a version-2 document without its bytes
        return content
    if payload is None or payload.loaded:
        raise IntegrityError(_MALFORMED)
    if len(body) != payload.size:
        raise IntegrityError(_MALFORMED)
    actual = "sha256:" + hashlib.sha256(body).hexdigest()
    if not hmac.compare_digest(actual, payload.digest):
        raise IntegrityError(_MALFORMED)
    loaded = FilePayload(name=payload.name, media_type=payload.media_type, data=body)
    return _with_file(content, loaded)


def _parse_document(head: bytes) -> Content:
    try:
        return Content.from_dict(json.loads(head))
    except ValueError as exc:
        raise IntegrityError(_MALFORMED) from exc


def _with_file(content: Content, payload: FilePayload) -> Content:
    return Content(
        title=content.title,
        body=content.body,
        tags=content.tags,
        source=content.source,
        card_type=content.card_type,
        metadata=content.metadata,
        private=content.private,
        file=payload,
        secrets=content.secrets,
    )


class FileSealer:
    """Seals a file's revision plaintext chunk by chunk as its bytes arrive.

    The document (``content``, whose file is a reference: name and media type; size and digest
    are filled in at :meth:`finish`) goes first. Its length is fixed at the start (the digest
    has a fixed width), so the chunk count, bound into every chunk, is known before any byte
    arrives. Chunk 0 holds the document and the file's first bytes; it is sealed last, once
    the digest is known. At most two chunks of plaintext are held at any time.

    The caller owns ``sealer`` (the revision's data key) and closes it.
    """

    def __init__(
        self, sealer: Sealer, *, asset_id: str, nonce: str, content: Content, size: int
    ) -> None:
        if content.file is None:
            raise UsageError("only a file is sealed as it arrives")
        self._sealer = sealer
        self._asset = asset_id
        self._nonce = nonce
        self._content = content
        self.size = size
        self._head_len = len(self._head(_PLACEHOLDER_DIGEST))
        if self._head_len >= CHUNK_SIZE:
            raise UsageError("the file's title, tags and name are too long to stream")
        self.count = chunk_count(self._head_len + size)
        #: Length of the whole plaintext (document, separator, file) the header records.
        self.plaintext_size = self._head_len + size
        self._first = bytearray()  # the file's bytes that share chunk 0 with the document
        self._pending = bytearray()  # bytes of the chunk being filled (index >= 1)
        self._next = 1
        self._digests: list[str] = [""] * self.count
        self._hash = hashlib.sha256()
        self.received = 0

    def _head(self, sha: str) -> bytes:
        payload = self._content.file
        assert payload is not None
        ref = FilePayload(payload.name, payload.media_type, stored=(self.size, sha))
        return canonical_bytes(file_document(_with_file(self._content, ref))) + SEPARATOR

    def _aad(self, index: int) -> bytes:
        return associated_data(
            CONTENT_PURPOSE,
            asset=self._asset,
            revision=self._nonce,
            index=index,
            count=self.count,
        )

    def _seal(self, index: int, plaintext: bytes | bytearray) -> tuple[int, bytes]:
        sealed = self._sealer.seal(plaintext, self._aad(index))
        self._digests[index] = digest(sealed)
        return index, sealed

    def sha256(self) -> str:
        """``sha256:<hex>`` of the bytes taken so far."""
        return "sha256:" + self._hash.hexdigest()

    def write(self, data: bytes) -> list[tuple[int, bytes]]:
        """Take the next ``data``; returns the chunks (index, sealed) it completed.

        Raises:
            UsageError: ``data`` goes past the declared size.
        """
        if self.received + len(data) > self.size:
            raise UsageError("the data goes past the declared size")
        self.received += len(data)
        self._hash.update(data)
        view = memoryview(data)
        room = CHUNK_SIZE - self._head_len - len(self._first)
        if room > 0:
            self._first += view[:room]
            view = view[room:]
        done: list[tuple[int, bytes]] = []
        while len(view):
            take = CHUNK_SIZE - len(self._pending)
            self._pending += view[:take]
            view = view[take:]
            if len(self._pending) == CHUNK_SIZE and self._next < self.count - 1:
                done.append(self._seal(self._next, self._pending))
                self._next += 1
                self._pending = bytearray()
        return done

    def finish(self) -> tuple[list[tuple[int, bytes]], str, str]:
        """Seal the last chunk and chunk 0. Returns those chunks, the digest of every chunk
        (``chunks_digest``) and the file's ``sha256:<hex>``.

        Raises:
            UsageError: fewer bytes than declared have arrived.
        """
        if self.received != self.size:
            raise UsageError(f"the upload has {self.received} of {self.size} bytes")
        sha = "sha256:" + self._hash.hexdigest()
        head = self._head(sha)
        if len(head) != self._head_len:  # cannot happen: the digest has a fixed width
            raise IntegrityError(_MALFORMED)
        done: list[tuple[int, bytes]] = []
        if self.count > 1:
            if self._next != self.count - 1:
                raise IntegrityError(_MALFORMED)
            done.append(self._seal(self.count - 1, self._pending))
        done.append(self._seal(0, head + self._first))
        self._first = bytearray()
        self._pending = bytearray()
        return done, digest_of_chunks(self._digests), sha

    def content(self, sha: str) -> Content:
        """The content this file's revision records (its file a reference)."""
        payload = self._content.file
        assert payload is not None
        ref = FilePayload(payload.name, payload.media_type, stored=(self.size, sha))
        return _with_file(self._content, ref)


class FileOpener:
    """Reads a stored file revision's bytes in ranges, decrypting only the chunks a range needs.

    Opening checks every sealed chunk against the digest the revision signs (one pass, one
    chunk in memory at a time) and reads the document. A version-1 revision (the file inside
    the document) is decoded whole, as it always was. Reading the file from its start to its
    end checks its bytes against the document's digest: the last range is withheld when they
    differ. The caller owns ``sealer`` and closes it.

    Raises (at construction and from :meth:`read`):
        IntegrityError: a chunk is altered, missing, reordered, from another revision, or the
            content is malformed (one opaque message).
    """

    def __init__(
        self,
        sealer: Sealer,
        fetch: Callable[[int], bytes],
        *,
        count: int,
        ciphertext: str,
        asset_id: str,
        nonce: str,
    ) -> None:
        if count < 1:
            raise IntegrityError(_MALFORMED)
        self._sealer = sealer
        self._fetch = fetch
        self._count = count
        self._cached: tuple[int, bytes] | None = None
        self._asset = asset_id
        self._nonce = nonce
        # Every chunk against the signed digest, before any byte is handed out.
        if digest_of_chunks([digest(fetch(i)) for i in range(count)]) != ciphertext:
            raise IntegrityError("a revision's content does not match its signature")
        head = bytearray()
        index = 0
        cut = -1
        while cut < 0 and index < count:
            head += self._open(index)
            index += 1
            cut = head.find(SEPARATOR)
        self._legacy: bytes | None = None
        self._start = 0
        if cut < 0:  # version 1: the file is inside the document
            self.content = parse_plaintext(bytes(head))
            payload = self.content.file
            if payload is None:
                raise IntegrityError(_MALFORMED)
            self._legacy = payload.data
            self.content = _with_file(self.content, payload.reference())
        else:
            self.content = _parse_document(bytes(head[:cut]))
            payload = self.content.file
            if payload is None or payload.loaded:
                raise IntegrityError(_MALFORMED)
            self._start = cut + 1  # plaintext offset of the file's first byte
            if chunk_count(self._start + payload.size) != count:
                raise IntegrityError(_MALFORMED)
        self._hash = hashlib.sha256()
        self._hashed = 0  # bytes hashed so far, while reads go in order

    @property
    def held(self) -> int:
        """Plaintext bytes this opener keeps between reads (a chunk; a version-1 file whole)."""
        return len(self._legacy) if self._legacy is not None else CHUNK_SIZE

    def close(self) -> None:
        """Forget the data key and the cached chunk (idempotent)."""
        self._sealer.close()
        self._cached = None
        self._legacy = None

    @property
    def payload(self) -> FilePayload:
        assert self.content.file is not None
        return self.content.file

    @property
    def size(self) -> int:
        return self.payload.size

    def _open(self, index: int) -> bytes:
        if self._cached is not None and self._cached[0] == index:
            return self._cached[1]
        aad = associated_data(
            CONTENT_PURPOSE, asset=self._asset, revision=self._nonce, index=index, count=self._count
        )
        plaintext = self._sealer.unseal(self._fetch(index), aad)
        self._cached = (index, plaintext)
        return plaintext

    def read(self, offset: int, length: int) -> bytes:
        """Up to ``length`` bytes of the file from ``offset`` (fewer at the end).

        Raises:
            UsageError: ``offset`` lies beyond the end, or ``length`` is negative.
            IntegrityError: see the class.
        """
        if self._sealer.closed:
            raise UsageError("the file was closed")
        size = self.size
        if offset < 0 or offset > size or length < 0:
            raise UsageError(f"the offset lies beyond the end of the file ({size} bytes)")
        end = min(size, offset + length)
        if self._legacy is not None:
            data = self._legacy[offset:end]
        else:
            first, last = self._start + offset, self._start + end
            parts = []
            index = first // CHUNK_SIZE
            while index * CHUNK_SIZE < last:
                plain = self._open(index)
                base = index * CHUNK_SIZE
                parts.append(plain[max(0, first - base) : last - base])
                index += 1
            data = b"".join(parts)
            if len(data) != end - offset:
                raise IntegrityError(_MALFORMED)
        self._check(offset, data)
        return data

    def _check(self, offset: int, data: bytes) -> None:
        if offset != self._hashed:
            return  # out of order: the chunks' AEAD and the signed digest still hold
        self._hash.update(data)
        self._hashed += len(data)
        if self._hashed == self.size:
            actual = "sha256:" + self._hash.hexdigest()
            if not hmac.compare_digest(actual, self.payload.digest):
                raise IntegrityError(_MALFORMED)
