"""Secret operations through parse_request and Service.handle over a real store file."""

from __future__ import annotations

import base64
import json
import time
from typing import Any

import pyotp
import pytest

from memories.errors import ConflictError, DeniedError, NotFoundError, UsageError
from memories.service import WS_REMOTE, Caller, Grant, Service
from memories.service.requests.secrets import (
    CredentialCopyRequest,
    OtpCodeRequest,
    ProtectedCardRequest,
    ProtectSecretRequest,
    RunBindingsRequest,
    RunBindRequest,
    RunBoundRequest,
)
from tests.memories.service.support import call, put, sudo

CANARY = "canary-7f3a9c2e-token-value"
OTP_SECRET = base64.b32encode(b"12345678901234567890").decode("ascii")
MCP_ALL = Caller("mcp:all", grant=Grant(name="all", scope="allow_all"))


def audit(service: Service, limit: int = 100) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = call(service, {"op": "audit_list", "limit": limit})["entries"]
    return entries


def protected(svc: Service, /, **fields: Any) -> dict[str, Any]:
    request = {
        "op": "protected_card",
        "title": "GitHub token",
        "label": "github",
        "kind": "token",
        "secret": CANARY,
        "env": "GH_TOKEN",
        "service": "github.com",
        **fields,
    }
    return call(svc, {k: v for k, v in request.items() if v is not None})


@pytest.fixture
def elevated(service: Service) -> Service:
    sudo(service)
    return service


def everything_shown(service: Service, *refs: str) -> str:
    """Every view a caller can get of ``refs``, plus listings and the audit trail, as text."""
    shown: list[object] = [call(service, {"op": "list", "all_vaults": True}), audit(service)]
    for ref in refs:
        shown.append(call(service, {"op": "read", "ref": ref}))
        shown.append(call(service, {"op": "history", "ref": ref}))
        shown.append(call(service, {"op": "diff", "ref": ref}))
    return json.dumps(shown)


# -- declarations ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "model",
    [
        ProtectedCardRequest,
        OtpCodeRequest,
        CredentialCopyRequest,
        ProtectSecretRequest,
        RunBoundRequest,
        RunBindRequest,
        RunBindingsRequest,
    ],
)
def test_no_secret_operation_is_reachable_over_mcp_or_remote(model: Any) -> None:
    assert model.NEEDS.mcp is None
    assert model.NEEDS.remote is False


def test_mcp_and_remote_callers_are_refused_by_the_real_service(elevated: Service) -> None:
    protected(elevated)
    for caller in (MCP_ALL, WS_REMOTE):
        with pytest.raises(DeniedError):
            call(elevated, {"op": "otp_code", "ref": "github"}, caller)
        with pytest.raises(DeniedError):
            call(elevated, {"op": "credential_copy", "ref": "github"}, caller)


# -- protected cards ---------------------------------------------------------------------------


def test_protected_card_needs_elevation_and_writes_nothing_without_it(service: Service) -> None:
    before = len(audit(service))
    with pytest.raises(DeniedError, match="sudo"):
        protected(service)
    assert (
        call(service, {"op": "list", "all_vaults": True, "kind": "credential"})["summaries"] == []
    )
    assert audit(service)[0]["action"] == "protected_card.failed"
    assert len(audit(service)) == before + 1


def test_protected_card_commits_credential_and_card_together(elevated: Service) -> None:
    seq_before = audit(elevated, 1)[0]["seq"]
    made = protected(elevated)
    entries = [e for e in audit(elevated) if e["seq"] > seq_before]
    assert [e["action"] for e in entries] == ["secret.protect"]
    assert entries[0]["details"]["asset"] == made["card"]
    assert entries[0]["details"]["credential"] == made["credential"]
    card = call(elevated, {"op": "read", "ref": made["card"]})
    assert card["card_type"] == "protected_card"
    assert card["metadata"]["credential_ref"] == made["credential"]
    assert card["metadata"]["label"] == "github"
    assert card["metadata"]["env"] == "GH_TOKEN"
    credential = call(elevated, {"op": "read", "ref": made["credential"]})
    assert credential["kind"] == "credential" and credential["body"] is None


