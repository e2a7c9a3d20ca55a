"""The MCP tools Zapomni offers, one module each."""

from zapomni_core import ZapomniCore
from zapomni_mcp.registry import ToolCatalog, ToolRegistry
from zapomni_mcp.tools.add_memory import AddMemoryTool
from zapomni_mcp.tools.code import FindSymbolTool, GetCalleesTool, GetCallersTool
from zapomni_mcp.tools.delete_memory import DeleteMemoryTool
from zapomni_mcp.tools.files import IndexCodebaseTool, IngestPathTool
from zapomni_mcp.tools.find_updates import FindUpdatesTool
from zapomni_mcp.tools.get_memory import GetMemoryTool
from zapomni_mcp.tools.get_stats import GetStatsTool
from zapomni_mcp.tools.graph import BuildGraphTool, GetRelatedTool, GraphStatusTool
from zapomni_mcp.tools.imports import ImportMemoriesTool
from zapomni_mcp.tools.jobs import CancelJobTool, JobStatusTool, ListJobsTool
from zapomni_mcp.tools.list_memories import ListMemoriesTool
from zapomni_mcp.tools.search_memory import SearchMemoryTool
from zapomni_mcp.tools.update_memory import UpdateMemoryTool
from zapomni_mcp.tools.workspaces import DeleteWorkspaceTool, ListWorkspacesTool

TOOLS = (
    AddMemoryTool,
    SearchMemoryTool,
    GetMemoryTool,
    ListMemoriesTool,
    UpdateMemoryTool,
    DeleteMemoryTool,
    FindUpdatesTool,
    GetStatsTool,
    ListWorkspacesTool,
    DeleteWorkspaceTool,
    JobStatusTool,
    ListJobsTool,
    CancelJobTool,
    BuildGraphTool,
    GraphStatusTool,
    GetRelatedTool,
    IngestPathTool,
    IndexCodebaseTool,
    ImportMemoriesTool,
    FindSymbolTool,
    GetCallersTool,
    GetCalleesTool,
)


def build_registry(core: ZapomniCore, catalog: ToolCatalog | None = None) -> ToolRegistry:
    return ToolRegistry([tool(core) for tool in TOOLS], catalog)


__all__ = ["TOOLS", "SearchMemoryTool", "build_registry"]
