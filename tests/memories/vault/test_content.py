from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memories.crypto.canonical import b64u_encode, canonical_bytes
from memories.errors import IntegrityError, UsageError
from memories.vault.content import Content, FilePayload, make_content
from memories.views.cards import define_card_type
from memories.views.format import format_size
from memories.views.kinds import KINDS, parse_kind

BODY = "BODY-SENTINEL-4f1c9e"
SECRET = "hunter2-SECRET-SENTINEL-a8b7"
PAYLOAD = b"PAYLOAD-SENTINEL-\x00\x01\x02-bytes"
MIB = 1024 * 1024


def _file(
    data: bytes = PAYLOAD, name: str = "notes.bin", media_type: str = "application/x-thing"
) -> FilePayload:
    return FilePayload(name=name, media_type=media_type, data=data)


# --- good input -------------------------------------------------------------------------------


def test_memory_title_is_stripped_and_tags_are_deduplicated_and_sorted() -> None:
    content = make_content(
        "memory",
        title="  Deploy notes  ",
        body=BODY,
        tags=[" rust ", "Ops", "rust", "a/b:c.d-e_f"],
        source="  agent:claude  ",
    )
    assert content.title == "Deploy notes"
    assert content.tags == ("Ops", "a/b:c.d-e_f", "rust")
    assert content.source == "agent:claude"
    assert content.body == BODY
    assert content.card_type is None
    assert dict(content.metadata) == {}


def test_blank_source_means_no_source() -> None:
    assert make_content("memory", title="t", source="   ").source is None


def test_card_with_builtin_type_validates_and_normalizes_metadata() -> None:
    content = make_content(
        "card",
        title="Tokio runtime",
        card_type="knowledge",
        metadata={"topic": "  async  ", "confidence": 1, "references": ["a", " b "]},
    )
    assert content.card_type == "knowledge"
    assert dict(content.metadata) == {"confidence": 1, "references": ("a", "b"), "topic": "async"}


def test_card_with_user_defined_type_uses_the_given_definition() -> None:
    recipe = define_card_type(
        "recipe", [{"name": "servings", "type": "integer", "required": True, "minimum": 1}]
    )
    content = make_content(
        "card", title="Soup", card_type="recipe", card_type_def=recipe, metadata={"servings": 4}
    )
    assert content.metadata["servings"] == 4
    with pytest.raises(UsageError, match="requires field 'servings'"):
        make_content("card", title="Soup", card_type="recipe", card_type_def=recipe)


def test_file_asset_keeps_its_payload_and_lowercases_the_media_type() -> None:
    content = make_content("file", title="Notes", file=_file(media_type="Text/Plain"))
    assert content.file is not None
    assert content.file.data == PAYLOAD
    assert content.file.media_type == "text/plain"
    assert content.file.size == len(PAYLOAD)


def test_credential_keeps_its_secret_exactly() -> None:
    secret = "  -----BEGIN KEY-----\nabc\n-----END KEY-----\n"
    content = make_content("credential", title="deploy key", body=secret, private=True)
    assert content.body == secret
    assert content.private is True


# --- bad input --------------------------------------------------------------------------------

