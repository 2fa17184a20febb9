from __future__ import annotations

import json
from datetime import date, datetime
from typing import Any

import pytest

from memories.crypto.canonical import canonical_bytes
from memories.errors import IntegrityError, UsageError
from memories.views.cards import (
    BUILTIN_CARD_TYPES,
    FIELD_TYPES,
    CardType,
    FieldSpec,
    define_card_type,
    parse_metadata_assignments,
    parse_metadata_value,
    validate_metadata,
)

VALUE = "VALUE-SENTINEL-93ab"

KNOWLEDGE = BUILTIN_CARD_TYPES["knowledge"]
BRAIN = BUILTIN_CARD_TYPES["brain"]
PERSONA = BUILTIN_CARD_TYPES["persona"]
PROTECTED = BUILTIN_CARD_TYPES["protected_card"]

EVERY_TYPE = CardType(
    name="every",
    fields=(
        FieldSpec("s", "string"),
        FieldSpec("t", "text"),
        FieldSpec("i", "integer"),
        FieldSpec("n", "number"),
        FieldSpec("b", "boolean"),
        FieldSpec("d", "date"),
        FieldSpec("u", "url"),
        FieldSpec("l", "string_list"),
        FieldSpec("c", "credential_ref"),
    ),
)


def test_builtin_types_are_the_four_documented_ones() -> None:
    assert sorted(BUILTIN_CARD_TYPES) == ["brain", "knowledge", "persona", "protected_card"]
    for card_type in BUILTIN_CARD_TYPES.values():
        assert card_type.builtin
        assert card_type.description
        assert all(spec.description for spec in card_type.fields)
        secret_fields = {s.name for s in card_type.fields if s.type == "credential_ref"}
        assert not secret_fields & set(card_type.searchable)
    credential_ref = PROTECTED.field("credential_ref")
    assert credential_ref is not None
    assert credential_ref.required
    assert credential_ref.type == "credential_ref"
    assert "credential_ref" not in PROTECTED.searchable
    assert {"account", "service", "env", "kind", "url"} <= set(PROTECTED.searchable)


def test_every_field_type_normalizes_good_values() -> None:
    result = validate_metadata(
        EVERY_TYPE,
        {
            "s": "  one line  ",
            "t": "multi\nline\ttext\r\n",
            "i": -7,
            "n": 2.5,
            "b": False,
            "d": date(2024, 2, 29),
            "u": " https://example.com:8443/a?b=c#d ",
            "l": (" a ", "", "b"),
            "c": "cred_01HXYZ:abc-def.1",
        },
    )
    assert result == {
        "b": False,
        "c": "cred_01HXYZ:abc-def.1",
        "d": "2024-02-29",
        "i": -7,
        "l": ["a", "b"],
        "n": 2.5,
        "s": "one line",
        "t": "multi\nline\ttext\r\n",
        "u": "https://example.com:8443/a?b=c#d",
    }
    assert list(result) == sorted(result)
    canonical_bytes(result)


def test_blank_values_and_none_count_as_absent() -> None:
    result = validate_metadata(EVERY_TYPE, {"s": "  ", "t": " ", "l": [], "u": "", "n": None})
    assert result == {}


def test_knowledge_confidence_is_bounded_between_zero_and_one() -> None:
    assert validate_metadata(KNOWLEDGE, {"confidence": 0})["confidence"] == 0
    assert validate_metadata(KNOWLEDGE, {"confidence": 1.0})["confidence"] == 1.0
    for bad in (-0.01, 1.5):
        with pytest.raises(UsageError, match=r"'confidence'.* from 0 to 1"):
            validate_metadata(KNOWLEDGE, {"confidence": bad})


