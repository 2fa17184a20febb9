"""``python -m memories`` runs the command line (the daemon launcher uses it)."""

from memories.cli import main

main()
