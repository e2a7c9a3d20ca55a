"""The HTTP adapter: `zapomni serve --http`, MCP Streamable HTTP with bearer tokens, limits, health and metrics.

It serves the MCP server of zapomni_mcp (the same tools, resources and errors as stdio) through the
SDK's stateless Streamable HTTP app, behind the checks a network listener needs
(docs/decisions/0019-http-transport.md).
"""