def test_the_secret_never_appears_in_views_listings_or_audit(elevated: Service) -> None:
    made = protected(elevated)
    assert CANARY not in everything_shown(elevated, made["card"], made["credential"])


def test_a_second_card_with_the_same_label_is_refused(elevated: Service) -> None:
    protected(elevated)
    with pytest.raises(ConflictError, match="label"):
        protected(elevated, title="Other")


def test_generic_put_cannot_attach_a_protected_reference(elevated: Service) -> None:
    credential = call(elevated, {"op": "credential_put", "title": "loose", "secret": CANARY})[
        "asset"
    ]
    with pytest.raises(UsageError, match="protected"):
        call(
            elevated,
            {
                "op": "card_put",
                "title": "sneaky",
                "card_type": "protected_card",
                "metadata": {"credential_ref": credential},
            },
        )
    with pytest.raises(UsageError, match="protected"):
        put(elevated, kind="card", card_type="protected_card", metadata={"credential_ref": "x1"})


def test_generic_update_cannot_retarget_but_keeps_the_reference(elevated: Service) -> None:
    made = protected(elevated)
    other = call(elevated, {"op": "credential_put", "title": "other", "secret": "another-value"})
    with pytest.raises(UsageError, match="credential reference"):
        call(
            elevated,
            {
                "op": "update",
                "ref": made["card"],
                "metadata": {"credential_ref": other["asset"], "label": "github"},
            },
        )
    call(
        elevated,
        {"op": "update", "ref": made["card"], "metadata": {"label": "gh", "kind": "token"}},
    )
    card = call(elevated, {"op": "read", "ref": made["card"]})
    assert card["metadata"]["credential_ref"] == made["credential"]
    assert card["metadata"]["label"] == "gh"


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"kind": "totp", "secret": "not base32!"}, "base32"),
        ({"kind": "totp", "secret": "otpauth://totp/x?secret=%%%"}, "malformed"),
        ({"kind": "env", "env": None}, "environment variable"),
        ({"label": "-bad"}, "label"),
        ({"kind": "token", "digits": 6}, "totp and hotp only"),
    ],
)
def test_bad_protected_input_is_refused_without_quoting_it(
    elevated: Service, fields: dict[str, Any], message: str
) -> None:
    with pytest.raises(UsageError) as caught:
        protected(elevated, **fields)
    assert message in caught.value.message
    assert CANARY not in caught.value.message and "%%%" not in caught.value.message
    for kind in ("credential", "card"):
        listed = call(elevated, {"op": "list", "all_vaults": True, "kind": kind})
        assert listed["summaries"] == []


# -- OTP ---------------------------------------------------------------------------------------


def test_totp_code_matches_the_rfc_algorithm_and_is_audited(elevated: Service) -> None:
    protected(elevated, kind="totp", secret=OTP_SECRET, label="bank", env=None)
    before = time.time()
    out = call(elevated, {"op": "otp_code", "ref": "bank"})
    after = time.time()
    assert out["type"] == "totp"
    totp = pyotp.TOTP(OTP_SECRET)
    assert out["code"] in {totp.at(int(before)), totp.at(int(after))}
    assert 1 <= out["seconds_left"] <= 30
    latest = audit(elevated, 1)[0]
    assert latest["action"] == "otp.deliver"
    assert latest["details"]["credential"] == out["credential"]
    assert out["code"] not in json.dumps(audit(elevated))


