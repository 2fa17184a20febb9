"""Benchmarks: ``python -m benchmarks NAME`` prints JSON lines with a same-run baseline ratio."""

from __future__ import annotations

import json
import sys

__all__ = ["report"]


def report(
    bench: str,
    metric: str,
    value: float,
    unit: str,
    baseline: float | None = None,
    *,
    higher_is_better: bool = True,
    **extra: object,
) -> dict[str, object]:
    """Print one result line. ``ratio`` is value/baseline (throughput) or baseline/value (time),
    so a ratio above 1 always means "better than the baseline"."""
    ratio = None
    if baseline:
        ratio = value / baseline if higher_is_better else (baseline / value if value else None)
    line: dict[str, object] = {
        "bench": bench,
        "metric": metric,
        "value": round(value, 4),
        "unit": unit,
        "baseline": None if baseline is None else round(baseline, 4),
        "ratio": None if ratio is None else round(ratio, 4),
        **extra,
    }
    sys.stdout.write(json.dumps(line) + "\n")
    sys.stdout.flush()
    return line
