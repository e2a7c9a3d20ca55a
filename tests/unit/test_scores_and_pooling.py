"""Score conversion and the embedder's pooling, plus the real ONNX model's behaviour."""

from __future__ import annotations

import numpy as np
import pytest

from zapomni_core.embedders.onnx_minilm import DIMENSION, OnnxMiniLMEmbedder, mean_pool_normalise
from zapomni_core.search import similarity_from_distance


@pytest.mark.parametrize(("distance", "similarity"), [(0.0, 1.0), (0.25, 0.75), (1.0, 0.0), (1.7, 0.0), (-1e-7, 1.0)])
def test_cosine_distance_becomes_similarity_in_unit_range(distance: float, similarity: float) -> None:
    assert similarity_from_distance(distance) == pytest.approx(similarity)


def test_mean_pooling_ignores_padding_and_normalises() -> None:
    hidden = np.array([[[1.0, 0.0], [3.0, 4.0], [100.0, 100.0]]], dtype=np.float32)
    mask = np.array([[1, 1, 0]])
    pooled = mean_pool_normalise(hidden, mask)
    expected = np.array([2.0, 2.0]) / np.linalg.norm([2.0, 2.0])
    np.testing.assert_allclose(pooled[0], expected, rtol=1e-6)


def test_mean_pooling_survives_an_all_padding_row() -> None:
    pooled = mean_pool_normalise(np.ones((1, 2, 3), dtype=np.float32), np.zeros((1, 2)))
    assert np.isfinite(pooled).all()


@pytest.fixture(scope="module")
def embedder() -> OnnxMiniLMEmbedder:
    return OnnxMiniLMEmbedder(batch_size=4)


def test_embeddings_are_unit_length_and_384_wide(embedder: OnnxMiniLMEmbedder) -> None:
    vectors = np.array(embedder.embed_sync(["hello world", "a much longer sentence about databases"]))
    assert vectors.shape == (2, DIMENSION)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)


def test_batching_by_length_keeps_input_order(embedder: OnnxMiniLMEmbedder) -> None:
    texts = ["short", "a considerably longer text that sorts last by length", "mid length text", "x"]
    together = np.array(embedder.embed_sync(texts))
    alone = np.array([embedder.embed_sync([t])[0] for t in texts])
    np.testing.assert_allclose(together, alone, atol=1e-4)


def test_paraphrases_are_closer_than_unrelated_text(embedder: OnnxMiniLMEmbedder) -> None:
    a, b, c = np.array(
        embedder.embed_sync(
            [
                "The cat sat on the mat.",
                "A kitten was sitting on the rug.",
                "Quarterly revenue grew by four percent.",
            ]
        )
    )
    assert a @ b > a @ c + 0.2
