"""A real OpenSSH server on loopback that accepts exactly one public key, for login tests."""

from __future__ import annotations

import os
import pwd
import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.support import free_port, require_tools, stop_process, wait_for

SSHD = "/usr/sbin/sshd"


def require_ssh() -> None:
    """Skip (or, on CI, fail) when the OpenSSH client or server is missing."""
    require_tools(SSHD, "ssh", "ssh-keygen", "ssh-add", debian="openssh-server openssh-client")


def _port_open(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(0.5)
        return probe.connect_ex(("127.0.0.1", port)) == 0


@contextmanager
def loopback_sshd(folder: Path, authorized_key: str) -> Iterator[int]:
    """Run sshd on a free loopback port, accepting only ``authorized_key``; yields the port."""
    require_ssh()
    if os.geteuid() == 0 and not Path("/run/sshd").is_dir():
        Path("/run/sshd").mkdir(mode=0o755)  # sshd's privilege-separation folder
    (folder / "authorized_keys").write_text(authorized_key + "\n", encoding="utf-8")
    host_key = folder / "host_key"
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(host_key)],
        check=True,
        timeout=30,
    )
    port = free_port()
    config = folder / "sshd_config"
    config.write_text(
        "\n".join(
            [
                f"Port {port}",
                "ListenAddress 127.0.0.1",
                f"HostKey {host_key}",
                f"AuthorizedKeysFile {folder / 'authorized_keys'}",
                f"PidFile {folder / 'sshd.pid'}",
                "PubkeyAuthentication yes",
                "PasswordAuthentication no",
                "KbdInteractiveAuthentication no",
                "PermitRootLogin prohibit-password",
                "UsePAM no",
                "StrictModes no",
                "",
            ]
        ),
        encoding="utf-8",
    )
    server = subprocess.Popen(
        [SSHD, "-D", "-e", "-f", str(config)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for(lambda: _port_open(port) or server.poll() is not None, timeout=20)
        assert server.poll() is None, "sshd did not start"
        yield port
    finally:
        stop_process(server)


def ssh_argv(port: int, known: Path, *, key: Path | None = None) -> list[str]:
    """An ``ssh`` command line to this user at 127.0.0.1:``port`` that never prompts; with
    ``key`` it offers only that key file, without it only the agent's keys."""
    argv = ["ssh", "-F", "/dev/null", "-p", str(port)]
    options = ["BatchMode=yes", "StrictHostKeyChecking=no", f"UserKnownHostsFile={known}"]
    if key is not None:
        argv += ["-i", str(key)]
        options.append("IdentitiesOnly=yes")
    for option in options:
        argv += ["-o", option]
    return [*argv, f"{pwd.getpwuid(os.getuid()).pw_name}@127.0.0.1"]
