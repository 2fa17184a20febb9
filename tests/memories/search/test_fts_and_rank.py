from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memories.errors import MemoriesError
from memories.search.fts import FtsIndex, FtsRow, match_any, match_query
from memories.search.rank import fuse_scores, parse_query, rrf, snippet
from memories.search.rerank import features
from memories.search.tokenize import cjk_grams, tokenize


def _row(rowid: int, title: str, body: str, meta: str = "") -> FtsRow:
    grams = " ".join(cjk_grams(f"{title}\n{body}\n{meta}"))
    return FtsRow(rowid, " ".join(tokenize(title)), " ".join(tokenize(body)), meta, grams)


def test_index_lives_in_memory_with_memory_only_temp_storage() -> None:
    index = FtsIndex()
    try:
        databases = index._db.execute("PRAGMA database_list").fetchall()
        assert all(file == "" for _, _, file in databases)
        assert index._db.execute("PRAGMA temp_store").fetchone()[0] == 2  # MEMORY
    finally:
        index.close()


def test_the_table_keeps_no_copy_of_its_rows_and_deletes_by_their_values() -> None:
    index = FtsIndex()
    try:
        rows = [_row(1, "alpha", "shared words zebra"), _row(2, "beta", "shared words yak")]
        index.add(rows)
        # Contentless: reading a column back gives nothing, only the index answers.
        assert index._db.execute("SELECT title, body FROM chunks").fetchall() == [
            (None, None),
            (None, None),
        ]
        index.remove([rows[0]])
        assert index.count("shared") == 1
        assert index.search(match_any(["zebra"]), 10) == []
        assert index.search(match_any(["alpha"]), 10) == []
        assert [rowid for rowid, _ in index.search(match_any(["shared"]), 10)] == [2]
        vocabulary = "CREATE VIRTUAL TABLE v USING fts5vocab(chunks, 'row')"
        index._db.execute(vocabulary)
        terms = {term for (term,) in index._db.execute("SELECT term FROM v")}
        assert "zebra" not in terms and "alpha" not in terms and "yak" in terms
    finally:
        index.close()


def test_rows_are_counted_by_stem_and_pairs_only_where_asked() -> None:
    index = FtsIndex()
    try:
        pairs_only = FtsRow(4, "", "", "", "数据")
        index.add([_row(1, "Runs", "running late"), _row(2, "数据", "ran"), _row(3, "x", "run")])
        index.add([pairs_only])
        assert index.count("running") == index.count("run") == 2  # both stem to "run"
        assert index.count("ran") == 1
        assert index.count("数据") == 2  # a word of row 2, a character pair of row 4
        assert index.count("数据", words_only=True) == 1
        assert index.count("absent") == index.count("") == index.count('"') == 0
    finally:
        index.close()


def test_a_bulk_insert_that_fails_midway_keeps_nothing() -> None:
    index = FtsIndex()
    try:
        index.add([_row(1, "kept", "before")])

        def rows() -> Iterator[FtsRow]:
            yield _row(2, "lost", "zebra")
            raise RuntimeError("the source failed")

        with pytest.raises(RuntimeError):
            index.add(rows())
        assert index.count("zebra") == index.count("lost") == 0
        assert index.count("kept") == 1
        index.add([_row(2, "later", "zebra")])  # the table is usable, the rowid free
        assert index.count("zebra") == 1
    finally:
        index.close()


def test_a_bulk_insert_goes_in_whole_on_a_helper_thread() -> None:
    index = FtsIndex()
    try:
        count = index.bulk_rows * 2 + 7  # two full statements and a short one
        taken_on = set()

        def rows() -> Iterator[FtsRow]:
            for n in range(1, count + 1):
                taken_on.add(threading.get_ident())
                yield _row(n, f"title {n}", "shared zebra" if n % 2 else "shared yak")

        index.add(rows())
        assert taken_on == {threading.get_ident()}  # the rows are made on the caller's thread
        assert index.count("shared") == count
        assert index.count("zebra") == (count + 1) // 2
        assert [r for r, _ in index.search(match_any(["title", str(count)]), 1)] == [count]
        assert not [t for t in threading.enumerate() if t.name == "memories-fts-insert"]
    finally:
        index.close()


