"""What one revision of an asset says: the decrypted, structured content of a memory, card, file
or credential.

:class:`Content` is the plaintext that a revision encrypts. Its :meth:`Content.to_dict` form is the
type-tagged JSON document that is canonicalized (RFC 8785) and chunk-encrypted; see
docs/FORMATS.md. :func:`make_content` is the one gate for user input: it applies the per-kind rules
and limits and raises :class:`~memories.errors.UsageError` with messages that never quote the body,
the secret or any other raw value. :meth:`Content.from_dict` reads stored documents and raises
:class:`~memories.errors.IntegrityError` when one is malformed.

Every :class:`Content` is canonicalizable by construction: its text is valid Unicode, its metadata
holds only JSON scalars (finite numbers, integers within ±(2**53 - 1)) and lists of them.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType
from typing import TypeAlias

from memories.crypto.canonical import b64u_decode, b64u_encode
from memories.errors import IntegrityError, UsageError
from memories.views.cards import BUILTIN_CARD_TYPES, CardType, validate_metadata
from memories.views.format import format_limit, format_size
from memories.views.kinds import KINDS, Kind, parse_kind

__all__ = [
    "CONTENT_TAG",
    "CONTENT_VERSION",
    "DEFAULT_MAX_FILE_BYTES",
    "FILE_CONTENT_VERSION",
    "KINDS",
    "MAX_BODY_BYTES",
    "MAX_SOURCE_CHARS",
    "MAX_TAGS",
    "MAX_TAG_CHARS",
    "MAX_TITLE_CHARS",
    "SECRET_LABEL",
    "Content",
    "FilePayload",
    "Kind",
    "MetadataValue",
    "file_document",
    "make_content",
    "parse_kind",
]

#: A frozen metadata value: a JSON scalar or a tuple of scalars (lists are frozen into tuples).
MetadataValue: TypeAlias = str | int | float | bool | tuple[str | int | float | bool, ...]

CONTENT_TAG = "memories.content"
CONTENT_VERSION = 1
#: File content written since streamed files: the document names the file's size and digest,
#: and its bytes follow the document in the revision's plaintext (see memories.vault.filebody).
FILE_CONTENT_VERSION = 2

MAX_TITLE_CHARS = 300
MAX_BODY_BYTES = 8 * 1024 * 1024
MAX_TAGS = 64
MAX_TAG_CHARS = 64
MAX_SOURCE_CHARS = 2048
MAX_FILE_NAME_CHARS = 255
DEFAULT_MAX_FILE_BYTES = 64 * 1024 * 1024

_SAFE_INT = 2**53 - 1
_FIELD_NAME = re.compile(r"[a-z][a-z0-9_]{0,39}")
_TAG = re.compile(r"[\w.\-/:]{1,64}")
# C0/C1 controls and the Unicode line/paragraph separators: they break single-line fields
# (titles, tags, file names) in listings and diffs.
_LINE_BREAKING = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_MEDIA_NAME = r"[a-z0-9][a-z0-9!#$&^_.+\-]{0,126}"
_MEDIA_TYPE = re.compile(rf"{_MEDIA_NAME}/{_MEDIA_NAME}")
_MALFORMED = "stored content is malformed; the vault data may be damaged or from a newer version"
_CONTENT_KEYS = frozenset(
    {
        "t",
        "v",
        "title",
        "body",
        "tags",
        "source",
        "card_type",
        "metadata",
        "private",
        "file",
        "secrets",
    }
)
#: A label of the ``secrets`` map (the ``LABEL`` of a ``{{secret:LABEL}}`` marker).
SECRET_LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}")
_ASSET_ID = re.compile(r"[0-9a-f]{32}")
_FILE_KEYS = frozenset({"name", "media_type", "data"})
_FILE_REF_KEYS = frozenset({"name", "media_type", "size", "sha256"})
_SHA256 = re.compile(r"sha256:[0-9a-f]{64}")


def _is_unicode(text: str) -> bool:
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _require_text(value: object, what: str) -> str:
    if not isinstance(value, str):
        raise UsageError(f"{what} must be text")
    if not _is_unicode(value):
        raise UsageError(f"{what} is not valid Unicode text")
    return value


def _freeze_scalar(value: object, where: str) -> str | int | float | bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        if -_SAFE_INT <= value <= _SAFE_INT:
            return value
        raise UsageError(f"{where} is outside ±(2**53 - 1); store large numbers as text")
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        raise UsageError(f"{where} must be a finite number")
    if isinstance(value, str):
        return _require_text(value, where)
    raise UsageError(f"{where} must be text, a number, a boolean or a list of those")


def _freeze_metadata(metadata: object) -> Mapping[str, MetadataValue]:
    if not isinstance(metadata, Mapping):
        raise UsageError("metadata must be a mapping of field names to values")
    frozen: dict[str, MetadataValue] = {}
    for key in sorted(metadata, key=lambda k: k if isinstance(k, str) else ""):
        if not isinstance(key, str) or not key or not _is_unicode(key):
            raise UsageError("metadata field names must be non-empty text")
        value = metadata[key]
        where = f"metadata field {key!r}" if _FIELD_NAME.fullmatch(key) else "a metadata field"
        if isinstance(value, list | tuple):
            frozen[key] = tuple(_freeze_scalar(item, where) for item in value)
        else:
            frozen[key] = _freeze_scalar(value, where)
    return MappingProxyType(frozen)


def _freeze_secrets(secrets: object) -> Mapping[str, str]:
    if not isinstance(secrets, Mapping):
        raise UsageError("the secrets map must map labels to credential ids")
    frozen: dict[str, str] = {}
    for label in sorted(secrets, key=lambda k: k if isinstance(k, str) else ""):
        target = secrets[label]
        if not isinstance(label, str) or not SECRET_LABEL.fullmatch(label):
            raise UsageError(
                "a secret label is 1 to 64 letters, digits or . _ - (starting with a letter "
                "or digit)"
            )
        if not isinstance(target, str) or not _ASSET_ID.fullmatch(target):
            raise UsageError(f"secret label {label!r} must map to a full credential asset id")
        frozen[label] = target
    return MappingProxyType(frozen)


@dataclass(frozen=True, repr=False)
class FilePayload:
    """The bytes of a file asset with its name and media type.

    ``stored`` is set instead of ``data`` for a file whose bytes were not loaded (a streamed
    upload, or a stored file read without its bytes): ``(size, "sha256:<hex>")``; ``data`` is
    then empty and :attr:`loaded` is false.

    The repr shows the media type and size only: neither the name nor the data appear in logs.
    """

    name: str
    media_type: str
    data: bytes = b""
    stored: tuple[int, str] | None = None

    def __post_init__(self) -> None:
        _require_text(self.name, "the file name")
        _require_text(self.media_type, "the media type")
        if isinstance(self.data, bytearray | memoryview):
            object.__setattr__(self, "data", bytes(self.data))
        elif not isinstance(self.data, bytes):
            raise UsageError("file data must be bytes")
        if self.stored is not None:
            size, sha = self.stored
            if isinstance(size, bool) or not isinstance(size, int) or size < 0:
                raise UsageError("a stored file size must be a non-negative integer")
            if not isinstance(sha, str) or not _SHA256.fullmatch(sha):
                raise UsageError("a stored file digest must be sha256:<64 hex digits>")
            if self.data:
                raise UsageError("a file payload has either its bytes or a stored reference")

    @property
    def loaded(self) -> bool:
        """Whether :attr:`data` holds the file's bytes."""
        return self.stored is None

    @property
    def size(self) -> int:
        """The payload size in bytes."""
        return len(self.data) if self.stored is None else self.stored[0]

    @cached_property
    def digest(self) -> str:
        """The payload's algorithm-tagged SHA-256, ``"sha256:<hex>"``."""
        if self.stored is not None:
            return self.stored[1]
        return "sha256:" + hashlib.sha256(self.data).hexdigest()

    def reference(self) -> FilePayload:
        """This payload without its bytes: name, media type, size and digest only."""
        if self.stored is not None:
            return self
        return FilePayload(self.name, self.media_type, stored=(self.size, self.digest))

    def __repr__(self) -> str:
        return f"FilePayload(media_type={self.media_type!r}, size={self.size})"


