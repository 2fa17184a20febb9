"""The vault domain over a real store: vaults, the four kinds, private content, edits, conflicts,
tombstones, short ids, history and diff."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest

import memories.vault.edit as edit_module
import memories.vault.revision as revision_module
from memories.errors import ConflictError, DeniedError, NotFoundError, UsageError
from memories.vault import FilePayload, Vaults
from tests.memories.vault.support import dumped, new_vault_store, opened, refused

SECRET = "ghp_SECRET-SENTINEL-7f3a9c"
PRIVATE_BODY = "PRIVATE-BODY-SENTINEL-41bd"
PRIVATE_TITLE = "Private title sentinel 93"


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    return new_vault_store(tmp_path / "memories.db")


@pytest.fixture
def vaults(store_path: Path) -> Iterator[Vaults]:
    with opened(store_path) as v:
        yield v


def short(revision: str, length: int = 8) -> str:
    return revision.removeprefix("sha256:")[:length]


# -- vaults ---------------------------------------------------------------------------------------


def test_a_new_store_has_a_personal_vault_and_a_device_only_vault_with_local_config(
    vaults: Vaults,
) -> None:
    by_name = {info.name: info for info in vaults.vaults()}
    assert set(by_name) == {"personal", "device"}
    personal, device = by_name["personal"], by_name["device"]
    assert (personal.personal, personal.local) == (True, False)
    assert (device.personal, device.local) == (False, True)
    assert personal.role == device.role == "owner"
    assert personal.epoch == device.epoch == 1
    assert vaults.resolve_vault(None).vault_id == personal.id
    assert vaults.list_assets() == []
    [config] = vaults.list_assets("device")
    assert (config.title, config.tags, config.kind) == ("local_config", ("local_config",), "memory")
    view = vaults.get(config.id)
    assert view.content is not None and view.content.body == "version: t"
    assert view.vault_id == device.id


def test_create_vault_accepts_good_names_and_refuses_bad_or_taken_ones(vaults: Vaults) -> None:
    made = vaults.create_vault("  Work notes_2.0-x  ")
    assert made.name == "Work notes_2.0-x"
    assert (made.personal, made.local, made.role) == (False, False, "owner")
    local = vaults.create_vault("scratch", local=True)
    assert local.local
    assert {v.name for v in vaults.vaults()} == {
        "personal",
        "device",
        "Work notes_2.0-x",
        "scratch",
    }
    # Each vault has its own signed genesis policy.
    report = vaults.verification()
    assert (report.problems, report.policies) == ((), 4)
    for bad in ("", "   ", "-leading", ".hidden", "a/b", "x" * 65, "tab\there", "nul\x00"):
        error = refused(vaults, UsageError, lambda bad=bad: vaults.create_vault(bad))
        assert bad.strip() == "" or bad not in error.message
    refused(vaults, UsageError, lambda: vaults.create_vault(42))  # type: ignore[arg-type]
    refused(vaults, ConflictError, lambda: vaults.create_vault("personal"))
    refused(vaults, ConflictError, lambda: vaults.create_vault("Work notes_2.0-x "))
    assert len(vaults.vaults()) == 4
    assert vaults.resolve_vault(made.id[:6]).name == "Work notes_2.0-x"
    with pytest.raises(NotFoundError):
        vaults.resolve_vault("no such vault")


def test_vaults_and_their_assets_survive_reopening(store_path: Path) -> None:
    with opened(store_path) as v:
        work = v.create_vault("work")
        saved = v.put("work", "memory", title="Kept", body="across reopen")
    with opened(store_path) as v:
        assert [s.id for s in v.list_assets("work")] == [saved.asset_id]
        assert v.resolve_vault("work").vault_id == work.id
        view = v.get(saved.asset_id)
        assert view.content is not None and view.content.body == "across reopen"


# -- the four kinds -------------------------------------------------------------------------------


def test_memory_put_get_update_round_trip(vaults: Vaults) -> None:
    saved = vaults.put(
        None, "memory", title=" Deploy ", body="step one\n", tags=["ops", "ops", "b"], source="x"
    )
    view = vaults.get(saved.asset_id)
    assert view.content is not None
    assert (view.content.title, view.content.body) == ("Deploy", "step one\n")
    assert view.content.tags == ("b", "ops")
    assert (view.revision, view.heads, view.revisions) == (saved.revision, saved.heads, 1)
    assert view.author == vaults.identity.user_fingerprint
    updated = vaults.update(saved.asset_id, body="step two\n")
    view = vaults.get(saved.asset_id)
    assert view.content is not None
    # Fields not named keep their values.
    assert (view.content.title, view.content.body, view.content.source) == (
        "Deploy",
        "step two\n",
        "x",
    )
    assert view.heads == (updated.revision,) and view.revisions == 2
    assert vaults.get(saved.asset_id, revision=saved.revision).content.body == "step one\n"  # type: ignore[union-attr]
    refused(vaults, UsageError, lambda: vaults.put(None, "memory", title="   "))
    refused(vaults, UsageError, lambda: vaults.put(None, "note", title="x"))
    refused(vaults, UsageError, lambda: vaults.put(None, "memory", title="x", colour="red"))
    refused(vaults, UsageError, lambda: vaults.update(saved.asset_id, title=""))
    refused(vaults, UsageError, lambda: vaults.update(saved.asset_id, card_type="knowledge"))


def test_card_metadata_is_typed_and_validated_before_anything_is_written(vaults: Vaults) -> None:
    saved = vaults.put(
        None,
        "card",
        title="Tokio",
        card_type="knowledge",
        metadata={"topic": " async ", "confidence": 0.5, "references": ["a", "b"]},
    )
    view = vaults.get(saved.asset_id)
    assert view.content is not None and view.content.card_type == "knowledge"
    assert dict(view.content.metadata) == {
        "confidence": 0.5,
        "references": ("a", "b"),
        "topic": "async",
    }
    [summary] = vaults.list_assets(kind="card")
    assert summary.card_type == "knowledge"
    assert vaults.list_assets(card_type="knowledge")[0].id == saved.asset_id
    assert vaults.list_assets(card_type="persona") == []
    bad_metadata: list[dict[str, object]] = [
        {"colour": "red"},  # unknown field
        {"confidence": "very"},  # wrong type
        {"confidence": 2},  # out of bounds
        {"reviewed": "yesterday"},  # not a date
        {"references": "not a list"},
    ]
    for metadata in bad_metadata:
        refused(
            vaults,
            UsageError,
            lambda md=metadata: vaults.put(
                None, "card", title="Bad", card_type="knowledge", metadata=md
            ),
        )
        refused(vaults, UsageError, lambda md=metadata: vaults.update(saved.asset_id, metadata=md))
    refused(vaults, UsageError, lambda: vaults.put(None, "card", title="No type"))
    refused(vaults, UsageError, lambda: vaults.put(None, "card", title="x", card_type="nope"))
    refused(vaults, UsageError, lambda: vaults.put(None, "card", title="x", card_type="brain"))
    refused(
        vaults,
        UsageError,
        lambda: vaults.put(None, "memory", title="x", metadata={"topic": "t"}),
    )
    assert [s.id for s in vaults.list_assets()] == [saved.asset_id]
    assert vaults.get(saved.asset_id).revisions == 1
    vaults.update(saved.asset_id, metadata={"topic": "runtime"})
    view = vaults.get(saved.asset_id)
    assert view.content is not None and dict(view.content.metadata) == {"topic": "runtime"}


def test_user_defined_card_types_validate_their_own_fields(vaults: Vaults) -> None:
    vaults.define_card_type(None, "recipe", [{"name": "servings", "type": "integer"}])
    refused(
        vaults,
        ConflictError,
        lambda: vaults.define_card_type(None, "recipe", [{"name": "x", "type": "string"}]),
    )
    assert "recipe" in {t.name for t in vaults.card_types()}
    assert "recipe" not in {t.name for t in vaults.card_types("device")}
    saved = vaults.put(None, "card", title="Soup", card_type="recipe", metadata={"servings": 4})
    assert dict(vaults.get(saved.asset_id).content.metadata) == {"servings": 4}  # type: ignore[union-attr]
    refused(
        vaults,
        UsageError,
        lambda: vaults.put(None, "card", title="x", card_type="recipe", metadata={"servings": "4"}),
    )
    refused(
        vaults,
        UsageError,
        lambda: vaults.put("device", "card", title="x", card_type="recipe"),
    )


def test_file_payload_round_trips_and_the_size_limit_is_enforced(store_path: Path) -> None:
    data = bytes(range(256)) * 3
    with opened(store_path, max_file_bytes=1024) as vaults:
        saved = vaults.put(
            None,
            "file",
            title="Blob",
            file=FilePayload(name="blob.bin", media_type="Application/Octet-Stream", data=data),
        )
        payload = vaults.file_payload(saved.asset_id)
        assert (payload.name, payload.media_type, payload.data) == (
            "blob.bin",
            "application/octet-stream",
            data,
        )
        view = vaults.get(saved.asset_id).to_dict()
        assert view["file"] == {
            "name": "blob.bin",
            "media_type": "application/octet-stream",
            "size": 768,
        }
        too_big = FilePayload(
            name="big.bin", media_type="application/octet-stream", data=b"x" * 1025
        )
        error = refused(
            vaults, UsageError, lambda: vaults.put(None, "file", title="Big", file=too_big)
        )
        assert error.message == "the file is 1.1 KiB; the limit is 1 KiB (files.max_bytes)"
        refused(vaults, UsageError, lambda: vaults.update(saved.asset_id, file=too_big))
        refused(vaults, UsageError, lambda: vaults.put(None, "file", title="No payload"))
        refused(
            vaults,
            UsageError,
            lambda: vaults.put(
                None, "file", title="x", file=FilePayload("../x", "text/plain", b"")
            ),
        )
        memory = vaults.put(None, "memory", title="Text")
        refused(vaults, UsageError, lambda: vaults.file_payload(memory.asset_id))
        # The payload stays out of the diff; its digest stands in for it.
        replaced = FilePayload(name="blob.bin", media_type="application/octet-stream", data=b"new")
        vaults.update(saved.asset_id, file=replaced)
        diff = vaults.diff(saved.asset_id)
        assert "768 bytes" in diff and "3 bytes" in diff
        assert "new" not in diff.replace("(live)", "")
    with opened(store_path) as vaults:
        assert vaults.file_payload(saved.asset_id).data == b"new"


def test_a_credential_value_never_appears_in_any_view(vaults: Vaults, store_path: Path) -> None:
    saved = vaults.put(None, "credential", title="GitHub token", body=SECRET, tags=["gh"])
    vaults.update(saved.asset_id, title="GitHub token (rotated)", body=SECRET + "-2")
    view = vaults.get(saved.asset_id)
    assert view.secret_hidden
    assert view.content is not None and view.content.body == ""
    assert view.to_dict()["body"] is None
    old = vaults.get(saved.asset_id, revision=saved.revision)
    assert old.content is not None and old.content.body == ""
    history = vaults.history(saved.asset_id)
    assert [e.title for e in history] == ["GitHub token (rotated)", "GitHub token"]
    diff = vaults.diff(saved.asset_id)
    assert "(credential value hidden)" in diff and "+title: GitHub token (rotated)" in diff
    every_view = [
        view,
        old,
        history,
        diff,
        vaults.list_assets(),
        vaults.list_assets(kind="credential", elevated=True),
        vaults.graph(elevated=True),
    ]
    assert "SECRET-SENTINEL" not in dumped(every_view)
    assert "SECRET-SENTINEL" not in repr(every_view)
    # An edit that does not name the body keeps the stored value.
    vaults.update(saved.asset_id, tags=["gh", "ci"])
    assert "SECRET-SENTINEL" not in vaults.diff(saved.asset_id)
    refused(vaults, UsageError, lambda: vaults.put(None, "credential", title="Empty", body=" "))
    vaults.store.close()
    files = list(store_path.parent.glob(store_path.name + "*"))  # with any -wal beside it
    assert store_path in files
    for file in files:
        assert b"SECRET-SENTINEL" not in file.read_bytes()


# -- private content ------------------------------------------------------------------------------


def test_private_content_needs_elevation_to_read_list_or_diff(vaults: Vaults) -> None:
    saved = vaults.put(None, "memory", title=PRIVATE_TITLE, body=PRIVATE_BODY, private=True)
    public = vaults.put(None, "memory", title="Public")
    ref = saved.asset_id
    for call in (
        lambda: vaults.get(ref),
        lambda: vaults.get(ref, revision=saved.revision),
        lambda: vaults.history(ref),
        lambda: vaults.diff(ref),
        lambda: vaults.update(ref, body="x"),
        lambda: vaults.tombstone(ref),
    ):
        error = refused(vaults, DeniedError, call)
        assert "SENTINEL" not in error.message and "sentinel" not in error.message
    assert [s.id for s in vaults.list_assets()] == [public.asset_id]
    assert "sentinel" not in dumped(vaults.list_assets()).lower()
    elevated = vaults.list_assets(elevated=True)
    assert {s.id for s in elevated} == {ref, public.asset_id}
    assert next(s for s in elevated if s.id == ref).private
    view = vaults.get(ref, elevated=True)
    assert view.content is not None and view.content.body == PRIVATE_BODY
    assert vaults.history(ref, elevated=True)[0].title == PRIVATE_TITLE
    assert PRIVATE_BODY in vaults.diff(ref, elevated=True)


def test_a_once_private_revision_stays_hidden_after_the_asset_is_made_public(
    vaults: Vaults,
) -> None:
    saved = vaults.put(None, "memory", title=PRIVATE_TITLE, body=PRIVATE_BODY, private=True)
    public = vaults.update(
        saved.asset_id, elevated=True, private=False, title="Now public", body="plain"
    )
    assert vaults.get(saved.asset_id).revision == public.revision
    refused(vaults, DeniedError, lambda: vaults.get(saved.asset_id, revision=saved.revision))
    refused(vaults, DeniedError, lambda: vaults.diff(saved.asset_id))
    history = vaults.history(saved.asset_id)
    assert [e.title for e in history] == ["Now public", ""]
    assert "SENTINEL" not in dumped(history) and "sentinel" not in dumped(history)
    assert PRIVATE_BODY in vaults.diff(saved.asset_id, elevated=True)


# -- edits, conflicts and resolution --------------------------------------------------------------


def test_a_stale_edit_is_refused_and_a_fork_keeps_both_versions(vaults: Vaults) -> None:
    first = vaults.put(None, "memory", title="Plan", body="v1")
    second = vaults.update(first.asset_id, base=first.revision, body="v2")
    error = refused(
        vaults, ConflictError, lambda: vaults.update(first.asset_id, base=first.revision, body="x")
    )
    assert "changed since" in error.message
    refused(vaults, ConflictError, lambda: vaults.tombstone(first.asset_id, base=first.revision))
    forked = vaults.update(first.asset_id, base=short(first.revision), fork=True, body="v2b")
    assert set(forked.heads) == {second.revision, forked.revision}
    view = vaults.get(first.asset_id)
    assert view.conflicted and view.revision == forked.revision
    # The fork starts from its base, not from the other branch.
    assert view.content is not None and (view.content.title, view.content.body) == ("Plan", "v2b")
    [summary] = vaults.conflicts()
    assert summary.id == first.asset_id and summary.conflicted
    # Ordinary edits and deletion wait for a resolution.
    refused(vaults, ConflictError, lambda: vaults.update(first.asset_id, body="x"))
    refused(vaults, ConflictError, lambda: vaults.update(first.asset_id, base=second.revision))
    refused(vaults, ConflictError, lambda: vaults.tombstone(first.asset_id))


def test_resolve_must_name_exactly_the_current_heads(vaults: Vaults) -> None:
    first = vaults.put(None, "memory", title="Plan", body="v1")
    refused(vaults, UsageError, lambda: vaults.resolve(first.asset_id))
    second = vaults.update(first.asset_id, body="v2")
    fork = vaults.update(first.asset_id, base=first.revision, fork=True, body="v2b")
    ref = first.asset_id
    for parents in (
        [second.revision],  # one head missing
        [second.revision, fork.revision, first.revision],  # a non-head named
        [second.revision, "sha256:" + "ab" * 32],  # unknown revision
        [second.revision, "abcdef0123"],  # unknown prefix
        [second.revision, "ab"],  # too short to be a prefix
    ):
        error = refused(vaults, UsageError, lambda p=parents: vaults.resolve(ref, parents=p))
        assert "abcdef" not in error.message
    resolved = vaults.resolve(
        ref, parents=[short(fork.revision, 10), second.revision], body="merged"
    )
    assert resolved.heads == (resolved.revision,)
    view = vaults.get(ref)
    assert not view.conflicted and view.content is not None and view.content.body == "merged"
    [entry] = [e for e in vaults.history(ref) if e.revision == resolved.revision]
    assert set(entry.parents) == {second.revision, fork.revision}
    assert vaults.conflicts() == []
    refused(vaults, UsageError, lambda: vaults.resolve(ref, parents=[resolved.revision]))


def test_resolving_a_conflict_by_deleting_it(vaults: Vaults) -> None:
    first = vaults.put(None, "memory", title="Plan", body="v1")
    second = vaults.update(first.asset_id, body="v2")
    fork = vaults.update(first.asset_id, base=first.revision, fork=True, body="v2b")
    gone = vaults.resolve(first.asset_id, delete=True)
    assert gone.heads == (gone.revision,)
    with pytest.raises(NotFoundError):
        vaults.get(first.asset_id)
    [entry] = vaults.history(first.asset_id)[:1]
    assert entry.tombstone and set(entry.parents) == {second.revision, fork.revision}
    assert vaults.list_assets() == []


def test_edits_within_one_millisecond_keep_each_others_changes(
    vaults: Vaults, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Clocks are coarse and disagree between devices: history order must come from the DAG.
    monkeypatch.setattr(revision_module, "now", lambda: "2099-01-01T00:00:00.000Z")
    assets = []
    for n in range(12):
        saved = vaults.put(None, "memory", title=f"t{n}", body="b0")
        vaults.update(saved.asset_id, body="b1")
        vaults.update(saved.asset_id, title=f"t{n}'")
        vaults.tombstone(saved.asset_id)
        vaults.update(saved.asset_id, tags=["back"])
        assets.append(saved.asset_id)
    for n, ref in enumerate(assets):
        view = vaults.get(ref)
        assert view.content is not None
        assert (view.content.title, view.content.body, view.content.tags) == (
            f"t{n}'",
            "b1",
            ("back",),
        )
        history = vaults.history(ref)
        assert history[0].head and history[-1].parents == ()
        position = {entry.revision: i for i, entry in enumerate(history)}
        for i, entry in enumerate(history):
            assert all(position[parent] > i for parent in entry.parents)
    report = vaults.verification()
    assert (report.problems, report.revisions) == ((), 12 * 5 + 1)


# -- tombstones -----------------------------------------------------------------------------------


def test_a_tombstone_hides_the_asset_but_keeps_its_history_and_an_update_restores_it(
    vaults: Vaults,
) -> None:
    saved = vaults.put(None, "memory", title="Old", body="kept\n", tags=["t"])
    vaults.update(saved.asset_id, body="kept too\n")
    gone = vaults.tombstone(saved.asset_id)
    assert vaults.list_assets() == [] and vaults.list_assets(tag="t") == []
    error = refused(vaults, NotFoundError, lambda: vaults.get(saved.asset_id))
    assert "history" in error.message
    refused(vaults, UsageError, lambda: vaults.tombstone(saved.asset_id))
    history = vaults.history(saved.asset_id)
    assert [(e.tombstone, e.title, e.head) for e in history] == [
        (True, "", True),
        (False, "Old", False),
        (False, "Old", False),
    ]
    assert vaults.diff(saved.asset_id) == (
        f"--- {short(history[1].revision)}\n"
        f"+++ {short(gone.revision)} (live)\n"
        "@@ -1,4 +0,0 @@\n"
        "-title: Old\n"
        "-tags: t\n"
        "-\n"
        "-kept too\n"
    )
    assert vaults.get(saved.asset_id, revision=history[1].revision).content.body == "kept too\n"  # type: ignore[union-attr]
    assert vaults.get(saved.asset_id, revision=gone.revision).content is None
    restored = vaults.update(saved.asset_id, title="Back")
    view = vaults.get(saved.asset_id)
    assert view.content is not None
    # The restored version starts from the last live one.
    assert (view.content.title, view.content.body, view.content.tags) == (
        "Back",
        "kept too\n",
        ("t",),
    )
    assert view.heads == (restored.revision,) and view.revisions == 4
    assert [s.id for s in vaults.list_assets()] == [saved.asset_id]


# -- short ids ------------------------------------------------------------------------------------


def test_short_ids_resolve_from_four_characters_and_ambiguity_is_refused(
    vaults: Vaults, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = iter(f"abcd{n:028x}" for n in itertools.count(1))
    monkeypatch.setattr(edit_module, "new_id", lambda: next(ids))
    first = vaults.put(None, "memory", title="First")
    second = vaults.put(None, "memory", title="Second")
    assert first.asset_id == "abcd" + "0" * 27 + "1"
    summaries = {s.id: s.short_id for s in vaults.list_assets()}
    assert summaries[first.asset_id] == first.asset_id  # unique only at the last character
    assert all(vaults.short_id(asset) == short for asset, short in summaries.items())
    error = refused(vaults, UsageError, lambda: vaults.get("abcd"))
    assert "2 ids" in error.message
    refused(vaults, UsageError, lambda: vaults.get("abc"))
    refused(vaults, UsageError, lambda: vaults.get("not hex!"))
    refused(vaults, NotFoundError, lambda: vaults.get("ffff"))
    refused(vaults, NotFoundError, lambda: vaults.get("f" * 32))
    assert vaults.get(first.asset_id.upper()).asset_id == first.asset_id
    assert vaults.get(second.asset_id[:31] + "2").asset_id == second.asset_id
    monkeypatch.undo()
    other = vaults.put(None, "memory", title="Other")
    assert vaults.get(other.asset_id[:4]).asset_id == other.asset_id
    assert vaults.list_assets()[0].short_id == other.asset_id[:8]
    # Revisions resolve by prefix too, with or without the algorithm tag.
    edited = vaults.update(other.asset_id, body="2")
    for ref in (short(edited.revision, 4), "sha256:" + short(edited.revision, 6), edited.revision):
        assert vaults.get(other.asset_id, revision=ref).revision == edited.revision


# -- history and diff -----------------------------------------------------------------------------


def test_history_names_authors_and_titles_newest_first(vaults: Vaults) -> None:
    first = vaults.put(None, "memory", title="One", body="a")
    second = vaults.update(first.asset_id, title="Two")
    third = vaults.update(first.asset_id, title="Three")
    history = vaults.history(first.asset_id)
    assert [e.revision for e in history] == [third.revision, second.revision, first.revision]
    assert [e.title for e in history] == ["Three", "Two", "One"]
    assert [e.parents for e in history] == [(second.revision,), (first.revision,), ()]
    assert [e.head for e in history] == [True, False, False]
    identity = vaults.identity
    for entry in history:
        assert entry.author_user == identity.user_fingerprint
        assert entry.author_device == identity.device_fingerprint
        assert entry.author_user.startswith("sha256:") and len(entry.author_user) == 71
    doc = history[0].to_dict()
    assert doc["author"] == {
        "user": identity.user_fingerprint,
        "device": identity.device_fingerprint,
    }
    refused(vaults, NotFoundError, lambda: vaults.history("0123456789abcdef0123456789abcdef"))


def test_diff_of_a_small_text_edit_is_exact(vaults: Vaults) -> None:
    first = vaults.put(None, "memory", title="Deploy", body="step one\nstep two\nstep three\n")
    second = vaults.update(first.asset_id, body="step one\nstep 2\nstep three\n")
    expected = "@@ -1,5 +1,5 @@\n title: Deploy\n \n step one\n-step two\n+step 2\n step three\n"
    assert vaults.diff(first.asset_id) == (
        f"--- {short(first.revision)}\n+++ {short(second.revision)} (live)\n" + expected
    )
    assert vaults.diff(first.asset_id, first.revision, second.revision) == (
        f"--- {short(first.revision)}\n+++ {short(second.revision)}\n" + expected
    )
    assert vaults.diff(first.asset_id, new=first.revision) == (
        f"--- (nothing)\n+++ {short(first.revision)}\n"
        "@@ -0,0 +1,5 @@\n"
        "+title: Deploy\n"
        "+\n"
        "+step one\n"
        "+step two\n"
        "+step three\n"
    )
    assert vaults.diff(first.asset_id, second.revision, second.revision) == ""


def test_diff_of_a_metadata_change_is_exact(vaults: Vaults) -> None:
    first = vaults.put(
        None, "card", title="Tokio", card_type="knowledge", metadata={"topic": "async"}
    )
    second = vaults.update(
        first.asset_id, metadata={"topic": "runtime", "confidence": 0.9, "references": ["r1"]}
    )
    assert vaults.diff(first.asset_id) == (
        f"--- {short(first.revision)}\n"
        f"+++ {short(second.revision)} (live)\n"
        "@@ -1,3 +1,5 @@\n"
        " title: Tokio\n"
        " card type: knowledge\n"
        '-meta.topic: "async"\n'
        "+meta.confidence: 0.9\n"
        '+meta.references: ["r1"]\n'
        '+meta.topic: "runtime"\n'
    )
