"""Zapomni's web console: browse, search, correct and forget memories, watch jobs, see the knowledge graph.

An adapter like the MCP server: it calls the engine (`zapomni_core`) with the same request models and
shows its replies as server-rendered pages, behind the same tokens and roles. Every asset ships in
`static/` (no network at run time). `console_app(core)` serves it alone; `console_routes(core)` mounts
it into another Starlette app.
"""

from zapomni_console.app import console_app, console_routes
from zapomni_console.limits import Limits

__all__ = ["Limits", "console_app", "console_routes"]
