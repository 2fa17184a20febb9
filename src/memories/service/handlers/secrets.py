"""Handlers for the secret operations: protected cards, OTP codes, clipboard copies,
generated keys, protected text, program runs and run bindings.

A value leaves here only after its delivery intent is filed: a TOTP code and a copied value
wait (in :meth:`~memories.service.service.Service.handle_stamped`) until the intent is durable,
and an HOTP code is made only after the commit that advanced its counter and recorded the
intent. A run's values never leave the daemon: ``run_bound`` files its ``run.start`` intent,
and once that is durable the service runs the program outside its lock
(:class:`~memories.service.deferred.Deferred`), then files ``run.finish``. Audit details hold
ids, labels, op names and the caller, never a value.
"""

from __future__ import annotations

import contextlib
import os
import time
from typing import Any, Final, assert_never

from memories.crypto import new_id
from memories.crypto.keys import SshSigner
from memories.errors import DeniedError, MemoriesError, UsageError
from memories.secrets import ProtectedInput, SecretRef, Secrets
from memories.secrets.agent import KeyAgent
from memories.secrets.keys import KeySpec, generate_key, public_part
from memories.secrets.placeholders import MARKER, resolve_markers
from memories.secrets.protected import check_label
from memories.secrets.runner import RunOutcome, find_program, run_on_channel
from memories.service.access import Access, local_cli_caller
from memories.service.audit import record_failure
from memories.service.core import Core
from memories.service.deferred import Deferred
from memories.service.requests.base import ROLE_ORDER, VaultRole
from memories.service.requests.secrets import (
    CredentialCopyRequest,
    CredentialGenerateRequest,
    CredentialPublicRequest,
    OtpCodeRequest,
    ProtectedCardRequest,
    ProtectSecretRequest,
    RunBindingsRequest,
    RunBindRequest,
    RunBoundRequest,
    SecretRequest,
)

__all__ = ["COPY_INTENT", "OTP_INTENT", "RUN_FINISH", "RUN_INTENT", "handle"]

COPY_INTENT: Final = "credential.copy"
OTP_INTENT: Final = "otp.deliver"
RUN_INTENT: Final = "run.start"
RUN_FINISH: Final = "run.finish"


def handle(core: Core, request: SecretRequest, access: Access) -> dict[str, Any]:
    caller = access.caller.namespace
    match request:
        case ProtectedCardRequest():
            return _protected_card(core, request, caller)
        case OtpCodeRequest():
            return _otp_code(core, request, access)
        case CredentialCopyRequest():
            return _credential_copy(core, request, access)
        case CredentialGenerateRequest():
            return _credential_generate(core, request, caller)
        case CredentialPublicRequest():
            secrets = Secrets(core.domain())
            found = secrets.find(request.ref, elevated=access.elevated)
            _require_role(core, found, "reader")
            public = public_part(secrets, found)
            return {
                "public": public.text,
                "fingerprint": public.fingerprint,
                "algorithm": public.algorithm,
                "form": public.form,
                "card": found.card_id,
                "credential": found.credential_id,
            }
        case ProtectSecretRequest():
            secrets = Secrets(core.domain())
            saved, credential, count = secrets.protect(
                request.ref,
                request.secret.get_secret_value(),
                request.label,
                elevated=access.elevated,
                details={"op": "protect_secret", "caller": caller},
            )
            return {
                **core.saved(saved),
                "credential": credential.asset_id,
                "label": request.label,
                "replaced": count,
            }
        case RunBoundRequest():
            return _run_bound(core, request, access)
        case RunBindRequest():
            return _run_bind(core, request, access)
        case RunBindingsRequest():
            bindings = core.domain().run_bindings()
            return {
                "bindings": [
                    {"program": program, "env": dict(env)}
                    for program, env in sorted(bindings.items())
                ]
            }
        case _:
            assert_never(request)


def _require_role(core: Core, found: SecretRef, needed: VaultRole) -> None:
    # A label names no vault up front, so the vault role is checked once it is resolved.
    role = core.domain().vault_role(found.vault_id)[1]
    if role not in ROLE_ORDER or ROLE_ORDER.index(role) < ROLE_ORDER.index(needed):
        raise DeniedError(f"your role in this vault does not allow this (needs {needed})")


