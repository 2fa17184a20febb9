"""Module attributes imported on first use (a module-level ``__getattr__``, PEP 562).

A package that re-exports many names can list where each one lives instead of importing them
all: ``from package import Name`` then loads only ``Name``'s module. Type checkers still see
the names through the package's ``if TYPE_CHECKING:`` imports.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_attributes"]


def lazy_attributes(package: str, defined_in: Mapping[str, str]) -> Callable[[str], Any]:
    """The ``__getattr__`` for module ``package``: ``defined_in`` maps each name to the module
    that defines it (absolute, or relative to ``package`` when it starts with a dot). A name
    found once is kept as an ordinary attribute of ``package``.

    The returned function raises ``AttributeError`` for a name ``defined_in`` does not list.
    """

    def __getattr__(name: str) -> Any:
        where = defined_in.get(name)
        if where is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(where, package), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
