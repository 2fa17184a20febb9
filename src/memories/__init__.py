"""memories: an end-to-end encrypted, signed, multi-device memory vault for AI agents."""

__all__: list[str] = []
__version__ = "0.1.0"
