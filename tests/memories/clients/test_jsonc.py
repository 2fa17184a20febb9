"""The JSON/JSONC splice editor: parses what JSON parses, refuses what it cannot round-trip,
and edits without disturbing anything else."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memories.clients.jsonc import JsoncDocument, JsoncError

scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
objects = st.dictionaries(st.text(max_size=8), values, max_size=5)
indents = st.sampled_from([None, 2, 4, "\t"])


@given(values, indents)
def test_reads_whatever_json_writes(value: Any, indent: int | str | None) -> None:
    text = json.dumps(value, indent=indent)
    assert JsoncDocument(text).value == json.loads(text)


@given(st.text(max_size=60))
def test_arbitrary_text_is_parsed_or_refused_with_jsonc_error(text: str) -> None:
    try:
        doc = JsoncDocument(text)
    except JsoncError:
        return
    if doc.value is None:
        # Nothing but a byte-order mark, white space and comments: an empty document.
        rest = text.removeprefix("\ufeff").strip(" \t\r\n")
        assert rest == "" or rest.startswith("/"), repr(text)


@given(objects, indents, st.text(max_size=8), values)
def test_set_then_delete_a_new_key_gives_back_the_same_bytes(
    original: dict[str, Any], indent: int | str | None, key: str, value: Any
) -> None:
    if key in original:
        return
    text = json.dumps(original, indent=indent)
    doc = JsoncDocument(text)
    doc.set([key], value)
    assert doc.value == {**original, key: value}
    assert doc.text.startswith(text[: text.index("{") + 1])
    assert doc.delete([key])
    assert doc.text == text


@given(objects, indents, st.text(max_size=8), st.text(max_size=8), values)
def test_set_nested_creates_objects_and_keeps_siblings(
    original: dict[str, Any], indent: int | str | None, outer: str, inner: str, value: Any
) -> None:
    doc = JsoncDocument(json.dumps(original, indent=indent))
    if outer in original and not isinstance(original[outer], dict):
        with pytest.raises(JsoncError):
            doc.set([outer, inner], value)
        return
    doc.set([outer, inner], value)
    expected = dict(original)
    expected[outer] = {**expected.get(outer, {}), inner: value}
    assert doc.value == expected


@given(st.lists(values, max_size=4), indents, values)
def test_append_then_delete_the_item_restores_the_array(
    items: list[Any], indent: int | str | None, value: Any
) -> None:
    text = json.dumps({"list": items}, indent=indent)
    doc = JsoncDocument(text)
    doc.append(["list"], value)
    assert doc.value == {"list": [*items, value]}
    assert doc.delete(["list", len(items)])
    assert doc.value == {"list": items}
    if items:
        assert doc.text == text


COMMENTED = """\
// Workspace settings
{
  /* servers we use */
  "servers": {
    "github": {
      "type": "http", // remote
      "url": "https://api.example/mcp",
    },
  },
  "inputs": [],
}
"""


def test_comments_and_trailing_commas_survive_an_insert_and_delete() -> None:
    doc = JsoncDocument(COMMENTED)
    doc.set(["servers", "memories"], {"type": "stdio", "command": "memories", "args": ["mcp"]})
    assert "// Workspace settings" in doc.text and "/* servers we use */" in doc.text
    assert '"type": "http", // remote' in doc.text
    assert doc.value["servers"]["memories"]["args"] == ["mcp"]
    # The file's trailing-comma habit carries over to the new member.
    assert '        "mcp"\n      ]\n    },\n  },' in doc.text
    doc.delete(["servers", "memories"])
    assert doc.text == COMMENTED


def test_a_comment_ending_the_last_line_stays_with_its_member() -> None:
    text = '{\n  "a": 1 // the answer\n}\n'
    doc = JsoncDocument(text)
    doc.set(["b"], 2)
    assert doc.text == '{\n  "a": 1, // the answer\n  "b": 2\n}\n'
    doc.delete(["b"])
    assert doc.text == text


def test_crlf_and_tabs_are_kept() -> None:
    text = '{\r\n\t"a": {\r\n\t\t"x": 1\r\n\t}\r\n}\r\n'
    doc = JsoncDocument(text)
    doc.set(["a", "y"], [1])
    assert (
        doc.text == '{\r\n\t"a": {\r\n\t\t"x": 1,\r\n\t\t"y": [\r\n\t\t\t1\r\n\t\t]\r\n\t}\r\n}\r\n'
    )


def test_replacing_a_value_keeps_its_neighbours() -> None:
    text = '{"keep": [1, 2], "x": {"old": true}, "tail": null}'
    doc = JsoncDocument(text)
    doc.set(["x"], {"new": 1})
    assert doc.text.startswith('{"keep": [1, 2], "x": ')
    assert doc.text.endswith(', "tail": null}')
    assert doc.value == {"keep": [1, 2], "x": {"new": 1}, "tail": None}


def test_setting_an_equal_value_changes_no_byte() -> None:
    text = '{"x":{"a":[1,2]}}'
    doc = JsoncDocument(text)
    doc.set(["x"], {"a": [1, 2]})
    assert doc.text == text


def test_blank_text_becomes_an_object_with_a_final_newline() -> None:
    doc = JsoncDocument("")
    doc.set(["mcpServers", "m"], {"command": "c"})
    assert json.loads(doc.text) == {"mcpServers": {"m": {"command": "c"}}}
    assert doc.text.endswith("}\n")


@pytest.mark.parametrize(
    "text",
    [
        '{"a": 1, "a": 2}',  # duplicate key: which one a client uses is not ours to guess
        '{"a": 1',
        '{"a": 1} x',
        '{"a": /* open',
        "{'a': 1}",
        '{"a": 01}',
        '{"a": NaN}',
        '{"a" 1}',
        '{"a": 1 "b": 2}',
        '["a",,]',
        '{"a": "\x01"}',
    ],
)
def test_malformed_text_is_refused(text: str) -> None:
    with pytest.raises(JsoncError) as caught:
        JsoncDocument(text)
    assert "line 1" in str(caught.value)


def test_error_position_counts_lines_and_never_quotes_the_text() -> None:
    with pytest.raises(JsoncError) as caught:
        JsoncDocument('{\n  "token": "s3cr3t-value"\n  "b": 2\n}')
    assert (caught.value.line, caught.value.column) == (3, 3)
    assert "s3cr3t" not in str(caught.value)


def test_set_through_a_non_object_is_refused() -> None:
    doc = JsoncDocument('{"mcpServers": []}')
    with pytest.raises(JsoncError):
        doc.set(["mcpServers", "memories"], {})
    assert doc.text == '{"mcpServers": []}'
