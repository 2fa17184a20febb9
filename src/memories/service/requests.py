"""The typed request set every front end sends to the service.

One pydantic model per operation, joined in the discriminated union :data:`Request` on the
snake_case ``op`` field. Every model rejects unknown fields and validates strictly: ``"1"`` is not
a number, ``1`` is not a boolean and a list must be a list. Lengths are bounded coarsely here to
stop abuse; the vault domain applies the real content rules (title length, tag syntax, card
metadata) again.

:func:`parse_request` is the only way in. Its :class:`~memories.errors.UsageError` messages name
the op, the field path and what was expected, never the value that was sent: passwords, bodies
and secrets must not come back in an error. Password and secret fields are ``SecretStr`` and
content fields are left out of reprs, so a logged request shows no plaintext.

``docs/requests.md`` is generated from these models by ``scripts/gen_request_docs.py``: each
model's docstring, field descriptions, ``RESPONSE``, ``UNLOCKED`` and ``ELEVATION`` end up there.
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Annotated, Any, ClassVar, Final, Literal, TypeAlias, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    StringConstraints,
    TypeAdapter,
    ValidationError,
)

from memories.crypto.kdf import (
    DEFAULT_MEMORY_KIB,
    DEFAULT_PARALLELISM,
    DEFAULT_TIME_COST,
    FLOOR_MEMORY_KIB,
    FLOOR_PARALLELISM,
    FLOOR_TIME_COST,
    MAX_MEMORY_KIB,
    MAX_PARALLELISM,
    MAX_TIME_COST,
)
from memories.errors import UsageError

__all__ = [
    "MAX_BODY_CHARS",
    "MAX_DATA_CHARS",
    "REQUEST_TYPES",
    "AuditListRequest",
    "CardPutRequest",
    "CardTypeDefineRequest",
    "CardTypesRequest",
    "ChangePasswordRequest",
    "ConflictsRequest",
    "CredentialPutRequest",
    "DesktopStatusRequest",
    "DiffRequest",
    "FieldDefinition",
    "FileGetRequest",
    "FilePutRequest",
    "GraphRequest",
    "HistoryRequest",
    "InitRequest",
    "KdfSettings",
    "LinkRequest",
    "ListRequest",
    "LockRequest",
    "PutRequest",
    "ReadRequest",
    "Request",
    "RequestModel",
    "ResolveRequest",
    "StatusRequest",
    "SudoRequest",
    "TombstoneRequest",
    "UnlinkRequest",
    "UnlockRequest",
    "UpdateRequest",
    "VaultCreateRequest",
    "VaultListRequest",
    "op_name",
    "op_names",
    "parse_request",
]

MAX_PASSWORD_CHARS: Final = 1024
MAX_REF_CHARS: Final = 200
MAX_NAME_CHARS: Final = 200
MAX_TITLE_CHARS: Final = 1000
MAX_BODY_CHARS: Final = 8 * 1024 * 1024
MAX_DATA_CHARS: Final = 16 * 1024 * 1024
MAX_SOURCE_CHARS: Final = 4096
MAX_TAGS: Final = 256
MAX_METADATA_FIELDS: Final = 256
MAX_METADATA_TEXT: Final = 128 * 1024
MAX_LIST_ITEMS: Final = 1024

_Text = Annotated[str, StringConstraints(max_length=MAX_NAME_CHARS)]
_Ref = Annotated[str, StringConstraints(min_length=1, max_length=MAX_REF_CHARS)]
_Name = Annotated[str, StringConstraints(min_length=1, max_length=MAX_NAME_CHARS)]
_Title = Annotated[str, StringConstraints(max_length=MAX_TITLE_CHARS)]
_Body = Annotated[str, StringConstraints(max_length=MAX_BODY_CHARS)]
_Source = Annotated[str, StringConstraints(max_length=MAX_SOURCE_CHARS)]
_Tag = Annotated[str, StringConstraints(max_length=MAX_NAME_CHARS)]
_Tags = Annotated[list[_Tag], Field(max_length=MAX_TAGS)]
_Password = Annotated[SecretStr, Field(min_length=1, max_length=MAX_PASSWORD_CHARS)]
_MetaScalar = Annotated[str, StringConstraints(max_length=MAX_METADATA_TEXT)] | int | float | bool
_MetaValue = _MetaScalar | Annotated[list[_MetaScalar], Field(max_length=MAX_LIST_ITEMS)]
_Metadata = Annotated[
    dict[Annotated[str, StringConstraints(max_length=MAX_NAME_CHARS)], _MetaValue],
    Field(max_length=MAX_METADATA_FIELDS),
]
Kind: TypeAlias = Literal["memory", "card", "file", "credential"]

_VAULT = "vault name, id or id prefix; the personal vault when left out"
_REF = "asset id or a prefix of at least 4 hex characters"
_METADATA = "card fields by name: text, numbers, booleans or lists of those"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, hide_input_in_errors=True)


class RequestModel(_Model):
    """Common base of every request."""

    #: What the service answers (a sentence for docs/requests.md).
    RESPONSE: ClassVar[str] = "{}"
    #: Whether the store must be unlocked; LockedError otherwise.
    UNLOCKED: ClassVar[bool] = True
    #: When the caller's namespace must be elevated with ``sudo`` ("" when never).
    ELEVATION: ClassVar[str] = ""


class KdfSettings(_Model):
    """Argon2id cost of a new store."""

    time_cost: int = Field(
        default=DEFAULT_TIME_COST, ge=FLOOR_TIME_COST, le=MAX_TIME_COST, description="passes"
    )
    memory_kib: int = Field(
        default=DEFAULT_MEMORY_KIB,
        ge=FLOOR_MEMORY_KIB,
        le=MAX_MEMORY_KIB,
        description="memory in KiB",
    )
    parallelism: int = Field(
        default=DEFAULT_PARALLELISM, ge=FLOOR_PARALLELISM, le=MAX_PARALLELISM, description="lanes"
    )


class FieldDefinition(_Model):
    """One metadata field of a user-defined card type."""

    name: _Name = Field(description="1 to 40 lowercase letters, digits or _")
    type: Annotated[str, StringConstraints(min_length=1, max_length=40)] = Field(
        description="string, text, integer, number, boolean, date, url or string_list"
    )
    required: bool = False
    description: Annotated[str, StringConstraints(max_length=1000)] = ""
    choices: Annotated[list[_Text], Field(max_length=MAX_LIST_ITEMS)] | None = Field(
        default=None, description="allowed values of a string field"
    )
    minimum: int | float | None = Field(default=None, description="for integer and number fields")
    maximum: int | float | None = Field(default=None, description="for integer and number fields")
    format: Annotated[str, StringConstraints(max_length=40)] | None = Field(
        default=None, description="env_name: an environment variable name (string fields)"
    )


# -- lock state and identity ---------------------------------------------------------------


class InitRequest(RequestModel):
    """Create the store: an identity, the personal vault and a device-only vault; then unlock."""

    RESPONSE = "`{store, vaults: [VaultInfo], identity}`; ConflictError when a store exists already"
    UNLOCKED = False

    op: Literal["init"]
    password: _Password = Field(description="the store password (secret)")
    user_name: _Name | None = Field(default=None, description="shown to other devices")
    device_name: _Name | None = Field(default=None, description="defaults to the host name")
    kdf: KdfSettings | None = Field(default=None, description="Argon2id cost; defaults apply")


class UnlockRequest(RequestModel):
    """Unlock the store. Over a remote transport this also elevates the remote namespace."""

    RESPONSE = '`{unlocked: true}`; DeniedError "the password is not correct"'
    UNLOCKED = False

    op: Literal["unlock"]
    password: _Password = Field(description="the store password (secret)")


class LockRequest(RequestModel):
    """Lock now: keys and plaintext caches are dropped and every elevation ends."""

    RESPONSE = "`{locked: true}`"
    UNLOCKED = False

    op: Literal["lock"]


class SudoRequest(RequestModel):
    """Elevate the caller's namespace (a shell session, or one remote namespace) for a while."""

    RESPONSE = "`{elevated_until_seconds}`: how many seconds the elevation lasts"

    op: Literal["sudo"]
    password: _Password = Field(description="the store password (secret)")
    minutes: int | None = Field(
        default=None, ge=1, le=60, description="defaults to elevation_minutes from the config"
    )


