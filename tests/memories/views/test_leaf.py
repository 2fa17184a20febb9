"""The views package is a leaf: front ends load it without the domain, storage or crypto."""

from __future__ import annotations

import subprocess
import sys

import memories.views


def test_importing_views_loads_no_vault_store_or_crypto_module() -> None:
    probe = (
        "import sys, memories.views\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[:2] in "
        "(['memories', 'vault'], ['memories', 'store'], ['memories', 'crypto']))\n"
        "print(','.join(heavy))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert result.stdout.strip() == ""


def test_views_export_what_they_declare() -> None:
    assert all(hasattr(memories.views, name) for name in memories.views.__all__)
