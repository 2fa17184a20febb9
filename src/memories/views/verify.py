"""What a vault verification reports: one :class:`Problem` per damaged record.

A problem names where it is (vault, asset, revision: ids only) and what is wrong, in words that
never quote content, titles, keys or raw stored bytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeAlias

__all__ = ["PROBLEM_KINDS", "Problem", "ProblemKind"]

ProblemKind: TypeAlias = Literal[
    "record",  # a vault, asset, device-state or identity entry is missing or malformed
    "identity",  # this device's identity or its certificate does not verify
    "certificate",  # a device certificate inside a policy or revision does not verify
    "policy_missing",  # a policy entry the chain names is not stored (or cannot be read)
    "policy_mismatch",  # a stored policy entry is not the one the chain names, or is malformed
    "policy_signature",  # a policy entry's signature does not verify
    "policy_chain",  # the chain is not linear, lost revocations, or a change lacked authority
    "epoch",  # an epoch key is missing, or the vault's epoch disagrees with its policy
    "revision_missing",  # a revision an asset refers to is not stored (or cannot be read)
    "revision_mismatch",  # a stored revision is not the one its id names, or is malformed
    "revision_signature",  # a revision's signature does not verify
    "revision_policy",  # a revision names an unknown policy or was written without authority
    "parent_missing",  # a parent a revision names is not stored (or cannot be read)
    "content",  # a revision's chunks are missing or do not decrypt and authenticate
    "heads",  # an asset's recorded heads or summary disagree with its revision DAG
    "link",  # a link points at an asset that does not exist or is in another vault
]
PROBLEM_KINDS: tuple[ProblemKind, ...] = (
    "record",
    "identity",
    "certificate",
    "policy_missing",
    "policy_mismatch",
    "policy_signature",
    "policy_chain",
    "epoch",
    "revision_missing",
    "revision_mismatch",
    "revision_signature",
    "revision_policy",
    "parent_missing",
    "content",
    "heads",
    "link",
)


@dataclass(frozen=True)
class Problem:
    """One thing verification found wrong."""

    kind: ProblemKind
    vault: str | None
    asset: str | None
    revision: str | None
    message: str

    def to_dict(self) -> dict[str, object]:
        """JSON form."""
        return {
            "kind": self.kind,
            "vault": self.vault,
            "asset": self.asset,
            "revision": self.revision,
            "message": self.message,
        }