def test_a_bulk_insert_that_fails_on_either_thread_keeps_nothing() -> None:
    index = FtsIndex()
    try:
        index.add([_row(1, "kept", "before")])
        many = index.bulk_rows * 3

        def failing_source() -> Iterator[FtsRow]:
            for n in range(2, many):
                yield _row(n, "lost", "zebra")
            raise RuntimeError("the source failed")

        with pytest.raises(RuntimeError):
            index.add(failing_source())
        # A rowid that is no integer, in the second statement: SQLite refuses it on the helper.
        refusing = [_row(n, "lost", "zebra") for n in range(2, many)]
        refusing[index.bulk_rows + 5] = FtsRow("zebra", "lost", "zebra", "")  # type: ignore[arg-type]
        with pytest.raises(MemoriesError) as refused:
            index.add(refusing)
        assert "zebra" not in str(refused.value)
        assert index.count("zebra") == index.count("lost") == 0
        assert index.count("kept") == 1
        assert not [t for t in threading.enumerate() if t.name == "memories-fts-insert"]
    finally:
        index.close()


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_helper_that_dies_of_another_error_is_reported_and_keeps_nothing() -> None:
    index = FtsIndex()
    try:
        rows: list[object] = [_row(n, "lost", "zebra") for n in range(1, index.bulk_rows * 3)]
        rows[index.bulk_rows + 5] = None  # not a row: the helper's thread dies of a TypeError
        with pytest.raises(MemoriesError):
            index.add(rows)  # type: ignore[arg-type]
        assert index.count("zebra") == 0
        assert not [t for t in threading.enumerate() if t.name == "memories-fts-insert"]
    finally:
        index.close()


def test_segments_merged_as_they_come_keep_every_answer_and_no_free_pages() -> None:
    words = [f"word{n}" for n in range(40)]
    rows = [
        _row(b * 50 + n, f"t{n}", " ".join(words[n % 40 :] * 3))
        for b in range(20)
        for n in range(50)
    ]
    gone = [rows[b * 50 + 7] for b in range(5)]
    queries = [match_any([w]) for w in words[::7]] + [match_any(["word3", "word39"])]
    merged, whole = FtsIndex(), FtsIndex()
    try:
        for at in range(0, len(rows), 50):  # one segment per insert, merged as FTS5 goes
            merged.add(rows[at : at + 50])
        merged.remove(gone)
        whole.add([row for row in rows if row not in gone])
        expected = [whole.search(q, 30) for q in queries]
        assert [merged.search(q, 30) for q in queries] == expected
        merged.optimize()  # into one
        assert [merged.search(q, 30) for q in queries] == expected
        # Pages that merging frees leave the in-memory database at once.
        assert merged._db.execute("PRAGMA freelist_count").fetchone()[0] == 0
    finally:
        merged.close()
        whole.close()


def test_a_title_hit_outranks_the_same_term_in_the_body() -> None:
    index = FtsIndex()
    try:
        index.add(
            [
                _row(1, "notes", "the compiler is fast and other words here"),
                _row(2, "compiler", "notes and other words here about nothing"),
            ]
        )
        found = index.search(match_any(["compiler"]), 10)
        assert [rowid for rowid, _ in found] == [2, 1]
    finally:
        index.close()


def test_fts_syntax_in_a_query_is_plain_text() -> None:
    index = FtsIndex()
    try:
        index.add([_row(1, "t", 'NEAR AND OR NOT " * ( ) ^ : body')])
        query = parse_query('NEAR( "a OR ) * ^ col:x -')
        assert index.search(match_any(query.tokens), 5) is not None
        assert [r for r, _ in index.search(match_any(tokenize("near")), 5)] == [1]
    finally:
        index.close()


def test_query_syntax_phrases_exclusions_and_tags() -> None:
    query = parse_query('deploy "blue green" -staging tag:ops')
    assert query.tokens == ("deploy", "blue", "green")
    assert query.phrases == ("blue green",)
    assert query.excluded == ("staging",)
    assert query.tags == ("ops",)


def test_huge_queries_are_truncated_not_refused() -> None:
    query = parse_query(" ".join(f"w{i}" for i in range(20_000)))
    assert len(query.tokens) == 64
    assert query.truncated


def test_rrf_rewards_agreement_between_rankings() -> None:
    fused = rrf([["a", "b", "c"], ["b", "a", "d"]], k=60)
    assert fused["a"] == fused["b"] > fused["c"] > 0
    assert rrf([["x", "y"], ["y"]])["y"] > rrf([["x", "y"], ["y"]])["x"]
    assert fused["d"] == 1 / 63


