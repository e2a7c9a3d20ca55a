"""The engine on a real embedded FalkorDB with the Ollama embedder (served by the fake Ollama)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakes.ollama_server import FakeOllama
from tests.helpers import open_core
from zapomni_core import ConfigurationError, Settings
from zapomni_core.memories.requests import AddMemoryRequest, SearchRequest

pytestmark = pytest.mark.anyio


@pytest.fixture
def fake() -> Iterator[FakeOllama]:
    with FakeOllama(models=["nomic-embed-text"]) as server:
        yield server


def ollama_settings(data_dir: Path, fake: FakeOllama) -> Settings:
    return Settings.from_variables(
        ZAPOMNI_DATA_DIR=data_dir, ZAPOMNI_EMBEDDER="ollama", OLLAMA_HOST=fake.url, LOG_LEVEL="WARNING"
    )


async def test_add_and_search_with_ollama_embeddings(data_dir: Path, fake: FakeOllama) -> None:
    memories = {
        "bread": "Sourdough bread needs a lively starter and a long, slow rise before baking.",
        "k8s": "The Kubernetes cluster autoscaler adds nodes when pods cannot be scheduled.",
        "tea": "Green tea should steep for two minutes in water just below boiling.",
    }
    async with open_core(ollama_settings(data_dir, fake)) as (core, info):
        assert info.embedder == "ollama:nomic-embed-text"
        assert info.dimension == 768
        ids = {}
        for key, text in memories.items():
            result = await core.memories.add(
                AddMemoryRequest.model_validate({"text": text, "metadata": {"tags": [key]}})
            )
            assert result.chunks_created == 1
            ids[key] = result.memory_id

        found = await core.memories.search(SearchRequest(query="how long should sourdough bread rise", limit=3))
        assert found.count == len(found.results) >= 1
        assert found.results[0].memory_id == ids["bread"]
        assert found.results[0].text == memories["bread"]
        assert found.results[0].tags == ["bread"]

        found = await core.memories.search(SearchRequest(query="kubernetes nodes for pods", limit=1))
        assert [hit.memory_id for hit in found.results] == [ids["k8s"]]

        stats = await core.workspaces.stats()
        assert stats.embedder == "ollama:nomic-embed-text"
        assert stats.embedding_dimension == 768
        assert stats.total_memories == 3

    # The documents went out as documents and the queries as queries, over real HTTP.
    inputs = [text for r in fake.embed_requests for text in r.body["input"]]
    assert f"search_document: {memories['tea']}" in inputs
    assert "search_query: kubernetes nodes for pods" in inputs


async def test_a_store_built_with_onnx_refuses_ollama(data_dir: Path, fake: FakeOllama) -> None:
    onnx = Settings.from_variables(ZAPOMNI_DATA_DIR=data_dir, LOG_LEVEL="WARNING")
    text = "The spare key to the shed is under the blue flower pot."
    async with open_core(onnx) as (core, info):
        assert info.embedder.startswith("onnx:")
        added = await core.memories.add(AddMemoryRequest.model_validate({"text": text}))

    with pytest.raises(ConfigurationError) as caught:
        async with open_core(ollama_settings(data_dir, fake)):
            pytest.fail("open_core must refuse a store built with another embedder")

    message = str(caught.value)
    assert "onnx:all-MiniLM-L6-v2" in message and "384" in message
    assert "ollama:nomic-embed-text" in message and "768" in message
    assert "re-embed" in message and "ZAPOMNI_EMBEDDER" in message

    # Refusing changed nothing: the original embedder still opens the store and finds the memory.
    async with open_core(onnx) as (core, info):
        assert info.embedder.startswith("onnx:")
        stats = await core.workspaces.stats()
        assert stats.total_memories == 1
        found = await core.memories.search(SearchRequest(query="where is the shed key", limit=1))
        assert [hit.memory_id for hit in found.results] == [added.memory_id]
