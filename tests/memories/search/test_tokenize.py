from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from memories.search.tokenize import fold, has_cjk, tokenize


def test_full_width_and_case_fold_to_the_same_tokens() -> None:
    assert tokenize("ＳＱＬｉｔｅ Ｆｔｓ５") == tokenize("sqlite fts5") == ["sqlite", "fts5"]


def test_latin_words_split_on_punctuation_and_underscores() -> None:
    assert tokenize("os.path.join(snake_case) -- naïve") == [
        "os",
        "path",
        "join",
        "snake",
        "case",
        "naïve",
    ]


def test_chinese_runs_are_segmented_with_search_granularity() -> None:
    tokens = tokenize("中华人民共和国的向量检索")
    assert "中华人民共和国" in tokens
    assert "人民" in tokens  # the shorter words inside the compound are indexed too
    assert "检索" in tokens


def test_mixed_scripts_keep_latin_words_whole_inside_chinese_text() -> None:
    tokens = tokenize("使用Python的asyncio编写服务")
    assert "python" in tokens
    assert "asyncio" in tokens
    assert "使用" in tokens


def test_has_cjk_detects_ideographs_and_kana_only() -> None:
    assert has_cjk("检索")
    assert has_cjk("カタカナ")
    assert not has_cjk("한국어 plain")


def test_overlong_tokens_are_bounded() -> None:
    assert tokenize("a" * 500) == ["a" * 64]


@given(st.text(max_size=200))
def test_tokenize_never_fails_and_agrees_with_its_own_fold(text: str) -> None:
    tokens = tokenize(text)
    assert all(t and " " not in t for t in tokens)
    assert tokenize(fold(text)) == tokens
