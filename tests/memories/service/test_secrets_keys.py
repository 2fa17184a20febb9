"""Generated keys: stored behind a protected card, never returned; the public half derived."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from memories.errors import DeniedError, IntegrityError, UsageError
from memories.secrets import Secrets
from memories.service import WS_REMOTE, Service
from memories.service.requests.secrets import CredentialGenerateRequest, CredentialPublicRequest
from tests.memories.secrets.sshd import loopback_sshd, ssh_argv
from tests.memories.service.support import call, sudo
from tests.memories.service.test_secrets import MCP_ALL, audit, everything_shown


@pytest.fixture
def elevated(service: Service) -> Service:
    sudo(service)
    return service


def private_key_of(service: Service, credential: str) -> str:
    """The stored private key, read in-process (no request returns it)."""
    secrets = Secrets(service._core.domain())
    return secrets.value(secrets.find(credential, elevated=True))


def generate(service: Service, **fields: Any) -> dict[str, Any]:
    return call(service, {"op": "credential_generate", "title": "deploy key", **fields})


@pytest.mark.parametrize("model", [CredentialGenerateRequest, CredentialPublicRequest])
def test_key_requests_are_local_only_and_never_over_mcp(model: Any) -> None:
    assert model.NEEDS.mcp is None and model.NEEDS.remote is False


def test_generation_needs_elevation_and_is_refused_to_mcp_and_remote(service: Service) -> None:
    with pytest.raises(DeniedError, match="sudo"):
        generate(service, kind="ssh")
    sudo(service)
    for caller in (MCP_ALL, WS_REMOTE):
        with pytest.raises(DeniedError):
            call(service, {"op": "credential_generate", "kind": "ssh", "title": "x"}, caller)


@pytest.mark.parametrize(
    ("key_type", "bits", "prefix"),
    [(None, None, "ssh-ed25519 "), ("rsa", 3072, "ssh-rsa ")],
)
def test_an_ssh_key_is_stored_and_only_its_public_half_is_shown(
    elevated: Service, tmp_path: Path, key_type: str | None, bits: int | None, prefix: str
) -> None:
    fields = {k: v for k, v in {"key_type": key_type, "bits": bits}.items() if v is not None}
    made = generate(elevated, kind="ssh", label="deploy", **fields)
    assert made["public"].startswith(prefix) and made["public"].endswith(" deploy")
    private = private_key_of(elevated, made["credential"])
    assert private.startswith("-----BEGIN OPENSSH PRIVATE KEY-----")
    # The private key appears in no answer, view, listing or audit entry.
    public = call(elevated, {"op": "credential_public", "ref": "deploy"})
    body = private.split("\n")[1]
    shown = everything_shown(elevated, made["card"]) + json.dumps([made, public])
    assert body not in shown
    assert public["public"] == made["public"] and public["fingerprint"] == made["fingerprint"]
    # ssh-keygen agrees with our fingerprint.
    if shutil.which("ssh-keygen") is None:
        pytest.skip("ssh-keygen is not installed (Debian: openssh-client)")
    key_file = tmp_path / "key.pub"
    key_file.write_text(public["public"] + "\n", encoding="utf-8")
    listed = subprocess.run(
        ["ssh-keygen", "-l", "-E", "sha256", "-f", str(key_file)],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    assert listed.stdout.split()[1] == made["fingerprint"]


def test_a_generated_key_is_never_copied_or_run(elevated: Service) -> None:
    made = generate(elevated, kind="ssh", label="deploy")
    for ref in ("deploy", made["card"], made["credential"]):
        with pytest.raises(DeniedError, match="private key"):
            call(elevated, {"op": "credential_copy", "ref": ref})
    assert "credential.copy" not in [e["action"] for e in audit(elevated)]


def test_a_tls_key_comes_with_a_self_signed_certificate(elevated: Service) -> None:
    made = generate(
        elevated, kind="tls", title="intranet", names=["intranet.lan", "127.0.0.1"], days=30
    )
    assert made["label"] == "intranet" and made["form"] == "certificate"
    cert = x509.load_pem_x509_certificate(made["public"].encode())
    assert cert.subject == cert.issuer
    alt = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert alt.get_values_for_type(x509.DNSName) == ["intranet.lan"]
    assert [str(ip) for ip in alt.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
    private = private_key_of(elevated, made["credential"])
    key = serialization.load_pem_private_key(private.encode(), password=None)
    assert key.public_key() == cert.public_key()
    assert "PRIVATE KEY" not in everything_shown(elevated, made["card"]) + json.dumps(made)


def test_a_csr_is_made_on_request(elevated: Service) -> None:
    made = generate(elevated, kind="tls", title="api", key_type="rsa", bits=3072, csr=True)
    request = x509.load_pem_x509_csr(made["public"].encode())
    assert request.is_signature_valid and made["form"] == "csr"
    assert call(elevated, {"op": "credential_public", "ref": "api"})["public"] == made["public"]


@pytest.mark.parametrize(
    "fields",
    [
        {"kind": "ssh", "key_type": "rsa", "bits": 2048},
        {"kind": "ssh", "key_type": "ecdsa"},
        {"kind": "ssh", "bits": 4096},
        {"kind": "ssh", "csr": True},
        {"kind": "tls", "names": ["not a name!"]},
        {"kind": "tls", "days": 0},
        {"kind": "rsa"},
    ],
)
def test_bad_parameters_are_refused_and_nothing_is_written(
    elevated: Service, fields: dict[str, Any]
) -> None:
    before = call(elevated, {"op": "list", "all_vaults": True})
    with pytest.raises(UsageError):
        generate(elevated, **fields)
    assert call(elevated, {"op": "list", "all_vaults": True}) == before


def test_public_of_a_plain_token_is_a_clear_error(elevated: Service) -> None:
    call(
        elevated,
        {
            "op": "protected_card",
            "title": "t",
            "label": "tok",
            "kind": "token",
            "secret": "s3cr3t!",
        },
    )
    with pytest.raises(IntegrityError, match="no SSH key") as caught:
        call(elevated, {"op": "credential_public", "ref": "tok"})
    assert "s3cr3t!" not in caught.value.message


def test_a_loopback_sshd_accepts_the_generated_key(elevated: Service, tmp_path: Path) -> None:
    made = generate(elevated, kind="ssh", label="login")
    public = call(elevated, {"op": "credential_public", "ref": "login"})["public"]
    with loopback_sshd(tmp_path, public) as port:
        key_file = tmp_path / "id_generated"
        fd = os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="ascii") as out:
            out.write(private_key_of(elevated, made["credential"]))
        known = tmp_path / "known"
        login = _run([*ssh_argv(port, known, key=key_file), "echo", "logged-in"])
        assert login.returncode == 0, login.stderr
        assert login.stdout.strip() == "logged-in"
        # A key sshd was not told about is refused: the login above proved the generated one.
        other = tmp_path / "id_other"
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)],
            check=True,
            timeout=30,
        )
        assert _run([*ssh_argv(port, known, key=other), "true"]).returncode == 255


def _run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)


def test_search_never_finds_a_key_or_a_secret(elevated: Service) -> None:
    made = generate(elevated, kind="ssh", label="deploy")
    private = private_key_of(elevated, made["credential"])
    word = private.split("\n")[1][:12]
    call(
        elevated,
        {"op": "protected_card", "title": "t", "label": "tok", "kind": "token",
         "secret": "canarysearchtoken"},
    )  # fmt: skip
    for query in (word, "canarysearchtoken", "OPENSSH"):
        found = call(elevated, {"op": "search", "query": query})
        assert found["results"] == [], query  # (the answer echoes the query itself)
    # The card itself is findable by its label, without anything secret in the result.
    by_label = call(elevated, {"op": "search", "query": "deploy"})
    assert [r["summary"]["id"] for r in by_label["results"]] == [made["card"]]
    assert private.split("\n")[1] not in json.dumps(by_label)
