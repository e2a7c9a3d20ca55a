"""Operations cover every workspace: backup and restore (one snapshot of every graph), and re-embedding."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fakes.ollama_server import FakeOllama
from tests.helpers import open_core
from tests.integration.test_reembed import ollama_settings, run_reembed
from zapomni_core import Settings
from zapomni_core.memories.requests import AddMemoryRequest, SearchRequest
from zapomni_core.workspaces.requests import DeleteWorkspaceRequest, StatsRequest
from zapomni_ops.backups import make_backup, restore_backup

pytestmark = pytest.mark.anyio


async def workspace_counts(settings: Settings) -> dict[str, int]:
    async with open_core(settings) as (core, _info):
        return {w.name: w.memories for w in (await core.workspaces.list()).workspaces}


@pytest.mark.own_database
async def test_a_restore_brings_back_every_workspace(settings: Settings) -> None:
    async with open_core(settings) as (core, _info):
        for text in ("Default fact one.", "Default fact two."):
            await core.memories.add(AddMemoryRequest(text=text))
        for text in ("Falcon launches in May.", "Falcon budget is frozen."):
            await core.memories.add(AddMemoryRequest(text=text, workspace="falcon"))
    backup = make_backup(settings).result.path

    async with open_core(settings) as (core, _info):
        await core.workspaces.delete(DeleteWorkspaceRequest(name="falcon", confirm="falcon"))
        await core.memories.add(AddMemoryRequest(text="Written after the backup."))
    assert await workspace_counts(settings) == {"default": 3}

    restore_backup(settings, backup.name)
    assert await workspace_counts(settings) == {"default": 2, "falcon": 2}
    async with open_core(settings) as (core, _info):
        found = await core.memories.search(SearchRequest(query="when does Falcon launch?", workspace="falcon"))
        assert found.results[0].text == "Falcon launches in May."
        assert not (await core.memories.search(SearchRequest(query="Falcon launch", mode="keyword"))).results


@pytest.mark.own_database
async def test_a_reembed_moves_every_workspace(data_dir: Path, settings: Settings) -> None:
    async with open_core(settings) as (core, _info):
        await core.memories.add(AddMemoryRequest(text="Sourdough needs a lively starter."))
        await core.memories.add(AddMemoryRequest(text="Falcon launches in May.", workspace="falcon"))
    with FakeOllama(models=["nomic-embed-text"]) as fake:
        target = ollama_settings(data_dir, fake)
        report = await run_reembed(target, batch_size=8)
        assert (report.chunks, report.embedded) == (2, 2)
        async with open_core(target) as (core, info):
            assert info.dimension == 768
            found = await core.memories.search(SearchRequest(query="Falcon launch", workspace="falcon", mode="vector"))
            assert [hit.text for hit in found.results][:1] == ["Falcon launches in May."]
            assert (await core.workspaces.stats(StatsRequest(workspace="falcon"))).total_memories == 1
