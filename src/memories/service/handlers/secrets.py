"""Handlers for the secret operations: protected cards, OTP codes, protected text and runs.

A value leaves here only after its delivery intent is filed: a TOTP code and a run's values
wait (in :meth:`~memories.service.service.Service.handle_stamped`) until the intent is durable,
and an HOTP code is made only after the commit that advanced its counter and recorded the
intent. Audit details hold ids, labels, op names and the caller, never a value.
"""

from __future__ import annotations

import os
import time
from typing import Any, Final, assert_never

from memories.crypto import new_id
from memories.errors import DeniedError
from memories.secrets import ProtectedInput, SecretRef, Secrets
from memories.secrets.keys import KeySpec, generate_key, public_part
from memories.secrets.placeholders import MARKER, resolve_markers
from memories.service.access import Access
from memories.service.core import Core
from memories.service.requests.base import ROLE_ORDER, VaultRole
from memories.service.requests.secrets import (
    CredentialCopyRequest,
    CredentialGenerateRequest,
    CredentialPublicRequest,
    OtpCodeRequest,
    ProtectedCardRequest,
    ProtectSecretRequest,
    RunFinishRequest,
    RunPrepareRequest,
    SecretRequest,
)

__all__ = ["COPY_INTENT", "OTP_INTENT", "RUN_FINISH", "RUN_INTENT", "handle"]

COPY_INTENT: Final = "credential.copy"
OTP_INTENT: Final = "otp.deliver"
RUN_INTENT: Final = "run.prepare"
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
        case RunPrepareRequest():
            return _run_prepare(core, request, access)
        case RunFinishRequest():
            details: dict[str, str | int | bool] = {
                "op": "run_finish",
                "run": request.run,
                "caller": caller,
                "duration_ms": request.duration_ms,
            }
            if request.exit_code is not None:
                details["exit_code"] = request.exit_code
            if request.signal is not None:
                details["signal"] = request.signal
            core.request_tickets.append(core.intents.file(RUN_FINISH, details))
            return {}
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


def _run_prepare(core: Core, request: RunPrepareRequest, access: Access) -> dict[str, Any]:
    secrets = Secrets(core.domain())
    resolved: dict[str, SecretRef] = {}

    def value_of(label: str) -> str:
        found = resolved.get(label)
        if found is None:
            found = resolved[label] = secrets.find(label, elevated=access.elevated)
            _require_role(core, found, "reader")
        return secrets.value(found)

    env: dict[str, str] = {}
    for name, template in request.env.items():
        if MARKER.search(template):
            labels = {m.group(1): m.group(1) for m in MARKER.finditer(template)}
            env[name], _ = resolve_markers(template, labels, value_of)
        else:
            env[name] = value_of(template.strip())
    run = new_id()
    details: dict[str, str | int | bool] = {
        "op": "run_prepare",
        "run": run,
        "caller": access.caller.namespace,
        "program": os.path.basename(request.program)[:200],
        "variables": ",".join(sorted(env)),
        "credentials": ",".join(sorted({f.credential_id for f in resolved.values()})),
        "at": int(time.time()),
    }
    core.request_tickets.append(core.intents.file(RUN_INTENT, details))
    return {"run": run, "env": env}
