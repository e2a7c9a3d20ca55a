"""OllamaEmbedder against a real local HTTP server that speaks Ollama's API (tests/fakes)."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Iterator

import numpy as np
import pytest
from structlog.testing import capture_logs

from tests.fakes.ollama_server import FakeOllama
from zapomni_core.embedders.ollama import OllamaEmbedder
from zapomni_core.errors import EmbedderUnavailable

pytestmark = pytest.mark.anyio

NOMIC = "nomic-embed-text"
PLAIN = "all-minilm"


@pytest.fixture
def fake() -> Iterator[FakeOllama]:
    with FakeOllama(models=[NOMIC, PLAIN]) as server:
        yield server


@pytest.fixture
async def embedder(fake: FakeOllama) -> AsyncIterator[OllamaEmbedder]:
    instance = OllamaEmbedder(host=fake.url, model=NOMIC, batch_size=2, retries=2, backoff_s=0.01)
    await instance.start()
    fake.clear()  # tests look at their own requests, not the start-up probe
    yield instance
    await instance.aclose()


def closed_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def cosine(a: list[float], b: list[float]) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


async def test_start_learns_dimension_from_a_real_request(fake: FakeOllama) -> None:
    embedder = OllamaEmbedder(host=fake.url + "/", model=NOMIC)
    try:
        with pytest.raises(RuntimeError, match="start"):
            _ = embedder.dimension
        await embedder.start()
        assert embedder.dimension == 768
        assert embedder.name == "ollama:nomic-embed-text"
        assert embedder.max_tokens == 8192
        (probe,) = fake.embed_requests
        assert probe.method == "POST"
        assert probe.body["model"] == NOMIC
        assert isinstance(probe.body["input"], list) and len(probe.body["input"]) == 1
    finally:
        await embedder.aclose()


async def test_documents_are_batched_and_returned_in_order(fake: FakeOllama, embedder: OllamaEmbedder) -> None:
    texts = [f"document number {word}" for word in ("alpha", "bravo", "charlie", "delta", "echo")]
    vectors = await embedder.embed_documents(texts)

    sent = [r.body["input"] for r in fake.embed_requests]
    assert [len(batch) for batch in sent] == [2, 2, 1]
    assert [t for batch in sent for t in batch] == [f"search_document: {t}" for t in texts]

    assert len(vectors) == len(texts)
    for text, vector in zip(texts, vectors, strict=True):
        assert len(vector) == 768
        assert np.linalg.norm(vector) == pytest.approx(1.0, abs=1e-5)
        # In input order: each vector is its own text's embedding, not a neighbour's.
        (alone,) = await embedder.embed_documents([text])
        assert cosine(vector, alone) == pytest.approx(1.0, abs=1e-5)
    assert cosine(vectors[0], vectors[1]) < 0.9


async def test_nomic_gets_document_and_query_prefixes(fake: FakeOllama, embedder: OllamaEmbedder) -> None:
    await embedder.embed_documents(["The cat sat on the mat"])
    await embedder.embed_query("where did the cat sit")

    doc_request, query_request = fake.embed_requests
    assert doc_request.body == {"model": NOMIC, "input": ["search_document: The cat sat on the mat"]}
    assert query_request.body == {"model": NOMIC, "input": ["search_query: where did the cat sit"]}


async def test_other_models_get_no_prefix(fake: FakeOllama) -> None:
    embedder = OllamaEmbedder(host=fake.url, model=PLAIN, backoff_s=0.01)
    try:
        await embedder.start()
        assert embedder.name == f"ollama:{PLAIN}"
        assert embedder.dimension == 768
        fake.clear()
        await embedder.embed_documents(["The cat sat on the mat"])
        await embedder.embed_query("where did the cat sit")
    finally:
        await embedder.aclose()

    assert [r.body for r in fake.embed_requests] == [
        {"model": PLAIN, "input": ["The cat sat on the mat"]},
        {"model": PLAIN, "input": ["where did the cat sit"]},
    ]


async def test_query_is_closer_to_a_document_on_the_same_topic(embedder: OllamaEmbedder) -> None:
    sourdough, kubernetes = await embedder.embed_documents(
        [
            "Sourdough bread needs a lively starter and a long, slow rise before baking.",
            "The Kubernetes cluster autoscaler adds nodes when pods cannot be scheduled.",
        ]
    )
    query = await embedder.embed_query("how long should sourdough bread rise before baking")

    assert np.linalg.norm(query) == pytest.approx(1.0, abs=1e-5)
    assert cosine(query, sourdough) > 0.3
    assert cosine(query, sourdough) > cosine(query, kubernetes) + 0.2


async def test_transient_503s_are_retried_then_succeed(fake: FakeOllama, embedder: OllamaEmbedder) -> None:
    fake.fail_next(2)
    with capture_logs() as logs:
        vector = await embedder.embed_query("still answered after two failures")

    assert len(vector) == 768
    assert np.linalg.norm(vector) == pytest.approx(1.0, abs=1e-5)
    requests = fake.embed_requests
    assert len(requests) == 3  # two 503s, then the answer
    assert all(r.body == requests[0].body for r in requests)  # the same payload each time
    retries = [e for e in logs if e["event"] == "ollama.retry"]
    assert [e["attempt"] for e in retries] == [1, 2]
    assert [e["delay_s"] for e in retries] == [pytest.approx(0.01), pytest.approx(0.02)]  # exponential


async def test_persistent_failure_raises_embedder_unavailable(fake: FakeOllama, embedder: OllamaEmbedder) -> None:
    fake.fail_next(100)
    with pytest.raises(EmbedderUnavailable) as caught:
        await embedder.embed_documents(["never embedded"])

    message = str(caught.value)
    assert "OLLAMA_HOST" in message
    assert fake.url in message
    assert "503" in message
    assert len(fake.embed_requests) == 3  # the first try plus retries=2


async def test_unreachable_host_raises_after_the_configured_retries() -> None:
    host = f"http://127.0.0.1:{closed_port()}"
    embedder = OllamaEmbedder(host=host, model=NOMIC, retries=1, backoff_s=0.01)
    try:
        with capture_logs() as logs, pytest.raises(EmbedderUnavailable) as caught:
            await embedder.start()
    finally:
        await embedder.aclose()

    message = str(caught.value)
    assert f"OLLAMA_HOST={host}" in message
    assert "cannot reach" in message
    assert [e["attempt"] for e in logs if e["event"] == "ollama.retry"] == [1]


async def test_missing_model_says_how_to_pull_it(fake: FakeOllama) -> None:
    embedder = OllamaEmbedder(host=fake.url, model="mxbai-embed-large", retries=2, backoff_s=0.01)
    try:
        with pytest.raises(EmbedderUnavailable) as caught:
            await embedder.start()
    finally:
        await embedder.aclose()

    message = str(caught.value)
    assert "ollama pull mxbai-embed-large" in message
    assert "OLLAMA_HOST" in message
    assert len(fake.embed_requests) == 1  # a missing model is not retried


async def test_fake_lists_its_models_like_ollama(fake: FakeOllama) -> None:
    import httpx

    async with httpx.AsyncClient(base_url=fake.url) as client:
        tags = (await client.get("/api/tags")).json()
        single = (await client.post("/api/embed", json={"model": NOMIC, "input": "one string"})).json()

    assert [m["name"] for m in tags["models"]] == [f"{NOMIC}:latest", f"{PLAIN}:latest"]
    assert len(single["embeddings"]) == 1 and len(single["embeddings"][0]) == 768