BAD_METADATA: list[tuple[CardType, dict[str, Any], str]] = [
    (KNOWLEDGE, {"nonesuch": VALUE}, "card type 'knowledge' has no field 'nonesuch'"),
    (KNOWLEDGE, {"Bad Key": VALUE}, "a metadata field name is not valid"),
    (KNOWLEDGE, {VALUE: 1}, "a metadata field name is not valid"),
    (BRAIN, {"task": "x"}, "card type 'brain' requires field 'agent'"),
    (BRAIN, {"agent": "   "}, "requires field 'agent'"),
    (PROTECTED, {"account": "me"}, "requires field 'credential_ref'"),
    (EVERY_TYPE, {"s": 5}, "field 's' of card type 'every' expects a single line"),
    (EVERY_TYPE, {"s": f"two\n{VALUE}"}, "field 's'"),
    (EVERY_TYPE, {"s": VALUE * 100}, "field 's'"),
    (EVERY_TYPE, {"s": "bad \udc80"}, "field 's'"),
    (EVERY_TYPE, {"t": 1}, "field 't' of card type 'every' expects text"),
    (EVERY_TYPE, {"t": f"nul\x00{VALUE}"}, "field 't'"),
    (EVERY_TYPE, {"i": True}, "field 'i' of card type 'every' expects a whole number"),
    (EVERY_TYPE, {"i": 1.0}, "expects a whole number"),
    (EVERY_TYPE, {"i": "3"}, "expects a whole number"),
    (EVERY_TYPE, {"i": 2**53}, "expects a whole number"),
    (EVERY_TYPE, {"n": float("nan")}, "field 'n' of card type 'every' expects a finite number"),
    (EVERY_TYPE, {"n": float("-inf")}, "expects a finite number"),
    (EVERY_TYPE, {"n": False}, "expects a finite number"),
    (EVERY_TYPE, {"n": "0.5"}, "expects a finite number"),
    (EVERY_TYPE, {"b": 1}, "field 'b' of card type 'every' expects true or false"),
    (EVERY_TYPE, {"b": "true"}, "expects true or false"),
    (EVERY_TYPE, {"d": "2024-13-01"}, "field 'd' of card type 'every' expects a date"),
    (EVERY_TYPE, {"d": "2023-02-29"}, "expects a date as YYYY-MM-DD"),
    (EVERY_TYPE, {"d": "20240101"}, "expects a date"),
    (EVERY_TYPE, {"d": "2024-1-1"}, "expects a date"),
    (EVERY_TYPE, {"d": datetime(2024, 1, 1, 12)}, "expects a date"),
    (EVERY_TYPE, {"d": 20240101}, "expects a date"),
    (EVERY_TYPE, {"u": "ftp://example.com/x"}, "field 'u' of card type 'every' expects an http"),
    (EVERY_TYPE, {"u": "javascript:alert(1)"}, "field 'u'"),
    (EVERY_TYPE, {"u": "https://"}, "field 'u'"),
    (EVERY_TYPE, {"u": "http://exa mple.com"}, "field 'u'"),
    (EVERY_TYPE, {"u": "http://example.com:99999"}, "field 'u'"),
    (EVERY_TYPE, {"u": "https://exämple.com"}, "field 'u'"),
    (EVERY_TYPE, {"l": VALUE}, "field 'l' of card type 'every' expects a list"),
    (EVERY_TYPE, {"l": ["ok", 3]}, "field 'l'"),
    (EVERY_TYPE, {"l": ["x"] * 257}, "field 'l'"),
    (EVERY_TYPE, {"c": f"has space {VALUE}"}, "field 'c' of card type 'every' expects a cred"),
    (EVERY_TYPE, {"c": 12}, "field 'c'"),
    (PROTECTED, {"credential_ref": "c1", "kind": VALUE}, "'kind' of card type 'protected_card'"),
    (PROTECTED, {"credential_ref": "c1", "env": f"1{VALUE}"}, "an environment variable name"),
]


@pytest.mark.parametrize(("card_type", "metadata", "message"), BAD_METADATA)
def test_bad_metadata_names_the_field_and_type_never_the_value(
    card_type: CardType, metadata: dict[str, Any], message: str
) -> None:
    with pytest.raises(UsageError) as caught:
        validate_metadata(card_type, metadata)
    assert message in str(caught.value)
    assert VALUE not in str(caught.value)


def test_choices_are_listed_in_the_error() -> None:
    with pytest.raises(UsageError) as caught:
        validate_metadata(PROTECTED, {"credential_ref": "c1", "kind": "pin"})
    assert "one of: password, token, totp, hotp, ssh_key, certificate, other" in str(caught.value)
    good = validate_metadata(PROTECTED, {"credential_ref": "c1", "kind": "totp", "env": "GH_TOK"})
    assert good == {"credential_ref": "c1", "env": "GH_TOK", "kind": "totp"}


def test_unknown_field_error_lists_the_fields_of_the_type() -> None:
    with pytest.raises(UsageError) as caught:
        validate_metadata(PERSONA, {"colour": "red"})
    assert str(caught.value) == (
        "card type 'persona' has no field 'colour'; "
        "its fields are: name, role, tone, instructions, audience"
    )


def test_metadata_must_be_a_mapping() -> None:
    with pytest.raises(UsageError, match="metadata must be a mapping"):
        validate_metadata(KNOWLEDGE, [("topic", "x")])  # type: ignore[arg-type]