BAD_INPUT: list[tuple[str, dict[str, Any], str]] = [
    ("memory", {"title": ""}, "the title is required"),
    ("memory", {"title": "   \t "}, "the title is required"),
    ("memory", {"title": None}, "the title must be text"),
    ("memory", {"title": "x" * 301}, "too long (301 characters); the limit is 300"),
    ("memory", {"title": "two\nlines"}, "control characters"),
    ("memory", {"title": "bell\x07"}, "control characters"),
    ("memory", {"title": "sep\u2028arator"}, "control characters"),
    ("memory", {"title": "bad \udc80 text"}, "not valid Unicode"),
    ("memory", {"title": "t", "tags": "rust"}, "tags must be a list of strings"),
    ("memory", {"title": "t", "tags": [1]}, "tags must be a list of strings"),
    ("memory", {"title": "t", "tags": ["ok", "has space"]}, "tag 2 is not valid"),
    ("memory", {"title": "t", "tags": [""]}, "tag 1 is not valid"),
    ("memory", {"title": "t", "tags": ["x" * 65]}, "tag 1 is not valid"),
    ("memory", {"title": "t", "tags": [f"t{i}" for i in range(65)]}, "too many tags (65)"),
    ("memory", {"title": "t", "source": "x" * 2049}, "the source is too long"),
    ("memory", {"title": "t", "source": "a\nb"}, "control characters"),
    ("memory", {"title": "t", "private": "yes"}, "private must be true or false"),
    ("memory", {"title": "t", "body": "bad \ud800"}, "the body is not valid Unicode"),
    ("memory", {"title": "t", "card_type": "knowledge"}, "only cards have a card type"),
    ("memory", {"title": "t", "metadata": {"topic": BODY}}, "only cards have metadata"),
    ("memory", {"title": "t", "file": _file()}, "only file assets carry a file"),
    ("card", {"title": "t"}, "a card needs a card type"),
    ("card", {"title": "t", "card_type": "  "}, "a card needs a card type"),
    ("card", {"title": "t", "card_type": "nonesuch"}, "unknown card type"),
    ("card", {"title": "t", "card_type": "knowledge", "metadata": {"topic": 5}}, "'topic'"),
    ("card", {"title": "t", "card_type": "brain", "metadata": {}}, "requires field 'agent'"),
    ("file", {"title": "t"}, "needs a file payload"),
    ("file", {"title": "t", "file": _file(name="dir/x.bin")}, "plain name without folders"),
    ("file", {"title": "t", "file": _file(name="..")}, "plain name without folders"),
    ("file", {"title": "t", "file": _file(name=" ")}, "the file name is required"),
    ("file", {"title": "t", "file": _file(media_type="text")}, "media type is not valid"),
    ("file", {"title": "t", "file": _file(media_type="a/b c")}, "media type is not valid"),
    ("credential", {"title": "t", "body": ""}, "needs a secret value"),
    ("credential", {"title": "t", "body": " \n\t"}, "needs a secret value"),
]


@pytest.mark.parametrize(("kind", "fields", "message"), BAD_INPUT)
def test_bad_input_is_refused_with_a_clear_message_that_hides_the_body(
    kind: Any, fields: dict[str, Any], message: str
) -> None:
    fields = {"body": BODY, **fields}
    with pytest.raises(UsageError) as caught:
        make_content(kind, **fields)
    assert message in str(caught.value)
    assert BODY not in str(caught.value)
    assert "PAYLOAD-SENTINEL" not in str(caught.value)


def test_bad_credential_input_never_echoes_the_secret() -> None:
    for fields in (
        {"title": "", "body": SECRET},
        {"title": "t\nx", "body": SECRET},
        {"title": "t", "body": SECRET, "tags": [SECRET + " x"]},
        {"title": "t", "body": SECRET, "metadata": {"k": SECRET}},
    ):
        with pytest.raises(UsageError) as caught:
            make_content("credential", **fields)  # type: ignore[arg-type]
        assert SECRET not in str(caught.value)
        assert SECRET not in repr(caught.value)


def test_unknown_kind_is_refused() -> None:
    with pytest.raises(UsageError, match="unknown asset kind; use one of: memory, card"):
        make_content("note", title="t")  # type: ignore[arg-type]
    assert parse_kind("file") == "file"
    assert KINDS == ("memory", "card", "file", "credential")


def test_a_body_over_eight_mib_is_refused_with_its_size() -> None:
    with pytest.raises(UsageError) as caught:
        make_content("memory", title="t", body="é" * (4 * MIB + 1))
    assert str(caught.value) == "the body is 8.1 MiB; the limit is 8 MiB"
    # Exactly at the limit is fine, counted in UTF-8 bytes.
    assert len(make_content("memory", title="t", body="é" * (4 * MIB)).body) == 4 * MIB