def test_otpauth_uri_is_imported_with_its_parameters(elevated: Service) -> None:
    totp = pyotp.TOTP(OTP_SECRET, digits=8, interval=60)
    uri = totp.provisioning_uri(name="ada", issuer_name="Bank")
    made = protected(elevated, kind="totp", secret=uri, label="bank", env=None, service=None)
    card = call(elevated, {"op": "read", "ref": made["card"]})
    assert card["metadata"]["service"] == "Bank" and card["metadata"]["account"] == "ada"
    out = call(elevated, {"op": "otp_code", "ref": made["card"]})
    assert len(out["code"]) == 8 and out["seconds_left"] <= 60


def test_hotp_counter_advances_in_the_commit_that_records_the_delivery(
    elevated: Service,
) -> None:
    made = protected(elevated, kind="hotp", secret=OTP_SECRET, label="token", env=None)
    codes = []
    for _ in range(3):
        codes.append(call(elevated, {"op": "otp_code", "ref": "token"})["code"])
        latest = audit(elevated, 1)[0]
        assert latest["action"] == "otp.advance"
        assert latest["details"]["intent"] == "delivery"
        assert latest["details"]["asset"] == made["credential"]
    assert codes == ["755224", "287082", "359152"]  # RFC 4226 counters 0, 1, 2
    assert call(elevated, {"op": "read", "ref": made["credential"]})["revisions"] == 4


def test_otp_needs_elevation_and_an_otp_card(service: Service) -> None:
    sudo(service)
    protected(service)
    with pytest.raises(UsageError, match="TOTP or HOTP"):
        call(service, {"op": "otp_code", "ref": "github"})
    with pytest.raises(NotFoundError):
        call(service, {"op": "otp_code", "ref": "nothing-here"})
    call(service, {"op": "lock"})
    call(service, {"op": "unlock", "password": "service test password"})
    with pytest.raises(DeniedError, match="elevation"):
        call(service, {"op": "otp_code", "ref": "github"})


# -- placeholders ------------------------------------------------------------------------------


def test_protect_secret_replaces_exact_matches_and_keeps_history(elevated: Service) -> None:
    note = put(elevated, title="deploy", body=f"export TOKEN={CANARY}\nagain: {CANARY}\n")
    out = call(
        elevated,
        {"op": "protect_secret", "ref": note["asset"], "label": "deploy-token", "secret": CANARY},
    )
    assert out["replaced"] == 2
    view = call(elevated, {"op": "read", "ref": note["asset"]})
    assert view["body"] == (
        "export TOKEN={{secret:deploy-token}}\nagain: {{secret:deploy-token}}\n"
    )
    old = call(elevated, {"op": "read", "ref": note["asset"], "revision": note["revision"]})
    assert CANARY in old["body"]  # signed history is not rewritten
    assert CANARY not in json.dumps(audit(elevated))


def test_generic_edit_carries_the_secrets_map_and_cannot_change_it(elevated: Service) -> None:
    note = put(elevated, title="deploy", body=f"token {CANARY}")
    out = call(
        elevated, {"op": "protect_secret", "ref": note["asset"], "label": "t", "secret": CANARY}
    )
    call(elevated, {"op": "update", "ref": note["asset"], "body": "token {{secret:t}} (rotated)"})
    vaults = elevated._core.domain()
    _, content = vaults.current_content(note["asset"])
    assert dict(content.secrets) == {"t": out["credential"]}
    with pytest.raises(UsageError, match="secret references"):
        vaults.update(note["asset"], secrets={"t": "0" * 32})
    with pytest.raises(UsageError, match="protected"):
        vaults.put(None, "memory", title="x", secrets={"t": out["credential"]})


def test_protect_secret_refuses_text_that_is_not_in_the_body(elevated: Service) -> None:
    note = put(elevated, title="deploy", body="nothing secret")
    with pytest.raises(UsageError, match="does not occur"):
        call(
            elevated, {"op": "protect_secret", "ref": note["asset"], "label": "t", "secret": CANARY}
        )
    assert call(elevated, {"op": "list", "kind": "credential"})["summaries"] == []
