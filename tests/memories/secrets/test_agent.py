"""The daemon's SSH agent: real OpenSSH clients list and use its keys, only from the run's
process tree, and cannot add, remove or take keys."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from memories.crypto.keys import SshSigner, generate_ssh, public_of
from memories.secrets.agent import KeyAgent, descends_from
from tests.memories.secrets.sshd import loopback_sshd, require_ssh, ssh_argv


@pytest.fixture(scope="module")
def ed25519_key() -> str:
    return generate_ssh("ed25519")


def _with_agent(agent: KeyAgent, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SSH_AUTH_SOCK": agent.path}
    env.pop("SSH_AGENT_PID", None)
    return subprocess.run(
        list(argv), env=env, capture_output=True, text=True, timeout=60, check=False
    )


def test_ssh_add_lists_the_key_with_its_fingerprint(ed25519_key: str) -> None:
    require_ssh()
    public = public_of(ed25519_key, comment="deploy")
    with KeyAgent([SshSigner(ed25519_key, comment="deploy")]) as agent:
        agent.allow(os.getpid())  # ssh-add runs as this process's child
        listed = _with_agent(agent, "ssh-add", "-l")
        assert listed.returncode == 0, listed.stderr
        assert public.fingerprint in listed.stdout and "deploy" in listed.stdout
        line = _with_agent(agent, "ssh-add", "-L")
        assert line.stdout.strip() == public.text


def test_the_agent_refuses_to_add_remove_or_lock_keys(ed25519_key: str, tmp_path: Path) -> None:
    require_ssh()
    other = tmp_path / "id_other"
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True, timeout=30
    )
    with KeyAgent([SshSigner(ed25519_key, comment="deploy")]) as agent:
        agent.allow(os.getpid())
        assert _with_agent(agent, "ssh-add", str(other)).returncode != 0
        assert _with_agent(agent, "ssh-add", "-D").returncode != 0
        listed = _with_agent(agent, "ssh-add", "-l")
        assert listed.stdout.count("SHA256:") == 1


def test_processes_outside_the_run_get_no_answer(ed25519_key: str) -> None:
    require_ssh()
    with KeyAgent([SshSigner(ed25519_key, comment="deploy")]) as agent:
        # Before the run's program is named, nobody is answered.
        early = _with_agent(agent, "ssh-add", "-l")  # hung up on: fails, or dies of SIGPIPE
        assert early.returncode != 0 and "SHA256:" not in early.stdout
        bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        try:
            agent.allow(bystander.pid)  # ssh-add below is not in that process's tree
            refused = _with_agent(agent, "ssh-add", "-l")
            assert refused.returncode != 0 and "SHA256:" not in refused.stdout
        finally:
            bystander.kill()
            bystander.wait()


def test_malformed_messages_get_failure_and_the_agent_keeps_serving(ed25519_key: str) -> None:
    require_ssh()
    with KeyAgent([SshSigner(ed25519_key, comment="deploy")]) as agent:
        agent.allow(os.getpid())
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(10)
            conn.connect(agent.path)
            for message in (b"\x0d\x00\x00", b"\x0d" + b"\x00\x00\x00\x09short", b"\x63"):
                conn.sendall(len(message).to_bytes(4, "big") + message)
                assert conn.recv(16) == b"\x00\x00\x00\x01\x05"  # SSH_AGENT_FAILURE
            conn.sendall(b"\xff\xff\xff\xff")  # a length no request has: the agent hangs up
            assert conn.recv(16) == b""
        assert _with_agent(agent, "ssh-add", "-l").returncode == 0


def test_closing_forgets_the_keys_and_removes_the_socket(ed25519_key: str) -> None:
    signer = SshSigner(ed25519_key, comment="deploy")
    agent = KeyAgent([signer])
    with agent:
        folder = Path(agent.path).parent
        assert folder.stat().st_mode & 0o777 == 0o700
    assert not folder.exists()
    assert signer.sign(b"challenge", 0) is None


@pytest.mark.parametrize("key_type", ["ed25519", "rsa"])
def test_ssh_logs_in_to_a_real_sshd_through_the_agent(key_type: str, tmp_path: Path) -> None:
    stored = generate_ssh("rsa" if key_type == "rsa" else "ed25519")
    signed: list[str] = []
    # The agent is made once sshd runs: a skip for a missing sshd leaves no folder behind.
    with (
        loopback_sshd(tmp_path, public_of(stored).text) as port,
        KeyAgent(
            [SshSigner(stored, comment="k")], on_sign=lambda s: signed.append(s.comment)
        ) as agent,
    ):
        agent.allow(os.getpid())
        login = _with_agent(agent, *ssh_argv(port, tmp_path / "known"), "echo", "in")
    assert login.returncode == 0, login.stderr
    assert login.stdout.strip() == "in"
    assert signed == ["k"]


def test_descent_follows_parent_pids(tmp_path: Path) -> None:
    for pid, parent in ((30, 20), (20, 10), (10, 1), (40, 1)):
        (tmp_path / str(pid)).mkdir()
        (tmp_path / str(pid) / "stat").write_text(f"{pid} (a b) c) S {parent} 0 0\n")
    assert descends_from(30, 10, tmp_path)
    assert descends_from(10, 10, tmp_path)
    assert not descends_from(40, 10, tmp_path)
    assert not descends_from(99, 10, tmp_path)  # gone
