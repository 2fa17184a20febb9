"""Sync objects and descriptors have one encoding each; anything else is refused."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memories.crypto import b64u_encode, canonical_bytes
from memories.errors import IntegrityError
from memories.sync.objects import RevisionObject


@settings(max_examples=60, deadline=None)
@given(
    header=st.binary(max_size=300),
    chunks=st.lists(st.binary(max_size=200), max_size=5),
)
def test_a_revision_object_is_written_in_its_one_canonical_form(
    header: bytes, chunks: list[bytes]
) -> None:
    obj = RevisionObject(header, tuple(chunks))
    doc = {
        "t": "memories.sync.object",
        "v": 1,
        "type": "revision",
        "header": b64u_encode(header),
        "chunks": [b64u_encode(c) for c in chunks],
    }
    assert obj.to_bytes() == canonical_bytes(doc)
    assert RevisionObject.from_bytes(obj.to_bytes()) == obj
    spaced = json.dumps(doc).encode()  # the same object, another spelling: refused
    with pytest.raises(IntegrityError):
        RevisionObject.from_bytes(spaced)


def test_a_revision_header_with_an_escaped_lone_surrogate_is_refused_as_not_canonical() -> None:
    from memories.vault import LocalIdentity
    from memories.vault.revision import REVISION_TAG

    certificate = LocalIdentity.generate().certificate.to_dict()
    body = {
        "t": REVISION_TAG,
        "v": 1,
        "vault": "0" * 32,
        "asset": "0" * 32,
        "kind": "memory",
        "parents": [],
        "policy": "sha256:" + "0" * 64,
        "epoch": 1,
        "tombstone": False,
        "key": "AA",
        "nonce": "\ud800",
        "chunks": 0,
        "size": 0,
        "ciphertext": "sha256:" + "0" * 64,
        "created_at": "2026-01-01T00:00:00.000Z",
        "certificate": certificate,
    }
    header = json.dumps({"revision": body, "signature": "AA"}, sort_keys=True).encode()
    with pytest.raises(IntegrityError):
        RevisionObject(header, ()).revision()
