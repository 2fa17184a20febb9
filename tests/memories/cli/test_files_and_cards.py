"""Files round-trip byte for byte; cards carry typed metadata; links form a graph."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.memories.cli.conftest import Memories
from tests.support import script


def test_file_put_and_get_round_trip_byte_identical(store: Memories, tmp_path: Path) -> None:
    payload = bytes(range(256)) * 40 + b"\x00\xff tail"
    source = tmp_path / "blob.bin"
    source.write_bytes(payload)
    saved = store.ok("file", "put", str(source), "--tag", "bin")
    view = store.ok("show", saved["short_id"])
    assert view["kind"] == "file" and view["title"] == "blob.bin"
    assert view["file"] == {
        "name": "blob.bin",
        "media_type": "application/octet-stream",
        "size": len(payload),
    }

    out = tmp_path / "out"
    out.mkdir()
    got = store.ok("file", "get", saved["short_id"], "-o", str(out / "copy.bin"))
    assert got["size"] == len(payload)
    assert (out / "copy.bin").read_bytes() == payload
    assert (out / "copy.bin").stat().st_mode & 0o777 == 0o600

    # The stored name into a folder, refusing to overwrite without --force.
    assert store.ok("file", "get", saved["short_id"], "-o", str(out))["path"] == str(
        out / "blob.bin"
    )
    (out / "blob.bin").write_bytes(b"keep me")
    refused = store.fails(1, "file", "get", saved["short_id"], "-o", str(out / "blob.bin"))
    assert refused["code"] == "conflict" and "--force" in refused["message"]
    assert (out / "blob.bin").read_bytes() == b"keep me"
    store.ok("file", "get", saved["short_id"], "-o", str(out / "blob.bin"), "--force")
    assert (out / "blob.bin").read_bytes() == payload

    # -o - writes the raw bytes to standard output.
    raw = subprocess.run(
        [script("memories"), "file", "get", saved["short_id"], "-o", "-"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        env=os.environ.copy(),
        timeout=60,
        check=False,
    )
    assert raw.returncode == 0, raw.stderr
    assert raw.stdout == payload
    assert not any(name.endswith(".tmp") for name in os.listdir(out))

    note = store.ok("put", "just text")
    assert store.fails(2, "file", "get", note["short_id"], "-o", str(tmp_path / "x"))
    assert not (tmp_path / "x").exists()
    missing = store("file", "put", str(tmp_path / "missing.txt"))
    assert missing.code == 2
    assert "Traceback" not in missing.stderr


def test_cards_types_definitions_metadata_links_and_graph(store: Memories) -> None:
    types = {t["name"]: t for t in store.ok("card", "types")["card_types"]}
    assert {"knowledge", "brain", "persona", "protected_card"} <= set(types)
    assert "knowledge" in store("card", "types").stdout

    fact = store.ok(
        "card",
        "put",
        "Postgres 16 upgrade",
        "--type",
        "knowledge",
        "--meta",
        "topic=databases",
        "--meta",
        "confidence=0.9",
        "--meta",
        "references=https://a.example,https://b.example",
        "--body",
        "Use pg_upgrade --link.",
    )
    view = store.ok("show", fact["short_id"])
    assert view["card_type"] == "knowledge"
    assert view["metadata"] == {
        "confidence": 0.9,
        "references": ["https://a.example", "https://b.example"],
        "topic": "databases",
    }
    persona = store.ok(
        "put", "Terse reviewer", "--card-type", "persona", "--meta", "name=rev", "--tag", "p"
    )
    note = store.ok("put", "Maintenance window is Sunday", "--card-type", "knowledge")

    # --meta on edit changes one field and keeps the others.
    store.ok("edit", fact["short_id"], "--meta", "confidence=1")
    assert store.ok("show", fact["short_id"])["metadata"]["topic"] == "databases"
    assert store.ok("show", fact["short_id"])["metadata"]["confidence"] == 1

    linked = store.ok("link", fact["short_id"], persona["short_id"], "--relation", "reviewed-by")
    assert linked == {
        "source": fact["asset"],
        "target": persona["asset"],
        "relation": "reviewed-by",
    }
    store.ok("link", fact["short_id"], note["short_id"])

    graph = store.ok("graph")
    assert {n["id"] for n in graph["nodes"]} >= {fact["asset"], persona["asset"], note["asset"]}
    assert {(e["source"], e["target"], e["relation"]) for e in graph["edges"]} == {
        (fact["asset"], persona["asset"], "reviewed-by"),
        (fact["asset"], note["asset"], "related"),
    }
    dot = store("graph", "--dot")
    assert dot.code == 0
    assert dot.stdout.startswith('digraph "memories" {')
    assert f'"{fact["asset"]}" -> "{persona["asset"]}" [label="reviewed-by"];' in dot.stdout
    tree = store("graph")
    assert tree.code == 0
    assert "Postgres 16 upgrade" in tree.stdout and "reviewed-by: Terse reviewer" in tree.stdout

    assert store.ok("unlink", fact["short_id"], note["short_id"]) == {"removed": 1}
    assert len(store.ok("graph")["edges"]) == 1
    assert [s["title"] for s in store.ok("ls", "--card-type", "persona")["summaries"]] == [
        "Terse reviewer"
    ]

    defined = store.ok(
        "card",
        "define",
        "recipe",
        "--field",
        "cuisine:string",
        "--field",
        "minutes:integer:required",
        "--description",
        "Things to cook",
    )
    assert defined["name"] == "recipe"
    assert {"name": "minutes", "type": "integer", "required": True} in defined["fields"]
    card = store.ok("card", "put", "Dal", "--type", "recipe", "--meta", "minutes=40")
    assert store.ok("show", card["short_id"])["metadata"] == {"minutes": 40}

    bad_value = store.fails(2, "card", "put", "Soup", "--type", "recipe", "--meta", "minutes=x")
    assert "minutes" in bad_value["message"] and "whole number" in bad_value["message"]
    no_equals = store.fails(2, "card", "put", "Soup", "--type", "recipe", "--meta", "minutes")
    assert "key=value" in no_equals["message"]
    unknown = store.fails(2, "card", "put", "Soup", "--type", "recipe", "--meta", "spice=hot")
    assert "spice" in unknown["message"]
    missing = store.fails(2, "card", "put", "Soup", "--type", "recipe")
    assert "minutes" in missing["message"]
    assert store.fails(2, "put", "plain", "--meta", "a=b")["code"] == "invalid_input"
    assert store.fails(2, "card", "define", "bad", "--field", "oops")["code"] == "invalid_input"
    assert [s["title"] for s in store.ok("ls", "--card-type", "recipe")["summaries"]] == ["Dal"]
