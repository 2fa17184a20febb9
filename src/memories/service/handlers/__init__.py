"""One handler module per request area; each answers its area's closed union exhaustively."""
