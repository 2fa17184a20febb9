"""Write the sealed-envelope vectors: ``python scripts/gen_envelope_vectors.py [DIR]``.

Writes ``envelope.json`` (known answers: fixed keys, ephemeral keys and nonces) and
``envelope_negative.json`` (envelopes every reader must refuse, Wycheproof style) into DIR
(default tests/vectors/). Every input is SHAKE-256("memories test vector/" + label), as in
tests/vectors/generate.py, so another implementation can rebuild the inputs from the labels.
"""

from __future__ import annotations

import hashlib
import json
import struct
import sys
from pathlib import Path

from memories.crypto.envelope import (
    SIGNATURE_CONTEXT,
    open_envelope,
    peek_envelope,
    seal_envelope_deterministic,
)
from memories.crypto.sign import ExchangeKey, SigningKey
from memories.errors import IntegrityError

VECTOR_DIR = Path(__file__).resolve().parent.parent / "tests" / "vectors"
_PREFIX = b"memories test vector/"


def fixed(label: str, length: int) -> bytes:
    """SHAKE-256("memories test vector/" + label), first ``length`` bytes."""
    return hashlib.shake_256(_PREFIX + label.encode("utf-8")).digest(length)


def _keys(label: str) -> tuple[SigningKey, ExchangeKey, ExchangeKey, bytes]:
    sender = SigningKey.from_private_bytes(fixed(f"{label}/sender", 32))
    recipient = ExchangeKey.from_private_bytes(fixed(f"{label}/recipient", 32))
    ephemeral = ExchangeKey.from_private_bytes(fixed(f"{label}/ephemeral", 32))
    return sender, recipient, ephemeral, fixed(f"{label}/nonce", 12)


_CASES: tuple[tuple[str, str, bytes], ...] = (
    ("short", "device.approval", b"hello, new device"),
    ("empty", "vault.key", b""),
    ("unicode", "member.invite", "Café ☕ — 日本語 😀".encode()),
    ("binary_4k", "vault.key", bytes(range(256)) * 16),
)


def build_known() -> dict[str, object]:
    cases = []
    for name, purpose, plaintext in _CASES:
        sender, recipient, ephemeral, nonce = _keys(f"envelope/{name}")
        sealed = seal_envelope_deterministic(
            sender,
            recipient.public_bytes(),
            plaintext,
            purpose=purpose,
            ephemeral=ephemeral,
            nonce=nonce,
        )
        opened = open_envelope(recipient, sealed, purpose=purpose, sender=sender.public_bytes())
        assert opened.plaintext == plaintext
        cases.append(
            {
                "name": name,
                "purpose": purpose,
                "sender_seed": bytes(sender.private_bytes()).hex(),
                "sender_public": sender.public_bytes().hex(),
                "recipient_private": bytes(recipient.private_bytes()).hex(),
                "recipient_public": recipient.public_bytes().hex(),
                "ephemeral_private": bytes(ephemeral.private_bytes()).hex(),
                "ephemeral_public": ephemeral.public_bytes().hex(),
                "nonce": nonce.hex(),
                "plaintext": plaintext.hex(),
                "envelope": sealed.hex(),
            }
        )
    return {
        "t": "memories.vectors.envelope",
        "v": 1,
        "layout": (
            "version(1)=01 || purpose_len(1) || purpose || sender Ed25519(32) || recipient "
            "X25519(32) || ephemeral X25519(32) || payload_len(4, BE) || payload || signature(64)"
        ),
        "key": (
            "HKDF-SHA256(ikm=X25519(ephemeral, recipient), salt=ephemeral||recipient, "
            "info='memories/v1/envelope/'||purpose, L=32)"
        ),
        "payload": (
            "01 || nonce(12) || AES-256-GCM(key, nonce, plaintext, "
            "AD=01||RFC8785({t:'memories.aad',v:1,purpose:'envelope',kind:purpose,"
            "sender,recipient,ephemeral as base64url}))"
        ),
        "signature": (
            "Ed25519(sender, 'memories envelope v1 signature' || 00 || all bytes before it)"
        ),
        "cases": cases,
    }


def _resign(blob: bytes, key: SigningKey) -> bytes:
    body = blob[:-64]
    return body + key.sign(SIGNATURE_CONTEXT + body)


def _offsets(blob: bytes) -> tuple[int, int, int, int]:
    """Where the sender, recipient, ephemeral key and payload length start."""
    at = 2 + blob[1]
    return at, at + 32, at + 64, at + 96


