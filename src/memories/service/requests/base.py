"""What every request model shares: strict validation, bounded field types, declared needs.

Each request class declares, in its own body, a :class:`Needs`: whether it works while locked,
when it needs elevation, the vault role it needs, the MCP capability it needs (``None``: never
over MCP) and whether remote transports may send it. :func:`memories.service.access.authorize`
is the one reader of these declarations; a new request adds its declaration and nothing else.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Annotated, ClassVar, Final, Literal, TypeAlias, get_args

from pydantic import BaseModel, ConfigDict, Field, SecretStr, StringConstraints

from memories.service.grants import Capability

__all__ = [
    "ELEVATION_RULES",
    "MAX_BODY_CHARS",
    "MAX_DATA_CHARS",
    "MAX_LIST_ITEMS",
    "ROLE_ORDER",
    "ElevationRule",
    "Kind",
    "Needs",
    "RequestModel",
    "StrictModel",
    "VaultRole",
    "op_name",
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

Text = Annotated[str, StringConstraints(max_length=MAX_NAME_CHARS)]
Ref = Annotated[str, StringConstraints(min_length=1, max_length=MAX_REF_CHARS)]
Name = Annotated[str, StringConstraints(min_length=1, max_length=MAX_NAME_CHARS)]
Title = Annotated[str, StringConstraints(max_length=MAX_TITLE_CHARS)]
Body = Annotated[str, StringConstraints(max_length=MAX_BODY_CHARS)]
Source = Annotated[str, StringConstraints(max_length=MAX_SOURCE_CHARS)]
Tags = Annotated[list[Text], Field(max_length=MAX_TAGS)]
Password = Annotated[SecretStr, Field(min_length=1, max_length=MAX_PASSWORD_CHARS)]
_MetaScalar = Annotated[str, StringConstraints(max_length=MAX_METADATA_TEXT)] | int | float | bool
_MetaValue = _MetaScalar | Annotated[list[_MetaScalar], Field(max_length=MAX_LIST_ITEMS)]
Metadata = Annotated[
    dict[Annotated[str, StringConstraints(max_length=MAX_NAME_CHARS)], _MetaValue],
    Field(max_length=MAX_METADATA_FIELDS),
]
Kind: TypeAlias = Literal["memory", "card", "file", "credential"]

VAULT_HELP: Final = "vault name, id or id prefix; the personal vault when left out"
REF_HELP: Final = "asset id or a prefix of at least 4 hex characters"
METADATA_HELP: Final = "card fields by name: text, numbers, booleans or lists of those"

#: When a request needs the caller's namespace elevated with ``sudo``.
ElevationRule: TypeAlias = Literal[
    "never",
    "always",
    "private",  # when the asset it touches is private
    "private_or_credential",  # when the asset is private or a credential
    "credential_kind",  # when it creates a credential
]

#: How docs/requests.md and error messages describe each rule.
ELEVATION_RULES: Final[dict[ElevationRule, str]] = {
    "never": "",
    "always": "always",
    "private": "private assets",
    "private_or_credential": "private assets, credentials",
    "credential_kind": "kind credential",
}

#: A vault role, weakest first.
VaultRole: TypeAlias = Literal["reader", "editor", "admin", "owner"]
ROLE_ORDER: Final[tuple[VaultRole, ...]] = get_args(VaultRole)


@dataclass(frozen=True)
class Needs:
    """What a request needs before the service acts on it.

    Attributes:
        unlocked: the store must be unlocked (``LockedError`` otherwise).
        elevation: when the caller's namespace must be elevated (``DeniedError``).
        role: the weakest vault role that may send it for the vault it names or touches;
            ``None`` for requests that are not about one vault.
        mcp: the MCP grant capability it needs; ``None`` means never over MCP.
        remote: whether remote transports (``ws:remote``, ``relay:remote``) may send it.
        subjects: the fields that name the assets it touches; the authorizer resolves each
            and applies ``elevation`` and ``role`` to it. A ``vault`` field is always checked.
        audit_failures: a failure is recorded in the audit trail as ``<op>.failed`` (writes,
            and the password and elevation checks).
    """

    unlocked: bool = True
    elevation: ElevationRule = "never"
    role: VaultRole | None = None
    mcp: Capability | None = None
    remote: bool = True
    subjects: tuple[str, ...] = ()
    audit_failures: bool = False

    def describe(self) -> str:
        """One line for docs/requests.md."""
        parts = ["unlocked" if self.unlocked else "works while locked"]
        if self.elevation != "never":
            parts.append(f"elevation: {ELEVATION_RULES[self.elevation]}")
        if self.role is not None:
            parts.append(f"role: {self.role}")
        parts.append(f"MCP: {self.mcp}" if self.mcp else "not over MCP")
        if not self.remote:
            parts.append("local only")
        return "; ".join(parts)


class StrictModel(BaseModel):
    """Unknown fields refused, strict types, immutable, inputs kept out of error texts.

    Validators are built on a model's first use, not at import: a command-line call uses one
    or two of the hundred-odd request models, and building them all costs a third of a second.
    """

    model_config = ConfigDict(
        extra="forbid", strict=True, frozen=True, hide_input_in_errors=True, defer_build=True
    )


class RequestModel(StrictModel):
    """Common base of every request. Subclasses declare ``NEEDS`` and ``RESPONSE``."""

    #: What the request needs; every concrete request declares its own.
    NEEDS: ClassVar[Needs]
    #: What the service answers (a sentence for docs/requests.md).
    RESPONSE: ClassVar[str] = "{}"


@functools.cache
def op_name(model: type[RequestModel]) -> str:
    """The ``op`` value of a request model (worked out once per model: it is asked per request)."""
    return str(get_args(model.model_fields["op"].annotation)[0])
