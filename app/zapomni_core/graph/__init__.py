"""The knowledge graph: extraction (spaCy NER and rules, or a local LLM), merging, the build job, the graph tools."""

from zapomni_core.graph.building import BuildGraph
from zapomni_core.graph.factory import build_extractor, extractor_name
from zapomni_core.graph.service import GraphService

__all__ = ["BuildGraph", "GraphService", "build_extractor", "extractor_name"]
