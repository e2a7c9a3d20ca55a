"""The keyword index scores exactly like bm25s (Lucene BM25), and the analyzer keeps identifiers whole."""

from __future__ import annotations

import bm25s
import numpy as np
import pytest

from zapomni_core.search.analyzer import Analyzer
from zapomni_core.search.bm25 import K1, B, Bm25Index

DOCS = [
    "Connections drop with ERR_CONN_RESET when the proxy restarts.",
    "The proxy restarts every night; connections are re-established automatically.",
    "Deployment failed with error code E1053 in the payment service.",
    "Deployment failed with error code E1047 in the payment service.",
    "Running runners run quickly through the running track.",
    "Payment service latency rose after the deployment of version 2.4.",
]
ANALYZER = Analyzer()


def build() -> Bm25Index:
    index = Bm25Index()
    for i, text in enumerate(DOCS):
        counts = ANALYZER.count(text)
        index.add(f"c{i}", counts.terms, counts.counts, counts.length)
    return index


def test_the_analyzer_stems_drops_stopwords_and_keeps_identifiers() -> None:
    assert ANALYZER.terms("When do the runners run? ERR_CONN_RESET E1053") == [
        "runner",
        "run",
        "err_conn_reset",
        "e1053",
    ]
    counts = ANALYZER.count("run running runs the end")
    assert dict(zip(counts.terms, counts.counts, strict=True)) == {"run": 3, "end": 1}
    assert counts.length == 4
    assert ANALYZER.query_terms("what is what") == []


@pytest.mark.parametrize("query", ["payment deployment failed", "proxy restarts", "E1053", "running", "version 2.4"])
def test_scores_match_bm25s_lucene(query: str) -> None:
    oracle = bm25s.BM25(method="lucene", k1=K1, b=B)
    oracle.index([ANALYZER.terms(text) for text in DOCS], show_progress=False)
    expected = oracle.get_scores(ANALYZER.query_terms(query))
    got = dict(build().search(ANALYZER.query_terms(query), k=len(DOCS)))
    ours = np.array([got.get(f"c{i}", 0.0) for i in range(len(DOCS))])
    np.testing.assert_allclose(ours, expected, rtol=1e-5, atol=1e-6)


def test_results_are_ranked_cut_to_k_and_skip_non_matching_chunks() -> None:
    index = build()
    assert [cid for cid, _ in index.search(ANALYZER.query_terms("E1053"), k=5)] == ["c2"]
    ranked = index.search(ANALYZER.query_terms("payment service deployment"), k=2)
    assert len(ranked) == 2 and ranked[0][1] >= ranked[1][1]
    assert index.search(ANALYZER.query_terms("nothing here matches"), k=5) == []
    assert Bm25Index().search(["anything"], k=5) == []


def test_equal_scores_keep_insertion_order() -> None:
    ranked = build().search(ANALYZER.query_terms("error code"), k=5)
    assert [cid for cid, _ in ranked] == ["c2", "c3"]
    assert ranked[0][1] == ranked[1][1]


def test_adding_chunks_updates_statistics_without_a_rebuild() -> None:
    index = build()
    before = dict(index.search(["payment"], k=10))
    counts = ANALYZER.count("payment payment payment")
    index.add("new", counts.terms, counts.counts, counts.length)
    after = dict(index.search(["payment"], k=10))
    assert "new" in after and after["new"] == max(after.values())
    assert after["c2"] < before["c2"], "a term in more chunks is worth less"


def assert_same_ranking(got: list[tuple[str, float]], want: list[tuple[str, float]]) -> None:
    assert [chunk for chunk, _ in got] == [chunk for chunk, _ in want]
    assert [score for _, score in got] == pytest.approx([score for _, score in want], rel=1e-5)


def test_a_removed_chunk_leaves_no_trace_in_scores() -> None:
    """Removing chunks scores like an index that never held them (n, df and average length included)."""
    index = build()
    index.remove("c0")
    index.remove("c3")
    index.remove("c3")  # twice is harmless
    index.add("c1", ["ignored"], [1], 1)  # adding an id already present changes nothing
    fresh = Bm25Index()
    for i, text in enumerate(DOCS):
        if i not in (0, 3):
            counts = ANALYZER.count(text)
            fresh.add(f"c{i}", counts.terms, counts.counts, counts.length)
    for query in ("proxy restarts connections", "error code E1047 payment", "ignored", "deployment"):
        terms = ANALYZER.query_terms(query)
        assert_same_ranking(index.search(terms, 10), fresh.search(terms, 10))
    assert "c0" not in index and len(index) == 4


def test_compaction_keeps_scores_and_order() -> None:
    index, reference = Bm25Index(), Bm25Index()
    texts = [f"{DOCS[i % len(DOCS)]} item{i}" for i in range(3000)]
    for i, text in enumerate(texts):
        counts = ANALYZER.count(text)
        index.add(f"c{i}", counts.terms, counts.counts, counts.length)
        if i % 2:
            reference.add(f"c{i}", counts.terms, counts.counts, counts.length)
    for i in range(0, 3000, 2):  # half removed: the index compacts itself on the way
        index.remove(f"c{i}")
    assert len(index) == len(reference) == 1500
    assert len(index._chunk_ids) < 3000  # compacted
    for query in ("payment service item7", "running track", "err_conn_reset proxy"):
        terms = ANALYZER.query_terms(query)
        assert_same_ranking(index.search(terms, 20), reference.search(terms, 20))
