"""Card types: the typed metadata schema a card carries inside its encrypted revisions.

The schema is shared: the vault validates card content with it, the service answers
``card_types`` with its JSON form, and front ends type ``--meta key=value`` input with it.

Four types are built in (:data:`BUILTIN_CARD_TYPES`): ``knowledge``, ``brain``, ``persona`` and
``protected_card``. Users may define more with :func:`define_card_type`. Metadata is checked
with :func:`validate_metadata`, which normalizes values (dates as ``YYYY-MM-DD``, http(s) URLs,
integers that are not booleans, finite numbers) and names the offending field and the expected
type in its errors, never the value. ``credential_ref`` fields hold an opaque credential asset id;
they are reserved for built-in protected cards, never resolved here, and never searchable.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from types import MappingProxyType
from typing import Literal, TypeAlias, assert_never
from urllib.parse import urlsplit

from memories.errors import IntegrityError, UsageError

__all__ = [
    "BUILTIN_CARD_TYPES",
    "CARD_TYPE_TAG",
    "FIELD_FORMATS",
    "FIELD_TYPES",
    "USER_FIELD_TYPES",
    "CardType",
    "FieldFormat",
    "FieldSpec",
    "FieldType",
    "define_card_type",
    "parse_metadata_assignments",
    "parse_metadata_value",
    "validate_metadata",
]

FieldType: TypeAlias = Literal[
    "string",
    "text",
    "integer",
    "number",
    "boolean",
    "date",
    "url",
    "string_list",
    "credential_ref",
]
FIELD_TYPES: tuple[FieldType, ...] = (
    "string",
    "text",
    "integer",
    "number",
    "boolean",
    "date",
    "url",
    "string_list",
    "credential_ref",
)
#: Types a user-defined card type may use; ``credential_ref`` is reserved for protected cards.
USER_FIELD_TYPES: tuple[FieldType, ...] = tuple(t for t in FIELD_TYPES if t != "credential_ref")

#: Extra checks a ``string`` field may ask for. ``env_name``: an environment variable name.
FieldFormat: TypeAlias = Literal["env_name"]
FIELD_FORMATS: tuple[FieldFormat, ...] = ("env_name",)

CARD_TYPE_TAG = "memories.card_type"

MAX_STRING_CHARS = 1000
MAX_TEXT_CHARS = 64 * 1024
MAX_URL_CHARS = 2048
MAX_LIST_ITEMS = 256
MAX_FIELDS = 64
MAX_CHOICES = 64
MAX_DESCRIPTION_CHARS = 500

_SAFE_INT = 2**53 - 1
_TYPE_NAME = re.compile(r"[a-z][a-z0-9_-]{0,39}")
_FIELD_NAME = re.compile(r"[a-z][a-z0-9_]{0,39}")
_CREDENTIAL_REF = re.compile(r"[A-Za-z0-9][A-Za-z0-9_:.\-]{0,199}")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
_ISO_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_INTEGER = re.compile(r"[+-]?[0-9]+")
_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
# Multi-line text keeps tabs and line breaks but no other controls.
_TEXT_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_TRUE = frozenset({"true", "yes", "on", "1"})
_FALSE = frozenset({"false", "no", "off", "0"})
_FIELD_KEYS = frozenset(
    {"name", "type", "required", "description", "choices", "minimum", "maximum", "format"}
)
_CARD_TYPE_KEYS = frozenset({"t", "v", "name", "description", "fields", "searchable", "builtin"})
_MALFORMED = (
    "a stored card type is malformed; the vault data may be damaged or from a newer version"
)

_EXPECTED: Mapping[FieldType, str] = MappingProxyType(
    {
        "string": f"a single line of text (at most {MAX_STRING_CHARS} characters)",
        "text": f"text (at most {MAX_TEXT_CHARS} characters)",
        "integer": "a whole number",
        "number": "a finite number",
        "boolean": "true or false",
        "date": "a date as YYYY-MM-DD",
        "url": "an http:// or https:// URL",
        "string_list": f"a list of single-line strings (at most {MAX_LIST_ITEMS})",
        "credential_ref": "a credential asset id",
    }
)


@dataclass(frozen=True)
class FieldSpec:
    """One metadata field of a card type.

    ``choices`` restricts a ``string`` field to fixed values; ``minimum``/``maximum`` bound an
    ``integer`` or ``number`` field (inclusive); ``format`` asks a ``string`` field for an extra
    check from :data:`FIELD_FORMATS`.
    """

    name: str
    type: FieldType
    required: bool = False
    description: str = ""
    choices: tuple[str, ...] = ()
    minimum: int | float | None = None
    maximum: int | float | None = None
    format: FieldFormat | None = None

    def expected(self) -> str:
        """Describe the accepted values for error messages and help text."""
        if self.choices:
            return "one of: " + ", ".join(self.choices)
        text = _EXPECTED[self.type]
        if self.format == "env_name":
            text = "an environment variable name (letters, digits, _; not starting with a digit)"
        if self.minimum is not None and self.maximum is not None:
            text += f" from {self.minimum} to {self.maximum}"
        elif self.minimum is not None:
            text += f" of at least {self.minimum}"
        elif self.maximum is not None:
            text += f" of at most {self.maximum}"
        return text

    def to_dict(self) -> dict[str, object]:
        """JSON form, omitting defaults."""
        doc: dict[str, object] = {"name": self.name, "type": self.type}
        if self.required:
            doc["required"] = True
        if self.description:
            doc["description"] = self.description
        if self.choices:
            doc["choices"] = list(self.choices)
        if self.minimum is not None:
            doc["minimum"] = self.minimum
        if self.maximum is not None:
            doc["maximum"] = self.maximum
        if self.format is not None:
            doc["format"] = self.format
        return doc


@dataclass(frozen=True)
class CardType:
    """A named card schema.

    ``searchable`` lists the metadata fields a search index may include; ``credential_ref``
    fields are never searchable. ``builtin`` marks the types shipped in code.

    Raises:
        UsageError: ``searchable`` names an unknown or ``credential_ref`` field.
    """

    name: str
    fields: tuple[FieldSpec, ...]
    description: str = ""
    builtin: bool = False
    searchable: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "fields", tuple(self.fields))
        object.__setattr__(self, "searchable", tuple(self.searchable))
        kinds = {spec.name: spec.type for spec in self.fields}
        for name in self.searchable:
            if kinds.get(name) in (None, "credential_ref"):
                raise UsageError("searchable fields must be non-credential fields of the type")

    def field(self, name: str) -> FieldSpec | None:
        """The field called ``name``, or None."""
        for spec in self.fields:
            if spec.name == name:
                return spec
        return None

    def to_dict(self) -> dict[str, object]:
        """The type-tagged JSON document of this card type (``builtin`` only when set)."""
        doc: dict[str, object] = {
            "t": CARD_TYPE_TAG,
            "v": 1,
            "name": self.name,
            "fields": [spec.to_dict() for spec in self.fields],
        }
        if self.description:
            doc["description"] = self.description
        if self.searchable:
            doc["searchable"] = list(self.searchable)
        if self.builtin:
            doc["builtin"] = True
        return doc

    @classmethod
    def from_dict(cls, doc: object) -> CardType:
        """Read a card type document written by :meth:`to_dict`.

        A document marked ``builtin`` must match the built-in type of that name exactly; any
        other document must be a valid user-defined type (so a stored type can never shadow a
        built-in one).

        Raises:
            IntegrityError: the document is malformed (opaque message).
        """
        if not isinstance(doc, Mapping) or not _CARD_TYPE_KEYS.issuperset(doc):
            raise IntegrityError(_MALFORMED)
        if doc.get("t") != CARD_TYPE_TAG or type(doc.get("v")) is not int or doc["v"] != 1:
            raise IntegrityError(_MALFORMED)
        if "builtin" in doc:
            stored_name = doc.get("name")
            builtin = BUILTIN_CARD_TYPES.get(stored_name) if isinstance(stored_name, str) else None
            if doc["builtin"] is not True or builtin is None or builtin.to_dict() != dict(doc):
                raise IntegrityError(_MALFORMED)
            return builtin
        name, fields, description = doc.get("name"), doc.get("fields"), doc.get("description", "")
        searchable = doc.get("searchable")
        try:
            if not isinstance(name, str) or not isinstance(description, str):
                raise UsageError("wrong type")
            if not isinstance(fields, list) or not all(isinstance(f, Mapping) for f in fields):
                raise UsageError("wrong type")
            if searchable is not None and not isinstance(searchable, list):
                raise UsageError("wrong type")
            return define_card_type(name, fields, description, searchable=searchable)
        except UsageError as exc:
            raise IntegrityError(_MALFORMED) from exc


# --- built-in types -------------------------------------------------------------------------

_KNOWLEDGE = CardType(
    name="knowledge",
    description="A fact, decision or piece of reference knowledge worth keeping.",
    builtin=True,
    fields=(
        FieldSpec("topic", "string", description="What the knowledge is about."),
        FieldSpec("summary", "text", description="A short summary of the body."),
        FieldSpec(
            "confidence",
            "number",
            description="How sure the author is, from 0 (a guess) to 1 (verified).",
            minimum=0,
            maximum=1,
        ),
        FieldSpec("references", "string_list", description="Links or citations backing it."),
        FieldSpec("reviewed", "date", description="When it was last checked."),
    ),
    searchable=("topic", "summary", "references"),
)

_BRAIN = CardType(
    name="brain",
    description="An agent's working memory: the scratch state of a task in progress.",
    builtin=True,
    fields=(
        FieldSpec("agent", "string", required=True, description="The agent that owns the card."),
        FieldSpec("task", "string", description="The task the notes belong to."),
        FieldSpec("context", "text", description="What the agent needs to resume the task."),
        FieldSpec(
            "status",
            "string",
            description="Where the task stands.",
            choices=("active", "blocked", "done", "archived"),
        ),
        FieldSpec("expires", "date", description="When the notes stop being useful."),
    ),
    searchable=("agent", "task", "context", "status"),
)

_PERSONA = CardType(
    name="persona",
    description="How an agent should behave: a role, a tone and standing instructions.",
    builtin=True,
    fields=(
        FieldSpec("name", "string", required=True, description="The persona's name."),
        FieldSpec("role", "string", description="The role it plays, e.g. reviewer."),
        FieldSpec("tone", "string", description="How it speaks, e.g. terse, friendly."),
        FieldSpec("instructions", "text", description="Standing instructions it follows."),
        FieldSpec("audience", "string", description="Who it addresses."),
    ),
    searchable=("name", "role", "tone", "instructions", "audience"),
)

_PROTECTED = CardType(
    name="protected_card",
    description=(
        "The visible face of a credential: what it is for and where it is used. "
        "The secret stays in the referenced credential asset."
    ),
    builtin=True,
    fields=(
        FieldSpec(
            "credential_ref",
            "credential_ref",
            required=True,
            description="The id of the credential asset holding the secret.",
        ),
        FieldSpec(
            "label",
            "string",
            description="The stable name commands use for it, e.g. `memories otp github`.",
        ),
        FieldSpec("account", "string", description="The account or user name."),
        FieldSpec("service", "string", description="The service the credential signs in to."),
        FieldSpec(
            "env",
            "string",
            description="The environment variable a bound program receives the secret in.",
            format="env_name",
        ),
        FieldSpec(
            "kind",
            "string",
            description="What sort of secret the credential holds.",
            choices=("password", "token", "totp", "hotp", "ssh_key", "certificate", "other"),
        ),
        FieldSpec("url", "url", description="Where the credential is used."),
    ),
    searchable=("label", "account", "service", "env", "kind", "url"),
)

#: The card types shipped in code, by name.
BUILTIN_CARD_TYPES: Mapping[str, CardType] = MappingProxyType(
    {t.name: t for t in (_BRAIN, _KNOWLEDGE, _PERSONA, _PROTECTED)}
)


# --- validation -----------------------------------------------------------------------------


def _field_error(card_type: CardType, spec: FieldSpec) -> UsageError:
    return UsageError(
        f"field {spec.name!r} of card type {card_type.name!r} expects {spec.expected()}"
    )


def _check_line(value: object, limit: int) -> str | None:
    """A stripped single line, None when blank; raises a bare ValueError when invalid."""
    if not isinstance(value, str):
        raise ValueError
    text = value.strip()
    if len(text) > limit or _CONTROL.search(text):
        raise ValueError
    text.encode("utf-8")  # a lone surrogate raises UnicodeEncodeError, a ValueError
    return text or None


def _normalize(spec: FieldSpec, value: object) -> object:
    """The normalized value, None when it counts as absent; ValueError when it is invalid."""
    match spec.type:
        case "string":
            text = _check_line(value, MAX_STRING_CHARS)
            if text is None:
                return None
            if spec.choices and text not in spec.choices:
                raise ValueError
            if spec.format == "env_name" and not _ENV_NAME.fullmatch(text):
                raise ValueError
            return text
        case "text":
            if not isinstance(value, str) or len(value) > MAX_TEXT_CHARS:
                raise ValueError
            if _TEXT_CONTROL.search(value):
                raise ValueError
            value.encode("utf-8")
            return value if value.strip() else None
        case "integer":
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError
            if not -_SAFE_INT <= value <= _SAFE_INT:
                raise ValueError
            return _check_range(spec, value)
        case "number":
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ValueError
            if isinstance(value, float) and not math.isfinite(value):
                raise ValueError
            if isinstance(value, int) and not -_SAFE_INT <= value <= _SAFE_INT:
                raise ValueError
            return _check_range(spec, value)
        case "boolean":
            if not isinstance(value, bool):
                raise ValueError
            return value
        case "date":
            return _normalize_date(value)
        case "url":
            return _normalize_url(value)
        case "string_list":
            if isinstance(value, str) or not isinstance(value, list | tuple):
                raise ValueError
            items = [_check_line(item, MAX_STRING_CHARS) for item in value]
            kept = [item for item in items if item is not None]
            if len(kept) > MAX_LIST_ITEMS:
                raise ValueError
            return kept or None
        case "credential_ref":
            if not isinstance(value, str) or not _CREDENTIAL_REF.fullmatch(value):
                raise ValueError
            return value
        case _:
            assert_never(spec.type)


def _check_range(spec: FieldSpec, value: int | float) -> int | float:
    if spec.minimum is not None and value < spec.minimum:
        raise ValueError
    if spec.maximum is not None and value > spec.maximum:
        raise ValueError
    return value


def _normalize_date(value: object) -> str:
    if isinstance(value, datetime):
        raise ValueError
    if isinstance(value, date):
        return value.isoformat()
    if not isinstance(value, str):
        raise ValueError
    text = value.strip()
    if not _ISO_DATE.fullmatch(text):
        raise ValueError
    return date.fromisoformat(text).isoformat()


def _normalize_url(value: object) -> str | None:
    if not isinstance(value, str):
        raise ValueError
    text = value.strip()
    if not text:
        return None
    if len(text) > MAX_URL_CHARS or not text.isascii() or re.search(r"[\x00-\x20\x7f]", text):
        raise ValueError
    parts = urlsplit(text)
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise ValueError
    _ = parts.port  # raises ValueError for an invalid port
    return text


def validate_metadata(card_type: CardType, metadata: Mapping[str, object]) -> dict[str, object]:
    """Check ``metadata`` against ``card_type`` and return it normalized, sorted by field name.

    Strings are stripped; blank strings, empty lists and None count as absent. Dates become
    ``YYYY-MM-DD``; URLs must be http(s) with a host; integers exclude booleans; numbers are
    finite; both stay within ±(2**53 - 1) and the field's bounds.

    Raises:
        UsageError: metadata is not a mapping, a field is unknown, a required field is missing,
            or a value has the wrong type. The message names the field and the expected type,
            never the value.
    """
    if not isinstance(metadata, Mapping):
        raise UsageError("metadata must be a mapping of field names to values")
    result: dict[str, object] = {}
    for key in metadata:
        if not isinstance(key, str) or not _FIELD_NAME.fullmatch(key):
            raise UsageError(
                f"a metadata field name is not valid for card type {card_type.name!r}; "
                f"its fields are: {_field_names(card_type)}"
            )
        spec = card_type.field(key)
        if spec is None:
            raise UsageError(
                f"card type {card_type.name!r} has no field {key!r}; "
                f"its fields are: {_field_names(card_type)}"
            )
        value = metadata[key]
        if value is None:
            continue
        try:
            normalized = _normalize(spec, value)
        except ValueError as exc:
            raise _field_error(card_type, spec) from exc
        if normalized is not None:
            result[key] = normalized
    for spec in card_type.fields:
        if spec.required and spec.name not in result:
            raise UsageError(
                f"card type {card_type.name!r} requires field {spec.name!r} ({spec.expected()})"
            )
    return dict(sorted(result.items()))


def _field_names(card_type: CardType) -> str:
    return ", ".join(spec.name for spec in card_type.fields) or "(none)"


def parse_metadata_value(spec: FieldSpec, text: str) -> object:
    """Parse one command-line value for ``spec`` and return it normalized.

    ``boolean`` accepts true/false, yes/no, on/off, 1/0; ``integer`` and ``number`` accept
    ASCII decimal literals (no NaN or infinity); ``string_list`` splits on commas. A blank
    value returns None (the field is cleared).

    Raises:
        UsageError: the text does not parse as the field's type; the message names the field
            and the expected type, never the text.
    """
    error = UsageError(f"field {spec.name!r} expects {spec.expected()}")
    if not isinstance(text, str):
        raise error
    raw = text.strip()
    value: object
    match spec.type:
        case "integer":
            if not raw:
                return None
            if not _INTEGER.fullmatch(raw):
                raise error
            value = int(raw)
        case "number":
            if not raw:
                return None
            if not _NUMBER.fullmatch(raw):
                raise error
            value = int(raw) if _INTEGER.fullmatch(raw) else float(raw)
        case "boolean":
            if not raw:
                return None
            lowered = raw.lower()
            if lowered not in _TRUE | _FALSE:
                raise error
            value = lowered in _TRUE
        case "string_list":
            value = [item for item in raw.split(",") if item.strip()]
        case _:
            value = text
    try:
        return _normalize(spec, value)
    except ValueError as exc:
        raise error from exc


def parse_metadata_assignments(card_type: CardType, pairs: Iterable[str]) -> dict[str, object]:
    """Parse ``key=value`` strings (``--meta`` options) into metadata for ``card_type``.

    A later assignment to the same key wins; a blank value clears the field. The result still
    needs :func:`validate_metadata` for required fields.

    Raises:
        UsageError: a pair has no ``=``, names an unknown field, or its value does not parse.
    """
    result: dict[str, object] = {}
    for position, pair in enumerate(pairs, start=1):
        key, sep, text = pair.partition("=") if isinstance(pair, str) else ("", "", "")
        key = key.strip()
        if not sep or not _FIELD_NAME.fullmatch(key):
            raise UsageError(
                f"metadata {position} is not key=value with a field name such as topic=..."
            )
        spec = card_type.field(key)
        if spec is None:
            raise UsageError(
                f"card type {card_type.name!r} has no field {key!r}; "
                f"its fields are: {_field_names(card_type)}"
            )
        result[key] = parse_metadata_value(spec, text)
    return result


# --- user-defined types ---------------------------------------------------------------------


def _description(value: object, what: str) -> str:
    if not isinstance(value, str):
        raise UsageError(f"{what} must be text")
    text = value.strip()
    if len(text) > MAX_DESCRIPTION_CHARS or _CONTROL.search(text):
        raise UsageError(f"{what} must be one line of at most {MAX_DESCRIPTION_CHARS} characters")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise UsageError(f"{what} is not valid Unicode text") from exc
    return text


def _bound(value: object, what: str) -> int | float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise UsageError(f"{what} must be a number")
    if isinstance(value, float) and not math.isfinite(value):
        raise UsageError(f"{what} must be a finite number")
    if isinstance(value, int) and not -_SAFE_INT <= value <= _SAFE_INT:
        raise UsageError(f"{what} is outside ±(2**53 - 1)")
    return value


def _define_field(position: int, raw: Mapping[str, object] | FieldSpec) -> FieldSpec:
    doc = raw.to_dict() if isinstance(raw, FieldSpec) else raw
    if not isinstance(doc, Mapping):
        raise UsageError(f"field {position} must be a mapping with a name and a type")
    unknown = [key for key in doc if key not in _FIELD_KEYS]
    if unknown:
        raise UsageError(
            f"field {position} has unknown settings; use: {', '.join(sorted(_FIELD_KEYS))}"
        )
    name = doc.get("name")
    if not isinstance(name, str) or not _FIELD_NAME.fullmatch(name):
        raise UsageError(
            f"field {position} needs a name of 1 to 40 lowercase letters, digits or _, "
            "starting with a letter"
        )
    where = f"field {name!r}"
    kind = doc.get("type")
    field_type = next((t for t in USER_FIELD_TYPES if t == kind), None)
    if field_type is None:
        if kind == "credential_ref":
            raise UsageError(f"{where}: credential_ref is reserved for protected cards")
        raise UsageError(f"{where} needs a type, one of: {', '.join(USER_FIELD_TYPES)}")
    required = doc.get("required", False)
    if not isinstance(required, bool):
        raise UsageError(f"{where}: required must be true or false")
    description = _description(doc.get("description", ""), f"the description of {where}")
    choices = _choices(doc.get("choices"), field_type, where)
    minimum = _bound(doc.get("minimum"), f"the minimum of {where}")
    maximum = _bound(doc.get("maximum"), f"the maximum of {where}")
    if (minimum is not None or maximum is not None) and field_type not in ("integer", "number"):
        raise UsageError(f"{where}: only integer and number fields have a minimum or maximum")
    if minimum is not None and maximum is not None and minimum > maximum:
        raise UsageError(f"{where}: the minimum is larger than the maximum")
    raw_format = doc.get("format")
    field_format = next((f for f in FIELD_FORMATS if f == raw_format), None)
    if raw_format is not None and (field_format is None or field_type != "string"):
        raise UsageError(
            f"{where}: format applies to string fields and is one of: {', '.join(FIELD_FORMATS)}"
        )
    return FieldSpec(
        name=name,
        type=field_type,
        required=required,
        description=description,
        choices=choices,
        minimum=minimum,
        maximum=maximum,
        format=field_format,
    )


def _choices(raw: object, field_type: FieldType, where: str) -> tuple[str, ...]:
    if raw is None:
        return ()
    if field_type != "string":
        raise UsageError(f"{where}: only string fields have choices")
    if isinstance(raw, str) or not isinstance(raw, list | tuple):
        raise UsageError(f"{where}: choices must be a list of strings")
    choices: list[str] = []
    for item in raw:
        try:
            text = _check_line(item, 100)
        except ValueError as exc:
            raise UsageError(f"{where}: each choice is one line of at most 100 characters") from exc
        if text is None or text in choices:
            raise UsageError(f"{where}: choices must be non-blank and distinct")
        choices.append(text)
    if not choices or len(choices) > MAX_CHOICES:
        raise UsageError(f"{where}: give between 1 and {MAX_CHOICES} choices")
    return tuple(choices)


def define_card_type(
    name: str,
    fields: Sequence[Mapping[str, object]],
    description: str = "",
    *,
    searchable: Sequence[str] | None = None,
) -> CardType:
    """Build a user-defined card type.

    ``name`` is 1..40 of lowercase letters, digits, ``_`` and ``-`` starting with a letter and
    must not be a built-in type. Each field is a mapping with ``name`` (1..40 of lowercase
    letters, digits and ``_``, unique), ``type`` (any :data:`FieldType` except
    ``credential_ref``) and optionally ``required``, ``description``, ``choices`` (string
    fields), ``minimum``/``maximum`` (integer and number fields) and ``format`` (string fields).
    ``searchable`` defaults to every field.

    Raises:
        UsageError: any of the rules above is broken; the message names the rule and, for
            valid-looking names, the field.
    """
    if not isinstance(name, str) or not _TYPE_NAME.fullmatch(name):
        raise UsageError(
            "a card type name is 1 to 40 lowercase letters, digits, _ or -, starting with a letter"
        )
    if name in BUILTIN_CARD_TYPES:
        raise UsageError(f"{name!r} is a built-in card type; choose another name")
    if isinstance(fields, str | bytes | Mapping) or not isinstance(fields, Sequence):
        raise UsageError("fields must be a list of field definitions")
    if len(fields) > MAX_FIELDS:
        raise UsageError(f"a card type has at most {MAX_FIELDS} fields")
    specs = tuple(_define_field(position, raw) for position, raw in enumerate(fields, start=1))
    names = [spec.name for spec in specs]
    if len(set(names)) != len(names):
        raise UsageError("field names within a card type must be unique")
    if searchable is None:
        chosen = tuple(names)
    else:
        if isinstance(searchable, str) or not all(isinstance(s, str) for s in searchable):
            raise UsageError("searchable must be a list of field names")
        if any(s not in names for s in searchable) or len(set(searchable)) != len(searchable):
            raise UsageError("searchable must list distinct fields of the card type")
        chosen = tuple(searchable)
    return CardType(
        name=name,
        fields=specs,
        description=_description(description, "the card type description"),
        builtin=False,
        searchable=chosen,
    )
