"""run_bound in the service: the values reach only the child, started by the service itself
on the terminal the caller hands over; bindings live in the device-local state."""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from memories.errors import DeniedError, NotFoundError, UsageError
from memories.secrets.runner import StdioChannel
from memories.service import WS_REMOTE, Caller, Service, local_cli_caller
from tests.memories.service.support import call, sudo
from tests.memories.service.test_secrets import CANARY, MCP_ALL, audit, protected

# The child reports, without printing the value, whether it has it and where.
CHILD = (
    "import hashlib, json, os, sys\n"
    "value = os.environ.get('GH_TOKEN', '').encode()\n"
    "environ = open('/proc/self/environ', 'rb').read().split(b'\\0')\n"
    "cmdline = open('/proc/self/cmdline', 'rb').read()\n"
    "print(json.dumps({'digest': hashlib.sha256(value).hexdigest(),\n"
    "    'in_environ': b'GH_TOKEN=' + value in environ, 'in_argv': value in cmdline,\n"
    "    'ppid': os.getppid(), 'home': os.environ.get('HOME'), 'cwd': os.getcwd(),\n"
    "    'stdin': sys.stdin.read()}))\n"
    "sys.exit(int(sys.argv[1]) if len(sys.argv) > 1 else 0)\n"
)


@pytest.fixture
def me() -> Caller:
    """The caller this test process is: the channel's owner must be in its namespace."""
    return local_cli_caller(os.getpid())


@pytest.fixture
def elevated(service: Service, me: Caller) -> Service:
    sudo(service, me)
    sudo(service)  # the default caller writes the protected cards
    return service


def run_bound(
    service: Service,
    caller: Caller,
    *,
    env: dict[str, str] | None,
    argv: list[str] | None = None,
    stdin: bytes = b"",
    cwd: Path | None = None,
) -> tuple[dict[str, Any], str]:
    """Run the child through ``run_bound`` on pipes; returns the response and its stdout."""
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    os.write(in_w, stdin)
    os.close(in_w)
    try:
        with StdioChannel(stdio=(in_r, out_w, 2)) as channel:
            request: dict[str, Any] = {
                "op": "run_bound",
                "argv": argv or [sys.executable, "-c", CHILD],
                "environment": dict(os.environ),
                "cwd": str(cwd or Path.cwd()),
                "channel": channel.path,
            }
            if env is not None:
                request["env"] = env
            response = call(service, request, caller)
    finally:
        os.close(in_r)
        os.close(out_w)
    with os.fdopen(out_r, "rb") as out:
        return response, out.read().decode()


def test_the_value_reaches_only_the_childs_environment(
    elevated: Service, me: Caller, tmp_path: Path
) -> None:
    protected(elevated)
    response, out = run_bound(
        elevated, me, env={"GH_TOKEN": "github"}, stdin=b"hello child", cwd=tmp_path
    )
    child = json.loads(out)
    assert child["digest"] == hashlib.sha256(CANARY.encode()).hexdigest()
    assert child["in_environ"] is True and child["in_argv"] is False
    assert child["stdin"] == "hello child" and child["cwd"] == str(tmp_path)
    assert child["home"] == os.environ["HOME"]  # the caller's environment is inherited
    assert child["ppid"] == os.getpid()  # in-process service: started by the service itself
    assert response["exit_code"] == 0 and response["signal"] is None
    assert CANARY not in json.dumps(response)
    actions = [e["action"] for e in audit(elevated)]
    assert actions[:2] == ["run.finish", "run.start"]
    start, finish = audit(elevated, 2)[1], audit(elevated, 2)[0]
    assert start["details"]["variables"] == "GH_TOKEN"
    assert start["details"]["program"] == os.path.basename(sys.executable)
    assert finish["details"]["run"] == start["details"]["run"] == response["run"]
    assert CANARY not in json.dumps(audit(elevated))


def test_the_exit_status_is_returned_and_audited(elevated: Service, me: Caller) -> None:
    protected(elevated)
    response, _ = run_bound(
        elevated, me, env={"GH_TOKEN": "github"}, argv=[sys.executable, "-c", CHILD, "7"]
    )
    assert response["exit_code"] == 7
    assert audit(elevated, 1)[0]["details"]["exit_code"] == 7


