"""The hand-written keyword index the benches compare with (`bench.handwritten_bm25`) scores exactly like bm25s
(Lucene BM25), and the analyzer keeps identifiers whole."""

from __future__ import annotations

import bm25s
import numpy as np
import pytest

from bench.handwritten_bm25 import K1, MAX_COUNT, B, Bm25Index
from zapomni_core.search.analyzer import Analyzer

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
    assert len(index._ids) < 3000  # compacted
    for query in ("payment service item7", "running track", "err_conn_reset proxy"):
        terms = ANALYZER.query_terms(query)
        assert_same_ranking(index.search(terms, 20), reference.search(terms, 20))


# A conversation, one turn per chunk: the answer (t3) shares no word with the question about it.
TURNS = [
    "Melanie: How was your weekend?",
    "Caroline: Busy! I finally went to the pottery workshop downtown.",
    "Melanie: Oh nice, what did you make there?",
    "Caroline: A small blue bowl for my kitchen.",
    "Melanie: Lovely. Are you going back next month?",
]


def thread_index(order: list[int] | None = None, window: int = 2) -> Bm25Index:
    index = Bm25Index(window)
    for i in order or range(len(TURNS)):
        counts = ANALYZER.count(TURNS[i])
        index.add(f"t{i}", counts.terms, counts.counts, counts.length, thread="chat", order=(0.0, float(i), 0))
    return index


def test_a_thread_turn_is_scored_as_one_document_with_the_turns_before_it() -> None:
    windows = [" ".join(TURNS[max(0, i - 2) : i + 1]) for i in range(len(TURNS))]
    oracle = bm25s.BM25(method="lucene", k1=K1, b=B)
    oracle.index([ANALYZER.terms(text) for text in windows], show_progress=False)
    index = thread_index()
    for query in ("what did Caroline make at the pottery workshop", "blue bowl", "weekend"):
        expected = oracle.get_scores(ANALYZER.query_terms(query))
        got = dict(index.search(ANALYZER.query_terms(query), k=len(TURNS)))
        ours = np.array([got.get(f"t{i}", 0.0) for i in range(len(TURNS))])
        np.testing.assert_allclose(ours, expected, rtol=1e-5, atol=1e-6)
    # The answer is found by the words of the question it answers.
    assert "t3" in dict(index.search(ANALYZER.query_terms("pottery workshop"), k=5))


def test_the_window_follows_the_order_not_the_arrival() -> None:
    query = ANALYZER.query_terms("pottery workshop make")
    assert thread_index([4, 0, 3, 1, 2]).search(query, k=5) == thread_index().search(query, k=5)


def test_a_removed_turn_leaves_no_word_in_the_turns_after_it() -> None:
    index = thread_index()
    assert {cid for cid, _ in index.search(ANALYZER.query_terms("pottery"), k=5)} == {"t1", "t2", "t3"}
    index.remove("t1")
    assert index.search(ANALYZER.query_terms("pottery"), k=5) == []
    # The window closes over the gap: t3 now reads t0 and t2 before it.
    assert {cid for cid, _ in index.search(ANALYZER.query_terms("weekend"), k=5)} == {"t0", "t2", "t3"}


def test_threads_do_not_mix_and_other_chunks_are_scored_alone() -> None:
    index = thread_index()
    counts = ANALYZER.count("The pottery kiln reached 1200 degrees.")
    index.add("note", counts.terms, counts.counts, counts.length)
    other = ANALYZER.count("Jon: I bought a kiln.")
    index.add("j0", other.terms, other.counts, other.length, thread="other", order=(0.0, 0.0, 0))
    reply = ANALYZER.count("Gina: Where from?")
    index.add("j1", reply.terms, reply.counts, reply.length, thread="other", order=(0.0, 1.0, 0))
    assert {cid for cid, _ in index.search(ANALYZER.query_terms("kiln"), k=10)} == {"note", "j0", "j1"}
    assert "note" not in dict(index.search(ANALYZER.query_terms("bowl"), k=10))
    assert Bm25Index(window=0).window == 0


def test_compaction_keeps_each_turns_thread() -> None:
    index = thread_index()
    for i in range(1100):  # enough dead slots to trigger a compaction
        index.add(f"x{i}", ["filler"], [1], 1)
        index.remove(f"x{i}")
    assert len(index) == len(TURNS)
    assert {cid for cid, _ in index.search(ANALYZER.query_terms("pottery"), k=5)} == {"t1", "t2", "t3"}


def mixed_index(freeze_at: int | None = None, monkeypatch: pytest.MonkeyPatch | None = None) -> Bm25Index:
    """Plain chunks and a thread's turns, some removed: every kind of state the index keeps."""
    if freeze_at is not None and monkeypatch is not None:
        monkeypatch.setattr("bench.handwritten_bm25._FREEZE_AT", freeze_at)
    index = thread_index()
    for i in range(400):
        counts = ANALYZER.count(f"{DOCS[i % len(DOCS)]} item{i}")
        index.add(f"c{i}", counts.terms, counts.counts, counts.length)
    for i in range(0, 400, 3):
        index.remove(f"c{i}")
    index.remove("t0")
    return index