class ChangePasswordRequest(RequestModel):
    """Rewrap the master key under a new password; nothing else is re-encrypted."""

    RESPONSE = "`{changed: true}`"
    ELEVATION = "always"

    op: Literal["change_password"]
    old_password: _Password = Field(description="the current password (secret)")
    new_password: _Password = Field(description="the new password (secret)")


class StatusRequest(RequestModel):
    """Lock state, identity and counts; answered while locked too."""

    RESPONSE = (
        "`{initialized, unlocked, store, version, elevated, elevated_seconds_left, "
        "idle_lock_seconds}` and, when unlocked, `identity`, `vaults` (count), `assets` "
        "(count, deleted ones included)"
    )
    UNLOCKED = False

    op: Literal["status"]


class DesktopStatusRequest(RequestModel):
    """The tray's projection: counts only, no ids, titles or contents; never resets timers."""

    RESPONSE = (
        "`{initialized, unlocked, libraries, connections, providers: [], sync_queue: "
        "{pending}}`; when locked only `{initialized, unlocked: false}`"
    )
    UNLOCKED = False

    op: Literal["desktop_status"]


# -- vaults --------------------------------------------------------------------------------


class VaultCreateRequest(RequestModel):
    """Create a vault."""

    RESPONSE = "VaultInfo `{id, name, created_at, local, personal, epoch, role}`"

    op: Literal["vault_create"]
    name: _Name = Field(description="1 to 64 letters, digits, spaces or . _ -")
    local: bool = Field(default=False, description="device-only: never synchronized")


