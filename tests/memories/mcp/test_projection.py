"""The safe projection: allowlisted fields, short ids, bounded sizes, stored text as data."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from memories.mcp import projection


@given(st.lists(st.text(alphabet="0123456789abcdef", min_size=32, max_size=32), max_size=40))
def test_short_ids_are_unique_prefixes_of_at_least_eight(ids: list[str]) -> None:
    shorts = projection.short_ids(ids)
    assert set(shorts) == set(ids)
    assert len(set(shorts.values())) == len(set(ids))
    for ident, short in shorts.items():
        assert ident.startswith(short) and len(short) >= 8


def test_short_ids_grow_only_where_prefixes_collide() -> None:
    shorts = projection.short_ids(["aaaaaaaa11", "aaaaaaaa12", "bbbbbbbbbb"])
    assert shorts == {
        "aaaaaaaa11": "aaaaaaaa11",
        "aaaaaaaa12": "aaaaaaaa12",
        "bbbbbbbbbb": "bbbbbbbb",
    }


def view(**fields: object) -> dict[str, object]:
    doc: dict[str, object] = {
        "asset": "0123456789abcdef0123456789abcdef",
        "vault": "v" * 32,
        "kind": "memory",
        "revision": "sha256:" + "ab" * 32,
        "heads": ["sha256:" + "ab" * 32],
        "author": "sha256:" + "cd" * 32,
        "title": "T",
        "body": "B",
        "tags": ["x"],
        "metadata": {},
        "links": [],
        "secret_hidden": False,
    }
    doc.update(fields)
    return doc


def test_an_asset_shows_only_allowlisted_fields_and_marks_its_text() -> None:
    shown = projection.asset(view(future_field="should not pass", secrets={"k": "id"}))
    assert "future_field" not in str(shown) and "secrets" not in shown
    assert "author" not in shown and "vault" not in shown
    assert shown["id"] == "01234567"
    assert shown["revision"] == "ab" * 6
    assert shown["content"] == {"untrusted": True, "title": "T", "tags": ["x"], "body": "B"}
    assert shown["notice"] == projection.NOTICE


def test_a_credential_shows_no_body_and_no_metadata() -> None:
    shown = projection.asset(
        view(kind="credential", body="value?", metadata={"k": "v"}, secret_hidden=True)
    )
    assert "body" not in shown["content"] and "metadata" not in shown["content"]
    assert shown["secret_hidden"] is True


def test_long_text_is_cut_and_flagged() -> None:
    shown = projection.asset(view(body="x" * (projection.BODY_CHARS + 10), title="t" * 1000))
    assert len(shown["content"]["body"]) == projection.BODY_CHARS
    assert len(shown["content"]["title"]) == projection.TITLE_CHARS
    assert shown["content"]["truncated"] is True


def test_lists_stop_at_their_budget_and_say_how_many_were_left_out() -> None:
    items = [{"content": {"text": "y" * 1000}} for _ in range(100)]
    out = projection.bounded(items, budget=10_500)
    assert out["count"] == 10
    assert out["omitted"] == 90
    assert "narrow" in out["note"]


def test_search_results_keep_snippets_and_drop_everything_else() -> None:
    response = {
        "results": [
            {
                "summary": {
                    "id": "f" * 32,
                    "short_id": "ffffffff",
                    "kind": "memory",
                    "title": "Deploy",
                    "tags": [],
                    "author": "sha256:x",
                    "vault": "v",
                },
                "revision": "sha256:" + "12" * 32,
                "chunk": "sha256:" + "34" * 32,
                "snippet": {"text": "deploy it", "highlights": [[0, 6]]},
                "score": 1.234567,
                "scores": {"bm25": 1},
            }
        ],
        "index": {"truncated": False, "vault": "v" * 32},
    }
    out = projection.search_results(response)
    [item] = out["items"]
    assert item["id"] == "ffffffff"
    assert item["content"]["snippet"] == "deploy it"
    assert item["score"] == 1.2346
    assert "author" not in str(out) and "v" * 32 not in str(out)
