"""Who is writing: the account and device stamped on events. Informational only."""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass

from urchin.event import Actor

__all__ = ["Identity"]


@dataclass(frozen=True, slots=True)
class Identity:
    account: str
    device: str

    @classmethod
    def resolve(cls, env: Mapping[str, str] | None = None) -> Identity:
        """Resolve the account and device from the environment.

        account: URCHIN_ACCOUNT → USER → "unknown"; device: URCHIN_DEVICE → hostname → "unknown".
        """
        env = os.environ if env is None else env
        account = _first(env.get("URCHIN_ACCOUNT"), env.get("USER"))
        device = _first(env.get("URCHIN_DEVICE"), _hostname())
        return cls(account=account, device=device)

    def actor(self, workspace: str | None = None) -> Actor:
        return Actor(account=self.account, device=self.device, workspace=workspace)


def _hostname() -> str | None:
    try:
        return socket.gethostname()
    except OSError:
        return None


def _first(*candidates: str | None) -> str:
    for value in candidates:
        if value and value.strip():
            return value.strip()
    return "unknown"
