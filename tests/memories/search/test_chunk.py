from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memories.errors import UsageError
from memories.search.chunk import chunk_text, grapheme_boundary

_CLUSTERS = st.sampled_from(
    [
        "e\u0301",  # e + combining acute
        "👩\u200d💻",  # ZWJ sequence
        "👍🏽",  # skin-tone modifier
        "🇫🇷",  # flag: two regional indicators
        "\u1100\u1161\u11a8",  # Hangul L V T
        "\r\n",
        "中",
        "word",
        " ",
        ". ",
        "\n\n",
    ]
)


@given(st.lists(_CLUSTERS, min_size=1, max_size=400))
def test_chunks_never_split_a_grapheme_and_cover_the_text(parts: list[str]) -> None:
    text = "".join(parts)
    chunks = chunk_text(text, size=40, overlap=8)
    if not text.strip():
        assert chunks == []
        return
    for chunk in chunks:
        assert text[chunk.start : chunk.end] == chunk.text
        assert grapheme_boundary(text, chunk.start)
        assert grapheme_boundary(text, chunk.end)
    # Every character lies in some chunk (whitespace-only gaps may be dropped).
    covered = [False] * len(text)
    for chunk in chunks:
        for i in range(chunk.start, chunk.end):
            covered[i] = True
    assert all(c or text[i].isspace() for i, c in enumerate(covered))


def test_chunks_overlap_and_prefer_paragraph_breaks() -> None:
    para = "A sentence about search. " * 20
    text = para + "\n\n" + para
    chunks = chunk_text(text, size=600, overlap=100)
    assert chunks[0].text.endswith("\n\n")
    assert len(chunks) >= 2
    assert chunks[1].start < chunks[0].end  # overlap


def test_chunk_ids_are_content_hashes_not_positions() -> None:
    a = chunk_text("the same words")[0]
    b = chunk_text("the same words")[0]
    assert a.id == b.id
    assert a.id.startswith("sha256:")
    assert a.id != chunk_text("other words")[0].id


def test_short_text_is_one_chunk_and_blank_text_none() -> None:
    assert [c.text for c in chunk_text("short")] == ["short"]
    assert chunk_text("  \n ") == []


def test_bad_sizes_are_refused() -> None:
    with pytest.raises(UsageError):
        chunk_text("x", size=8)
    with pytest.raises(UsageError):
        chunk_text("x", size=100, overlap=60)
