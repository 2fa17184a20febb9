"""Bulk import: the import_batch request, the JSONL and Markdown readers, and `memories import`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from memories.cli.import_files import Problem, Read, read_jsonl, read_markdown, split_front_matter
from memories.service import Service
from tests.memories.cli.conftest import Memories
from tests.memories.service.support import call

CANARY = "zebracanary"


def imported(service: Service, items: list[dict[str, Any]], **fields: Any) -> dict[str, Any]:
    return call(service, {"op": "import_batch", "items": items, **fields})


def test_a_batch_is_one_commit_and_invalid_items_are_reported_by_position(
    service: Service,
) -> None:
    before = len(call(service, {"op": "audit_list", "limit": 1000})["entries"])
    result = imported(
        service,
        [
            {"title": "Deploy notes", "body": "Blue green deploys need the VPN.", "tags": ["ops"]},
            {"title": f"{CANARY}\nsecond line", "body": CANARY},
            {"title": "A card", "card_type": "no-such-type", "body": CANARY},
            {"title": "Protected", "card_type": "protected_card"},
            {"title": "Lunch", "body": "Noodles.", "source": "notes/lunch.md"},
        ],
    )
    assert result["imported"] == 2 and result["failed"] == 3
    assert [e["item"] for e in result["errors"]] == [1, 2, 3]
    assert CANARY not in json.dumps(result["errors"])
    assert len(result["saved"]) == 2
    entries = call(service, {"op": "audit_list", "limit": 1000})["entries"]
    assert len(entries) == before + 1
    assert entries[0]["details"]["op"] == "import" and entries[0]["details"]["count"] == 2
    found = call(service, {"op": "search", "query": "vpn deploys"})
    assert [h["summary"]["title"] for h in found["results"]] == ["Deploy notes"]
    assert found["results"][0]["summary"]["tags"] == ["ops"]


def test_a_dry_run_writes_nothing(service: Service) -> None:
    result = imported(service, [{"title": "Deploy notes", "body": "VPN"}], dry_run=True)
    assert result == {**result, "imported": 0, "valid": 1, "failed": 0, "dry_run": True}
    assert call(service, {"op": "search", "query": "vpn"})["results"] == []


def test_cards_import_with_their_metadata(service: Service) -> None:
    card = {
        "title": "Rust notes",
        "card_type": "knowledge",
        "body": "text",
        "metadata": {"topic": "ownership", "references": ["book"]},
    }
    bad = {**card, "metadata": {"topic": 3}}
    memory_with_metadata = {"title": "m", "metadata": {"topic": "x"}}
    result = imported(service, [card, bad, memory_with_metadata])
    assert result["imported"] == 1 and [e["item"] for e in result["errors"]] == [1, 2]
    found = call(service, {"op": "search", "query": "ownership"})["results"]
    assert [(h["summary"]["title"], h["summary"]["kind"]) for h in found] == [
        ("Rust notes", "card")
    ]


def test_jsonl_lines_are_read_with_reasons_that_never_quote_them(tmp_path: Path) -> None:
    path = tmp_path / "notes.jsonl"
    lines = [
        json.dumps({"title": "Good", "body": "fine", "tags": ["a"]}),
        "",
        f"{{not json {CANARY}",
        json.dumps([CANARY]),
        json.dumps({"title": "x", f"{CANARY}field": 1}),
        json.dumps({"body": CANARY}),
        json.dumps({"title": "T", "tags": CANARY}),
        json.dumps({"title": "Also good", "body": "中文也可以"}),
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    entries = list(read_jsonl(path))
    reads = [e for e in entries if isinstance(e, Read)]
    problems = [e for e in entries if isinstance(e, Problem)]
    assert [r.item.title for r in reads] == ["Good", "Also good"]
    assert [p.where for p in problems] == ["line 3", "line 4", "line 5", "line 6", "line 7"]
    assert "not JSON" in problems[0].error and "not a JSON object" in problems[1].error
    assert "unknown field" in problems[2].error and "title" in problems[3].error
    assert "tags" in problems[4].error
    assert all(CANARY not in p.error for p in problems if p.where != "line 5")


def test_front_matter_is_read_for_the_usual_note_layouts() -> None:
    front, body = split_front_matter(
        "---\ntitle: \"Quoted: title\"\ntags: [one, 'two']\naliases:\n  - x\n---\n\nBody [[Link]]\n"
    )
    assert front == {"title": "Quoted: title", "tags": ["one", "two"], "aliases": ["x"]}
    assert body == "Body [[Link]]\n"
    front, body = split_front_matter("---\ntags:\n- a\n- '#b'\n---\ntext")
    assert front == {"tags": ["a", "#b"]} and body == "text"
    assert split_front_matter("no front matter\n---\n") == ({}, "no front matter\n---\n")
    assert split_front_matter("---\nunclosed: yes\n") == ({}, "---\nunclosed: yes\n")


def test_markdown_folders_import_titles_tags_links_and_skip_hidden_folders(
    tmp_path: Path,
) -> None:
    (tmp_path / ".obsidian").mkdir()
    (tmp_path / ".obsidian" / "workspace.md").write_text("hidden", encoding="utf-8")
    (tmp_path / "projects").mkdir()
    (tmp_path / "projects" / "deploy.md").write_text(
        "---\ntitle: Deploy runbook\ntags: ops, #infra\n---\nSee [[VPN setup]] first.\n",
        encoding="utf-8",
    )
    (tmp_path / "VPN setup.md").write_text("WireGuard config lives in ops.\n", encoding="utf-8")
    (tmp_path / "broken.md").write_bytes(b"\xff\xfe not utf-8")
    (tmp_path / "notes.txt").write_text("not markdown", encoding="utf-8")
    entries = list(read_markdown(tmp_path))
    reads = {e.item.title: e.item for e in entries if isinstance(e, Read)}
    assert set(reads) == {"Deploy runbook", "VPN setup"}
    assert reads["Deploy runbook"].tags == ["ops", "infra"]
    assert reads["Deploy runbook"].body == "See [[VPN setup]] first.\n"
    assert reads["Deploy runbook"].source == "projects/deploy.md"
    assert [(e.where, e.error) for e in entries if isinstance(e, Problem)] == [
        ("broken.md", "not UTF-8")
    ]


def test_memories_import_from_the_cli(store: Memories, tmp_path: Path) -> None:
    path = tmp_path / "notes.jsonl"
    rows = [{"title": f"note {n}", "body": f"kestrel number {n}"} for n in range(1200)]
    path.write_text(
        "\n".join([*map(json.dumps, rows), f"{CANARY} broken"]) + "\n", encoding="utf-8"
    )
    dry = store("import", str(path), "--dry-run", "--json")
    assert dry.code == 1
    assert dry.json()["valid"] == 1200 and dry.json()["imported"] == 0
    result = store("import", str(path), "--json")
    assert result.code == 1, result.stderr
    summary = result.json()
    assert summary["imported"] == 1200 and summary["failed"] == 1
    assert summary["problems"] == [{"where": "line 1201", "error": summary["problems"][0]["error"]}]
    assert CANARY not in result.stdout + result.stderr
    assert len(store.ok("search", "kestrel", "--limit", "100")["results"]) == 100
    notes = tmp_path / "vault"
    notes.mkdir()
    (notes / "a.md").write_text("---\ntags: [x]\n---\nOwl facts.\n", encoding="utf-8")
    text = store("import", str(notes))
    assert text.code == 0, text.stderr
    assert "imported 1 memories, 0 left out" in text.stdout
    assert store.ok("search", "owl")["results"][0]["summary"]["title"] == "a"
    missing = store.fails(2, "import", str(tmp_path / "nope.jsonl"))
    assert missing["code"] == "invalid_input"