def test_a_file_over_the_limit_names_the_limit_and_its_setting() -> None:
    big = FilePayload(name="big.iso", media_type="application/octet-stream", data=bytes(70 * MIB))
    with pytest.raises(UsageError) as caught:
        make_content("file", title="iso", file=big)
    assert str(caught.value) == "the file is 70.0 MiB; the limit is 64 MiB (files.max_bytes)"
    with pytest.raises(UsageError, match=r"the file is 2\.0 KiB; the limit is 1 KiB"):
        make_content("file", title="t", file=_file(bytes(2048)), max_file_bytes=1024)
    assert make_content("file", title="t", file=_file(bytes(1024)), max_file_bytes=1024).file


def test_format_size_rounds_up_so_an_oversize_value_never_reads_as_the_limit() -> None:
    assert format_size(0) == "0 bytes"
    assert format_size(1023) == "1023 bytes"
    assert format_size(1536) == "1.5 KiB"
    assert format_size(64 * MIB) == "64.0 MiB"
    assert format_size(64 * MIB + 1) == "64.1 MiB"


# --- repr and value semantics -----------------------------------------------------------------


def test_repr_shows_shape_but_never_text_or_file_data() -> None:
    content = make_content(
        "card",
        title="TITLE-SENTINEL",
        body=SECRET,
        tags=["TAG-SENTINEL"],
        card_type="knowledge",
        metadata={"topic": "META-SENTINEL"},
        private=True,
    )
    shown = repr(content) + str(content)
    for hidden in (SECRET, "TITLE-SENTINEL", "TAG-SENTINEL", "META-SENTINEL"):
        assert hidden not in shown
    assert f"body=<{len(SECRET)} chars>" in shown
    assert "card_type='knowledge'" in shown
    assert "metadata_fields=('topic',)" in shown

    with_file = make_content("file", title="t", file=_file(name="NAME-SENTINEL.bin"))
    shown = repr(with_file) + repr(with_file.file)
    assert "PAYLOAD-SENTINEL" not in shown
    assert "NAME-SENTINEL" not in shown
    assert f"size={len(PAYLOAD)}" in shown
    assert "media_type='application/x-thing'" in shown


def test_content_is_immutable_hashable_and_metadata_reads_like_a_mapping() -> None:
    content = Content(title="t", tags=["b", "a"], metadata={"z": 1, "a": ["x", "y"]})  # type: ignore[arg-type]
    assert content.tags == ("b", "a")
    assert list(content.metadata) == ["a", "z"]
    assert content.metadata["a"] == ("x", "y")
    with pytest.raises(TypeError):
        content.metadata["z"] = 2  # type: ignore[index]
    same = Content(title="t", tags=("b", "a"), metadata={"a": ("x", "y"), "z": 1})
    assert content == same
    assert hash(content) == hash(same)
    assert len({content, same}) == 1


@pytest.mark.parametrize(
    "metadata",
    [
        {"n": float("nan")},
        {"n": float("inf")},
        {"n": 2**53},
        {"n": {"nested": 1}},
        {"n": b"bytes"},
        {"n": None},
        {"n": ["ok", ["nested"]]},
        {"": 1},
        {1: 1},
    ],
)
def test_content_refuses_metadata_without_a_canonical_json_form(metadata: Any) -> None:
    with pytest.raises(UsageError):
        Content(title="t", metadata=metadata)