def _protected_card(core: Core, request: ProtectedCardRequest, caller: str) -> dict[str, Any]:
    given = ProtectedInput(
        kind=request.kind,
        secret=request.secret.get_secret_value(),
        label=request.label,
        account=request.account,
        service=request.service,
        env=request.env,
        url=request.url,
        digits=request.digits,
        algorithm=request.algorithm,
        period=request.period,
        counter=request.counter,
    )
    made = Secrets(core.domain()).create_protected(
        request.vault,
        request.title,
        given,
        tags=tuple(request.tags or ()),
        private=request.private,
        details={"op": "protected_card", "caller": caller},
    )
    return {
        **core.saved(made.card),
        "card": made.card.asset_id,
        "credential": made.credential.asset_id,
        "label": made.label,
    }


def _credential_generate(
    core: Core, request: CredentialGenerateRequest, caller: str
) -> dict[str, Any]:
    spec = KeySpec(
        kind=request.kind,
        key_type=request.key_type,
        bits=request.bits,
        common_name=request.common_name,
        names=tuple(request.names or ()),
        days=request.days,
        csr=request.csr,
    )
    made, public = generate_key(
        Secrets(core.domain()),
        request.vault,
        request.title,
        spec,
        label=request.label,
        tags=tuple(request.tags or ()),
        private=request.private,
        details={"op": "credential_generate", "caller": caller},
    )
    return {
        **core.saved(made.card),
        "card": made.card.asset_id,
        "credential": made.credential.asset_id,
        "label": made.label,
        "public": public.text,
        "fingerprint": public.fingerprint,
        "algorithm": public.algorithm,
        "form": public.form,
    }


def _otp_code(core: Core, request: OtpCodeRequest, access: Access) -> dict[str, Any]:
    secrets = Secrets(core.domain())
    found = secrets.find(request.ref, elevated=access.elevated)
    _require_role(core, found, "reader")
    details: dict[str, str | int] = {
        "op": "otp_code",
        "credential": found.credential_id,
        "caller": access.caller.namespace,
        "intent": "delivery",
    }
    if found.card_id is not None:
        details["card"] = found.card_id
    code = secrets.otp_code(found, details=details)
    if code.type == "totp":
        # HOTP recorded its intent in the commit that advanced the counter.
        core.request_tickets.append(core.intents.file(OTP_INTENT, details))
    return {
        "code": code.code,
        "type": code.type,
        "seconds_left": code.seconds_left,
        "card": found.card_id,
        "credential": found.credential_id,
    }


def _credential_copy(core: Core, request: CredentialCopyRequest, access: Access) -> dict[str, Any]:
    secrets = Secrets(core.domain())
    found = secrets.find(request.ref, elevated=access.elevated)
    _require_role(core, found, "reader")
    secrets.require_deliverable(found)
    details: dict[str, str | int] = {
        "op": "credential_copy",
        "credential": found.credential_id,
        "caller": access.caller.namespace,
        "intent": "delivery",
    }
    if found.card_id is not None:
        details["card"] = found.card_id
    otp: str | None = None
    if found.kind in ("totp", "hotp"):
        # An OTP card copies its current code, never the stored secret.
        code = secrets.otp_code(found, details={**details, "op": "credential_copy"})
        value, otp = code.code, code.type
        details["otp"] = code.type
    else:
        value = secrets.value(found)
    core.request_tickets.append(core.intents.file(COPY_INTENT, details))
    return {"secret": value, "card": found.card_id, "credential": found.credential_id, "otp": otp}


def _labels_of(template: str) -> set[str]:
    found = {m.group(1) for m in MARKER.finditer(template)}
    return found or {template.strip()}


def _run_env(core: Core, request: RunBoundRequest, program: str) -> dict[str, str]:
    """The variables to give ``program``: the request's, within the program's binding."""
    binding = core.domain().run_bindings().get(program)
    if request.env is None:
        if binding is None and request.ssh_keys:
            return {}  # keys only: bindings name variables, and keys are given each time
        if binding is None:
            raise UsageError(
                "give --env NAME=LABEL, or bind the program first with `memories run-binding set`"
            )
        return dict(binding)
    if binding is not None:
        allowed = set().union(*(_labels_of(t) for t in binding.values()))
        asked = set().union(*(_labels_of(t) for t in request.env.values()))
        if not asked <= allowed:
            raise DeniedError("this program's run binding does not name that label")
    return dict(request.env)


