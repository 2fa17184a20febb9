"""``memories mcp``: the vault served to AI clients over MCP, through the daemon.

The only importer of the MCP SDK in memories. It reaches the daemon only through
``memories.ipc.client`` with the client's grant token, and builds only the typed requests of
``memories.service.requests``; the daemon's ``authorize()`` decides what each grant allows.

Layout: ``server`` (the MCPServer, its tools and card resources; :func:`serve`) · ``tools``
(tool arguments → typed requests; :data:`~memories.mcp.tools.TOOL_REQUESTS`) · ``projection``
(what a client is shown: safe fields, short ids, bounded sizes, stored text marked as data) ·
``connection`` (the lazy, token-authenticated daemon link) · ``sdk`` (every reach into SDK
internals, checked by a test).

Nothing is imported here, so ``import memories.mcp`` costs nothing until a server is built.
"""

__all__: list[str] = []
