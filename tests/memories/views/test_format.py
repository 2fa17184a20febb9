"""Formatting helpers: sizes, limits and short ids."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from memories.views.format import format_limit, format_size, short_ids

HEX = st.text(alphabet="0123456789abcdef", min_size=32, max_size=32)


def test_sizes_and_limits_read_as_people_expect() -> None:
    assert [format_size(n) for n in (0, 1023, 1024, 1025, 3 * 1024 * 1024 + 1)] == [
        "0 bytes",
        "1023 bytes",
        "1.0 KiB",
        "1.1 KiB",
        "3.1 MiB",
    ]
    assert [format_limit(n) for n in (64 * 1024 * 1024, 8 * 1024, 1500)] == [
        "64 MiB",
        "8 KiB",
        "1.5 KiB",
    ]


def test_short_ids_keep_eight_digits_and_drop_the_hash_tag() -> None:
    ids = ["sha256:" + "ab" * 32, "abcdef0123456789" * 2]
    assert short_ids(ids) == {ids[0]: "abababab", ids[1]: "abcdef01"}


@given(st.lists(HEX, min_size=1, max_size=40, unique=True))
def test_every_short_id_is_a_prefix_no_other_id_shares(ids: list[str]) -> None:
    shorts = short_ids(ids)
    for asset_id, short in shorts.items():
        assert asset_id.startswith(short) and len(short) >= 8
        assert [other for other in ids if other.startswith(short)] == [asset_id]