QUERIES = ["payment service item7", "running track", "err_conn_reset proxy", "blue bowl kitchen", "item12"]


def test_postings_merged_many_times_rank_as_postings_never_merged(monkeypatch: pytest.MonkeyPatch) -> None:
    unmerged = mixed_index()
    merged = mixed_index(freeze_at=50, monkeypatch=monkeypatch)
    assert len(merged._frozen_positions) and not len(unmerged._frozen_positions)  # the first froze on the way
    for query in QUERIES:
        terms = ANALYZER.query_terms(query)
        assert merged.search(terms, 20) == unmerged.search(terms, 20)


def test_the_state_round_trip_ranks_the_same_and_holds_nothing_removed() -> None:
    index = mixed_index()
    expected = {q: index.search(ANALYZER.query_terms(q), 20) for q in QUERIES}
    state = index.state()
    saved = {chunk_id.decode() for chunk_id in state.chunk_ids}
    assert "t0" not in saved and "c0" not in saved and "c1" in saved and len(saved) == len(state.chunk_ids)
    assert list(state.chunk_ids[state.id_order]) == sorted(state.chunk_ids)
    assert "weekend" not in state.terms  # only the removed first turn said it
    copy = Bm25Index.from_state(state)
    assert len(copy) == len(index)
    for query, hits in expected.items():
        assert copy.search(ANALYZER.query_terms(query), 20) == hits
    counts = ANALYZER.count("Caroline: the weekend kiln was too hot.")  # and it goes on taking chunks
    copy.add("t9", counts.terms, counts.counts, counts.length, thread="chat", order=(0.0, 9.0, 0))
    assert copy.search(ANALYZER.query_terms("weekend kiln"), 5)[0][0] == "t9"


def test_the_best_k_of_many_matches_are_those_of_the_full_ranking_ties_included() -> None:
    # Past _FLOOR_SAMPLE chunks the best k come from above a sampled floor: exactly the head of the full ranking.
    index = Bm25Index()
    for i in range(40_000):
        counts = ANALYZER.count(f"{DOCS[i % len(DOCS)]} item{i % 97}")  # many equal scores: ties at every rank
        index.add(f"c{i}", counts.terms, counts.counts, counts.length)
    for query in ("payment service deployment", "proxy restarts item7", "running track item3", "error"):
        terms = ANALYZER.query_terms(query)
        full = index.search(terms, len(index))
        for k in (1, 10, 50):
            assert index.search(terms, k) == full[:k]


def test_ids_removed_and_added_again_are_found_at_their_new_place_across_freezes_and_compaction(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("bench.handwritten_bm25._FREEZE_AT", 40)  # ids are merged into arrays many times
    index, counts = Bm25Index(), ANALYZER.count("kiln glaze")
    for i in range(300):
        index.add(f"c{i}", counts.terms, counts.counts, counts.length)
    for i in range(0, 300, 3):
        index.remove(f"c{i}")
    for i in range(0, 300, 6):  # back, with other words: a new place, the old one dead
        index.add(f"c{i}", *_counted("porcelain"))
    index.add("c1", *_counted("porcelain"))  # still there: adding it again changes nothing
    assert len(index) == 250 and "c3" not in index and "c6" in index and "c1" in index
    assert {chunk_id for chunk_id, _ in index.search(ANALYZER.query_terms("porcelain"), 100)} == {
        f"c{i}" for i in range(0, 300, 6)
    }
    assert "c6" not in {chunk_id for chunk_id, _ in index.search(ANALYZER.query_terms("kiln"), 300)}
    for i in range(0, 300, 6):
        index.remove(f"c{i}")
    assert "c6" not in index and len(index) == 200
    copy = Bm25Index.from_state(index.state())  # compacted: each id once, sorted order kept
    assert len(copy) == 200 and "c6" not in copy and "c7" in copy
    assert copy.search(ANALYZER.query_terms("kiln"), 300) == index.search(ANALYZER.query_terms("kiln"), 300)


def test_a_count_past_a_byte_is_kept_as_the_largest_a_byte_holds() -> None:
    index = Bm25Index()
    index.add("many", ["kiln"], [1000], 1000)
    index.add("few", ["kiln"], [3], 1000)
    state = index.state()
    assert state.counts.dtype == np.uint8 and sorted(state.counts.tolist()) == [3, MAX_COUNT]
    assert [chunk_id for chunk_id, _ in index.search(["kiln"], 2)] == ["many", "few"]


def _counted(text: str) -> tuple[list[str], list[int], int]:
    counts = ANALYZER.count(text)
    return counts.terms, counts.counts, counts.length
