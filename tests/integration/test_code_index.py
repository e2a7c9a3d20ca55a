"""index_codebase on the real store: symbols, the call graph checked by hand (tests/unit/test_code_parsing.py
has the fixture's full facts), code search with file and lines, and incremental re-indexing."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.helpers import graph_client, open_core
from zapomni_core import Settings, ZapomniCore
from zapomni_core.code.requests import FindSymbolRequest, SymbolRequest
from zapomni_core.errors import NotFound
from zapomni_core.files.requests import IndexCodebaseRequest
from zapomni_core.graph.requests import GetRelatedRequest
from zapomni_core.jobs import JobInfo, JobStatusRequest
from zapomni_core.memories.requests import SearchFilters, SearchRequest

pytestmark = pytest.mark.anyio

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "code"


@pytest.fixture
async def code_core(tmp_path: Path, data_dir: Path) -> AsyncIterator[ZapomniCore]:
    settings = Settings.from_variables(
        ZAPOMNI_DATA_DIR=data_dir, LOG_LEVEL="WARNING", ZAPOMNI_ALLOWED_ROOTS=str(tmp_path)
    )
    async with open_core(settings) as (core, _info):
        yield core


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "shop-project"
    shutil.copytree(FIXTURES / "python", root)
    (root / "generated").mkdir()
    (root / "generated" / "big_table.py").write_text("def lookup():\n    return 42\n")
    (root / ".gitignore").write_text("generated/\n")
    (root / "shop" / "__init__.py").write_text("\n")  # an empty package marker: nothing to remember, no error
    return root


async def index(core: ZapomniCore, path: Path) -> JobInfo:
    queued = await core.files.index_codebase(IndexCodebaseRequest(path=str(path)))
    info = await core.jobs.status(JobStatusRequest(job_id=queued.job_id, wait_s=50))
    assert info.state == "completed", info
    return info


async def names(core: ZapomniCore, symbol: str, callers: bool = True) -> set[str]:
    ask = core.code.callers if callers else core.code.callees
    return {s.qualified_name for s in (await ask(SymbolRequest(symbol=symbol))).symbols}


async def test_a_codebase_becomes_symbols_a_call_graph_and_searchable_chunks(
    code_core: ZapomniCore, project: Path
) -> None:
    info = await index(code_core, project)
    assert (info.counts["files"], info.counts["added"], info.counts["empty"]) == (5, 4, 1)  # generated/ is ignored
    assert info.counts["calls"] == 11 and info.counts["inherits"] == 1 and info.counts["imports"] == 4

    assert await names(code_core, "shop.base.validate") == {"shop.models.Order.total", "shop.service.configure"}
    assert await names(code_core, "place", callers=False) == {
        "shop.service.OrderService.build",
        "shop.service.OrderService.place.log",
        "shop.service.render",
    }
    found = (await code_core.code.find(FindSymbolRequest(name="make ordr"))).symbols
    assert found[0].qualified_name == "shop.models.make_order" and found[0].path == str(project / "shop/models.py")
    assert (found[0].line_start, found[0].line_end) == (19, 20)
    with pytest.raises(NotFound, match="make_order"):
        await code_core.code.callers(SymbolRequest(symbol="make_ordr"))

    hits = (
        await code_core.memories.search(
            SearchRequest(query="render an entity's label as JSON", filters=SearchFilters(kind="code"), limit=3)
        )
    ).results
    render = next(h for h in hits if h.section == "shop.service.render")
    assert (render.kind, render.source, render.line_start, render.line_end) == (
        "code",
        str(project / "shop/service.py"),
        7,
        8,
    )
    assert render.text.startswith("def render(entity: Entity) -> str:")

    related = await code_core.graph.related(GetRelatedRequest(entity="OrderService"))
    (order_service,) = related.code
    assert {s.qualified_name for s in order_service.callers} == {"shop.cli.main"}
    assert {s.name for s in order_service.contains} == {"__init__", "build", "place"}


async def test_re_indexing_follows_edits_and_deletions_through_the_whole_call_graph(
    code_core: ZapomniCore, project: Path, data_dir: Path
) -> None:
    await index(code_core, project)
    assert (await index(code_core, project)).counts["unchanged"] == 4

    cli = project / "shop" / "cli.py"
    cli.write_text(cli.read_text().replace("    service = OrderService()\n    service.place(1)\n", "    pass\n"))
    (project / "shop" / "base.py").unlink()
    info = await index(code_core, project)
    assert (info.counts["updated"], info.counts["removed"], info.counts["unchanged"]) == (1, 1, 2)
    assert await names(code_core, "shop.service.OrderService") == set()
    with pytest.raises(NotFound):
        await code_core.code.callers(SymbolRequest(symbol="shop.base.validate"))
    async with graph_client(data_dir) as client:
        left = await client.ro_query("MATCH (n) WHERE n.path ENDS WITH 'base.py' RETURN count(n)")
        inherits = await client.ro_query("MATCH ()-[r:INHERITS_FROM]->() RETURN count(r)")
        files = await client.ro_query("MATCH (f:File) RETURN count(f)")
    assert (left[0][0], inherits[0][0], files[0][0]) == (0, 0, 3)