def _run_bound(core: Core, request: RunBoundRequest, access: Access) -> dict[str, Any]:
    # What exec would refuse is refused before anything is decrypted.
    texts = [*request.argv, request.cwd, *request.environment.values()]
    if any("\0" in t for t in texts) or any(
        not k or "=" in k or "\0" in k for k in request.environment
    ):
        raise UsageError("an argument, the folder or an environment variable holds a NUL or =")
    program = find_program(request.argv[0], request.environment, request.cwd)
    templates = _run_env(core, request, program)
    if not templates and not request.ssh_keys:
        raise UsageError("give at least one --env NAME=LABEL or --ssh-key LABEL")
    secrets = Secrets(core.domain())
    resolved: dict[str, SecretRef] = {}

    def value_of(label: str) -> str:
        found = resolved.get(label)
        if found is None:
            found = resolved[label] = secrets.find(label, elevated=access.elevated)
            _require_role(core, found, "reader")
            secrets.require_deliverable(found)
        return secrets.value(found)

    keys = dict(_ssh_signer(core, secrets, label, access) for label in request.ssh_keys or ())
    signers = list(keys.values())
    values: dict[str, str] = {}
    for name, template in templates.items():
        if MARKER.search(template):
            labels = {m.group(1): m.group(1) for m in MARKER.finditer(template)}
            values[name], _ = resolve_markers(template, labels, value_of)
        else:
            values[name] = value_of(template.strip())
    run = new_id()
    caller = access.caller
    details: dict[str, str | int | bool] = {
        "op": "run_bound",
        "run": run,
        "caller": caller.namespace,
        "program": os.path.basename(program)[:200],
        "variables": ",".join(sorted(values)),
        "credentials": ",".join(sorted({f.credential_id for f in resolved.values()})),
        "at": int(time.time()),
    }
    if signers:
        details["ssh_keys"] = ",".join(sorted(keys))
    # Durable before the work starts: the service waits for this ticket first.
    core.request_tickets.append(core.intents.file(RUN_INTENT, details))
    environment = {**request.environment, **values}
    values.clear()

    signatures = 0

    def counted(_signer: SshSigner) -> None:
        nonlocal signatures
        signatures += 1

    def work() -> RunOutcome:
        with contextlib.ExitStack() as stack:
            on_start = None
            if signers:
                agent = stack.enter_context(KeyAgent(signers, on_sign=counted))
                environment["SSH_AUTH_SOCK"] = agent.path
                on_start = agent.allow
            try:
                return run_on_channel(
                    request.channel,
                    [program, *request.argv[1:]],
                    environment,
                    request.cwd,
                    namespace=caller.namespace,
                    namespace_of=lambda pid: local_cli_caller(pid).namespace,
                    on_start=on_start,
                )
            finally:
                environment.clear()  # the values leave the daemon's reach with the child

    def finish(outcome: RunOutcome, _access: Access) -> dict[str, Any]:
        ended: dict[str, str | int | bool] = {
            "op": "run_bound",
            "run": run,
            "caller": caller.namespace,
            "duration_ms": outcome.duration_ms,
        }
        if signers:
            ended["ssh_signatures"] = signatures
        if outcome.exit_code is not None:
            ended["exit_code"] = outcome.exit_code
        if outcome.signal is not None:
            ended["signal"] = outcome.signal
        core.request_tickets.append(core.intents.file(RUN_FINISH, ended))
        return {
            "run": run,
            "exit_code": outcome.exit_code,
            "signal": outcome.signal,
            "duration_ms": outcome.duration_ms,
        }

    def failed(exc: MemoriesError) -> None:
        record_failure(core.store, "run_bound", exc, caller)

    core.deferred = Deferred(work, finish, failed)
    return {"run": run}


def _ssh_signer(core: Core, secrets: Secrets, label: str, access: Access) -> tuple[str, SshSigner]:
    """The credential id and a signer of the SSH key ``label`` names (its card's label or id).

    Raises:
        UsageError: the label names a secret that is not an SSH key.
    """
    found = secrets.find(label, elevated=access.elevated)
    _require_role(core, found, "reader")
    if found.kind != "ssh_key":
        raise UsageError(
            "--ssh-key takes the label of an SSH key (`memories credential generate ssh`)"
        )
    signer = SshSigner(secrets.value(found), comment=found.label or "memories")
    return found.credential_id, signer


def _run_bind(core: Core, request: RunBindRequest, access: Access) -> dict[str, Any]:
    vaults = core.domain()
    if request.remove:
        if request.env is not None:
            raise UsageError("give either --env pairs or --remove, not both")
        vaults.set_run_binding(request.program, None)
        return {"program": request.program, "env": None}
    if request.env is None:
        raise UsageError("give at least one --env NAME=LABEL")
    secrets = Secrets(vaults)
    for template in request.env.values():
        for label in _labels_of(template):
            # Bound labels must name something deliverable now (a typo fails here, not later).
            found = secrets.find(check_label(label), elevated=access.elevated)
            secrets.require_deliverable(found)
    vaults.set_run_binding(request.program, dict(request.env))
    return {"program": request.program, "env": dict(request.env)}