# --- command-line values ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "text", "expected"),
    [
        ("b", "true", True),
        ("b", "YES", True),
        ("b", "on", True),
        ("b", "1", True),
        ("b", "false", False),
        ("b", " No ", False),
        ("b", "0", False),
        ("i", "3", 3),
        ("i", "+3", 3),
        ("i", "-42", -42),
        ("n", "0.5", 0.5),
        ("n", "3", 3),
        ("n", "1e-3", 0.001),
        ("n", "-.25", -0.25),
        ("l", "a, b,,c ", ["a", "b", "c"]),
        ("s", " hello ", "hello"),
        ("d", "2024-05-06", "2024-05-06"),
        ("u", "http://localhost:8080", "http://localhost:8080"),
        ("i", "", None),
        ("l", "", None),
        ("s", "  ", None),
    ],
)
def test_parse_metadata_value_reads_command_line_text(field: str, text: str, expected: Any) -> None:
    spec = EVERY_TYPE.field(field)
    assert spec is not None
    value = parse_metadata_value(spec, text)
    assert value == expected
    assert type(value) is type(expected)


@pytest.mark.parametrize(
    ("field", "text"),
    [
        ("b", "maybe"),
        ("i", "3.0"),
        ("i", "1_000"),
        ("i", "٣"),
        ("i", "0x10"),
        ("n", "nan"),
        ("n", "inf"),
        ("n", "1e999"),
        ("n", "1,5"),
        ("d", "tomorrow"),
        ("u", "example.com"),
    ],
)
def test_parse_metadata_value_refuses_text_of_the_wrong_type(field: str, text: str) -> None:
    spec = EVERY_TYPE.field(field)
    assert spec is not None
    with pytest.raises(UsageError) as caught:
        parse_metadata_value(spec, text)
    assert f"field {field!r} expects" in str(caught.value)
    assert text not in str(caught.value)


def test_parse_metadata_assignments_builds_metadata_from_key_value_pairs() -> None:
    parsed = parse_metadata_assignments(
        KNOWLEDGE, ["topic=tokio", "confidence=0.75", "references=a,b", "topic=async=io"]
    )
    assert parsed == {"topic": "async=io", "confidence": 0.75, "references": ["a", "b"]}
    assert validate_metadata(KNOWLEDGE, parsed) == {
        "confidence": 0.75,
        "references": ["a", "b"],
        "topic": "async=io",
    }
    with pytest.raises(UsageError, match="metadata 2 is not key=value"):
        parse_metadata_assignments(KNOWLEDGE, ["topic=x", VALUE])
    with pytest.raises(UsageError, match="has no field 'colour'"):
        parse_metadata_assignments(KNOWLEDGE, ["colour=red"])
    with pytest.raises(UsageError, match="'confidence' expects a finite number from 0 to 1"):
        parse_metadata_assignments(KNOWLEDGE, ["confidence=2"])


# --- user-defined types -----------------------------------------------------------------------

RECIPE_FIELDS: list[dict[str, object]] = [
    {"name": "servings", "type": "integer", "required": True, "minimum": 1, "maximum": 100},
    {"name": "cuisine", "type": "string", "choices": ["thai", "french"]},
    {"name": "rating", "type": "number", "minimum": 0.0, "description": "Out of five."},
    {"name": "token_env", "type": "string", "format": "env_name"},
    {"name": "tags_", "type": "string_list"},
]


def test_define_card_type_builds_a_user_type_with_every_field_searchable() -> None:
    recipe = define_card_type("recipe", RECIPE_FIELDS, "  Something to cook.  ")
    assert recipe.name == "recipe"
    assert not recipe.builtin
    assert recipe.description == "Something to cook."
    assert recipe.searchable == ("servings", "cuisine", "rating", "token_env", "tags_")
    servings = recipe.field("servings")
    assert servings == FieldSpec("servings", "integer", required=True, minimum=1, maximum=100)
    assert recipe.field("missing") is None
    assert validate_metadata(recipe, {"servings": 2, "cuisine": "thai"}) == {
        "cuisine": "thai",
        "servings": 2,
    }
    with pytest.raises(UsageError, match="from 1 to 100"):
        validate_metadata(recipe, {"servings": 0})
    narrow = define_card_type("recipe", RECIPE_FIELDS, searchable=["cuisine"])
    assert narrow.searchable == ("cuisine",)


def test_user_types_round_trip_through_canonical_json() -> None:
    recipe = define_card_type("recipe", RECIPE_FIELDS, "Something to cook.")
    encoded = canonical_bytes(recipe.to_dict())
    assert CardType.from_dict(json.loads(encoded)) == recipe
    every_user_type = [{"name": f"f_{t}", "type": t} for t in FIELD_TYPES if t != "credential_ref"]
    wide = define_card_type("wide", every_user_type)
    assert CardType.from_dict(json.loads(canonical_bytes(wide.to_dict()))) == wide


def test_builtin_types_round_trip_to_the_same_builtin() -> None:
    for card_type in BUILTIN_CARD_TYPES.values():
        doc = json.loads(canonical_bytes(card_type.to_dict()))
        assert doc["builtin"] is True
        assert CardType.from_dict(doc) is card_type