class VaultListRequest(RequestModel):
    """List the vaults this device holds."""

    RESPONSE = "`{vaults: [VaultInfo]}`"

    op: Literal["vault_list"]


# -- assets --------------------------------------------------------------------------------


class PutRequest(RequestModel):
    """Create a memory, card or credential (files use file_put)."""

    RESPONSE = "Saved `{asset, revision, vault, heads, short_id}`"
    ELEVATION = "kind credential"

    op: Literal["put"]
    vault: _Text | None = Field(default=None, description=_VAULT)
    kind: Kind = Field(default="memory", description="file assets are stored with file_put")
    title: _Title = Field(repr=False, description="one line, at most 300 characters")
    body: _Body = Field(default="", repr=False, description="at most 8 MiB of UTF-8")
    tags: _Tags | None = Field(default=None, repr=False)
    source: _Source | None = Field(default=None, repr=False, description="where it came from")
    card_type: _Text | None = Field(default=None, description="cards only")
    metadata: _Metadata | None = Field(default=None, repr=False, description=_METADATA)
    private: bool = Field(default=False, description="readable only when elevated")


class ReadRequest(RequestModel):
    """Read an asset's newest head (or a named revision); a read intent is audited first."""

    RESPONSE = "AssetView (a credential's value is never included)"
    ELEVATION = "private assets"

    op: Literal["read"]
    ref: _Ref = Field(description=_REF)
    revision: _Ref | None = Field(default=None, description="revision id or prefix")


class UpdateRequest(RequestModel):
    """Append a revision with the given fields changed; fields left out stay as they are."""

    RESPONSE = "Saved"
    ELEVATION = "private assets, credentials"

    op: Literal["update"]
    ref: _Ref = Field(description=_REF)
    base: _Ref | None = Field(
        default=None, description="the revision the edit started from (stale edits are refused)"
    )
    fork: bool = Field(default=False, description="keep a stale edit as a deliberate conflict")
    title: _Title | None = Field(default=None, repr=False)
    body: _Body | None = Field(default=None, repr=False)
    tags: _Tags | None = Field(default=None, repr=False)
    source: _Source | None = Field(default=None, repr=False)
    metadata: _Metadata | None = Field(default=None, repr=False, description=_METADATA)
    private: bool | None = None


class TombstoneRequest(RequestModel):
    """Delete an asset from current views; its history stays."""

    RESPONSE = "Saved"
    ELEVATION = "private assets, credentials"

    op: Literal["tombstone"]
    ref: _Ref = Field(description=_REF)
    base: _Ref | None = Field(default=None, description="the revision the deletion applies to")


