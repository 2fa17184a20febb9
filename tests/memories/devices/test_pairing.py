"""Pairing between two real stores: request, approve with the full fingerprint, join; every
refusal leaves both stores as they were."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memories.crypto import b64u_decode, b64u_encode
from memories.devices.pairing import (
    APPROVAL_PREFIX,
    REQUEST_PREFIX,
    approve,
    is_joining,
    issue_request,
    join,
    read_request,
)
from memories.errors import ConflictError, DeniedError, IntegrityError, UsageError
from memories.vault.policy import check_write
from tests.memories.devices.support import LOCAL_CONFIG, new_join_store, new_store, opened


@pytest.fixture
def desk(tmp_path: Path) -> Path:
    return new_store(tmp_path / "desk.db", "olga")


@pytest.fixture
def laptop(tmp_path: Path) -> Path:
    return new_join_store(tmp_path / "laptop.db")


def approver_of(path: Path) -> str:
    with opened(path) as v:
        return v.identity.device_fingerprint


def request_from(laptop: Path, approver: str, **kw: object) -> tuple[str, str]:
    with opened(laptop) as v:
        issued = issue_request(v.store, approver=approver, **kw)  # type: ignore[arg-type]
    return issued.text, issued.fingerprint


def seq_of(path: Path) -> int:
    with opened(path) as v:
        return v.store.seq


def test_a_personal_device_joins_and_is_allowed_in_every_shared_vault(
    desk: Path, laptop: Path
) -> None:
    text, print_ = request_from(laptop, approver_of(desk))
    assert text.startswith(REQUEST_PREFIX)
    with opened(desk) as v:
        request = read_request(text)
        assert request.fingerprint == print_
        approval = approve(v, request, confirmed_fingerprint=print_)
        me = v.identity
        personal = v.resolve_vault(None)
        device_only = v.resolve_vault("device")
    assert approval.startswith(APPROVAL_PREFIX)
    with opened(laptop) as v:
        joined = join(v.store, approval, local_config=LOCAL_CONFIG)
        assert not is_joining(v.store)
        assert joined.vaults == (personal.vault_id,)
        identity = v.identity
        assert identity.user_fingerprint == me.user_fingerprint
        assert identity.device_fingerprint != me.device_fingerprint
        names = {info.name: info for info in v.vaults()}
        assert names["personal"].id == personal.vault_id and names["personal"].role == "owner"
        assert names["device"].id != device_only.vault_id  # its own device-only vault
        record = v.resolve_vault(None)
        assert record.keys == personal.keys
        from memories.devices.pairing import vault_chain

        last = vault_chain(v.store, record)[-1]
        check_write(last, identity.user_fingerprint, identity.device_fingerprint)
        assert v.verify() == []
        saved = v.put(None, "memory", title="from the laptop", body="hello")
        view = v.get(saved.asset_id)
        assert view.content is not None and view.content.title == "from the laptop"
    with opened(desk) as v:
        assert v.verify() == []


def test_the_request_string_holds_no_private_key(desk: Path, laptop: Path) -> None:
    text, _ = request_from(laptop, approver_of(desk))
    raw = b64u_decode(text.removeprefix(REQUEST_PREFIX))
    with opened(laptop) as v:
        from memories.devices.pairing import _pairing

        pairing = _pairing(v.store)
        for secret in (pairing.device.private_bytes(), pairing.exchange.private_bytes()):
            assert bytes(secret) not in raw and b64u_encode(bytes(secret)) not in text
    with opened(desk) as v:
        user_key = b64u_encode(bytes(v.identity.user.private_bytes()))
        vault_key = b64u_encode(v.resolve_vault(None).keys[1])
        approval = approve(v, read_request(text), confirmed_fingerprint=_)
    assert user_key not in approval and vault_key not in approval


def test_a_mismatched_or_short_fingerprint_approves_nothing(desk: Path, laptop: Path) -> None:
    text, print_ = request_from(laptop, approver_of(desk))
    before = seq_of(desk)
    with opened(desk) as v:
        request = read_request(text)
        wrong = "sha256:" + ("0" if print_[7] != "0" else "1") + print_[8:]
        with pytest.raises(DeniedError, match="does not match"):
            approve(v, request, confirmed_fingerprint=wrong)
        with pytest.raises(UsageError, match="full"):
            approve(v, request, confirmed_fingerprint=print_[:23])
        with pytest.raises(UsageError, match="device-only"):
            approve(v, request, confirmed_fingerprint=print_, vault_refs=["device"])
    assert seq_of(desk) == before


def test_a_request_for_another_approver_is_refused(desk: Path, laptop: Path) -> None:
    text, print_ = request_from(laptop, "sha256:" + "ab" * 32)
    with opened(desk) as v, pytest.raises(DeniedError, match="another device"):
        approve(v, read_request(text), confirmed_fingerprint=print_)


def test_an_expired_request_is_refused_everywhere(desk: Path, laptop: Path) -> None:
    text, print_ = request_from(laptop, approver_of(desk), ttl=timedelta(minutes=1))
    later = datetime.now(UTC) + timedelta(minutes=2)
    with pytest.raises(DeniedError, match="expired"):
        read_request(text, at=later)
    with opened(desk) as v:
        request = read_request(text)
        with pytest.raises(DeniedError, match="expired"):
            approve(v, request, confirmed_fingerprint=print_, at=later)
        approval = approve(v, request, confirmed_fingerprint=print_)
    with opened(laptop) as v:
        with pytest.raises(DeniedError, match="expired"):
            join(v.store, approval, local_config=LOCAL_CONFIG, at=later)
        assert is_joining(v.store)


@pytest.mark.parametrize("where", [40, 120, -10])
def test_a_tampered_request_is_refused(desk: Path, laptop: Path, where: int) -> None:
    text, _ = request_from(laptop, approver_of(desk))
    raw = bytearray(b64u_decode(text.removeprefix(REQUEST_PREFIX)))
    raw[where] ^= 0x01
    with pytest.raises(IntegrityError):
        read_request(REQUEST_PREFIX + b64u_encode(bytes(raw)))
    with pytest.raises(UsageError):
        read_request("not a request")


def test_a_replayed_approval_is_refused(desk: Path, laptop: Path, tmp_path: Path) -> None:
    text, print_ = request_from(laptop, approver_of(desk))
    with opened(desk) as v:
        approval = approve(v, read_request(text), confirmed_fingerprint=print_)
    with opened(laptop) as v:
        join(v.store, approval, local_config=LOCAL_CONFIG)
        with pytest.raises(ConflictError):
            join(v.store, approval, local_config=LOCAL_CONFIG)
    # Another join-mode store cannot use it either: it is sealed to the first one's key.
    other = new_join_store(tmp_path / "other.db")
    request_from(other, approver_of(desk))
    with opened(other) as v:
        with pytest.raises(IntegrityError, match="another device"):
            join(v.store, approval, local_config=LOCAL_CONFIG)
        assert is_joining(v.store)


def test_a_tampered_approval_is_refused_and_nothing_changes(desk: Path, laptop: Path) -> None:
    text, print_ = request_from(laptop, approver_of(desk))
    with opened(desk) as v:
        approval = approve(v, read_request(text), confirmed_fingerprint=print_)
    raw = bytearray(b64u_decode(approval.removeprefix(APPROVAL_PREFIX)))
    raw[-80] ^= 0x01
    before = seq_of(laptop)
    with opened(laptop) as v:
        with pytest.raises(IntegrityError):
            join(v.store, APPROVAL_PREFIX + b64u_encode(bytes(raw)), local_config=LOCAL_CONFIG)
        with pytest.raises(UsageError):
            join(v.store, "memories-approval-v1:###", local_config=LOCAL_CONFIG)
        assert is_joining(v.store)
    assert seq_of(laptop) == before


def test_an_approval_from_an_unpinned_device_is_refused(
    desk: Path, laptop: Path, tmp_path: Path
) -> None:
    # The laptop pinned the desk; an approval signed by another store's device is refused even
    # though it is correctly sealed to the laptop.
    text, print_ = request_from(laptop, approver_of(desk))
    mallory = new_store(tmp_path / "mallory.db", "mallory")
    request = read_request(text)
    with opened(mallory) as v:
        forged = approve(
            v,
            type(request)(**{**request.__dict__, "approver": v.identity.device_fingerprint}),
            confirmed_fingerprint=print_,
        )
    with opened(laptop) as v:
        with pytest.raises(DeniedError, match="no pending join request"):
            join(v.store, forged, local_config=LOCAL_CONFIG)
        assert is_joining(v.store)


def test_a_store_that_is_not_joining_refuses_requests(desk: Path) -> None:
    with opened(desk) as v, pytest.raises(ConflictError):
        issue_request(v.store, approver="sha256:" + "ab" * 32)
