from __future__ import annotations

import json
from typing import Any

import pytest

from memories.errors import UsageError
from memories.vault.content import Content, FilePayload, make_content
from memories.vault.summary import summarize, visible_in_listing
from memories.views.assets import Summary

BODY = "BODY-SENTINEL-0c4e"
SECRET = "SECRET-SENTINEL-77aa"
CREDENTIAL_REF = "cred-REF-SENTINEL-19"


def _summary(kind: Any, content: Content, **changes: Any) -> Summary:
    fields: dict[str, Any] = {
        "asset_id": "a1b2c3d4e5f6a7b8c9d0",
        "short_id": "a1b2c3d4",
        "vault": "personal",
        "kind": kind,
        "content": content,
        "created_at": "2024-06-01T10:00:00Z",
        "updated_at": "2024-06-02T11:30:00Z",
        "author": "dev:5f3a9c1e",
        "conflicted": False,
    }
    fields.update(changes)
    return summarize(**fields)


def test_summary_of_a_card_carries_the_listing_fields() -> None:
    card = make_content(
        "card",
        title="Tokio",
        body=BODY,
        tags=["rust", "async"],
        card_type="knowledge",
        metadata={"topic": "META-SENTINEL"},
        private=True,
    )
    summary = _summary("card", card, conflicted=True)
    assert summary.to_dict() == {
        "id": "a1b2c3d4e5f6a7b8c9d0",
        "short_id": "a1b2c3d4",
        "vault": "personal",
        "kind": "card",
        "card_type": "knowledge",
        "title": "Tokio",
        "tags": ["async", "rust"],
        "created_at": "2024-06-01T10:00:00Z",
        "updated_at": "2024-06-02T11:30:00Z",
        "author": "dev:5f3a9c1e",
        "private": True,
        "conflicted": True,
    }
    shown = json.dumps(summary.to_dict()) + repr(summary)
    assert BODY not in shown
    assert "META-SENTINEL" not in shown


def test_summary_of_a_protected_card_never_carries_its_credential_reference() -> None:
    card = make_content(
        "card",
        title="GitHub",
        body=f"use {{{{secret:gh}}}} {SECRET}",
        card_type="protected_card",
        metadata={"credential_ref": CREDENTIAL_REF, "account": "octocat", "kind": "token"},
    )
    shown = json.dumps(_summary("card", card).to_dict())
    assert CREDENTIAL_REF not in shown
    assert SECRET not in shown
    assert '"card_type": "protected_card"' in shown


def test_summary_of_a_credential_or_file_never_carries_the_secret_or_payload() -> None:
    credential = make_content("credential", title="deploy key", body=SECRET)
    shown = json.dumps(_summary("credential", credential).to_dict())
    assert SECRET not in shown
    assert '"title": "deploy key"' in shown

    payload = FilePayload(name="f.bin", media_type="application/octet-stream", data=b"RAW-BYTES")
    file = make_content("file", title="blob", file=payload)
    summary = _summary("file", file)
    assert "RAW-BYTES" not in json.dumps(summary.to_dict()) + repr(summary)
    assert summary.card_type is None


def test_only_cards_report_a_card_type() -> None:
    stray = Content(title="t", card_type="knowledge")
    assert _summary("memory", stray).card_type is None


def test_summarize_refuses_an_unknown_kind_or_blank_ids() -> None:
    content = make_content("memory", title="t")
    with pytest.raises(UsageError, match="unknown asset kind"):
        _summary("note", content)
    for field in ("asset_id", "short_id", "vault"):
        with pytest.raises(UsageError, match="needs the asset id"):
            _summary("memory", content, **{field: ""})


@pytest.mark.parametrize(
    ("private", "elevated", "listed"),
    [(False, False, True), (False, True, True), (True, False, False), (True, True, True)],
)
def test_private_content_is_listed_only_when_elevated(
    private: bool, elevated: bool, listed: bool
) -> None:
    content = make_content("memory", title="t", private=private)
    assert visible_in_listing(content, elevated=elevated) is listed
