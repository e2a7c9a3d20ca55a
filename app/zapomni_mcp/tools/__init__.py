"""The MCP tools Zapomni offers."""

from zapomni_core import ZapomniCore
from zapomni_mcp.registry import ToolRegistry
from zapomni_mcp.tools.add_memory import AddMemoryTool
from zapomni_mcp.tools.get_stats import GetStatsTool
from zapomni_mcp.tools.search_memory import SearchMemoryTool


def build_registry(core: ZapomniCore) -> ToolRegistry:
    return ToolRegistry([AddMemoryTool(core), SearchMemoryTool(core), GetStatsTool(core)])


__all__ = ["build_registry"]