class ResolveRequest(RequestModel):
    """End a conflict with a revision whose parents are all current heads."""

    RESPONSE = "Saved"
    ELEVATION = "private assets, credentials"

    op: Literal["resolve"]
    ref: _Ref = Field(description=_REF)
    parents: Annotated[list[_Ref], Field(max_length=MAX_LIST_ITEMS)] | None = Field(
        default=None, description="the heads being resolved (all of them)"
    )
    delete: bool = Field(default=False, description="resolve to a tombstone")
    title: _Title | None = Field(default=None, repr=False)
    body: _Body | None = Field(default=None, repr=False)
    tags: _Tags | None = Field(default=None, repr=False)
    source: _Source | None = Field(default=None, repr=False)
    metadata: _Metadata | None = Field(default=None, repr=False, description=_METADATA)
    private: bool | None = None


class HistoryRequest(RequestModel):
    """Every revision of an asset, newest first; a read intent is audited first."""

    RESPONSE = "`{asset, entries: [HistoryEntry]}`"
    ELEVATION = "private assets"

    op: Literal["history"]
    ref: _Ref = Field(description=_REF)


class DiffRequest(RequestModel):
    """Unified diff of the text projection; a read intent is audited first."""

    RESPONSE = '`{asset, diff: "unified text"}`'
    ELEVATION = "private assets"

    op: Literal["diff"]
    ref: _Ref = Field(description=_REF)
    old: _Ref | None = Field(default=None, description="defaults to the new revision's parent")
    new: _Ref | None = Field(default=None, description="defaults to the live head")


class ListRequest(RequestModel):
    """Safe summaries of current assets, newest first (private ones only when elevated)."""

    RESPONSE = "`{summaries: [Summary]}`"

    op: Literal["list"]
    vault: _Text | None = Field(default=None, description=_VAULT)
    kind: Kind | None = None
    card_type: _Text | None = None
    tag: _Text | None = None
    all_vaults: bool = False


class ConflictsRequest(RequestModel):
    """Assets with more than one head."""

    RESPONSE = "`{summaries: [Summary]}`"

    op: Literal["conflicts"]
    vault: _Text | None = Field(default=None, description=_VAULT)


# -- cards and links -----------------------------------------------------------------------


class CardPutRequest(RequestModel):
    """Create a card of a built-in or user-defined type."""

    RESPONSE = "Saved"

    op: Literal["card_put"]
    vault: _Text | None = Field(default=None, description=_VAULT)
    title: _Title = Field(repr=False)
    card_type: _Name = Field(description="knowledge, brain, persona, protected_card or defined")
    metadata: _Metadata | None = Field(default=None, repr=False, description=_METADATA)
    body: _Body = Field(default="", repr=False)
    tags: _Tags | None = Field(default=None, repr=False)
    source: _Source | None = Field(default=None, repr=False)
    private: bool = False


class CardTypesRequest(RequestModel):
    """The card types a vault knows: built-in and defined."""

    RESPONSE = "`{card_types: [CardType]}`"

    op: Literal["card_types"]
    vault: _Text | None = Field(default=None, description=_VAULT)


class CardTypeDefineRequest(RequestModel):
    """Define a card type in a vault."""

    RESPONSE = "CardType"

    op: Literal["card_type_define"]
    vault: _Text | None = Field(default=None, description=_VAULT)
    name: _Name = Field(description="1 to 40 lowercase letters, digits, _ or -")
    fields: Annotated[list[FieldDefinition], Field(max_length=64)]
    description: Annotated[str, StringConstraints(max_length=1000)] = ""


class LinkRequest(RequestModel):
    """Add a directed link between two cards of one vault."""

    RESPONSE = "`{source, target, relation}`"

    op: Literal["link"]
    source: _Ref = Field(description="card id or prefix")
    target: _Ref = Field(description="card id or prefix")
    relation: _Text | None = Field(default=None, description="defaults to related")


class UnlinkRequest(RequestModel):
    """Remove links from source to target (of one relation, or all)."""

    RESPONSE = "`{removed: N}`"

    op: Literal["unlink"]
    source: _Ref
    target: _Ref
    relation: _Text | None = None


class GraphRequest(RequestModel):
    """A vault's visible cards and the links between them."""

    RESPONSE = "`{nodes, edges}`"

    op: Literal["graph"]
    vault: _Text | None = Field(default=None, description=_VAULT)


# -- files and credentials -----------------------------------------------------------------


