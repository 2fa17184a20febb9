"""The long-running memories process and how front ends reach it.

Layout:

- ``main`` — the composition root: builds the service and serves it over local IPC.
- ``launcher`` — front-end side: find, start and stop the daemon.

Nothing is re-exported here on purpose: the CLI imports ``launcher`` alone so that commands
which only talk to a running daemon never load the service, store or crypto code.
"""

from __future__ import annotations

__all__: list[str] = []
