"""docs/requests.md is generated from the request models and must not go stale."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from memories.service.requests import REQUEST_TYPES, op_name

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "scripts" / "gen_request_docs.py"
DOC = ROOT / "docs" / "requests.md"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        check=False,
    )


def test_docs_requests_md_is_up_to_date() -> None:
    result = run("--check")
    assert result.returncode == 0, result.stderr


def test_the_document_covers_every_op_and_its_fields() -> None:
    text = DOC.read_text(encoding="utf-8")
    for model in REQUEST_TYPES:
        assert f"\n### {op_name(model)}\n" in text
        for name in model.model_fields:
            if name != "op":
                assert f"| `{name}` |" in text


def test_check_fails_on_a_stale_or_missing_file(tmp_path: Path) -> None:
    target = tmp_path / "requests.md"
    missing = run("--check", "--output", str(target))
    assert missing.returncode == 1
    assert "out of date" in missing.stderr
    assert run("--output", str(target)).returncode == 0
    assert target.read_text(encoding="utf-8") == DOC.read_text(encoding="utf-8")
    assert run("--check", "--output", str(target)).returncode == 0
    target.write_text(target.read_text(encoding="utf-8") + "edited\n", encoding="utf-8")
    assert run("--check", "--output", str(target)).returncode == 1
