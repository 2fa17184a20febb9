"""protected-card, otp, protect and run: secrets used without being shown.

Secrets are read from standard input or a hidden prompt, never from the command line (argv is
visible to every process on the machine). The only value ever printed is the OTP code the user
asked for. ``memories run`` gives the secrets to the program in its environment only: the
program is started without a shell, its output goes straight to this terminal (it is neither
read nor kept), and the daemon audits the run's intent before the values leave it and the exit
status and duration afterwards.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time

import click

from memories.cli import cli
from memories.cli.common import (
    call,
    json_option,
    read_stdin_text,
    reports_errors,
    short_ref,
    vault_option,
)
from memories.cli.files_cmd import credential
from memories.cli.render import console, emit_json, error_console
from memories.errors import NotFoundError, UsageError

__all__ = [
    "copy",
    "credential_generate",
    "credential_public",
    "otp",
    "protect",
    "protected_card",
    "run",
]


def _read_secret(what: str, *, from_stdin: bool, confirm: bool = True) -> str:
    """The secret from standard input (all of it, minus one final line break) or a prompt.

    Raises:
        UsageError: no terminal to ask on and no --secret-stdin, or the secret is empty.
    """
    if from_stdin:
        secret = read_stdin_text().removesuffix("\n").removesuffix("\r")
    elif not sys.stdin.isatty():
        raise UsageError(f"no terminal to ask for the {what}; pass --secret-stdin")
    else:
        secret = click.prompt(
            what[:1].upper() + what[1:],
            hide_input=True,
            confirmation_prompt=f"Repeat the {what}" if confirm else False,
            err=True,
        )
    if not secret:
        raise UsageError(f"the {what} must not be empty")
    return secret


@cli.command("protected-card")
@click.argument("title")
@click.option("--label", required=True, help="The stable name commands use, e.g. github.")
@click.option(
    "--kind",
    type=click.Choice(["password", "token", "env", "totp", "hotp"]),
    required=True,
    help="What the secret is; env: a token for the variable given with --env.",
)
@click.option("--secret-stdin", is_flag=True, help="Read the secret from standard input.")
@click.option("--account", help="The account or user name.")
@click.option("--service", help="The service it signs in to.")
@click.option("--env", "env_name", metavar="NAME", help="The variable a program receives it in.")
@click.option("--url", help="Where it is used.")
@click.option("--digits", type=int, help="OTP: 6, 7 or 8 digits.")
@click.option("--period", type=int, help="TOTP: seconds per code.")
@click.option("--algorithm", type=click.Choice(["SHA1", "SHA256", "SHA512"]), help="OTP hash.")
@click.option("--counter", type=int, help="HOTP: the next counter.")
@click.option("--tag", "tags", multiple=True, metavar="TAG", help="A tag (repeatable).")
@click.option("--private", is_flag=True, help="Readable only when elevated.")
@vault_option
@json_option
@reports_errors
def protected_card(
    title: str,
    label: str,
    kind: str,
    secret_stdin: bool,
    account: str | None,
    service: str | None,
    env_name: str | None,
    url: str | None,
    digits: int | None,
    period: int | None,
    algorithm: str | None,
    counter: int | None,
    tags: tuple[str, ...],
    private: bool,
    vault: str | None,
    as_json: bool,
) -> None:
    """Store a secret as a credential with a protected card in front of it. Needs `memories
    sudo`.

    For totp/hotp the secret is the base32 key or the whole otpauth:// URI an authenticator
    export gives. The secret is never printed; the card shows only what it is for.

    \b
    Examples:
      gh auth token | memories protected-card "GitHub" --label github --kind env \\
          --env GH_TOKEN --secret-stdin
      memories protected-card "Bank" --label bank --kind totp   # paste the otpauth:// URI
    """
    from pydantic import SecretStr

    from memories.service.requests import ProtectedCardRequest

    secret = _read_secret("secret", from_stdin=secret_stdin)
    response = call(
        ProtectedCardRequest(
            op="protected_card",
            vault=vault,
            title=title,
            label=label,
            kind=kind,  # type: ignore[arg-type]
            secret=SecretStr(secret),
            account=account,
            service=service,
            env=env_name,
            url=url,
            digits=digits,
            algorithm=algorithm,  # type: ignore[arg-type]
            period=period,
            counter=counter,
            tags=list(tags) if tags else None,
            private=private,
        )
    )
    if as_json:
        emit_json(response)
        return
    console.print(f"{short_ref(response)} {response.get('label', '')}", markup=False)


@cli.command()
@click.argument("label")
@json_option
@reports_errors
def otp(label: str, as_json: bool) -> None:
    """Print the current TOTP code (or the next HOTP code) of LABEL. Needs `memories sudo`.

    LABEL is a protected card's label, or its id. An HOTP counter moves on with every code.
    """
    from memories.service.requests import OtpCodeRequest

    response = call(OtpCodeRequest(op="otp_code", ref=label))
    if as_json:
        emit_json(response)
        return
    console.print(str(response["code"]), markup=False, highlight=False)


@cli.command()
@click.argument("ref")
@click.option("--label", required=True, help="The placeholder's label: {{secret:LABEL}}.")
@json_option
@reports_errors
def protect(ref: str, label: str, as_json: bool) -> None:
    """Replace a secret in REF's body with {{secret:LABEL}} and store it as a credential.

    The exact text is read from standard input (all of it, minus one final line break), never
    from the command line. Needs `memories sudo`. Older versions of REF still hold the text in
    their (encrypted, signed) history: `memories history REF` lists them.

    \b
    Example:
      printf %s "$TOKEN" | memories protect 1a2b3c4d --label deploy-token
    """
    from pydantic import SecretStr

    from memories.service.requests import ProtectSecretRequest

    if sys.stdin.isatty():
        raise UsageError("give the text to protect on standard input, e.g. printf %s ... |")
    secret = _read_secret("text to protect", from_stdin=True)
    response = call(
        ProtectSecretRequest(op="protect_secret", ref=ref, label=label, secret=SecretStr(secret))
    )
    if as_json:
        emit_json(response)
        return
    count = response.get("replaced", 0)
    console.print(f"{short_ref(response)}: {count} replaced with {{{{secret:{label}}}}}")


@cli.command()
@click.argument("label")
@click.option(
    "--clear-after",
    type=click.IntRange(0, 24 * 3600),
    default=45,
    show_default=True,
    metavar="SECONDS",
    help="Empty the clipboard after this long if it still holds the value (0: never).",
)
@json_option
@reports_errors
def copy(label: str, clear_after: int, as_json: bool) -> None:
    """Copy LABEL's secret (or its current OTP code) to the clipboard. Needs `memories sudo`.

    LABEL is a protected card's label, or a protected card's or credential's id. The value
    is never printed; the clipboard is emptied after --clear-after seconds unless something
    else was copied since. Uses wl-copy (Wayland), xclip or xsel (X11), pbcopy or clip.
    """
    from memories.secrets.clipboard import copy as to_clipboard
    from memories.secrets.clipboard import find_tool, schedule_clear
    from memories.service.requests.secrets import CredentialCopyRequest

    # Found before asking: without a clipboard nothing is decrypted or audited as delivered.
    tool = find_tool()
    response = call(CredentialCopyRequest(op="credential_copy", ref=label))
    value = str(response.pop("secret"))
    try:
        to_clipboard(tool, value)
        if clear_after:
            schedule_clear(tool, value, clear_after)
    finally:
        del value
    result = {
        "copied": True,
        "clears_after": clear_after or None,
        "card": response.get("card"),
        "credential": response.get("credential"),
        "otp": response.get("otp"),
    }
    if as_json:
        emit_json(result)
        return
    what = "code" if response.get("otp") else "secret"
    tail = f"; clears in {clear_after} s" if clear_after else ""
    console.print(f"copied the {what} of {label} to the clipboard{tail}", markup=False)


# -- generated keys ----------------------------------------------------------------------------


@credential.command("generate")
@click.argument("kind", type=click.Choice(["ssh", "tls"]))
@click.argument("title")
@click.option(
    "--type",
    "key_type",
    type=click.Choice(["ed25519", "rsa", "ecdsa"]),
    help="ssh: ed25519 (default) or rsa; tls: ecdsa P-256 (default), rsa or ed25519.",
)
@click.option("--bits", type=int, help="RSA key size: 3072 to 8192 [default: 4096].")
@click.option("--label", help="The stable name commands use [default: made from TITLE].")
@click.option("--cn", "common_name", help="tls: the certificate's common name [default: TITLE].")
@click.option(
    "--name", "names", multiple=True, metavar="NAME", help="tls: a DNS name or IP (repeatable)."
)
@click.option("--days", type=int, default=365, show_default=True, help="tls: validity.")
@click.option("--csr", is_flag=True, help="tls: make a signing request, not a self-signed cert.")
@click.option("--tag", "tags", multiple=True, metavar="TAG", help="A tag (repeatable).")
@click.option("--private", is_flag=True, help="Readable only when elevated.")
@vault_option
@json_option
@reports_errors
def credential_generate(
    kind: str,
    title: str,
    key_type: str | None,
    bits: int | None,
    label: str | None,
    common_name: str | None,
    names: tuple[str, ...],
    days: int,
    csr: bool,
    tags: tuple[str, ...],
    private: bool,
    vault: str | None,
    as_json: bool,
) -> None:
    """Generate an SSH key or a TLS key and certificate; store the private key as a
    credential (never shown) behind a protected card. Needs `memories sudo`.

    Prints the public half: the authorized_keys line (ssh) or the PEM certificate or CSR.

    \b
    Examples:
      memories credential generate ssh "deploy key" --label deploy
      memories credential generate tls "intranet" --name intranet.lan --name 10.0.0.5
    """
    from memories.service.requests.secrets import CredentialGenerateRequest

    response = call(
        CredentialGenerateRequest(
            op="credential_generate",
            kind=kind,  # type: ignore[arg-type]
            title=title,
            vault=vault,
            label=label,
            key_type=key_type,  # type: ignore[arg-type]
            bits=bits,
            common_name=common_name,
            names=list(names) if names else None,
            days=days,
            csr=csr,
            tags=list(tags) if tags else None,
            private=private,
        )
    )
    if as_json:
        emit_json(response)
        return
    console.print(str(response["public"]).rstrip("\n"), markup=False, highlight=False)
    error_console.print(
        f"{short_ref(response)} {response['label']}: {response['fingerprint']}", markup=False
    )


@credential.command("public")
@click.argument("ref")
@json_option
@reports_errors
def credential_public(ref: str, as_json: bool) -> None:
    """Print the public half of a generated or imported key: the authorized_keys line of an
    SSH key, or the PEM certificate (or CSR) of a TLS key. REF is a label or an id.

    \b
    Example:
      memories credential public deploy >> ~/.ssh/authorized_keys
    """
    from memories.service.requests.secrets import CredentialPublicRequest

    response = call(CredentialPublicRequest(op="credential_public", ref=ref))
    if as_json:
        emit_json(response)
        return
    console.print(str(response["public"]).rstrip("\n"), markup=False, highlight=False)


# -- run ----------------------------------------------------------------------------------------


def _bindings(pairs: tuple[str, ...]) -> dict[str, str]:
    env: dict[str, str] = {}
    for position, pair in enumerate(pairs, start=1):
        name, sep, label = pair.partition("=")
        if not sep or not name or not label:
            raise UsageError(f"--env {position} is not NAME=LABEL")
        env[name] = label
    return env


def _run_child(argv: list[str], env: dict[str, str]) -> tuple[int | None, int | None]:
    """Run ``argv`` in the foreground with ``env``; returns (exit code, signal).

    SIGINT and SIGTERM reach the child (it shares the terminal's process group for SIGINT;
    SIGTERM sent to us is passed on), and we wait for it either way.
    """
    child = subprocess.Popen(argv, env=env, close_fds=True)  # no shell: argv as given

    def forward(signum: int, _frame: object) -> None:
        child.send_signal(signum)

    previous = {s: signal.signal(s, forward) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        while True:
            try:
                code = child.wait()
                break
            except KeyboardInterrupt:
                continue  # the child got the SIGINT too; it decides when to stop
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    return (None, -code) if code < 0 else (code, None)


@cli.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option(
    "--env",
    "pairs",
    multiple=True,
    metavar="NAME=LABEL",
    help="Give the program LABEL's secret in NAME (repeatable); LABEL may also be text with "
    "{{secret:LABEL}} placeholders.",
)
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
@reports_errors
def run(pairs: tuple[str, ...], command: tuple[str, ...]) -> None:
    """Run COMMAND with secrets in its environment, never on its command line. Needs `memories
    sudo`.

    The program runs without a shell; its output is not read. Exits with its exit status.

    \b
    Example:
      memories run --env GH_TOKEN=github -- gh pr list
    """
    from memories.service.requests import RunFinishRequest, RunPrepareRequest

    argv = list(command)
    env_labels = _bindings(pairs)
    if not env_labels:
        raise UsageError("give at least one --env NAME=LABEL")
    program = shutil.which(argv[0])
    if program is None:
        # Checked before anything is decrypted: a missing program gets no secrets.
        raise NotFoundError("that program was not found on PATH")
    prepared = call(RunPrepareRequest(op="run_prepare", program=program, env=env_labels))
    values: dict[str, str] = dict(prepared["env"])
    child_env = {**os.environ, **values}
    started = time.monotonic()
    try:
        exit_code, signum = _run_child([program, *argv[1:]], child_env)
    except OSError as exc:
        exit_code, signum = 127, None
        error_console.print(f"cannot run the program ({exc.strerror or type(exc).__name__})")
    finally:
        values.clear()
        child_env.clear()
    duration_ms = int((time.monotonic() - started) * 1000)
    call(
        RunFinishRequest(
            op="run_finish",
            run=str(prepared["run"]),
            exit_code=exit_code,
            signal=signum,
            duration_ms=duration_ms,
        )
    )
    sys.exit(128 + signum if signum is not None else int(exit_code or 0))
