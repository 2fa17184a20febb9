"""Text rules shared across memories: what counts as a control character, one-line names."""

from __future__ import annotations

import re
from typing import Final

from memories.errors import UsageError

__all__ = ["CONTROL", "one_line"]

#: C0 and C1 controls, DEL and the Unicode line/paragraph separators: never in one-line text.
CONTROL: Final = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def one_line(value: str | None, what: str) -> str | None:
    """``value`` stripped, as a name is stored; None when absent or blank.

    Raises:
        UsageError: it holds control characters (the message names ``what``, not the value).
    """
    if value is None:
        return None
    text = value.strip()
    if CONTROL.search(text):
        raise UsageError(f"{what} contains control characters; use a single line of plain text")
    return text or None
