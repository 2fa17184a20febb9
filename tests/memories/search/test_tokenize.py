from __future__ import annotations

import sqlite3
import subprocess
import sys
import unicodedata

from hypothesis import example, given
from hypothesis import strategies as st

from memories.search.tokenize import (
    cjk_grams,
    fold,
    folded_contains,
    fts5_spelling,
    has_cjk,
    query_tokens,
    tokenize,
)


def test_full_width_and_case_fold_to_the_same_tokens() -> None:
    assert tokenize("ＳＱＬｉｔｅ Ｆｔｓ５") == tokenize("SQLite Fts5")
    assert tokenize("ｓｑｌｉｔｅ ＦＴＳ５") == tokenize("sqlite fts5") == ["sqlite", "fts5"]


def test_camel_case_words_also_give_their_parts() -> None:
    assert tokenize("ArgumentDefaultsHelpFormatter") == [
        "argumentdefaultshelpformatter",
        "argument",
        "defaults",
        "help",
        "formatter",
    ]
    assert tokenize("XMLHttpRequest") == ["xmlhttprequest", "xml", "http", "request"]
    assert tokenize("getattr Python") == ["getattr", "python"]  # no inner capital: one word
    # A query naming the parts finds the identifier, and one naming it whole does too.
    assert set(query_tokens("help formatter")) <= set(tokenize("HelpFormatter"))
    assert set(query_tokens("helpformatter")) <= set(tokenize("HelpFormatter"))


def test_queries_take_jiebas_words_without_their_inner_words() -> None:
    document = tokenize("东方财富网数据中心")
    query = query_tokens("东方财富网数据中心")
    assert "数据中心" in query and "数据" not in query and "中心" not in query
    assert {"数据中心", "数据", "中心"} <= set(document)
    assert set(query) <= set(document)


def test_cjk_grams_are_overlapping_character_pairs_of_cjk_runs_only() -> None:
    assert cjk_grams("可转债数据 and 表") == ["可转", "转债", "债数", "数据", "表"]
    assert cjk_grams("plain ascii text") == []
    assert cjk_grams("ＡＢ数据") == ["数据"]


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


def test_a_long_word_is_one_token_whole() -> None:
    # Cut to a prefix, two hashes that share it would match each other.
    assert tokenize("a" * 500) == ["a" * 500]
    assert tokenize("数据" + "b" * 300) == ["数据", "b" * 300]


@given(st.text(max_size=200))
def test_tokenize_never_fails_and_agrees_with_its_own_fold(text: str) -> None:
    tokens = tokenize(text)
    assert all(t and " " not in t for t in tokens)
    # Folding loses only the parts of camel-case words, never a whole word.
    assert set(tokenize(fold(text))) <= set(tokens)
    assert all(len(g) in (1, 2) for g in cjk_grams(text))


@given(
    st.text(alphabet=st.sampled_from("数据中心东方财富网的可转债 aZq-"), max_size=40)
    | st.text(max_size=80)
)
def test_every_query_token_is_a_document_token_of_the_same_text(text: str) -> None:
    assert set(query_tokens(text)) <= set(tokenize(text))


_ASCII_PIECES = st.sampled_from(
    [*"aAbBzZ09_ -.xYIPv4", "Network", "HTTPServer", "IPv4Network", "x" * 70, "Ab" * 40]
)


@given(
    st.lists(_ASCII_PIECES, max_size=60).map("".join) | st.text(st.characters(max_codepoint=127))
)
def test_ascii_text_takes_a_fast_path_that_gives_the_same_tokens(text: str) -> None:
    # A non-ASCII word at the end sends the same text down the general path.
    assert [*tokenize(text), "é"] == tokenize(text + " é")


# Non-ASCII characters of no token: typographic quotes and dashes, box drawing, spaces, an
# acute accent whose NFKC form is a space and a combining mark.
_SEPARATOR_PIECES = st.sampled_from([*"\u2019\u201c\u2014\u2500\u00a0\u00b4\u3000\u2026"])
_TYPOGRAPHIC_TEXT = st.lists(_ASCII_PIECES | _SEPARATOR_PIECES, max_size=60).map("".join)


@given(_TYPOGRAPHIC_TEXT)
@example("it\u2019s \u201cIPv4Network\u201d\u2014x\u00b4y")
def test_typographic_punctuation_keeps_text_on_the_fast_path(text: str) -> None:
    assert [*tokenize(text), "é"] == tokenize(text + " é")  # é: the general path


