"""The CLI fixtures (a real daemon per test) for the connect tests."""

from tests.memories.cli.conftest import memories, store  # noqa: F401 - fixtures
