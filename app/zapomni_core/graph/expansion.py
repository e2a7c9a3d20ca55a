"""Graph expansion: a third ranked list for hybrid search, from the knowledge graph.

The vector and keyword legs find chunks that resemble the query. A question that needs two memories
("which city did both Jean and John visit?") often finds one of them and not the other, which shares no
word with the question but names the same entities as the first. Expansion takes the top hits of the
fused vector + keyword ranking as seeds and ranks the chunks that share entities with them:

- each entity a seed chunk mentions counts for the chunks mentioning it, weighted by its inverse
  document frequency over chunks (`weighted`): a rare name links two memories far more surely than the
  speaker of a conversation, who is mentioned everywhere;
- entities the query names (`query_entities`, off by default: it measured worse): the query's word
  n-grams resolved to stored entity keys exactly as the graph keys them (`merge.entity_key`: canonical
  form + type family);
- at `depth` 2, also the entities related to those (current RELATED_TO edges), at half weight;
- hubs cannot flood: an entity mentioned by more than `per_entity` chunks (the speaker of a conversation)
  is skipped (`hubs="skip"`), or gives only its `per_entity` chunks nearest the query (`hubs="cap"`);
- dates are skipped (`dates`): "last week" or "May 2023" links whatever was said then, not one thing
  (the extractor leaves them out of co-occurrence for the same reason).

Chunks of the seed memories are left out (they are already at the top). The list is fused into the
ranking with RRF (`weight` scales its share); a chunk the graph found counts as relevant, like a keyword
match (the relevance rule of `fusion.relevant_only`), since it is linked to a relevant seed or named by
the query. Measured in bench/graph_retrieval.py; off by default (ZAPOMNI_GRAPH_EXPANSION,
docs/decisions/0012-knowledge-graph.md, "Graph expansion in search (measured)").
"""

from __future__ import annotations

import asyncio
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from zapomni_core.graph.merge import entity_key
from zapomni_core.search.analyzer import STOPWORDS
from zapomni_core.search.fusion import best_per_memory, fractional_ranks, relevant_only
from zapomni_core.search.types import Candidate, LegName, Ranked, RetrievalQuery
from zapomni_db import SearchReads
from zapomni_db.graph_neighbours import GraphNeighbours

# One type per family: `entity_key` keys on the family, so these reach every stored entity.
_FAMILY_TYPES = ("PERSON", "ORG", "PLACE", "PRODUCT", "EVENT", "WORK_OF_ART", "DATE", "LAW", "CONCEPT", "IDENTIFIER")
_TOKEN_EDGES = "\"'`.,;:!?()[]{}<>"
# Query words that never start or end an entity name, beyond the keyword leg's stopwords.
_NOT_NAMES = STOPWORDS | frozenset({"both", "any", "some", "all", "each", "other", "kind", "kinds", "name", "names"})
MAX_QUERY_KEYS = 400


@dataclass(frozen=True)
class ExpansionConfig:
    seeds: int = 5  # top memories of the fused vector + keyword ranking to expand from
    query_entities: bool = False  # also expand from the entities the query names
    weighted: bool = True  # idf weights (False: every shared entity counts 1)
    depth: int = 1  # 2: also the entities related to the seeds' and the query's entities
    per_entity: int = 20  # chunks one entity may contribute; an entity mentioned by more is a hub
    hubs: Literal["skip", "cap"] = "skip"  # a hub is not expanded from, or gives its per_entity nearest chunks
    dates: bool = False  # expand through DATE entities too
    weight: float = 1.0  # the graph list's weight in the fusion (1.0 = plain RRF)
    related_per_entity: int = 10  # depth 2: neighbours followed per entity
    related_factor: float = 0.5  # depth 2: a neighbour's weight relative to its own idf
    max_ngram: int = 4  # longest query word sequence tried as an entity name

    def __post_init__(self) -> None:
        if self.depth not in (1, 2):
            raise ValueError(f"depth must be 1 or 2, got {self.depth}")
        if self.seeds < 1 or self.per_entity < 1 or self.weight <= 0:
            raise ValueError("seeds and per_entity must be at least 1 and weight positive")


def idf(mentions: int, chunks: int) -> float:
    """BM25's inverse document frequency of an entity mentioned by `mentions` of `chunks` chunks (> 0)."""
    return math.log(1.0 + (max(chunks, mentions) - mentions + 0.5) / (mentions + 0.5))


def query_entity_keys(text: str, max_ngram: int = 4) -> list[str]:
    """The entity keys the query's word sequences would have as entity names of any family, in order.

    A sequence neither starts nor ends with a stopword or question word ("What did Caroline's friend ...":
    "Caroline's" -> caroline|PERSON, caroline|ORG, ...); the store then says which keys exist."""
    words = [w.strip(_TOKEN_EDGES) for w in text.split()]
    keys: dict[str, None] = {}
    for start in range(len(words)):
        for end in range(start + 1, min(len(words), start + max_ngram) + 1):
            span = words[start:end]
            if not all(span) or _plain(span[0]) in _NOT_NAMES or _plain(span[-1]) in _NOT_NAMES:
                continue
            name = " ".join(span)
            if len(name) < 2:
                continue
            for entity_type in _FAMILY_TYPES:
                try:
                    keys.setdefault(entity_key(name, entity_type))
                except ValueError:  # nothing left once normalised
                    continue
                if len(keys) >= MAX_QUERY_KEYS:
                    return list(keys)
    return list(keys)


