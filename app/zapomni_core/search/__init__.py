"""Retrieval: each leg finds candidate chunks, the pipeline fuses them and applies the limit."""

from zapomni_core.search.pipeline import SearchPipeline
from zapomni_core.search.types import Candidate, RetrievalQuery, Retriever
from zapomni_core.search.vector import VectorRetriever, similarity_from_distance

__all__ = [
    "Candidate",
    "RetrievalQuery",
    "Retriever",
    "SearchPipeline",
    "VectorRetriever",
    "similarity_from_distance",
]
