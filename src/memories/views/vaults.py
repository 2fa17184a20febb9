"""What the service answers about vaults."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["VaultInfo"]


@dataclass(frozen=True)
class VaultInfo:
    id: str
    name: str
    created_at: str
    local: bool  # device-only: never synchronized or exported
    personal: bool
    epoch: int
    role: str  # this user's role in the current policy, "none" when not a member

    def to_dict(self) -> dict[str, object]:
        return {
            "id": self.id,
            "name": self.name,
            "created_at": self.created_at,
            "local": self.local,
            "personal": self.personal,
            "epoch": self.epoch,
            "role": self.role,
        }
