"""Known-answer vectors for our own formats; rebuild with ``python -m tests.vectors.generate``."""
