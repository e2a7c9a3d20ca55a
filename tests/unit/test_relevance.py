"""The relevance rule: results neither leg finds relevant are dropped unless the caller asks for them.

The real pipeline runs over stand-in legs (objects of the `Retriever` protocol that return fixed
candidates), so each case says exactly what the vector and keyword legs found.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from zapomni_core.search import Candidate, RetrievalQuery, SearchOptions, SearchPipeline, relevant_only
from zapomni_core.search.fusion import reciprocal_rank_fusion
from zapomni_core.search.types import LegName
from zapomni_core.tuning import FusionMethod
from zapomni_db import ChunkHit, MemoryInfo, SearchFilter

pytestmark = pytest.mark.anyio

FLOOR = 0.2
QUERY = RetrievalQuery(text="database", vector=[1.0, 0.0], filters=SearchFilter(tags=["work"]))


def cand(chunk: str, similarity: float, memory: str | None = None) -> Candidate:
    info = MemoryInfo(memory or chunk, ["work"], None, None, 0.0, 0.0, 1)
    hit = ChunkHit(memory=info, chunk_id=chunk, text=chunk, distance=1.0 - similarity)
    return Candidate(hit=hit, similarity=similarity, leg_score=similarity)


@dataclass
class FixedLeg:
    """A retrieval leg that found these candidates, best first."""

    name: LegName
    found: list[Candidate]

    async def retrieve(self, query: RetrievalQuery, k: int) -> list[Candidate]:
        return self.found[:k]


def pipeline(
    vector: list[Candidate], keyword: list[Candidate], floor: float = FLOOR, fusion: FusionMethod = "scores"
) -> SearchPipeline:
    # With ranks fused, equal leg weights make either leg's rank count the same.
    legs = [FixedLeg("vector", vector), FixedLeg("keyword", keyword)]
    return SearchPipeline(legs, relevance_floor=floor, vector_weight=1.0, fusion=fusion)


async def chunks(search: SearchPipeline, **options: Any) -> list[str]:
    return [r.candidate.chunk_id for r in await search.run(QUERY, SearchOptions(**{"limit": 10, **options}))]


# The case: the only tagged memories are a database note and an unrelated allergy note.
POSTGRES = cand("postgres-note", 0.45)
ALLERGY = cand("allergy-note", 0.0)


async def test_the_vector_legs_nearest_but_unrelated_result_no_longer_pads_the_limit() -> None:
    search = pipeline(vector=[POSTGRES, ALLERGY], keyword=[])
    assert await chunks(search) == ["postgres-note"]
    assert await chunks(search, mode="vector") == ["postgres-note"]
    assert await chunks(search, include_unrelated=True) == ["postgres-note", "allergy-note"]
    assert await chunks(search, mode="vector", include_unrelated=True) == ["postgres-note", "allergy-note"]


async def test_a_keyword_match_is_relevant_however_low_its_similarity() -> None:
    mentions = cand("mentions-database", 0.05)
    search = pipeline(vector=[POSTGRES, ALLERGY, mentions], keyword=[mentions])
    assert await chunks(search, mode="keyword") == ["mentions-database"]
    hybrid = await chunks(search)
    assert set(hybrid) == {"postgres-note", "mentions-database"}
    # Only in vector mode does the keyword leg's say not count.
    assert await chunks(search, mode="vector") == ["postgres-note"]


async def test_the_floor_is_inclusive_and_zero_keeps_everything() -> None:
    at_floor, below = cand("at-floor", FLOOR), cand("below", FLOOR - 0.001)
    assert await chunks(pipeline([at_floor, below], []), mode="vector") == ["at-floor"]
    assert await chunks(pipeline([at_floor, below, ALLERGY], [], floor=0.0)) == ["at-floor", "below", "allergy-note"]


async def test_the_rule_cuts_before_the_limit_and_never_refills_with_unrelated_results() -> None:
    related = [cand(f"related-{i}", 0.5 - i / 100) for i in range(5)]
    unrelated = [cand(f"unrelated-{i}", 0.1 - i / 100) for i in range(10)]
    search = pipeline(vector=related + unrelated, keyword=[])
    assert await chunks(search, limit=3) == ["related-0", "related-1", "related-2"]
    assert len(await chunks(search, limit=10)) == 5
    assert len(await chunks(search, limit=10, include_unrelated=True)) == 10
    assert await chunks(pipeline(vector=unrelated, keyword=[])) == []


async def test_a_memory_is_shown_by_its_best_relevant_chunk() -> None:
    # The memory's top-ranked chunk is far from the query; another of its chunks matches a keyword. Ranks fused,
    # the vector leg's first and the keyword leg's first tie and the nearer wins; fused scores would rank the
    # keyword match first, which leaves nothing to show.
    far = cand("m-far-chunk", 0.15, memory="m")
    near = cand("m-keyword-chunk", 0.1, memory="m")
    search = pipeline(vector=[far, ALLERGY], keyword=[near], fusion="ranks")
    assert await chunks(search) == ["m-keyword-chunk"]
    assert await chunks(search, include_unrelated=True) == ["m-far-chunk", "allergy-note"]


async def test_min_score_still_applies_to_keyword_matches() -> None:
    mentions = cand("mentions-database", 0.05)
    search = pipeline(vector=[POSTGRES], keyword=[mentions])
    assert await chunks(search, min_score=0.3) == ["postgres-note"]


def test_relevant_only_keeps_the_fused_order() -> None:
    fused = reciprocal_rank_fusion(
        {
            "vector": [cand("a", 0.9), cand("e", 0.15), cand("b", 0.01), cand("c", 0.3)],
            "keyword": [cand("d", 0.0), cand("b", 0.01)],
        }
    )
    kept = [r.candidate.chunk_id for r in relevant_only(fused, FLOOR)]
    assert kept == [r.candidate.chunk_id for r in fused if r.candidate.chunk_id != "e"]
    only_keyword = [r.candidate.chunk_id for r in relevant_only(fused, 0.95)]
    assert only_keyword == [r.candidate.chunk_id for r in fused if "keyword" in r.legs] == ["b", "d"]


@pytest.mark.parametrize("floor", [-0.1, 1.5])
def test_a_floor_outside_the_similarity_range_is_refused(floor: float) -> None:
    with pytest.raises(ValueError, match="relevance_floor"):
        pipeline([], [], floor=floor)


@pytest.mark.parametrize("fusion", ["scores", "ranks"])
async def test_the_pipeline_fuses_as_it_is_told(fusion: FusionMethod) -> None:
    # The keyword leg's first hit scores far above its second (BM25 9 against 1), the vector leg ranks them the
    # other way round by a hair: scores keep the keyword winner first, ranks (vector weight 1) tie them and
    # break the tie on similarity.
    strong = Candidate(hit=cand("strong", 0.50).hit, similarity=0.50, leg_score=9.0)
    weak = Candidate(hit=cand("weak", 0.51).hit, similarity=0.51, leg_score=1.0)
    legs = [FixedLeg("vector", [cand("weak", 0.51), cand("strong", 0.50)]), FixedLeg("keyword", [strong, weak])]
    search = SearchPipeline(legs, relevance_floor=FLOOR, vector_weight=1.0, fusion=fusion)
    assert await chunks(search) == (["strong", "weak"] if fusion == "scores" else ["weak", "strong"])
