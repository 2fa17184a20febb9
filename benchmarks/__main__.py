"""Run a benchmark module by name: ``python -m benchmarks journal`` or ``all``."""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from pathlib import Path

#: Short names for modules whose own name says which package they measure.
ALIASES = {"mcp": "memories_mcp"}


def _names() -> list[str]:
    here = Path(__file__).parent
    return sorted(m.name for m in pkgutil.iter_modules([str(here)]) if not m.name.startswith("_"))


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
        module = importlib.import_module(f"benchmarks.{name}")
        module.run(quick=args.quick)
    return 0


if __name__ == "__main__":
    sys.exit(main())
