"""The ranking metrics every bench reports, defined once."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from collections.abc import Set as AbstractSet

import numpy as np


def ndcg_at_10(ranked: Sequence[str], relevant: dict[str, int]) -> float:
    """nDCG@10 as trec_eval/BEIR compute it: linear graded gain, log2(rank + 1) discount."""
    dcg = sum(relevant.get(doc, 0) / math.log2(rank + 2) for rank, doc in enumerate(ranked[:10]))
    ideal = sorted(relevant.values(), reverse=True)[:10]
    idcg = sum(gain / math.log2(rank + 2) for rank, gain in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0


def mean_ndcg(rankings: Sequence[Sequence[str]], query_ids: Sequence[str], qrels: dict[str, dict[str, int]]) -> float:
    return float(np.mean([ndcg_at_10(r, qrels[q]) for r, q in zip(rankings, query_ids, strict=True)]))


def recall_at_100(
    rankings: Sequence[Sequence[str]], query_ids: Sequence[str], qrels: dict[str, dict[str, int]]
) -> float:
    """BEIR Recall@100: per query, the share of relevant documents in the top 100."""
    scores = []
    for ranked, qid in zip(rankings, query_ids, strict=True):
        relevant = {d for d, grade in qrels[qid].items() if grade > 0}
        scores.append(len(relevant & set(ranked[:100])) / len(relevant))
    return float(np.mean(scores))


def evidence_recall(found: Iterable[str], evidence: AbstractSet[str]) -> float:
    """LoCoMo evidence recall: the share of a question's evidence turns among those `found` (the top k)."""
    return len(set(found) & evidence) / len(evidence)
