"""Requests that use secrets without showing them: protected cards, OTP codes, clipboard
copies, generated keys, protected text, and program runs with their bindings.

None of them is reachable over MCP or remote transports. ``otp_code`` and ``credential_copy``
hand a value only to the local elevated caller, after its delivery intent is durable;
``run_bound`` never hands one out at all (the daemon starts the program itself), and no
request returns a generated private key.
"""

from __future__ import annotations

from typing import Annotated, Literal, TypeAlias

from pydantic import Field, SecretStr, StringConstraints

from memories.service.requests.base import (
    VAULT_HELP,
    Needs,
    Ref,
    RequestModel,
    Tags,
    Text,
    Title,
)

__all__ = [
    "CredentialCopyRequest",
    "CredentialGenerateRequest",
    "CredentialPublicRequest",
    "OtpCodeRequest",
    "ProtectSecretRequest",
    "ProtectedCardRequest",
    "RunBindRequest",
    "RunBindingsRequest",
    "RunBoundRequest",
    "SecretRequest",
]

MAX_SECRET_CHARS = 64 * 1024
MAX_RUN_VARIABLES = 64

Label = Annotated[str, StringConstraints(min_length=1, max_length=64)]
EnvName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")]
Arg = Annotated[str, StringConstraints(max_length=128 * 1024)]
EnvTemplate = Annotated[str, StringConstraints(min_length=1, max_length=4096)]
Secret = Annotated[SecretStr, Field(min_length=1, max_length=MAX_SECRET_CHARS)]
_LABEL_HELP = "a protected card's label, or a protected card's or credential's id"


class ProtectedCardRequest(RequestModel):
    """Store a secret as a credential and its protected card, in one commit."""

    NEEDS = Needs(elevation="always", role="editor", remote=False, audit_failures=True)
    RESPONSE = "`{card, credential, label, vault, short_id}` (never the secret)"

    op: Literal["protected_card"]
    vault: Text | None = Field(default=None, description=VAULT_HELP)
    title: Title = Field(repr=False)
    label: Label = Field(description="the stable name commands use, e.g. github")
    kind: Literal["password", "token", "env", "totp", "hotp"] = Field(
        description="env: a token for one environment variable (needs env)"
    )
    secret: Secret = Field(description="the value, or a base32 secret or otpauth:// URI (OTP)")
    account: Text | None = Field(default=None, repr=False)
    service: Text | None = Field(default=None, repr=False)
    env: EnvName | None = Field(default=None, description="the variable a program receives")
    url: Annotated[str, StringConstraints(max_length=2048)] | None = Field(default=None, repr=False)
    digits: int | None = Field(default=None, description="OTP only: 6, 7 or 8")
    algorithm: Literal["SHA1", "SHA256", "SHA512"] | None = Field(default=None)
    period: int | None = Field(default=None, description="TOTP only: seconds, 1 to 300")
    counter: int | None = Field(default=None, description="HOTP only: the next counter")
    tags: Tags | None = Field(default=None, repr=False)
    private: bool = False


class OtpCodeRequest(RequestModel):
    """The current TOTP code, or the next HOTP code (its counter advances in the same commit
    that records the delivery intent)."""

    NEEDS = Needs(elevation="always", remote=False, audit_failures=True)
    RESPONSE = "`{code, type, seconds_left, card, credential}`"

    op: Literal["otp_code"]
    ref: Ref = Field(description=_LABEL_HELP)


class ProtectSecretRequest(RequestModel):
    """Replace every exact occurrence of a secret in a body with ``{{secret:LABEL}}`` and store
    it as a credential, in one commit. Older revisions keep the text."""

    NEEDS = Needs(
        elevation="always", role="editor", remote=False, subjects=("ref",), audit_failures=True
    )
    RESPONSE = "`{asset, revision, credential, label, replaced}`"

    op: Literal["protect_secret"]
    ref: Ref = Field(description="the memory or card whose body holds the secret")
    label: Label = Field(description="the placeholder's label")
    secret: Secret = Field(description="the exact text to protect")


class CredentialCopyRequest(RequestModel):
    """A secret's value for the local clipboard client: a password or token, or the current
    OTP code of a TOTP/HOTP card. The ``credential.copy`` delivery intent is durable before the
    value leaves the service; generated private keys are never returned."""

    NEEDS = Needs(elevation="always", remote=False, audit_failures=True)
    RESPONSE = "`{secret, card, credential, otp}` (the value only to the local copy caller)"

    op: Literal["credential_copy"]
    ref: Ref = Field(description=_LABEL_HELP)