def test_score_fusion_keeps_how_far_apart_the_scores_are() -> None:
    lexical = {"a": 10.0, "b": 9.0, "c": 1.0}
    semantic = {"c": 0.9, "b": 0.3, "d": 0.2}
    fused = fuse_scores(lexical, semantic, weight=1.0)
    assert fused["a"] == 0.5  # best by keywords, no vector: (1 + 0) / 2
    assert round(fused["c"], 6) == round((0.1 + 1.0) / 2, 6)
    assert round(fused["b"], 6) == round((0.9 + 0.1 / 0.7) / 2, 6)
    assert fused["d"] == 0.0  # the least similar, found by no keyword
    assert sorted(fused, key=fused.__getitem__, reverse=True) == ["c", "b", "a", "d"]
    heavier = fuse_scores(lexical, semantic, weight=3.0)
    assert heavier["c"] > heavier["a"]
    assert fuse_scores({}, {}) == {}
    assert fuse_scores({"x": 2.0}, {"x": 0.5}) == {"x": 1.0}


def test_chinese_character_pairs_match_where_jieba_splits_the_text_differently() -> None:
    index = FtsIndex()
    try:
        # jieba reads 上交所期权当日合约 as its own words; the query's 期权 and 当日 are
        # found through the character pairs even where the words are not.
        index.add([_row(1, "a", "上交所期权当日合约"), _row(2, "b", "期货的夜盘时间表")])
        query = parse_query("股票期权当日合约")
        assert "期权" in query.grams and "当日" in query.grams
        found = index.search(match_query(query.tokens, query.grams), 5)
        assert [rowid for rowid, _ in found] == [1]
        words_only = index.search(match_query(query.tokens, ()), 5)
        assert all(score < dict(found)[1] for _, score in words_only)
    finally:
        index.close()


def test_a_two_character_word_is_not_counted_twice() -> None:
    index = FtsIndex()
    try:
        index.add([_row(1, "a", "部署"), _row(2, "b", "部署 部署 部署")])
        query = parse_query("部署")
        both = dict(index.search(match_query(query.tokens, query.grams), 5))
        words = dict(index.search(match_query(query.tokens, ()), 5))
        grams = dict(index.search(match_query((), query.grams), 5))
        # Words search title/body/metadata and pairs only their own column: the sum of both.
        assert round(both[1], 6) == round(words[1] + grams[1], 6)
        assert match_query((), ()) == ""
    finally:
        index.close()


def test_rerank_prefers_full_coverage_and_exact_phrases() -> None:
    query = parse_query("connection pool timeout")
    full = features(query, "", tokenize("connection pool timeout"), "connection pool timeout").bonus
    partial = features(query, "", tokenize("connection timeout"), "connection timeout").bonus
    scattered = features(
        query, "", tokenize("timeout of a pool connection"), "timeout of a pool connection"
    ).bonus
    assert full > scattered > partial


def test_snippet_windows_the_matches_and_marks_them() -> None:
    text = "filler " * 100 + "the Retry budget is three" + " filler" * 100
    shown = snippet(text, parse_query("retry budget"))
    assert shown.text.startswith("…") and shown.text.endswith("…")
    marked = [shown.text[s:e].lower() for s, e in shown.highlights]
    assert "retry" in marked and "budget" in marked


_WORDS = st.sampled_from(["a", "at", "data", "database", "base", "the", "x1", "部署", "说明"])


@given(
    st.lists(st.tuples(_WORDS, st.sampled_from([" ", "-", "", ". "])), max_size=30),
    st.lists(_WORDS, min_size=1, max_size=4),
)
def test_highlights_mark_each_query_word_where_a_word_starts(
    pieces: list[tuple[str, str]], wanted: list[str]
) -> None:
    text = "".join(word.upper() + gap for word, gap in pieces)
    latin = set("abcdefghijklmnopqrstuvwxyz0123456789")  # what a Latin word is made of
    shown = snippet(text, parse_query(" ".join(wanted)), width=10_000)
    folded = text.lower()
    covered = {at for start, end in shown.highlights for at in range(start, end)}
    for needle in set(wanted):
        at = folded.find(needle)
        while at != -1:
            starts_word = at == 0 or folded[at - 1] not in latin
            end = at + len(needle)
            whole = end == len(folded) or folded[end] not in latin
            if not needle.isascii() or (starts_word and (len(needle) >= 3 or whole)):
                assert set(range(at, end)) <= covered, (needle, at)
            at = folded.find(needle, at + 1)
    for start, _ in shown.highlights:
        # Every highlight starts where a query word does, Latin ones at a word's start.
        assert any(folded.startswith(w, start) for w in wanted)
        if folded[start] in latin:
            assert start == 0 or folded[start - 1] not in latin
