"""Retrieval: vector and keyword legs, fused by their scores or their ranks (fusion.py)."""

from zapomni_core.search.fusion import best_per_memory, reciprocal_rank_fusion, relevant_only, score_fusion
from zapomni_core.search.keyword import KeywordRetriever
from zapomni_core.search.pipeline import SearchOptions, SearchPipeline
from zapomni_core.search.types import Candidate, Ranked, RetrievalQuery, Retriever, similarity_from_distance
from zapomni_core.search.vector import VectorRetriever
from zapomni_core.tuning import DEFAULT_RELEVANCE_FLOOR

__all__ = [
    "DEFAULT_RELEVANCE_FLOOR",
    "Candidate",
    "KeywordRetriever",
    "Ranked",
    "RetrievalQuery",
    "Retriever",
    "SearchOptions",
    "SearchPipeline",
    "VectorRetriever",
    "best_per_memory",
    "reciprocal_rank_fusion",
    "relevant_only",
    "score_fusion",
    "similarity_from_distance",
]