def build_negative() -> dict[str, object]:
    sender, recipient, ephemeral, nonce = _keys("envelope/negative")
    other_device = SigningKey.from_private_bytes(fixed("envelope/negative/other-device", 32))
    other_recipient = ExchangeKey.from_private_bytes(fixed("envelope/negative/other-recipient", 32))
    other_ephemeral = ExchangeKey.from_private_bytes(fixed("envelope/negative/other-ephemeral", 32))
    purpose = "device.approval"
    good = seal_envelope_deterministic(
        sender,
        recipient.public_bytes(),
        b"vault keys for the new device",
        purpose=purpose,
        ephemeral=ephemeral,
        nonce=nonce,
    )
    s_at, r_at, e_at, len_at = _offsets(good)

    def with_field(at: int, value: bytes) -> bytes:
        return good[:at] + value + good[at + len(value) :]

    payload_at = len_at + 4
    flipped = bytearray(good)
    flipped[payload_at + 20] ^= 0x01
    to_other = seal_envelope_deterministic(
        sender,
        other_recipient.public_bytes(),
        b"vault keys for the new device",
        purpose=purpose,
        ephemeral=ephemeral,
        nonce=nonce,
    )
    cases: list[tuple[str, str, bytes, ExchangeKey, str, bytes | None]] = [
        (
            "wrong_recipient",
            "opened with a key it was not sealed to",
            good,
            other_recipient,
            purpose,
            None,
        ),
        (
            "sealed_to_another_device",
            "sealed to another device's key",
            to_other,
            recipient,
            purpose,
            None,
        ),
        (
            "recipient_field_rewritten",
            "recipient field changed to ours, sender re-signed",
            _resign(to_other[:r_at] + recipient.public_bytes() + to_other[r_at + 32 :], sender),
            recipient,
            purpose,
            None,
        ),
        (
            "swapped_ephemeral",
            "another ephemeral key, signature not redone",
            with_field(e_at, other_ephemeral.public_bytes()),
            recipient,
            purpose,
            None,
        ),
        (
            "swapped_ephemeral_resigned",
            "another ephemeral key, re-signed by the real sender",
            _resign(with_field(e_at, other_ephemeral.public_bytes()), sender),
            recipient,
            purpose,
            None,
        ),
        (
            "low_order_ephemeral",
            "all-zero ephemeral key, re-signed by the real sender",
            _resign(with_field(e_at, bytes(32)), sender),
            recipient,
            purpose,
            None,
        ),
        ("truncated_by_one", "last byte removed", good[:-1], recipient, purpose, None),
        ("truncated_signature", "signature removed", good[:-64], recipient, purpose, None),
        ("truncated_header", "only the first 40 bytes", good[:40], recipient, purpose, None),
        ("empty", "no bytes at all", b"", recipient, purpose, None),
        ("trailing_byte", "one byte appended", good + b"\x00", recipient, purpose, None),
        (
            "trailing_bytes_length_fixed",
            "bytes appended to the payload, length and signature redone",
            _resign(
                good[:len_at]
                + struct.pack(">I", len(good) - 64 - payload_at + 3)
                + good[payload_at:-64]
                + b"\x00\x00\x00"
                + bytes(64),
                sender,
            ),
            recipient,
            purpose,
            None,
        ),
        (
            "resigned_by_other_device",
            "sender field and signature replaced by another device",
            _resign(with_field(s_at, other_device.public_bytes()), other_device),
            recipient,
            purpose,
            None,
        ),
        (
            "resigned_by_other_device_pinned",
            "as above, opened with the real sender pinned",
            _resign(with_field(s_at, other_device.public_bytes()), other_device),
            recipient,
            purpose,
            sender.public_bytes(),
        ),
        (
            "other_sender_pinned",
            "a good envelope, another sender pinned",
            good,
            recipient,
            purpose,
            other_device.public_bytes(),
        ),
        (
            "bad_signature",
            "one bit of the signature flipped",
            good[:-1] + bytes([good[-1] ^ 0x01]),
            recipient,
            purpose,
            None,
        ),
        (
            "payload_flipped_resigned",
            "one payload bit flipped, re-signed by the real sender",
            _resign(bytes(flipped), sender),
            recipient,
            purpose,
            None,
        ),
        ("wrong_purpose", "opened for another purpose", good, recipient, "vault.key", None),
        (
            "purpose_rewritten",
            "purpose changed to another of the same length, re-signed",
            _resign(good[:2] + b"device.approvaX" + good[2 + 15 :], sender),
            recipient,
            "device.approvax",
            None,
        ),
        (
            "unknown_version",
            "version byte 02, re-signed",
            _resign(b"\x02" + good[1:], sender),
            recipient,
            purpose,
            None,
        ),
    ]
    out = []
    for name, why, blob, key, expect_purpose, pinned in cases:
        try:
            open_envelope(key, blob, purpose=expect_purpose, sender=pinned)
        except IntegrityError:
            pass
        else:  # pragma: no cover - the generator refuses to publish a case that opens
            raise SystemExit(f"negative case {name} opened")
        case: dict[str, object] = {
            "name": name,
            "why": why,
            "envelope": blob.hex(),
            "recipient_private": bytes(key.private_bytes()).hex(),
            "purpose": expect_purpose,
        }
        if pinned is not None:
            case["sender_public"] = pinned.hex()
        out.append(case)
    peek_envelope(good)
    return {
        "t": "memories.vectors.envelope_negative",
        "v": 1,
        "rule": "every case must be refused; the valid envelope opens with recipient_private",
        "valid": {
            "envelope": good.hex(),
            "recipient_private": bytes(recipient.private_bytes()).hex(),
            "sender_public": sender.public_bytes().hex(),
            "purpose": purpose,
        },
        "cases": out,
    }


def build_all() -> dict[str, dict[str, object]]:
    return {"envelope.json": build_known(), "envelope_negative.json": build_negative()}


def render(document: dict[str, object]) -> str:
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    target = Path(args[0]) if args else VECTOR_DIR
    target.mkdir(parents=True, exist_ok=True)
    for name, document in build_all().items():
        (target / name).write_text(render(document), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
