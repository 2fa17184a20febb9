from __future__ import annotations

import base64
import hashlib

from memories.vault.content import Content, FilePayload, make_content
from memories.vault.diff import CREDENTIAL_HIDDEN, text_projection, unified_diff

SECRET = "hunter2-SECRET-SENTINEL-55d1"
PAYLOAD = b"PAYLOAD-SENTINEL-\x00\xff-binary-bytes"


def test_text_edit_diff_is_exactly_a_unified_diff_of_the_projection() -> None:
    old = make_content("memory", title="Deploy", body="step one\nstep two\nstep three\n")
    new = make_content(
        "memory", title="Deploy v2", body="step one\nstep 2\nstep three\n", tags=["ops"]
    )
    assert unified_diff("memory", old, new, old_label="rev a1", new_label="rev b2") == (
        "--- rev a1\n"
        "+++ rev b2\n"
        "@@ -1,5 +1,6 @@\n"
        "-title: Deploy\n"
        "+title: Deploy v2\n"
        "+tags: ops\n"
        " \n"
        " step one\n"
        "-step two\n"
        "+step 2\n"
        " step three\n"
    )


def test_metadata_diff_shows_one_canonical_json_line_per_field() -> None:
    old = make_content(
        "card",
        title="Tokio",
        card_type="knowledge",
        metadata={"topic": "async", "confidence": 0.5},
    )
    new = make_content(
        "card",
        title="Tokio",
        card_type="knowledge",
        metadata={"topic": "async", "confidence": 0.9, "references": ["https://tokio.rs", "b"]},
        private=True,
    )
    assert text_projection("card", new) == [
        "title: Tokio",
        "card type: knowledge",
        "private: yes",
        "meta.confidence: 0.9",
        'meta.references: ["https://tokio.rs","b"]',
        'meta.topic: "async"',
    ]
    assert unified_diff("card", old, new, old_label="a", new_label="b", context=1) == (
        "--- a\n"
        "+++ b\n"
        "@@ -2,3 +2,5 @@\n"
        " card type: knowledge\n"
        "-meta.confidence: 0.5\n"
        "+private: yes\n"
        "+meta.confidence: 0.9\n"
        '+meta.references: ["https://tokio.rs","b"]\n'
        ' meta.topic: "async"\n'
    )


def test_file_diff_shows_name_type_size_and_digest_but_never_the_payload() -> None:
    old = make_content(
        "file",
        title="Blob",
        file=FilePayload(name="blob.bin", media_type="application/octet-stream", data=b"old"),
    )
    new = make_content(
        "file",
        title="Blob",
        file=FilePayload(name="blob.bin", media_type="application/octet-stream", data=PAYLOAD),
    )
    digest = hashlib.sha256(PAYLOAD).hexdigest()
    diff = unified_diff("file", old, new, old_label="a", new_label="b")
    assert (
        f"+file: blob.bin (application/octet-stream, {len(PAYLOAD)} bytes, sha256:{digest})\n"
        in diff
    )
    assert f"-file: blob.bin (application/octet-stream, 3 bytes, sha256:{_sha(b'old')})" in diff
    for leaked in (
        "PAYLOAD-SENTINEL",
        base64.urlsafe_b64encode(PAYLOAD).decode().rstrip("="),
        base64.b64encode(PAYLOAD).decode(),
        PAYLOAD.hex(),
    ):
        assert leaked not in diff


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_credential_projection_hides_the_secret_value() -> None:
    old = make_content("credential", title="GitHub token", body=SECRET)
    new = make_content("credential", title="GitHub PAT", body=SECRET + "-rotated", tags=["gh"])
    assert text_projection("credential", new) == [
        "title: GitHub PAT",
        "tags: gh",
        "",
        CREDENTIAL_HIDDEN,
    ]
    diff = unified_diff("credential", old, new, old_label="a", new_label="b")
    assert SECRET not in diff
    assert "-title: GitHub token\n+title: GitHub PAT\n+tags: gh\n" in diff
    assert " (credential value hidden)\n" in diff
    # A rotated value alone shows no difference: nothing about the secret is revealed.
    rotated = make_content("credential", title="GitHub token", body="another value")
    assert unified_diff("credential", old, rotated, old_label="a", new_label="b") == ""


def test_protected_card_reference_is_shown_but_never_resolved() -> None:
    card = make_content(
        "card",
        title="GitHub",
        card_type="protected_card",
        metadata={"credential_ref": "cred_123", "kind": "token"},
    )
    assert 'meta.credential_ref: "cred_123"' in text_projection("card", card)


def test_a_tombstone_projects_to_nothing_and_diffs_as_a_full_removal() -> None:
    old = make_content("memory", title="Gone", body="last words")
    assert text_projection("memory", None) == []
    assert unified_diff("memory", old, None, old_label="HEAD~1", new_label="HEAD") == (
        "--- HEAD~1\n+++ HEAD\n@@ -1,3 +0,0 @@\n-title: Gone\n-\n-last words\n"
    )
    assert unified_diff("memory", None, None, old_label="a", new_label="b") == ""
    created = unified_diff("memory", None, old, old_label="a", new_label="b")
    assert created.startswith("--- a\n+++ b\n@@ -0,0 +1,3 @@\n+title: Gone\n")


def test_equal_revisions_have_an_empty_diff() -> None:
    content = make_content("memory", title="Same", body="text")
    again = make_content("memory", title="Same", body="text")
    assert unified_diff("memory", content, again, old_label="a", new_label="b") == ""


def test_line_breaks_in_single_line_fields_cannot_forge_other_fields() -> None:
    # Stored content from another device is not held to today's input rules.
    forged = Content(title="x\nmeta.kind: fake", source="s\u2028t", tags=("a\rb",))
    lines = text_projection("memory", forged)
    assert lines == ["title: x\\nmeta.kind: fake", "tags: a\\rb", "source: s\\u2028t"]
    header = unified_diff("memory", None, forged, old_label="a\nb", new_label="c")
    assert header.startswith("--- a\\nb\n+++ c\n")


def test_body_lines_are_compared_line_by_line_with_the_requested_context() -> None:
    body = "\n".join(f"line {i}" for i in range(20))
    old = make_content("memory", title="t", body=body)
    new = make_content("memory", title="t", body=body.replace("line 10", "line ten"))
    diff = unified_diff("memory", old, new, old_label="a", new_label="b", context=0)
    assert diff == "--- a\n+++ b\n@@ -13 +13 @@\n-line 10\n+line ten\n"
    wide = unified_diff("memory", old, new, old_label="a", new_label="b", context=2)
    assert " line 8\n line 9\n-line 10\n+line ten\n line 11\n line 12\n" in wide
