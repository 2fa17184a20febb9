"""protected-card, otp, copy, protect, credential generate/public, run and run-binding:
secrets used without being shown.

Secrets are read from standard input or a hidden prompt, never from the command line (argv is
visible to every process on the machine). The only value ever printed is the OTP code the user
asked for; `copy` writes a value to the clipboard only. ``memories run`` never sees the values:
it hands its terminal to the daemon, which starts the program without a shell with the secrets
in its environment, audits the run's intent before and its exit status and duration after.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys

import click

from memories.cli import cli
from memories.cli.common import (
    call,
    json_option,
    read_stdin_text,
    reports_errors,
    settings,
    short_ref,
    vault_option,
)
from memories.cli.files_cmd import credential, file_group
from memories.cli.render import console, emit_json, error_console
from memories.errors import MemoriesError, NotFoundError, UsageError

_NO_DEADLINE = 10 * 365 * 24 * 3600.0

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


@cli.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option(
    "--env",
    "pairs",
    multiple=True,
    metavar="NAME=LABEL",
    help="Give the program LABEL's secret in NAME (repeatable); LABEL may also be text with "
    "{{secret:LABEL}} placeholders.",
)
@click.option(
    "--ssh-key",
    "ssh_keys",
    multiple=True,
    metavar="LABEL",
    help="Let the program log in with the generated SSH key LABEL (repeatable): an SSH agent "
    "in the daemon signs for it, and only the program and its children can reach the agent.",
)
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
@reports_errors
def run(pairs: tuple[str, ...], ssh_keys: tuple[str, ...], command: tuple[str, ...]) -> None:
    """Run COMMAND with secrets in its environment, never on its command line. Needs `memories
    sudo`.

    The daemon starts the program (without a shell) on this terminal, so the values never
    reach this process; its output is not read. Without --env the program's run binding
    (`memories run-binding`) says what it gets. With --ssh-key the program finds an SSH agent
    in SSH_AUTH_SOCK that holds the key for as long as the program runs; the private key
    never leaves the daemon. Exits with the program's exit status.

    \b
    Examples:
      memories run --env GH_TOKEN=github -- gh pr list
      memories run-binding set gh --env GH_TOKEN=github && memories run -- gh pr list
      memories run --ssh-key deploy -- ssh deploy@build.example.com
      memories run --ssh-key deploy -- git push
    """
    from memories.secrets.runner import StdioChannel
    from memories.service.requests.secrets import RunBoundRequest

    env_labels = _bindings(pairs) or None
    with StdioChannel() as channel:
        request = RunBoundRequest(
            op="run_bound",
            argv=list(command),
            env=env_labels,
            ssh_keys=list(ssh_keys) or None,
            environment=dict(os.environ),
            cwd=os.getcwd(),
            channel=channel.path,
        )
        previous = {
            signum: signal.signal(signum, lambda n, _f: channel.forward(n))
            for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)
        }
        try:
            # The program may run for hours: no answer deadline while it does.
            response: dict[str, object] | None = call(request, timeout=_NO_DEADLINE)
            audit_error: MemoriesError | None = None
        except MemoriesError as exc:
            channel.settle()
            if channel.outcome is None:
                raise  # nothing ran (or the daemon lost it): the error is the whole story
            response, audit_error = None, exc
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)
        outcome = channel.outcome or {}
    if audit_error is not None:
        error_console.print(
            f"the program ran, but its outcome was not audited: {audit_error.message}",
            markup=False,
        )
    source: dict[str, object] = dict(response if response is not None else outcome)
    ended_by, exit_code = source.get("signal"), source.get("exit_code")
    sys.exit(128 + int(str(ended_by)) if ended_by is not None else int(str(exit_code or 0)))


@file_group.command(
    "exec", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False}
)
@click.argument("ref")
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
@reports_errors
def file_exec(ref: str, command: tuple[str, ...]) -> None:
    """Run COMMAND with a stored file as a private temporary file: {} in its arguments
    becomes the file's path. The file is removed when COMMAND ends, however it ends.

    The file is in a new folder only you can open (on a memory file system where there is
    one) and is readable by you only. Its download is audited like `memories file get`.
    Exits with COMMAND's exit status.

    \b
    Examples:
      memories file exec 1a2b3c4d -- kubectl --kubeconfig {} get pods
      memories file exec 5e6f7a8b -- docker compose --env-file {} up
    """
    from memories.cli.files_cmd import _Download, _Progress, _slow_call
    from memories.secrets.fileexec import child_argv, private_file, run_foreground
    from memories.service.requests.files import FileDownloadStartRequest

    if command[:1] == ("--",):
        command = command[1:]  # click keeps the -- that follows REF
    child_argv(command, "{}")  # the placeholder is checked before anything is fetched
    program = _program_path(command[0])

    def stop(signum: int, _frame: object) -> None:
        raise SystemExit(128 + signum)  # unwinds through the cleanup below

    previous = {s: signal.signal(s, stop) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        opened = _slow_call(
            FileDownloadStartRequest(op="file_download_start", ref=ref), settings().max_file_bytes
        )
        download = _Download(opened)
        try:
            with private_file(download.name) as (fd, path):
                with os.fdopen(os.dup(fd), "wb") as sink:
                    download.into(sink, _Progress("", download.size, enabled=False))
                exit_code, ended_by = run_foreground(child_argv([program, *command[1:]], path))
        finally:
            download.cancel_unless_done()
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    sys.exit(128 + ended_by if ended_by is not None else int(exit_code or 0))


@cli.group("run-binding")
def run_binding() -> None:
    """Which secrets `memories run` gives a program by default (this device only)."""


@run_binding.command("set")
@click.argument("program")
@click.option(
    "--env", "pairs", multiple=True, required=True, metavar="NAME=LABEL",
    help="Give PROGRAM LABEL's secret in NAME (repeatable).",
)  # fmt: skip
@json_option
@reports_errors
def run_binding_set(program: str, pairs: tuple[str, ...], as_json: bool) -> None:
    """Bind PROGRAM to the secrets it receives; `memories run -- PROGRAM ...` then needs no
    --env, and may not give it any other label. Needs `memories sudo`.

    \b
    Example:
      memories run-binding set gh --env GH_TOKEN=github
    """
    from memories.service.requests.secrets import RunBindRequest

    path = _program_path(program)
    response = call(RunBindRequest(op="run_bind", program=path, env=_bindings(pairs)))
    if as_json:
        emit_json(response)
        return
    console.print(f"{path}: {', '.join(sorted(_bindings(pairs)))}", markup=False)


@run_binding.command("remove")
@click.argument("program")
@json_option
@reports_errors
def run_binding_remove(program: str, as_json: bool) -> None:
    """Remove PROGRAM's run binding. Needs `memories sudo`."""
    from memories.service.requests.secrets import RunBindRequest

    path = _program_path(program)
    response = call(RunBindRequest(op="run_bind", program=path, remove=True))
    if as_json:
        emit_json(response)
        return
    console.print(f"{path}: binding removed", markup=False)


@run_binding.command("list")
@json_option
@reports_errors
def run_binding_list(as_json: bool) -> None:
    """List the programs with run bindings and the labels each receives (never values)."""
    from memories.service.requests.secrets import RunBindingsRequest

    response = call(RunBindingsRequest(op="run_bindings"))
    if as_json:
        emit_json(response)
        return
    for binding in response["bindings"]:
        pairs = ", ".join(f"{k}={v}" for k, v in sorted(binding["env"].items()))
        console.print(f"{binding['program']}  {pairs}", markup=False, highlight=False)


def _program_path(program: str) -> str:
    if "/" in program:
        if not (os.path.isfile(program) and os.access(program, os.X_OK)):
            raise NotFoundError("that program was not found or is not executable")
        return os.path.abspath(program)
    found = shutil.which(program)
    if found is None:
        raise NotFoundError("that program was not found on PATH")
    return os.path.abspath(found)
