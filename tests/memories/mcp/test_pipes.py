"""stdin and stdout as event-loop pipes: lines as the SDK reads them, and the wire kept clean."""

from __future__ import annotations

import asyncio
import json
import os
import pty
import socket
import subprocess
import tty
from pathlib import Path
from typing import Any

import pytest
from tests.support import script

from memories.mcp.pipes import LineReader

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
TOOLS_LIST = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}


def _lines(data: bytes, limit: int) -> list[str]:
    async def read() -> list[str]:
        stream = asyncio.StreamReader(limit=limit)
        stream.feed_data(data)
        stream.feed_eof()
        return [line async for line in LineReader(stream)]

    return asyncio.run(read())


def test_lines_are_read_whole_with_a_last_line_lacking_its_newline() -> None:
    assert _lines(b'{"a":1}\n{"b":2}\n{"c"', limit=64) == ['{"a":1}\n', '{"b":2}\n', '{"c"']


def test_undecodable_bytes_are_replaced_not_fatal() -> None:
    assert _lines(b"\xff{}\n", limit=64) == ["\ufffd{}\n"]


def test_an_over_long_line_becomes_one_unparseable_line_and_reading_goes_on() -> None:
    lines = _lines(b"x" * 1000 + b"\n" + b'{"ok":1}\n', limit=64)
    assert len(lines) == 2
    assert lines[1] == '{"ok":1}\n'
    try:
        json.loads(lines[0])
    except ValueError:
        pass
    else:
        raise AssertionError("an over-long line must not parse as a message")


def _server_env(tmp_path: Path) -> dict[str, str]:
    # initialize and tools/list never reach the daemon, so any token will do here.
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORIES_")}
    return {
        **env,
        "MEMORIES_HOME": str(tmp_path / "data"),
        "MEMORIES_MCP_TOKEN": "mem_grant_" + "x" * 43,
    }


def _spawn(
    tmp_path: Path,
    *,
    stdin: Any = subprocess.PIPE,
    stdout: Any = subprocess.PIPE,
    stderr: Any = subprocess.DEVNULL,
) -> subprocess.Popen[bytes]:
    """``memories mcp`` with the given standard streams (pipes unless told otherwise)."""
    return subprocess.Popen(
        [script("memories"), "mcp"],
        stdin=stdin,
        stdout=stdout,
        stderr=stderr,
        env=_server_env(tmp_path),
    )


def _answers(stdout: bytes) -> dict[Any, Any]:
    # Every line on stdout must be a JSON-RPC message: nothing else may reach the wire.
    messages = [json.loads(line) for line in stdout.decode("utf-8").splitlines()]
    assert all(m.get("jsonrpc") == "2.0" for m in messages)
    return {m.get("id"): m for m in messages}


def test_the_server_answers_over_pipes_after_an_over_long_line(tmp_path: Path) -> None:
    proc = _spawn(tmp_path)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        for message in (INITIALIZE, INITIALIZED):
            proc.stdin.write(json.dumps(message).encode() + b"\n")
        proc.stdin.write(b"[" * (17 * 1024 * 1024) + b"\n")  # past the 16 MiB line limit
        proc.stdin.write(json.dumps(TOOLS_LIST).encode() + b"\n")
        proc.stdin.flush()
        # stdin stays open until the answers are in, as a client keeps it.
        received = [proc.stdout.readline() for _ in range(2)]
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
    answers = _answers(b"".join(received))
    assert answers[1]["result"]["serverInfo"]["name"] == "memories"
    assert set(answers) == {1, 2}  # the over-long line was dropped, and serving went on
    assert "memory_search" in {tool["name"] for tool in answers[2]["result"]["tools"]}


def test_a_terminal_is_served_by_the_sdk_transport_and_left_blocking(tmp_path: Path) -> None:
    # A terminal is shared with the shell: the server must not put it in non-blocking mode.
    controller, terminal = pty.openpty()
    tty.setraw(terminal)
    proc = _spawn(tmp_path, stdin=terminal)
    assert proc.stdout is not None
    try:
        for message in (INITIALIZE, INITIALIZED, TOOLS_LIST):
            os.write(controller, json.dumps(message).encode() + b"\n")
        received = [proc.stdout.readline() for _ in range(2)]
        assert os.get_blocking(terminal)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        os.close(controller)
        os.close(terminal)
    answers = _answers(b"".join(received))
    assert "memory_write" in {tool["name"] for tool in answers[2]["result"]["tools"]}


def test_a_client_that_stops_reading_ends_the_session_quietly(tmp_path: Path) -> None:
    proc = _spawn(tmp_path, stderr=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # gone before the first answer: every write meets a broken pipe
    for message in (INITIALIZE, INITIALIZED, TOOLS_LIST, {**TOOLS_LIST, "id": 3}):
        proc.stdin.write(json.dumps(message).encode() + b"\n")
    proc.stdin.close()
    assert proc.wait(timeout=60) == 0
    assert proc.stderr.read() == b""
    proc.stderr.close()


@pytest.mark.parametrize("shared", [True, False], ids=["one socket", "a socket each"])
def test_sockets_for_stdin_and_stdout_are_served(tmp_path: Path, shared: bool) -> None:
    # Node-based clients (libuv) give each stdio stream a socket of its own; inetd-style
    # launchers hand the server one socket for both directions.
    ours_in, theirs_in = socket.socketpair()
    ours_out, theirs_out = (ours_in, theirs_in) if shared else socket.socketpair()
    proc = _spawn(tmp_path, stdin=theirs_in, stdout=theirs_out)
    for theirs in {theirs_in, theirs_out}:
        theirs.close()
    ours_out.settimeout(30)
    received = b""
    try:
        # One request at a time: each arrives while the server is already serving.
        for message, answers_so_far in ((INITIALIZE, 1), (INITIALIZED, 1), (TOOLS_LIST, 2)):
            ours_in.sendall(json.dumps(message).encode() + b"\n")
            while received.count(b"\n") < answers_so_far:
                chunk = ours_out.recv(65536)
                assert chunk, "the server closed the socket before answering"
                received += chunk
    finally:
        for ours in {ours_in, ours_out}:
            ours.close()
        proc.wait(timeout=30)
    answers = _answers(received)
    assert "memory_read" in {tool["name"] for tool in answers[2]["result"]["tools"]}