class FilePutRequest(RequestModel):
    """Store a file."""

    RESPONSE = "Saved"

    op: Literal["file_put"]
    vault: _Text | None = Field(default=None, description=_VAULT)
    name: _Name = Field(repr=False, description="a plain file name")
    media_type: _Text = "application/octet-stream"
    data: Annotated[
        str, StringConstraints(max_length=MAX_DATA_CHARS, pattern=r"^[A-Za-z0-9_-]*$")
    ] = Field(repr=False, description="the bytes as unpadded base64url")
    title: _Title | None = Field(default=None, repr=False, description="defaults to the name")
    tags: _Tags | None = Field(default=None, repr=False)
    private: bool = False


class FileGetRequest(RequestModel):
    """A file's bytes; a read intent is audited first."""

    RESPONSE = "`{asset, name, media_type, data (unpadded base64url), size}`"
    ELEVATION = "private assets"

    op: Literal["file_get"]
    ref: _Ref = Field(description=_REF)


class CredentialPutRequest(RequestModel):
    """Store a credential. Its value never appears in any response, view or audit record."""

    RESPONSE = "Saved"
    ELEVATION = "always"

    op: Literal["credential_put"]
    vault: _Text | None = Field(default=None, description=_VAULT)
    title: _Title = Field(repr=False)
    secret: Annotated[SecretStr, Field(min_length=1, max_length=MAX_BODY_CHARS)] = Field(
        description="the credential value (secret)"
    )
    tags: _Tags | None = Field(default=None, repr=False)
    metadata: _Metadata | None = Field(
        default=None, repr=False, description="must be empty: only cards carry metadata"
    )


class AuditListRequest(RequestModel):
    """The store's audit trail (its checkpoints), newest first."""

    RESPONSE = "`{entries: [{seq, at, action, details}]}`"

    op: Literal["audit_list"]
    limit: int = Field(default=50, ge=1, le=1000)


Request = Annotated[
    InitRequest
    | UnlockRequest
    | LockRequest
    | SudoRequest
    | ChangePasswordRequest
    | StatusRequest
    | DesktopStatusRequest
    | VaultCreateRequest
    | VaultListRequest
    | PutRequest
    | ReadRequest
    | UpdateRequest
    | TombstoneRequest
    | ResolveRequest
    | HistoryRequest
    | DiffRequest
    | ListRequest
    | ConflictsRequest
    | CardPutRequest
    | CardTypesRequest
    | CardTypeDefineRequest
    | LinkRequest
    | UnlinkRequest
    | GraphRequest
    | FilePutRequest
    | FileGetRequest
    | CredentialPutRequest
    | AuditListRequest,
    Field(discriminator="op"),
]

#: Every request model, in documentation order.
REQUEST_TYPES: Final[tuple[type[RequestModel], ...]] = (
    InitRequest,
    UnlockRequest,
    LockRequest,
    SudoRequest,
    ChangePasswordRequest,
    StatusRequest,
    DesktopStatusRequest,
    VaultCreateRequest,
    VaultListRequest,
    PutRequest,
    ReadRequest,
    UpdateRequest,
    TombstoneRequest,
    ResolveRequest,
    HistoryRequest,
    DiffRequest,
    ListRequest,
    ConflictsRequest,
    CardPutRequest,
    CardTypesRequest,
    CardTypeDefineRequest,
    LinkRequest,
    UnlinkRequest,
    GraphRequest,
    FilePutRequest,
    FileGetRequest,
    CredentialPutRequest,
    AuditListRequest,
)

_ADAPTER: Final[TypeAdapter[Any]] = TypeAdapter(Request)


def op_name(model: type[RequestModel]) -> str:
    """The ``op`` value of a request model."""
    return str(get_args(model.model_fields["op"].annotation)[0])


def op_names() -> tuple[str, ...]:
    """Every op, in documentation order."""
    return tuple(op_name(model) for model in REQUEST_TYPES)


# -- errors without values -----------------------------------------------------------------

_IDENTIFIER = re.compile(r"[a-z][a-z0-9_]{0,39}")
_OPS: Final = frozenset(op_names())
# Field names the models define: only these appear in error paths. Anything else in a location
# (a metadata key, an unknown field) is input and is not repeated.
_MODELS: Final[tuple[type[BaseModel], ...]] = (*REQUEST_TYPES, KdfSettings, FieldDefinition)
_KNOWN_NAMES: Final = frozenset(name for model in _MODELS for name in model.model_fields)
_MAX_REPORTED = 3