@dataclass(frozen=True, repr=False)
class Content:
    """The plaintext of one revision. Build user content with :func:`make_content`.

    ``tags`` is always a tuple and ``metadata`` an immutable mapping sorted by key whose list
    values are frozen into tuples. The repr shows the shape (lengths, counts, card type, metadata
    field names), never the title, body, tags, metadata values or file data: any of them may be
    private or secret.

    Raises:
        UsageError: a field has the wrong type, text is not valid Unicode, or metadata holds a
            value with no canonical JSON form (constructing directly with bad values).
    """

    title: str
    body: str = ""
    tags: tuple[str, ...] = ()
    source: str | None = None
    card_type: str | None = None
    metadata: Mapping[str, object] = field(default_factory=dict)
    private: bool = False
    file: FilePayload | None = None
    #: Label -> credential asset id of each ``{{secret:LABEL}}`` marker in the body.
    secrets: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        _require_text(self.title, "the title")
        _require_text(self.body, "the body")
        if isinstance(self.tags, str) or not isinstance(self.tags, Iterable):
            raise UsageError("tags must be a list of strings")
        tags = tuple(self.tags)
        for tag in tags:
            _require_text(tag, "each tag")
        object.__setattr__(self, "tags", tags)
        if self.source is not None:
            _require_text(self.source, "the source")
        if self.card_type is not None:
            _require_text(self.card_type, "the card type")
        if not isinstance(self.private, bool):
            raise UsageError("private must be true or false")
        if self.file is not None and not isinstance(self.file, FilePayload):
            raise UsageError("file must be a FilePayload")
        object.__setattr__(self, "metadata", _freeze_metadata(self.metadata))
        object.__setattr__(self, "secrets", _freeze_secrets(self.secrets))

    def __hash__(self) -> int:
        return hash(
            (
                self.title,
                self.body,
                self.tags,
                self.source,
                self.card_type,
                tuple(self.metadata.items()),
                self.private,
                self.file,
                tuple(self.secrets.items()),
            )
        )

    def __repr__(self) -> str:
        parts = [
            f"title=<{len(self.title)} chars>",
            f"body=<{len(self.body)} chars>",
            f"tags=<{len(self.tags)}>",
        ]
        if self.source is not None:
            parts.append("source=<set>")
        if self.card_type is not None:
            parts.append(f"card_type={self.card_type!r}")
        if self.metadata:
            parts.append(f"metadata_fields={tuple(self.metadata)!r}")
        parts.append(f"private={self.private}")
        if self.file is not None:
            parts.append(f"file={self.file!r}")
        if self.secrets:
            parts.append(f"secrets=<{len(self.secrets)}>")
        return f"Content({', '.join(parts)})"

    def to_dict(self) -> dict[str, object]:
        """The type-tagged version-1 JSON document of this content, omitting default values.

        Bytes are unpadded base64url; the result is always RFC 8785-canonicalizable. New file
        revisions are written as :func:`file_document` instead. Raises ``UsageError`` for a
        file payload that is not loaded.
        """
        doc = self.to_dict_without_file()
        if self.file is not None:
            if not self.file.loaded:
                raise UsageError("the file's bytes are not loaded")
            doc["file"] = {
                "name": self.file.name,
                "media_type": self.file.media_type,
                "data": b64u_encode(self.file.data),
            }
        return doc

    def to_dict_without_file(self) -> dict[str, object]:
        """:meth:`to_dict` without the ``file`` member."""
        doc: dict[str, object] = {"t": CONTENT_TAG, "v": CONTENT_VERSION, "title": self.title}
        if self.body:
            doc["body"] = self.body
        if self.tags:
            doc["tags"] = list(self.tags)
        if self.source is not None:
            doc["source"] = self.source
        if self.card_type is not None:
            doc["card_type"] = self.card_type
        if self.metadata:
            doc["metadata"] = {
                key: list(value) if isinstance(value, tuple) else value
                for key, value in self.metadata.items()
            }
        if self.private:
            doc["private"] = True
        if self.secrets:  # left out when empty, so older documents keep their bytes
            doc["secrets"] = dict(self.secrets)
        return doc

    @classmethod
    def from_dict(cls, doc: object) -> Content:
        """Read a stored content document written by :meth:`to_dict`.

        Size limits are not re-applied, so content written under other limits stays readable.
        A version-2 document (a file stored beside it) gives a payload that is not loaded; see
        :mod:`memories.vault.filebody` for the bytes.

        Raises:
            IntegrityError: the document is not a version-1 or -2 content object, has unknown keys,
                or a field has the wrong type or an impossible value (opaque message).
        """
        if not isinstance(doc, Mapping) or not _CONTENT_KEYS.issuperset(doc) or "title" not in doc:
            raise IntegrityError(_MALFORMED)
        if doc.get("t") != CONTENT_TAG or type(doc.get("v")) is not int:
            raise IntegrityError(_MALFORMED)
        version = doc["v"]
        # Version 2 is a file whose bytes are stored beside the document, never inside it.
        if version not in (CONTENT_VERSION, FILE_CONTENT_VERSION) or (
            version == FILE_CONTENT_VERSION and "file" not in doc
        ):
            raise IntegrityError(_MALFORMED)
        tags = doc.get("tags", [])
        metadata = doc.get("metadata", {})
        secrets = doc.get("secrets", {})
        if (
            not isinstance(tags, list)
            or not isinstance(metadata, dict)
            or not isinstance(secrets, dict)
            or ("source" in doc and not isinstance(doc["source"], str))
            or ("card_type" in doc and not isinstance(doc["card_type"], str))
        ):
            raise IntegrityError(_MALFORMED)
        try:
            if "file" not in doc:
                payload = None
            elif version == FILE_CONTENT_VERSION:
                payload = _file_ref_from_dict(doc["file"])
            else:
                payload = _file_from_dict(doc["file"])
            return cls(
                title=doc["title"],
                body=doc.get("body", ""),
                tags=tuple(tags),
                source=doc.get("source"),
                card_type=doc.get("card_type"),
                metadata={key: _stored_number(value) for key, value in metadata.items()},
                private=doc.get("private", False),
                file=payload,
                secrets=secrets,
            )
        except UsageError as exc:
            raise IntegrityError(_MALFORMED) from exc