class CredentialGenerateRequest(RequestModel):
    """Generate an SSH key (ed25519, or RSA of 3072 bits or more) or a TLS key with a
    self-signed certificate or a CSR; the private key is stored as a credential behind a
    protected card, in one commit, and never returned."""

    NEEDS = Needs(elevation="always", role="editor", remote=False, audit_failures=True)
    RESPONSE = (
        "`{card, credential, label, vault, short_id, public, fingerprint, algorithm, form}` "
        "(the public half only)"
    )

    op: Literal["credential_generate"]
    kind: Literal["ssh", "tls"] = Field(description="an SSH key, or a TLS key and certificate")
    title: Title = Field(repr=False)
    vault: Text | None = Field(default=None, description=VAULT_HELP)
    label: Label | None = Field(default=None, description="default: made from the title")
    key_type: Literal["ed25519", "rsa", "ecdsa"] | None = Field(
        default=None,
        description="ssh: ed25519 (default) or rsa; tls: ecdsa (default), rsa, ed25519",
    )
    bits: Annotated[int, Field(ge=3072, le=8192)] | None = Field(
        default=None, description="RSA only; default 4096"
    )
    common_name: Text | None = Field(default=None, description="tls: default the title")
    names: Annotated[list[Text], Field(max_length=100)] | None = Field(
        default=None, description="tls: subject alternative names (DNS names, IP addresses)"
    )
    days: Annotated[int, Field(ge=1, le=3650)] = Field(default=365, description="tls validity")
    csr: bool = Field(default=False, description="tls: a signing request, not self-signed")
    tags: Tags | None = Field(default=None, repr=False)
    private: bool = False


class CredentialPublicRequest(RequestModel):
    """The public half of a stored key: the SSH ``authorized_keys`` line and fingerprint, or
    the PEM certificate or CSR. Never the private key."""

    NEEDS = Needs(remote=False)
    RESPONSE = "`{public, fingerprint, algorithm, form, card, credential}`"

    op: Literal["credential_public"]
    ref: Ref = Field(description=_LABEL_HELP)


class RunBoundRequest(RequestModel):
    """Run a program with secrets in its environment, inside the daemon: the execution intent
    is recorded, then (outside the service lock) the daemon takes the caller's terminal over
    ``channel``, starts the program without a shell and audits its exit status and duration.
    The values never leave the daemon. Without ``env`` the program's run binding is used; with
    a binding, ``env`` may only use the labels the binding names. ``ssh_keys`` are served to
    the program by an SSH agent in the daemon, never as values."""

    NEEDS = Needs(elevation="always", remote=False, audit_failures=True)
    RESPONSE = "`{run, exit_code, signal, duration_ms}` (never a value)"

    op: Literal["run_bound"]
    argv: Annotated[list[Arg], Field(min_length=1, max_length=4096)] = Field(
        repr=False, description="the program and its arguments (audited: the program's name)"
    )
    env: Annotated[dict[EnvName, EnvTemplate], Field(max_length=MAX_RUN_VARIABLES)] | None = Field(
        default=None, description="NAME: a label, or text with {{secret:LABEL}} markers"
    )
    ssh_keys: Annotated[list[Label], Field(min_length=1, max_length=16)] | None = Field(
        default=None,
        description="labels of generated SSH keys the program may log in with, through an SSH "
        "agent in the daemon (SSH_AUTH_SOCK) that only the program's process tree can use",
    )
    environment: Annotated[dict[Arg, Arg], Field(max_length=4096)] = Field(
        repr=False, description="the caller's environment, which the program inherits"
    )
    cwd: Annotated[str, StringConstraints(min_length=1, max_length=4096)] = Field(
        repr=False, description="the folder the program runs in"
    )
    channel: Annotated[str, StringConstraints(min_length=1, max_length=107)] = Field(
        repr=False, description="the caller's Unix socket that hands over its terminal"
    )


class RunBindRequest(RequestModel):
    """Set (or with ``remove``, drop) the run binding of a program: which variables, from
    which labels, ``memories run`` gives it. Bindings are device-local and never synced."""

    NEEDS = Needs(elevation="always", remote=False, audit_failures=True)
    RESPONSE = "`{program, env}` (labels, never values)"

    op: Literal["run_bind"]
    program: Annotated[str, StringConstraints(pattern=r"^/.{0,4095}$")] = Field(
        description="the program's absolute path"
    )
    env: (
        Annotated[dict[EnvName, EnvTemplate], Field(min_length=1, max_length=MAX_RUN_VARIABLES)]
        | None
    ) = Field(default=None, description="NAME: a label, or text with {{secret:LABEL}} markers")
    remove: bool = False


class RunBindingsRequest(RequestModel):
    """This device's run bindings: program paths and the labels each may receive."""

    NEEDS = Needs(remote=False)
    RESPONSE = "`{bindings: [{program, env}]}`"

    op: Literal["run_bindings"]


SecretRequest: TypeAlias = (
    ProtectedCardRequest
    | OtpCodeRequest
    | CredentialCopyRequest
    | CredentialGenerateRequest
    | CredentialPublicRequest
    | ProtectSecretRequest
    | RunBoundRequest
    | RunBindRequest
    | RunBindingsRequest
)
