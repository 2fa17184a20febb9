"""The store's fast canonical encoder writes exactly the bytes of the general RFC 8785 one."""

from __future__ import annotations

import enum

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memories.crypto import canonical_bytes
from memories.errors import UsageError
from memories.store.plain import canonical

_TEXT = st.one_of(
    st.text(max_size=20),
    st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=20),
)
_SCALARS = st.one_of(
    _TEXT,
    st.integers(min_value=-(2**53) + 1, max_value=2**53 - 1),
    st.integers(),
    st.booleans(),
    st.none(),
    st.floats(allow_nan=False, allow_infinity=False),
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.tuples(inner, inner),
        st.dictionaries(_TEXT, inner, max_size=4),
    ),
    max_leaves=20,
)


@settings(max_examples=400)
@given(_VALUES)
def test_plain_documents_encode_exactly_as_rfc8785(value: object) -> None:
    try:
        expected = canonical_bytes(value)
    except UsageError:
        with pytest.raises(UsageError):
            canonical(value)
        return
    assert canonical(value) == expected


def test_a_checkpoint_shaped_document_takes_the_plain_path() -> None:
    document = {
        "t": "memories.checkpoint",
        "v": 1,
        "seq": 12,
        "details": {"op": "read", "caller": "cli:1@2", "private": False},
        "prev": "sha256:00",
    }
    assert canonical(document) == canonical_bytes(document)


class _Colour(enum.StrEnum):
    RED = "red"


def test_values_that_are_not_plain_fall_back_to_the_general_encoder() -> None:
    for value in ({"k": 'quote " and \\'}, {"é": 1}, {"k": 1.5}, {"k": _Colour.RED}, [2**60]):
        try:
            expected = canonical_bytes(value)
        except UsageError:
            with pytest.raises(UsageError):
                canonical(value)
            continue
        assert canonical(value) == expected
    with pytest.raises(UsageError):
        canonical({1: "non-text key"})
