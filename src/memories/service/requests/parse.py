"""Parsing: the one way a request object becomes a typed request.

Its :class:`~memories.errors.UsageError` messages name the op, the field path and what was
expected, never the value that was sent: passwords, bodies and secrets must not come back in an
error.
"""

from __future__ import annotations

import functools
import re
from collections import defaultdict
from typing import Any, Final

from pydantic import BaseModel, TypeAdapter, ValidationError

from memories.errors import UsageError
from memories.service.requests.cards import FieldDefinition
from memories.service.requests.session import KdfSettings
from memories.service.requests.union import REQUEST_TYPES, Request, op_names

__all__ = ["parse_request", "validation_message"]


@functools.cache
def _adapter() -> TypeAdapter[Any]:
    # Built on the first parse (the daemon's), so importing the models stays cheap.
    return TypeAdapter(Request)


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


def validation_message(exc: ValidationError) -> str:
    """The op, field paths and what was expected, never a value: the no-echo error text."""
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
        request: Request = _adapter().validate_python(data)
    except ValidationError as exc:
        raise UsageError(validation_message(exc)) from None
    return request