def test_a_placeholder_template_is_resolved_for_the_child(elevated: Service, me: Caller) -> None:
    protected(elevated)
    _, out = run_bound(elevated, me, env={"GH_TOKEN": "{{secret:github}}"})
    assert json.loads(out)["digest"] == hashlib.sha256(CANARY.encode()).hexdigest()


def test_a_channel_of_another_session_is_refused(elevated: Service) -> None:
    other = Caller("cli:424242@1")
    sudo(elevated, other)
    protected(elevated, label="gh2", env=None)
    with pytest.raises(DeniedError, match="another process"):
        run_bound(elevated, other, env={"GH_TOKEN": "gh2"})
    # The start was recorded before the channel was checked; no finish was.
    actions = [e["action"] for e in audit(elevated)]
    assert "run.start" in actions and "run.finish" not in actions


def test_a_missing_program_gets_nothing_decrypted(elevated: Service, me: Caller) -> None:
    protected(elevated)
    with pytest.raises(NotFoundError, match="not found"):
        run_bound(elevated, me, env={"GH_TOKEN": "github"}, argv=["no-such-program-here"])
    assert "run.start" not in [e["action"] for e in audit(elevated)]


def test_run_needs_elevation_and_is_refused_over_mcp_and_remote(
    service: Service, me: Caller
) -> None:
    with pytest.raises(DeniedError, match="sudo"):
        run_bound(service, me, env={"GH_TOKEN": "github"})
    sudo(service, me)
    sudo(service)
    protected(service, label="gh3")
    for caller in (MCP_ALL, WS_REMOTE):
        with pytest.raises(DeniedError):
            run_bound(service, caller, env={"GH_TOKEN": "gh3"})


def test_a_generated_private_key_is_never_run(elevated: Service, me: Caller) -> None:
    call(elevated, {"op": "credential_generate", "kind": "ssh", "title": "k", "label": "k"}, me)
    with pytest.raises(DeniedError, match="private key"):
        run_bound(elevated, me, env={"KEY": "k"})


def test_bindings_give_defaults_and_limit_the_labels(elevated: Service, me: Caller) -> None:
    protected(elevated)
    protected(elevated, label="other", title="Other")
    program = str(Path(sys.executable).absolute())
    with pytest.raises(UsageError, match="run-binding"):
        run_bound(elevated, me, env=None)
    with pytest.raises(NotFoundError):
        call(elevated, {"op": "run_bind", "program": program, "env": {"X": "typo"}}, me)
    call(elevated, {"op": "run_bind", "program": program, "env": {"GH_TOKEN": "github"}}, me)
    listed = call(elevated, {"op": "run_bindings"}, me)["bindings"]
    assert listed == [{"program": program, "env": {"GH_TOKEN": "github"}}]
    _, out = run_bound(elevated, me, env=None)
    assert json.loads(out)["digest"] == hashlib.sha256(CANARY.encode()).hexdigest()
    with pytest.raises(DeniedError, match="binding"):
        run_bound(elevated, me, env={"GH_TOKEN": "other"})
    # Device-local: in the local state, not in any vault, and nothing of it in a listing.
    assert "run_bindings" in elevated._core.domain()._local().to_bytes().decode()
    call(elevated, {"op": "run_bind", "program": program, "remove": True}, me)
    assert call(elevated, {"op": "run_bindings"}, me)["bindings"] == []
    with pytest.raises(NotFoundError):
        call(elevated, {"op": "run_bind", "program": program, "remove": True}, me)


@pytest.mark.parametrize(
    "change",
    [
        {"argv": [sys.executable, "-c", "pass\0"]},
        {"environment": {"A=B": "x"}},
        {"environment": {"A": "x\0y"}},
    ],
)
def test_what_exec_would_refuse_is_refused_before_decrypting(
    elevated: Service, me: Caller, change: dict[str, Any]
) -> None:
    protected(elevated)
    request = {
        "op": "run_bound",
        "argv": [sys.executable, "-c", "pass"],
        "env": {"GH_TOKEN": "github"},
        "environment": {"PATH": os.environ["PATH"]},
        "cwd": str(Path.cwd()),
        "channel": "/nonexistent/channel",
        **change,
    }
    with pytest.raises(UsageError, match="NUL") as caught:
        call(elevated, request, me)
    assert "x\0y" not in caught.value.message
    assert "run.start" not in [e["action"] for e in audit(elevated)]
