"""The committed envelope vectors: reproducible, open by the documented recipe written with the
primitives directly (as another implementation would), and every negative case is refused."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import rfc8785
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from memories.crypto import b64u_encode
from memories.crypto.envelope import OPEN_FAILED, open_envelope
from memories.crypto.sign import ExchangeKey
from memories.errors import IntegrityError

REPO = Path(__file__).resolve().parents[3]
VECTORS = REPO / "tests" / "vectors"
NAMES = ("envelope.json", "envelope_negative.json")


def load(name: str) -> Any:
    return json.loads((VECTORS / name).read_text(encoding="utf-8"))


def test_generator_reproduces_the_committed_files(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, str(REPO / "scripts" / "gen_envelope_vectors.py"), str(tmp_path)],
        cwd=REPO,
        check=True,
        timeout=120,
    )
    for name in NAMES:
        assert (tmp_path / name).read_bytes() == (VECTORS / name).read_bytes()


def _open_independently(case: dict[str, str]) -> bytes:
    """The recipe in the vector file's header, with the primitives only."""
    blob = bytes.fromhex(case["envelope"])
    assert blob[0] == 1
    purpose = blob[2 : 2 + blob[1]]
    at = 2 + blob[1]
    sender, recipient, ephemeral = (
        blob[at : at + 32],
        blob[at + 32 : at + 64],
        blob[at + 64 : at + 96],
    )
    (length,) = struct.unpack(">I", blob[at + 96 : at + 100])
    payload = blob[at + 100 : at + 100 + length]
    signature = blob[at + 100 + length :]
    assert len(signature) == 64
    Ed25519PublicKey.from_public_bytes(sender).verify(
        signature, b"memories envelope v1 signature\x00" + blob[:-64]
    )
    private = X25519PrivateKey.from_private_bytes(bytes.fromhex(case["recipient_private"]))
    shared = private.exchange(X25519PublicKey.from_public_bytes(ephemeral))
    key = HKDF(
        hashes.SHA256(), 32, salt=ephemeral + recipient, info=b"memories/v1/envelope/" + purpose
    ).derive(shared)
    aad = rfc8785.dumps(
        {
            "t": "memories.aad",
            "v": 1,
            "purpose": "envelope",
            "kind": purpose.decode(),
            "sender": b64u_encode(sender),
            "recipient": b64u_encode(recipient),
            "ephemeral": b64u_encode(ephemeral),
        }
    )
    assert payload[0] == 1
    return AESGCM(key).decrypt(payload[1:13], payload[13:], b"\x01" + aad)


@pytest.mark.parametrize("index", range(4))
def test_known_answers_open_both_ways(index: int) -> None:
    case = load("envelope.json")["cases"][index]
    plaintext = bytes.fromhex(case["plaintext"])
    assert _open_independently(case) == plaintext
    recipient = ExchangeKey.from_private_bytes(bytes.fromhex(case["recipient_private"]))
    opened = open_envelope(
        recipient,
        bytes.fromhex(case["envelope"]),
        purpose=case["purpose"],
        sender=bytes.fromhex(case["sender_public"]),
    )
    assert opened.plaintext == plaintext
    assert (
        bytes.fromhex(case["envelope"])[-64 - 12 - 16 - len(plaintext) - 1 :][1:13].hex()
        == (case["nonce"])
    )


def test_the_valid_twin_of_the_negative_cases_opens() -> None:
    valid = load("envelope_negative.json")["valid"]
    recipient = ExchangeKey.from_private_bytes(bytes.fromhex(valid["recipient_private"]))
    open_envelope(
        recipient,
        bytes.fromhex(valid["envelope"]),
        purpose=valid["purpose"],
        sender=bytes.fromhex(valid["sender_public"]),
    )


NEGATIVE = load("envelope_negative.json")["cases"]


@pytest.mark.parametrize("case", NEGATIVE, ids=[c["name"] for c in NEGATIVE])
def test_negative_cases_are_refused_with_one_message(case: dict[str, str]) -> None:
    recipient = ExchangeKey.from_private_bytes(bytes.fromhex(case["recipient_private"]))
    pinned = bytes.fromhex(case["sender_public"]) if "sender_public" in case else None
    with pytest.raises(IntegrityError) as caught:
        open_envelope(
            recipient, bytes.fromhex(case["envelope"]), purpose=case["purpose"], sender=pinned
        )
    assert str(caught.value) == OPEN_FAILED


def test_negative_set_covers_the_required_cases() -> None:
    names = {case["name"] for case in NEGATIVE}
    assert {
        "wrong_recipient",
        "swapped_ephemeral",
        "swapped_ephemeral_resigned",
        "truncated_by_one",
        "trailing_byte",
        "resigned_by_other_device",
    } <= names