def _stored_number(value: object) -> object:
    # RFC 8785 writes a double such as 2.0**60 as an integer literal, which a JSON reader returns
    # as an int beyond ±(2**53 - 1); such a literal can only have been a double.
    if isinstance(value, list):
        return [_stored_number(item) for item in value]
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > _SAFE_INT:
        try:
            return float(value)
        except OverflowError as exc:
            raise IntegrityError(_MALFORMED) from exc
    return value


def _file_from_dict(raw: object) -> FilePayload:
    if not isinstance(raw, Mapping) or set(raw) != _FILE_KEYS:
        raise IntegrityError(_MALFORMED)
    name, media_type, data = raw["name"], raw["media_type"], raw["data"]
    if not isinstance(name, str) or not isinstance(media_type, str) or not isinstance(data, str):
        raise IntegrityError(_MALFORMED)
    return FilePayload(name=name, media_type=media_type, data=b64u_decode(data))


def _file_ref_from_dict(raw: object) -> FilePayload:
    if not isinstance(raw, Mapping) or set(raw) != _FILE_REF_KEYS:
        raise IntegrityError(_MALFORMED)
    name, media_type, size, sha = raw["name"], raw["media_type"], raw["size"], raw["sha256"]
    if not isinstance(name, str) or not isinstance(media_type, str) or type(size) is not int:
        raise IntegrityError(_MALFORMED)
    if not isinstance(sha, str):
        raise IntegrityError(_MALFORMED)
    return FilePayload(name=name, media_type=media_type, stored=(size, sha))