def _path(loc: tuple[int | str, ...]) -> str:
    parts: list[str] = []
    for item in loc:
        if isinstance(item, int):
            parts.append(f"[{item}]")
        elif item in _KNOWN_NAMES:
            parts.append(("." if parts else "") + item)
        else:
            break  # a union member's label or a user-chosen key: stop before it
    return "".join(parts)


def _describe(error: Any) -> str:
    kind = error["type"]
    ctx = error.get("ctx") or {}
    simple = {
        "missing": "is required",
        "string_type": "must be text",
        "int_type": "must be a whole number",
        "float_type": "must be a number",
        "bool_type": "must be true or false",
        "list_type": "must be a list",
        "dict_type": "must be an object",
        "model_type": "must be an object",
        "model_attributes_type": "must be an object",
        "string_too_short": "must not be empty",
        "finite_number": "must be a finite number",
        "string_unicode": "must be valid Unicode text",
    }
    if kind in simple:
        return simple[kind]
    if kind in ("string_too_long", "too_long"):
        # Secret strings report "too_long" with field_type "Value"; collections name themselves.
        collection = ctx.get("field_type") in ("List", "Tuple", "Set", "Dictionary")
        unit = "items" if kind == "too_long" and collection else "characters"
        return f"is too long (at most {ctx.get('max_length', '?')} {unit})"
    if kind == "too_short":
        return f"needs at least {ctx.get('min_length', '?')} items"
    if kind in ("greater_than_equal", "greater_than"):
        return f"must be at least {ctx.get('ge', ctx.get('gt', '?'))}"
    if kind in ("less_than_equal", "less_than"):
        return f"must be at most {ctx.get('le', ctx.get('lt', '?'))}"
    if kind == "literal_error":
        return f"must be one of: {ctx.get('expected', '?')}"
    if kind == "string_pattern_mismatch":
        return "has characters that are not allowed"
    return "is not valid"


def _message(exc: ValidationError) -> str:
    errors = exc.errors(include_url=False, include_input=False, include_context=True)
    op = "request"
    problems: dict[str, list[str]] = defaultdict(list)
    unknown = 0
    for error in errors:
        loc = tuple(error["loc"])
        if error["type"] in ("union_tag_invalid", "union_tag_not_found"):
            raise UsageError("unknown op; use one of: " + ", ".join(op_names())) from None
        if loc and loc[0] in _OPS:
            op, loc = str(loc[0]), loc[1:]
        if error["type"] == "extra_forbidden":
            name = loc[-1] if loc else ""
            prefix = _path(loc[:-1])
            if isinstance(name, str) and _IDENTIFIER.fullmatch(name):
                where = f"{prefix}.{name}" if prefix else name
                problems[f"unknown field '{where}'"] = []
            else:
                unknown += 1
            continue
        problems[_path(loc) or "request"].append(_describe(error))
    texts: list[str] = []
    for where, found in problems.items():
        if not found:
            texts.append(where)
        elif len(set(found)) == 1:
            texts.append(f"field '{where}' {found[0]}")
        else:  # a union: every alternative failed
            texts.append(f"field '{where}' has a value of the wrong type")
    if unknown:
        texts.append("unknown field" if unknown == 1 else f"{unknown} unknown fields")
    shown = texts[:_MAX_REPORTED]
    if len(texts) > len(shown):
        shown.append(f"and {len(texts) - len(shown)} more")
    return f"{op}: " + "; ".join(shown)


def parse_request(data: object) -> Request:
    """Validate a request object (the ``request`` member of a Wire v1 envelope).

    Raises:
        UsageError: ``data`` is not an object, has no or an unknown ``op``, has an unknown field,
            misses a required field, or a field has the wrong type or size. The message names
            the op and the field path, never a value.
    """
    if not isinstance(data, dict):
        raise UsageError("a request must be an object with an op")
    op = data.get("op")
    if not isinstance(op, str) or op not in _OPS:
        raise UsageError("unknown op; use one of: " + ", ".join(op_names()))
    try:
        request: Request = _ADAPTER.validate_python(data)
    except ValidationError as exc:
        raise UsageError(_message(exc)) from None
    return request
