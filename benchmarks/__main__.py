"""Run a benchmark module by name: ``python -m benchmarks journal`` or ``all``."""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import sys
import tempfile
from pathlib import Path

#: Short names for modules whose own name says which package they measure.
ALIASES = {"mcp": "memories_mcp"}


def _names() -> list[str]:
    here = Path(__file__).parent
    return sorted(m.name for m in pkgutil.iter_modules([str(here)]) if not m.name.startswith("_"))


def _throwaway_home() -> tempfile.TemporaryDirectory[str]:
    """Point HOME and the XDG folders at a temporary folder: whatever a benchmark forgets to
    isolate (a store's second anchor, a client config) lands there, never in the real home."""
    home = tempfile.TemporaryDirectory(prefix="memories-bench-home-")
    os.environ["HOME"] = home.name
    for name, sub in (
        ("XDG_DATA_HOME", ".local/share"),
        ("XDG_STATE_HOME", ".local/state"),
        ("XDG_CONFIG_HOME", ".config"),
        ("XDG_CACHE_HOME", ".cache"),
    ):
        os.environ[name] = os.path.join(home.name, sub)
    return home


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    shown = ", ".join(f"{n} ({ALIASES[n]})" if n in ALIASES else n for n in [*ALIASES, *_names()])
    parser.add_argument("name", help=f"one of: all, {shown}")
    parser.add_argument("--quick", action="store_true", help="smaller sizes, for a smoke run")
    args = parser.parse_args()
    names = _names() if args.name == "all" else [ALIASES.get(args.name, args.name)]
    for name in names:
        if name not in _names():
            parser.error(f"unknown benchmark {name!r}")
    with _throwaway_home():
        for name in names:
            module = importlib.import_module(f"benchmarks.{name}")
            module.run(quick=args.quick)
    return 0


if __name__ == "__main__":
    sys.exit(main())
