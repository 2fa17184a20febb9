"""Ephemeral ("burn") mode: while a flag file exists, every write path discards events.

The flag is a file so that it works across processes: starting it from one
agent's MCP server silences the intake and every other writer at once.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from urchin.errors import UrchinError
from urchin.event import format_timestamp, parse_timestamp

__all__ = ["FLAG_NAME", "Ephemeral", "EphemeralStatus"]

FLAG_NAME = "ephemeral.lock"


@dataclass(frozen=True, slots=True)
class EphemeralStatus:
    active: bool
    since: datetime | None = None

    def to_json(self) -> dict[str, object]:
        return {
            "active": self.active,
            "since": format_timestamp(self.since) if self.since else None,
        }


class Ephemeral:
    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / FLAG_NAME

    def is_active(self) -> bool:
        return self.path.exists()

    def status(self) -> EphemeralStatus:
        try:
            raw = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return EphemeralStatus(active=False)
        except OSError:
            return EphemeralStatus(active=True)
        return EphemeralStatus(active=True, since=_since(raw))

    def start(self) -> EphemeralStatus:
        """Turn ephemeral mode on; already on keeps the original start time.

        Raises:
            UrchinError: the flag file cannot be written.
        """
        current = self.status()
        if current.active:
            return current
        now = datetime.now(UTC)
        body = json.dumps({"since": format_timestamp(now)}) + "\n"
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            return self.status()
        except OSError as exc:
            raise UrchinError(
                f"cannot start ephemeral mode at {self.path}: {exc.strerror}"
            ) from exc
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(body)
        return EphemeralStatus(active=True, since=now)

    def end(self) -> bool:
        """Turn ephemeral mode off. Returns whether it was on.

        Raises:
            UrchinError: the flag file exists but cannot be removed.
        """
        try:
            self.path.unlink()
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise UrchinError(f"cannot end ephemeral mode at {self.path}: {exc.strerror}") from exc
        return True


def _since(raw: str) -> datetime | None:
    try:
        value = json.loads(raw).get("since")
        return parse_timestamp(value)
    except (ValueError, AttributeError, UrchinError):
        # Another implementation may leave the file empty; presence is what counts.
        return None
