"""The MCP Inspector's CLI (the protocol's reference client, from npm) lists and calls the
tools of `memories mcp`. .ci/run installs it; on a laptop without it the test is skipped, in
CI (CI=true) its absence is a failure."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from tests.memories.mcp.conftest import Owner, server_env
from tests.support import script

from memories.mcp.server import TOOL_NAMES

INSPECTOR = shutil.which("mcp-inspector")

if INSPECTOR is None and os.environ.get("CI") != "true":
    pytest.skip("the MCP Inspector CLI (npm) is not installed", allow_module_level=True)


def inspect(token: str, tmp_path: Path, *args: str) -> tuple[int, Any, str]:
    assert INSPECTOR is not None, "mcp-inspector is not on PATH; .ci/run installs it"
    proc = subprocess.run(
        [
            INSPECTOR,
            "--cli",
            "--connect-timeout",
            "120000",
            "-e",
            f"MEMORIES_MCP_TOKEN={token}",
            script("memories"),
            "mcp",
            *args,
        ],
        capture_output=True,
        env=server_env(None, MCP_CATALOG_PATH=str(tmp_path / "catalog.json")),
        timeout=120,
        check=False,
    )
    stdout = proc.stdout.decode("utf-8")
    first = stdout[: stdout.rindex("}") + 1] if "}" in stdout else stdout
    try:
        doc = json.loads(first)
    except json.JSONDecodeError:
        doc = None
    return proc.returncode, doc, stdout + proc.stderr.decode("utf-8")


@pytest.mark.timeout(300)
def test_the_inspector_lists_and_calls_the_tools(owner: Owner, tmp_path: Path) -> None:
    note = owner.put("Deploy steps", "run make deploy")
    token = owner.grant("read")
    code, listed, output = inspect(token, tmp_path, "--method", "tools/list")
    assert code == 0, output
    assert {tool["name"] for tool in listed["tools"]} == set(TOOL_NAMES)

    code, called, output = inspect(
        token,
        tmp_path,
        "--method",
        "tools/call",
        "--tool-name",
        "memory_search",
        "--tool-arg",
        "query=deploy",
        "limit=5",
    )
    assert code == 0, output
    found = json.loads(called["content"][0]["text"])
    assert [item["id"] for item in found["items"]] == [note]

    code, refused, output = inspect(
        token,
        tmp_path,
        "--method",
        "tools/call",
        "--tool-name",
        "memory_write",
        "--tool-arg",
        "title=not allowed",
    )
    assert refused["isError"] is True, output
    assert refused["content"][0]["text"].startswith("denied:")
    assert token not in output
