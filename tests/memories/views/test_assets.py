"""Asset response shapes: their JSON forms and what their reprs never show."""

from __future__ import annotations

from memories.views import AssetView, ContentView, FileInfo, Link, Saved

BODY = "BODY-SENTINEL-view-2f"


def test_an_asset_view_hides_a_credential_value_and_a_file_payload() -> None:
    content = ContentView(
        title="Token",
        body=BODY,
        tags=("ops",),
        source=None,
        card_type=None,
        metadata={"list": ("a", "b")},
        private=False,
        file=FileInfo("f.bin", "application/octet-stream", 3, "sha256:" + "0" * 64),
    )
    view = AssetView(
        asset_id="a" * 32,
        vault_id="v" * 32,
        kind="credential",
        revision="sha256:" + "1" * 64,
        heads=("sha256:" + "1" * 64,),
        content=content,
        created_at="2025-01-01T00:00:00.000Z",
        updated_at="2025-01-01T00:00:00.000Z",
        revisions=1,
        author="sha256:" + "2" * 64,
        links=(Link("a" * 32, "b" * 32),),
        secret_hidden=True,
    )
    doc = view.to_dict()
    assert doc["body"] is None and doc["secret_hidden"] is True
    assert doc["file"] == {"name": "f.bin", "media_type": "application/octet-stream", "size": 3}
    assert doc["metadata"] == {"list": ["a", "b"]}
    assert doc["links"] == [{"target": "b" * 32, "relation": "related"}]
    assert (doc["conflicted"], doc["deleted"]) == (False, False)
    assert BODY not in repr(content) and "Token" not in repr(content)


def test_a_saved_write_has_a_json_form() -> None:
    saved = Saved("a" * 32, "sha256:" + "1" * 64, "v" * 32, ("sha256:" + "1" * 64,))
    assert saved.to_dict() == {
        "asset": "a" * 32,
        "revision": "sha256:" + "1" * 64,
        "vault": "v" * 32,
        "heads": ["sha256:" + "1" * 64],
    }
