"""Surfaces: the terminal CLI and the MCP server. Thin shells over services.app.App."""
