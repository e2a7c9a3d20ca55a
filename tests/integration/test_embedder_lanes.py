"""The ONNX embedder's two lanes with the real model: documents coalesced across callers, queries apart."""

from __future__ import annotations

import asyncio
import functools
import random
from collections.abc import AsyncIterator, Sequence

import numpy as np
import pytest
from tokenizers import Encoding

from zapomni_core.embedders.batching import MicroBatcher, plan_batches
from zapomni_core.embedders.onnx_minilm import OnnxMiniLMEmbedder

pytestmark = pytest.mark.anyio

_WORDS = (
    "protein cell gene expression tumour patient dose trial cohort receptor signal pathway mutation "
    "clinical outcome risk analysis model response therapy mouse tissue blood level increase"
).split()


def text(words: int, seed: int) -> str:
    rng = random.Random(seed)
    return " ".join(rng.choice(_WORDS) for _ in range(words)) + "."


def long_texts(count: int, seed: int = 0) -> list[str]:
    """Texts past the model's 256-token window: every one is a full-width batch member."""
    return [text(300, seed * 1000 + i) for i in range(count)]


def assert_same_vectors(got: Sequence[Sequence[float]], expected: Sequence[Sequence[float]]) -> None:
    got_array, expected_array = np.asarray(got), np.asarray(expected)
    assert got_array.shape == expected_array.shape
    assert (got_array * expected_array).sum(axis=1).min() >= 0.9999


@pytest.fixture
async def embedder() -> AsyncIterator[OnnxMiniLMEmbedder]:
    model = OnnxMiniLMEmbedder()
    yield model
    await model.aclose()


async def test_concurrent_callers_get_their_own_vectors_from_shared_batches(embedder: OnnxMiniLMEmbedder) -> None:
    calls = [[text(w, seed=10 * c + w) for w in (8 + c, 40, 120 + c)] for c in range(6)]
    alone = [embedder.embed_sync(texts) for texts in calls]
    batcher = embedder._documents
    before = (batcher.batches_run, batcher.texts_run)
    # The first call keeps the model thread busy, so the other six arrive together and share batches.
    blocker = asyncio.ensure_future(embedder.embed_documents(long_texts(8)))
    await asyncio.sleep(0)  # the blocker is submitted...
    while batcher._waiting:  # ...and taken by the model thread: the six must not join its round
        await asyncio.sleep(0.001)
    together = await asyncio.gather(*(embedder.embed_documents(texts) for texts in calls))
    await blocker
    for got, expected in zip(together, alone, strict=True):
        assert_same_vectors(got, expected)
    batches, texts = batcher.batches_run - before[0], batcher.texts_run - before[1]
    assert texts == 8 + 18
    assert batches < 1 + len(calls), "texts of different callers shared batches"


async def test_a_cancelled_caller_leaves_the_others_intact(embedder: OnnxMiniLMEmbedder) -> None:
    others = [[text(30, seed=s), text(200, seed=s + 1)] for s in range(0, 8, 2)]
    alone = [embedder.embed_sync(texts) for texts in others]
    batcher = embedder._documents
    texts_before = batcher.texts_run
    blocker = asyncio.ensure_future(embedder.embed_documents(long_texts(8, seed=1)))
    victim = asyncio.ensure_future(embedder.embed_documents(long_texts(16, seed=2)))
    rest = [asyncio.ensure_future(embedder.embed_documents(texts)) for texts in others]
    await asyncio.sleep(0)  # every call is queued behind the blocker
    victim.cancel()
    results = await asyncio.gather(blocker, victim, *rest, return_exceptions=True)
    assert isinstance(results[1], asyncio.CancelledError)
    for got, expected in zip(results[2:], alone, strict=True):
        assert not isinstance(got, BaseException), got
        assert_same_vectors(got, expected)
    assert batcher.texts_run - texts_before == 8 + 8, "the cancelled caller's texts were never embedded"
    assert_same_vectors(await embedder.embed_documents(others[0]), alone[0])  # and the lane still serves