def _plain(word: str) -> str:
    return re.sub(r"['’]s$", "", word.casefold())


class GraphExpansion:
    """Ranks the chunks linked through the knowledge graph to a query's top hits and to the entities it names."""

    name: LegName = "graph"

    def __init__(self, neighbours: GraphNeighbours, reads: SearchReads, config: ExpansionConfig | None = None) -> None:
        self._neighbours = neighbours
        self._reads = reads
        self.config = config or ExpansionConfig()

    async def expand(
        self, query: RetrievalQuery, ranked: list[Ranked], k: int, *, rrf_k: int, floor: float
    ) -> list[Ranked]:
        """`ranked` (the fused vector + keyword list, before the relevance rule) with the graph list fused in."""
        seeds = best_per_memory(relevant_only(ranked, floor))[: self.config.seeds]
        found = await self.candidates(query, [r.candidate for r in seeds], k)
        if not found:
            return ranked
        return fuse_leg(ranked, self.name, found, k=rrf_k, weight=self.config.weight)

    async def candidates(self, query: RetrievalQuery, seeds: Sequence[Candidate], k: int) -> list[Candidate]:
        """Up to `k` chunks linked to the seeds (and the query's entities), best linked first; none of the
        seeds' memories."""
        config = self.config
        by_chunk = await self._neighbours.entities_of_chunks([seed.chunk_id for seed in seeds])
        seed_counts: dict[str, int] = {}
        for keys in by_chunk.values():
            for key in keys:
                seed_counts[key] = seed_counts.get(key, 0) + 1
        named = query_entity_keys(query.text, config.max_ngram) if config.query_entities else []
        if not seed_counts and not named:
            return []
        mentions, chunks = await asyncio.gather(
            self._neighbours.mention_counts([*seed_counts, *named]), self._neighbours.chunk_count()
        )
        weights: dict[str, float] = {}
        for key, count in seed_counts.items():
            if self._usable(key, mentions):
                weights[key] = count * self._weight(mentions[key], chunks)
        for key in named:
            if self._usable(key, mentions):
                weights[key] = weights.get(key, 0.0) + self._weight(mentions[key], chunks)
        if config.depth == 2 and weights:
            weights.update(await self._related(weights, mentions, chunks))
        if not weights:
            return []
        mentioning = await self._neighbours.chunks_mentioning(list(weights), query.vector, per_entity=config.per_entity)
        skip = {seed.memory_id for seed in seeds}
        scores: dict[str, float] = {}
        for row in mentioning:
            if row.memory_id not in skip:
                scores[row.chunk_id] = scores.get(row.chunk_id, 0.0) + weights[row.entity_key]
        best = sorted(scores, key=lambda cid: (-scores[cid], cid))[: 2 * k]
        hits = await self._reads.fetch_chunks(best, query.vector, filters=query.filters)
        found = [Candidate.from_hit(hit, leg_score=round(scores[hit.chunk_id], 9)) for hit in hits]
        found.sort(key=lambda c: (-c.leg_score, -c.similarity, c.chunk_id))
        return found[:k]

    def _weight(self, mentions: int, chunks: int) -> float:
        return idf(mentions, chunks) if self.config.weighted else 1.0

    def _usable(self, key: str, mentions: dict[str, int]) -> bool:
        """An entity to expand from: stored, mentioned, a date only if asked for, a hub only when capped."""
        count = mentions.get(key, 0)
        if count == 0 or (not self.config.dates and key.endswith("|DATE")):
            return False
        return self.config.hubs == "cap" or count <= self.config.per_entity

    async def _related(self, weights: dict[str, float], mentions: dict[str, int], chunks: int) -> dict[str, float]:
        """Depth 2: the neighbours of the non-hub source entities, at `related_factor` of their own weight."""
        config = self.config
        sources = [
            key for key in weights if mentions.get(key, 0) <= config.per_entity
        ]  # a hub's neighbours: everything
        neighbours = await self._neighbours.related_entities(sources, per_entity=config.related_per_entity)
        others = sorted({n.other_key for n in neighbours} - set(weights))
        counts = await self._neighbours.mention_counts(others)
        return {
            key: config.related_factor * self._weight(count, chunks)
            for key, count in counts.items()
            if self._usable(key, counts)
        }


def fuse_leg(
    ranked: list[Ranked], leg: LegName, candidates: Iterable[Candidate], *, k: int, weight: float = 1.0
) -> list[Ranked]:
    """Add one more ranked list to an RRF ranking: `weight / (k + rank)` per candidate, ranks shared by ties
    as in `reciprocal_rank_fusion`, the same tie-breaks. With weight 1 this equals fusing all lists at once."""
    listed = list(candidates)
    scores = {r.candidate.chunk_id: r.rank_score for r in ranked}
    legs: dict[str, list[LegName]] = {r.candidate.chunk_id: list(r.legs) for r in ranked}
    found: dict[str, Candidate] = {r.candidate.chunk_id: r.candidate for r in ranked}
    for rank, candidate in zip(fractional_ranks(listed), listed, strict=True):
        scores[candidate.chunk_id] = scores.get(candidate.chunk_id, 0.0) + weight / (k + rank)
        legs.setdefault(candidate.chunk_id, []).append(leg)
        found.setdefault(candidate.chunk_id, candidate)
    order = sorted(scores, key=lambda cid: (-scores[cid], -found[cid].similarity, cid))
    return [Ranked(found[cid], scores[cid], sorted(legs[cid])) for cid in order]