def file_document(content: Content) -> dict[str, object]:
    """The version-2 document of a file's ``content``: :meth:`Content.to_dict` with the file's
    bytes replaced by its size and digest (the bytes follow the document; see filebody).

    Raises:
        UsageError: ``content`` carries no file.
    """
    payload = content.file
    if payload is None:
        raise UsageError("only file content has a file document")
    doc = content.to_dict_without_file()
    doc["v"] = FILE_CONTENT_VERSION
    doc["file"] = {
        "name": payload.name,
        "media_type": payload.media_type,
        "size": payload.size,
        "sha256": payload.digest,
    }
    return doc


# --- user input -------------------------------------------------------------------------------


def _single_line(value: object, what: str, *, limit: int, required: bool) -> str | None:
    text = _require_text(value, what).strip()
    if not text:
        if required:
            raise UsageError(f"{what} is required and must not be blank")
        return None
    if len(text) > limit:
        raise UsageError(f"{what} is too long ({len(text)} characters); the limit is {limit}")
    if _LINE_BREAKING.search(text):
        raise UsageError(f"{what} contains control characters; use a single line of plain text")
    return text


def _normalize_tags(tags: object) -> tuple[str, ...]:
    if isinstance(tags, str | bytes) or not isinstance(tags, Iterable):
        raise UsageError("tags must be a list of strings")
    seen: set[str] = set()
    for position, tag in enumerate(tags, start=1):
        if not isinstance(tag, str):
            raise UsageError("tags must be a list of strings")
        tag = tag.strip()
        if not _TAG.fullmatch(tag):
            raise UsageError(
                f"tag {position} is not valid: use 1 to {MAX_TAG_CHARS} letters, digits "
                "or the characters . _ - / :"
            )
        seen.add(tag)
    if len(seen) > MAX_TAGS:
        raise UsageError(f"too many tags ({len(seen)}); the limit is {MAX_TAGS}")
    return tuple(sorted(seen))


def _check_body(body: object) -> str:
    text = _require_text(body, "the body")
    # Four UTF-8 bytes per character at most: short bodies need no encoding pass.
    if len(text) * 4 > MAX_BODY_BYTES:
        size = len(text.encode("utf-8"))
        if size > MAX_BODY_BYTES:
            raise UsageError(
                f"the body is {format_size(size)}; the limit is {format_limit(MAX_BODY_BYTES)}"
            )
    return text