BAD_DEFINITIONS: list[tuple[str, Any, str]] = [
    ("Recipe", [], "a card type name is 1 to 40 lowercase"),
    ("1recipe", [], "a card type name"),
    ("r" * 41, [], "a card type name"),
    ("re cipe", [], "a card type name"),
    ("knowledge", [], "'knowledge' is a built-in card type; choose another name"),
    ("protected_card", [], "is a built-in card type"),
    ("recipe", "servings", "fields must be a list of field definitions"),
    ("recipe", {"name": "x", "type": "string"}, "fields must be a list"),
    ("recipe", ["servings"], "field 1 must be a mapping"),
    ("recipe", [{"type": "string"}], "field 1 needs a name"),
    ("recipe", [{"name": "Servings", "type": "string"}], "field 1 needs a name"),
    ("recipe", [{"name": "a-b", "type": "string"}], "field 1 needs a name"),
    ("recipe", [{"name": "x", "type": "string"}, {"name": "x", "type": "text"}], "unique"),
    ("recipe", [{"name": "x", "type": "credential_ref"}], "credential_ref is reserved"),
    ("recipe", [{"name": "x", "type": "blob"}], "field 'x' needs a type, one of: string"),
    ("recipe", [{"name": "x"}], "field 'x' needs a type"),
    ("recipe", [{"name": "x", "type": "string", "colour": 1}], "field 1 has unknown settings"),
    ("recipe", [{"name": "x", "type": "string", "required": "yes"}], "required must be true"),
    ("recipe", [{"name": "x", "type": "integer", "choices": ["a"]}], "only string fields"),
    ("recipe", [{"name": "x", "type": "string", "choices": []}], "between 1 and 64 choices"),
    ("recipe", [{"name": "x", "type": "string", "choices": ["a", "a"]}], "distinct"),
    ("recipe", [{"name": "x", "type": "string", "choices": "ab"}], "a list of strings"),
    ("recipe", [{"name": "x", "type": "string", "minimum": 1}], "only integer and number"),
    ("recipe", [{"name": "x", "type": "integer", "minimum": 2, "maximum": 1}], "larger than"),
    ("recipe", [{"name": "x", "type": "number", "minimum": float("nan")}], "finite number"),
    ("recipe", [{"name": "x", "type": "number", "maximum": True}], "must be a number"),
    ("recipe", [{"name": "x", "type": "string", "format": "email"}], "format applies to"),
    ("recipe", [{"name": "x", "type": "text", "format": "env_name"}], "format applies to"),
    ("recipe", [{"name": "x", "type": "string", "description": "a\nb"}], "one line"),
    ("recipe", [{"name": f"f{i}", "type": "string"} for i in range(65)], "at most 64 fields"),
]


@pytest.mark.parametrize(("name", "fields", "message"), BAD_DEFINITIONS)
def test_bad_card_type_definitions_are_refused(name: str, fields: Any, message: str) -> None:
    with pytest.raises(UsageError) as caught:
        define_card_type(name, fields)
    assert message in str(caught.value)


def test_bad_searchable_lists_are_refused() -> None:
    fields = [{"name": "x", "type": "string"}]
    for searchable in (["y"], ["x", "x"], "x"):
        with pytest.raises(UsageError, match="searchable must"):
            define_card_type("recipe", fields, searchable=searchable)  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="searchable fields must be non-credential"):
        CardType("mine", (FieldSpec("c", "credential_ref"),), searchable=("c",))


def _recipe_doc(**changes: Any) -> dict[str, Any]:
    doc = define_card_type("recipe", RECIPE_FIELDS).to_dict()
    doc.update(changes)
    return doc


@pytest.mark.parametrize(
    "doc",
    [
        None,
        "recipe",
        _recipe_doc(t="memories.content"),
        _recipe_doc(v=2),
        _recipe_doc(v=True),
        _recipe_doc(extra=1),
        _recipe_doc(name=7),
        _recipe_doc(name="knowledge"),
        _recipe_doc(fields="x"),
        _recipe_doc(fields=[1]),
        _recipe_doc(fields=[{"name": "c", "type": "credential_ref"}]),
        _recipe_doc(description=None),
        _recipe_doc(searchable="servings"),
        _recipe_doc(searchable=["nope"]),
        _recipe_doc(builtin=True),
        _recipe_doc(builtin=False),
        {**KNOWLEDGE.to_dict(), "fields": []},
        {**PROTECTED.to_dict(), "searchable": ["credential_ref"]},
    ],
)
def test_from_dict_refuses_malformed_or_shadowing_stored_types(doc: Any) -> None:
    with pytest.raises(IntegrityError, match="malformed"):
        CardType.from_dict(doc)
