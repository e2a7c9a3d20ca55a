"""The search's calibrated defaults, each with where it was chosen: what `Settings` offers as ZAPOMNI_* variables
and what the search pipeline uses when it is given nothing else. Here, below both, so that settings need not import
the search."""

from __future__ import annotations

from typing import Literal

# How hybrid search fuses its legs: their scores (a convex combination) or their ranks (RRF).
FusionMethod = Literal["scores", "ranks"]

# Cosine similarity below which a result the keyword leg did not find counts as unrelated.
# Calibrated on the SciFact train claims: docs/decisions/0008-relevance-floor.md.
DEFAULT_RELEVANCE_FLOOR = 0.275
# What a vector rank is worth in RRF against a keyword rank (1). Chosen on the SciFact train claims:
# docs/decisions/0015-conversational-recall.md.
DEFAULT_VECTOR_WEIGHT = 0.7
# The RRF constant and how deep each leg looks: chosen by leave-one-conversation-out on LoCoMo's development
# half, k 10 also the best on the SciFact train claims (docs/decisions/0027-temporal-and-multi-hop-recall.md).
# With k 60 and depth 50 a chunk both legs found far down outranked a leg's first hit.
DEFAULT_RRF_K = 10
DEFAULT_LEG_DEPTH = 50
# How hybrid search fuses its two legs, and the vector leg's share when it fuses scores (docs/decisions/0035).
DEFAULT_FUSION: FusionMethod = "scores"
DEFAULT_VECTOR_SHARE = 0.5

# What a place in the time list is worth in the fusion, against a keyword rank's 1 (chosen by
# leave-one-conversation-out on LoCoMo's development half: docs/decisions/0027).
DEFAULT_DAYS_WEIGHT = 1.0  # results whose stated days meet the days a question names
DEFAULT_WHEN_WEIGHT = 1.0  # results that state a time at all, for a question asking when