def _check_file(file: object, max_file_bytes: int) -> FilePayload:
    if not isinstance(file, FilePayload):
        raise UsageError("a file asset needs a file payload")
    name = _single_line(file.name, "the file name", limit=MAX_FILE_NAME_CHARS, required=True)
    assert name is not None
    if "/" in name or "\\" in name or name in {".", ".."}:
        raise UsageError("the file name must be a plain name without folders")
    media_type = file.media_type.strip().lower()
    if not _MEDIA_TYPE.fullmatch(media_type):
        raise UsageError(
            "the media type is not valid; use a type/subtype such as application/octet-stream"
        )
    if file.size > max_file_bytes:
        raise UsageError(
            f"the file is {format_size(file.size)}; the limit is "
            f"{format_limit(max_file_bytes)} (files.max_bytes)"
        )
    if name == file.name and media_type == file.media_type:
        return file
    return FilePayload(name=name, media_type=media_type, data=file.data, stored=file.stored)


def make_content(
    kind: Kind,
    *,
    title: str,
    body: str = "",
    tags: Iterable[str] = (),
    source: str | None = None,
    card_type: str | None = None,
    metadata: Mapping[str, object] | None = None,
    private: bool = False,
    file: FilePayload | None = None,
    card_type_def: CardType | None = None,
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
    secrets: Mapping[str, str] | None = None,
) -> Content:
    """Validate user input for an asset of ``kind`` and build its :class:`Content`.

    Rules: the title is required, stripped, at most 300 characters on one line; tags are
    stripped, deduplicated (case kept) and sorted, each 1..64 of letters, digits and ``._-/:``,
    at most 64 tags; the body is at most 8 MiB of UTF-8; the source is one line of at most 2048
    characters (blank means none). Cards need ``card_type`` and their metadata is validated
    against ``card_type_def`` (a built-in type is looked up when it is not given); only cards
    have a card type or metadata. File assets need ``file`` (a plain name, a ``type/subtype``
    media type, at most ``max_file_bytes``); only file assets carry one. A credential's body is
    its secret value and must not be blank. ``secrets`` (memories and cards only) maps labels to
    credential asset ids; whether a caller may set or change it is the editor's rule, not this.

    Raises:
        UsageError: any rule above is broken. Messages name the field and the rule, never the
            body, the secret or another raw value.
    """
    kind = parse_kind(kind)
    clean_title = _single_line(title, "the title", limit=MAX_TITLE_CHARS, required=True)
    assert clean_title is not None
    clean_body = _check_body(body)
    clean_source = _single_line(
        "" if source is None else source, "the source", limit=MAX_SOURCE_CHARS, required=False
    )
    clean_tags = _normalize_tags(tags)
    if not isinstance(private, bool):
        raise UsageError("private must be true or false")

    clean_metadata: Mapping[str, object] = {}
    if kind == "card":
        clean_card_type, clean_metadata = _card_fields(card_type, card_type_def, metadata)
    else:
        if card_type is not None or card_type_def is not None:
            raise UsageError("only cards have a card type")
        if metadata:
            raise UsageError("only cards have metadata")
        clean_card_type = None

    if kind == "file":
        clean_file: FilePayload | None = _check_file(file, max_file_bytes)
    elif file is not None:
        raise UsageError("only file assets carry a file")
    else:
        clean_file = None

    if kind == "credential" and not clean_body.strip():
        raise UsageError("a credential needs a secret value; the value is empty")
    if secrets and kind not in ("memory", "card"):
        raise UsageError("only memories and cards carry secret references")

    return Content(
        title=clean_title,
        body=clean_body,
        tags=clean_tags,
        source=clean_source,
        card_type=clean_card_type,
        metadata=clean_metadata,
        private=private,
        file=clean_file,
        secrets=secrets or {},
    )


def _card_fields(
    card_type: str | None, card_type_def: CardType | None, metadata: Mapping[str, object] | None
) -> tuple[str, dict[str, object]]:
    if card_type is None or not isinstance(card_type, str) or not card_type.strip():
        raise UsageError("a card needs a card type")
    name = card_type.strip()
    definition = card_type_def if card_type_def is not None else BUILTIN_CARD_TYPES.get(name)
    if definition is None:
        raise UsageError(
            "unknown card type; define it first or use a built-in type: "
            + ", ".join(sorted(BUILTIN_CARD_TYPES))
        )
    if definition.name != name:
        raise UsageError("the card type definition does not match the card type")
    return name, validate_metadata(definition, {} if metadata is None else metadata)