def _fts5_tokens(text: str) -> list[str]:
    """The tokens FTS5's own ``unicode61`` tokenizer (as the index configures it, without
    the stemmer) makes of ``text``, in order."""
    db = sqlite3.connect(":memory:")
    try:
        db.execute(
            "CREATE VIRTUAL TABLE t USING fts5(body, tokenize='unicode61 remove_diacritics 2')"
        )
        db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
        db.execute("INSERT INTO t(body) VALUES (?)", (text,))
        return [term for (term,) in db.execute("SELECT term FROM v ORDER BY offset")]
    finally:
        db.close()


@given(_TYPOGRAPHIC_TEXT | st.text(st.characters(max_codepoint=127)))
@example("IPv4Network HTTPServer snake_case x\x00y")
def test_fts5_splits_the_spelling_of_text_into_its_tokens(text: str) -> None:
    spelled = fts5_spelling(text)
    assert spelled is not None
    assert _fts5_tokens(spelled) == tokenize(text)


def test_only_ascii_text_has_a_spelling_for_fts5() -> None:
    assert fts5_spelling("数据 data") is None
    assert fts5_spelling("café") is None
    assert fts5_spelling("™") is None  # NFKC makes it the word TM
    assert fts5_spelling("it\u2019s") == "it s"
    assert fts5_spelling("a" * 500) == "a" * 500
    assert fts5_spelling("use HTTPServer") == "use HTTPServer HTTP Server"


@given(st.text(st.sampled_from("aBC9 ._"), max_size=40))
@example("aBCd x BCd aBCdEF")
def test_dense_camel_steps_split_as_on_the_general_path(text: str) -> None:
    # Steps of both kinds, side by side and overlapping ("aBCd"): the fast path finds the
    # words that hold them by character class; the general path checks word by word.
    assert [*tokenize(text), "é"] == tokenize(text + " é")


# Characters the NFKC shortcut takes, a few it leaves to unicodedata, and combining marks.
_CHINESE_PROSE = st.text(
    st.sampled_from(
        [
            *"部署金丝雀发布说明",
            *"，。、：；（）！？《》「」【】“”‘’—·　",
            *"ＡＢｚ０９ａb1 \n",
            *"…①ｶﾞ\u0301\u3099가",
        ]
    ),
    max_size=80,
)


@given(_CHINESE_PROSE | st.text(max_size=80))
def test_folding_chinese_prose_quickly_gives_what_nfkc_gives(text: str) -> None:
    expected = unicodedata.normalize("NFKC", text)
    assert fold(text) == expected.casefold()
    assert tokenize(text) == tokenize(expected)


@given(
    _CHINESE_PROSE | st.text(max_size=80),
    st.text(st.sampled_from([*"部署金丝雀发布说明", *"ａA，,…①"]), min_size=1, max_size=4),
)
def test_folded_contains_answers_as_folding_the_whole_text(text: str, needle: str) -> None:
    needle = fold(needle)
    assert folded_contains(text, needle) == (needle in fold(text))
    assert folded_contains(text + needle, needle)
    # Full-width and compatibility forms in the text are found by the needle's plain form.
    assert folded_contains(text.replace("A", "Ａ") + "ＡＢ" + needle, fold("ab" + needle))


# Words of jieba's dictionary, characters it has no word for (its HMM guesses those) and kana.
_CJK_RUNS = st.lists(
    st.sampled_from(
        [
            *("中华人民共和国", "数据中心", "可转债", "期权", "当日", "合约", "科学院", "计算所"),
            *"的我们中出了一个叛徒小明硕士毕业于鑫淼犇龘钅ひらカタ々〇",
        ]
    ),
    min_size=1,
    max_size=30,
).map("".join)


@given(_CJK_RUNS)
# Clauses of real prose, as the index gives them to jieba (one run of CJK text at a time).
@example("东方财富网数据中心提供上交所期权当日合约的行情")
@example("小明硕士毕业于中国科学院计算所")
@example("该接口返回的数据会在每个交易日收盘后更新")
@example("历史数据可以追溯到上市首日")
def test_jieba_rs_cuts_exactly_as_the_jieba_package(run: str) -> None:
    import jieba  # type: ignore[import-untyped]
    import rjieba

    assert rjieba.cut_for_search(run) == list(jieba.cut_for_search(run))
    assert rjieba.cut(run) == list(jieba.cut(run))


def test_jieba_loads_on_the_first_cjk_text_not_at_import() -> None:
    script = (
        "import sys\n"
        "from memories.search.tokenize import tokenize\n"
        "tokenize('plain English, naïve café')\n"
        "assert 'rjieba' not in sys.modules\n"
        "assert tokenize('数据中心') == ['数据', '中心', '数据中心']\n"
        "assert 'rjieba' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=60)