def test_file_payload_digest_and_copying_of_mutable_buffers() -> None:
    buffer = bytearray(b"abc")
    payload = FilePayload(name="a", media_type="text/plain", data=buffer)  # type: ignore[arg-type]
    buffer[0] = 0
    assert payload.data == b"abc"
    assert payload.digest == (
        "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    )
    with pytest.raises(UsageError, match="file data must be bytes"):
        FilePayload(name="a", media_type="text/plain", data="abc")  # type: ignore[arg-type]


# --- stored form ------------------------------------------------------------------------------


def test_to_dict_is_type_tagged_and_omits_defaults() -> None:
    assert Content(title="t").to_dict() == {"t": "memories.content", "v": 1, "title": "t"}
    full = make_content(
        "file", title="t", body="b", tags=["x"], source="s", private=True, file=_file(b"\x00\xff")
    )
    assert full.to_dict() == {
        "t": "memories.content",
        "v": 1,
        "title": "t",
        "body": "b",
        "tags": ["x"],
        "source": "s",
        "private": True,
        "file": {"name": "notes.bin", "media_type": "application/x-thing", "data": "AP8"},
    }


_scalars = (
    st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=20)
    | st.integers(min_value=-(2**53 - 1), max_value=2**53 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.booleans()
)
_text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40)
_contents = st.builds(
    Content,
    title=_text,
    body=_text,
    tags=st.lists(_text, max_size=4).map(tuple),
    source=st.none() | _text,
    card_type=st.none() | _text,
    metadata=st.dictionaries(
        st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=12),
        _scalars | st.lists(_scalars, max_size=3),
        max_size=5,
    ),
    private=st.booleans(),
    file=st.none()
    | st.builds(FilePayload, name=_text, media_type=_text, data=st.binary(max_size=64)),
)


@settings(max_examples=150, deadline=None)
@given(_contents)
def test_to_dict_round_trips_through_canonical_json(content: Content) -> None:
    encoded = canonical_bytes(content.to_dict())
    restored = Content.from_dict(json.loads(encoded))
    assert restored == content
    assert canonical_bytes(restored.to_dict()) == encoded


_DROP = object()


def _stored(**changes: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {"t": "memories.content", "v": 1, "title": "t"}
    doc.update(changes)
    return {key: value for key, value in doc.items() if value is not _DROP}


@pytest.mark.parametrize(
    "doc",
    [
        None,
        [],
        "text",
        _stored(t="memories.other"),
        _stored(t=_DROP),
        _stored(v=2),
        _stored(v=True),
        _stored(v="1"),
        _stored(title=_DROP),
        _stored(title=5),
        _stored(extra=1),
        _stored(body=None),
        _stored(tags="a"),
        _stored(tags=[1]),
        _stored(source=None),
        _stored(card_type=3),
        _stored(metadata=[]),
        _stored(metadata={"k": {"nested": True}}),
        _stored(metadata={"k": float("nan")}),
        _stored(private="yes"),
        _stored(file=None),
        _stored(file={"name": "a", "media_type": "b/c"}),
        _stored(file={"name": "a", "media_type": "b/c", "data": "AP8=", "x": 1}),
        _stored(file={"name": "a", "media_type": "b/c", "data": "AP8="}),
        _stored(file={"name": "a", "media_type": "b/c", "data": "A P8"}),
        _stored(file={"name": 1, "media_type": "b/c", "data": "AP8"}),
        _stored(title="bad \ud800"),
    ],
)
def test_from_dict_refuses_malformed_stored_data_with_an_opaque_error(doc: Any) -> None:
    with pytest.raises(IntegrityError) as caught:
        Content.from_dict(doc)
    assert "malformed" in str(caught.value) or "base64url" in str(caught.value)


def test_from_dict_accepts_stored_data_beyond_todays_input_limits() -> None:
    long_title = "x" * 1000
    doc = _stored(
        title=long_title, file={"name": "a/b", "media_type": "x", "data": b64u_encode(b"1")}
    )
    content = Content.from_dict(doc)
    assert content.title == long_title
    assert content.file is not None
    assert content.file.data == b"1"


def test_from_dict_reads_a_large_integer_literal_as_the_double_it_encodes() -> None:
    content = Content.from_dict(_stored(metadata={"n": 2**60, "l": [2**54, 1]}))
    assert content.metadata["n"] == 2.0**60
    assert isinstance(content.metadata["n"], float)
    assert content.metadata["l"] == (2.0**54, 1)
    with pytest.raises(IntegrityError):
        Content.from_dict(_stored(metadata={"n": 10**400}))