async def test_a_query_returns_while_a_long_document_batch_runs(embedder: OnnxMiniLMEmbedder) -> None:
    query = "which receptor signals tumour growth"
    expected = embedder.embed_sync([query])[0]
    batcher = embedder._documents
    documents = asyncio.ensure_future(embedder.embed_documents(long_texts(48, seed=3)))  # 6 batches of 8
    while batcher.batches_run == 0:  # the document lane is under way
        await asyncio.sleep(0.01)
    vector = await embedder.embed_query(query)
    assert not documents.done(), "the query did not wait for the documents"
    assert batcher.batches_run < 6
    assert_same_vectors([vector], [expected])
    assert len(await documents) == 48


async def test_an_add_is_embedded_between_two_batches_of_a_job(embedder: OnnxMiniLMEmbedder) -> None:
    """A job's round of batches gives way to an interactive call: the call waits for one batch, not the round."""
    sentence = ["Bob prefers tea to coffee."]
    expected = embedder.embed_sync(sentence)
    background = embedder._background
    job = asyncio.ensure_future(embedder.embed_documents(long_texts(48, seed=4), background=True))  # 6 batches
    while background.batches_run == 0:  # the job's round is under way
        await asyncio.sleep(0.01)
    assert_same_vectors(await embedder.embed_documents(sentence), expected)
    assert not job.done() and background.batches_run < 6, "the add waited for the job's whole round"
    assert len(await job) == 48
    assert background.texts_run == 48 and embedder._documents.texts_run == 1


async def test_a_failing_batch_fails_only_the_callers_with_a_text_in_it(embedder: OnnxMiniLMEmbedder) -> None:
    poison = "poison " * 100  # far longer than the others: it gets a batch of its own

    def run(encodings: list[Encoding]) -> np.ndarray:
        if any(e.tokens.count("poison") > 0 for e in encodings):
            raise RuntimeError("this batch cannot be embedded")
        return embedder._run(encodings)

    tokenizer = embedder._tokenizer
    batcher: MicroBatcher[Encoding] = MicroBatcher(
        encode=tokenizer.encode_batch,
        length=lambda e: len(e.ids),
        plan=functools.partial(plan_batches, max_tokens=2048, max_count=64, min_fill=0.8),
        run=run,
        name="test-embed",
    )
    try:
        healthy = [[text(20, seed=s)] for s in range(3)]
        outcomes = await asyncio.gather(
            batcher.embed([text(20, seed=99), poison]),
            *(batcher.embed(texts) for texts in healthy),
            return_exceptions=True,
        )
        assert isinstance(outcomes[0], RuntimeError)
        for got, texts in zip(outcomes[1:], healthy, strict=True):
            # gather's results are vectors here (no exception was asked for):
            assert_same_vectors(got, embedder.embed_sync(texts))  # type: ignore[arg-type]
    finally:
        await asyncio.to_thread(batcher.close)


async def test_a_closed_embedder_refuses_new_documents(embedder: OnnxMiniLMEmbedder) -> None:
    assert len(await embedder.embed_documents(["one", "two"])) == 2
    assert await embedder.embed_documents([]) == []
    await embedder.aclose()
    with pytest.raises(RuntimeError, match="closed"):
        await embedder.embed_documents(["three"])


async def test_a_model_not_preloaded_is_loaded_by_its_first_embedding_on_any_lane() -> None:
    """What a command gets (`open_core(background_jobs=False)`): `zapomni list` never pays for the model."""
    embedder = OnnxMiniLMEmbedder(preload=False)
    try:
        assert not embedder.loaded and embedder.dimension == 384
        assert embedder.count_tokens(["tokens are counted without the model"])[0] > 0 and not embedder.loaded
        texts = [text(20, seed) for seed in range(6)]
        both = await asyncio.gather(embedder.embed_documents(texts), embedder.embed_query(texts[0]))
        assert embedder.loaded
        assert_same_vectors(both[0][:1], [both[1]])
    finally:
        await embedder.aclose()
