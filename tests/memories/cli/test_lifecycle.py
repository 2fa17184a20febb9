"""The whole life of a memory through the real console script and an autostarted daemon."""

from __future__ import annotations

import json

from tests.memories.cli.conftest import FLOOR_KDF, PASSWORD, Memories


def test_life_cycle_from_init_to_lock_and_unlock(memories: Memories) -> None:
    init = memories("init", *FLOOR_KDF, "--user-name", "Ada", "--json")
    assert init.code == 0, init.stderr
    assert "started the memories daemon" in init.stderr
    created = init.json()
    assert created["store"].endswith("memories.db")
    assert any(v["personal"] for v in created["vaults"])
    assert PASSWORD not in init.stdout + init.stderr

    saved = memories.ok("put", "Staging is rebuilt every Sunday\nat 02:00 UTC.", "--tag", "ops")
    asset, short = saved["asset"], saved["short_id"]
    assert asset.startswith(short) and len(short) >= 8
    first_revision = saved["revision"]

    shown = memories.ok("show", short)
    assert shown["title"] == "Staging is rebuilt every Sunday"  # the first line
    assert shown["body"] == "Staging is rebuilt every Sunday\nat 02:00 UTC."
    assert shown["tags"] == ["ops"]

    edited = memories.ok("edit", short, "Staging is rebuilt every Saturday", "--tag", "infra")
    assert edited["asset"] == asset and edited["revision"] != first_revision
    again = memories.ok("show", short)
    assert again["body"] == "Staging is rebuilt every Saturday"
    assert again["tags"] == ["infra"]
    assert again["title"] == "Staging is rebuilt every Sunday"  # not touched by the edit

    history = memories.ok("history", short)
    assert [e["revision"] for e in history["entries"]] == [edited["revision"], first_revision]

    diff = memories.ok("diff", short)
    assert "-Staging is rebuilt every Sunday" in diff["diff"]
    assert "+Staging is rebuilt every Saturday" in diff["diff"]
    human_diff = memories("diff", short, first_revision.removeprefix("sha256:")[:12])
    assert human_diff.code == 0
    assert "+Staging is rebuilt every Saturday" in human_diff.stdout

    removed = memories.ok("rm", short)
    assert removed["asset"] == asset
    assert memories.fails(1, "show", short)["code"] == "not_found"
    assert memories.ok("ls")["summaries"] == []

    kept = memories.ok("put", "Still here after the lock", "--title", "keeper")
    assert memories.ok("lock") == {"locked": True}

    locked = memories("show", kept["short_id"])
    assert locked.code == 3
    assert "memories unlock" in locked.stderr
    assert "Traceback" not in locked.stderr
    assert memories.fails(3, "ls")["code"] == "locked"

    assert memories.ok("unlock")["unlocked"] is True
    listed = memories.ok("ls")
    assert [s["title"] for s in listed["summaries"]] == ["keeper"]

    table = memories("ls")
    assert table.code == 0
    assert "keeper" in table.stdout and kept["short_id"] in table.stdout


def test_human_output_standard_input_editor_and_vaults(store: Memories) -> None:
    assets_before = store.ok("status")["assets"]
    put = store("put", "# Release checklist\n\n- tag\n- publish", "--tag", "release")
    assert put.code == 0, put.stderr
    short = put.stdout.strip()
    assert len(short) >= 8 and all(c in "0123456789abcdef" for c in short)

    show = store("show", short)
    assert show.code == 0
    assert "Release checklist" in show.stdout  # the heading became the title
    assert "- publish" in show.stdout and "release" in show.stdout

    assert store("edit", short, "--title", "Release steps").code == 0
    history = store("history", short)
    assert history.code == 0
    assert "Release steps" in history.stdout and "Release checklist" in history.stdout

    status = store("status")
    assert status.code == 0
    assert "Ada" in status.stdout and "unlocked" in status.stdout
    doc = store.ok("status")
    assert doc["initialized"] and doc["unlocked"] and doc["assets"] == assets_before + 1

    piped = store.ok("put", "--title", "From a pipe", input="line one\nline two\n")
    assert store.ok("show", piped["short_id"])["body"] == "line one\nline two\n"

    # $EDITOR is run on a temporary file holding the current body.
    editor = "sed -i s/two/2/"
    edited = store("edit", piped["short_id"], "--json", env={"EDITOR": editor})
    assert edited.code == 0, edited.stderr
    assert store.ok("show", piped["short_id"])["body"] == "line one\nline 2\n"

    unchanged = store("edit", piped["short_id"], "--json", env={"EDITOR": "true"})
    assert unchanged.code == 0
    assert json.loads(unchanged.stdout)["changed"] is False
    assert len(store.ok("history", piped["short_id"])["entries"]) == 2

    # Without an editor and without a terminal the edit is refused; nothing is lost.
    no_editor = store("edit", piped["short_id"], env={"EDITOR": "", "VISUAL": ""}, input="")
    assert no_editor.code == 2
    assert "EDITOR" in no_editor.stderr
    assert store.ok("show", piped["short_id"])["body"] == "line one\nline 2\n"

    created = store.ok("vault", "create", "work")
    assert created["name"] == "work"
    names = {v["name"] for v in store.ok("vault", "list")["vaults"]}
    assert "work" in names
    store.ok("put", "work note", "--vault", "work")
    store.ok("put", "home note")
    assert [s["title"] for s in store.ok("ls", "--vault", "work")["summaries"]] == ["work note"]
    assert "work note" not in {s["title"] for s in store.ok("ls")["summaries"]}
    everywhere = {s["title"] for s in store.ok("ls", "--all-vaults")["summaries"]}
    assert {"work note", "home note", "Release steps", "From a pipe"} <= everywhere
    audit = store.ok("audit", "--limit", "5")
    assert 0 < len(audit["entries"]) <= 5
    assert "work note" not in json.dumps(audit)
