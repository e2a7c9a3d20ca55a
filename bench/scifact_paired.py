"""SciFact: paired nDCG@10 differences between stores, from `bench.scifact_replay dump` caches.

Why this exists (issue 25): a setting that changes what is stored (the chunk size, `ZAPOMNI_CHUNK_MAX_TOKENS`)
needs one store per setting, and `bench.scifact_replay` compares variants on one store only. Each cache holds,
for every judged train and test claim, the memories the real pipeline (`ZapomniCore.memories.search`, hybrid,
limit 10) returned on its store; this compares those rankings claim by claim against the first cache given:
the mean per-claim difference and its paired standard error, by split. Train chooses; test is reported only.

Run: `python -m bench.scifact_paired BASE.pkl OTHER.pkl [...] --names 256 128 [...]` (prints a Markdown table;
`--output FILE` writes it there too).
"""

from __future__ import annotations

import argparse
import pickle
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from bench.metrics import ndcg_at_10
from bench.scifact_replay import SPLITS, Cache, document


class _Unpickler(pickle.Unpickler):
    """A dump pickled by `python -m bench.scifact_replay` names its classes in `__main__`."""

    def find_class(self, module: str, name: str) -> object:
        return super().find_class("bench.scifact_replay" if module == "__main__" else module, name)


def per_claim(cache: Cache) -> dict[str, dict[str, float]]:
    """nDCG@10 of the dumped real pipeline's ranking, by split and claim id."""
    out: dict[str, dict[str, float]] = {split: {} for split in SPLITS}
    for query in cache.queries:
        docs = [document(cache, memory_id) for memory_id in query.real]
        out[query.split][query.claim_id] = ndcg_at_10(docs, cache.qrels[query.split][query.claim_id])
    return out


def leg_alone(cache: Cache, leg: str) -> dict[str, float]:
    """Mean nDCG@10 of one leg's dumped deep list cut to its first 10 memories (each by its best chunk), by split.

    Not the product's `vector` / `keyword` mode (no relevance floor, no time list): a look at what each leg finds.
    """
    out: dict[str, list[float]] = {split: [] for split in SPLITS}
    for query in cache.queries:
        entries = query.vector_deep if leg == "vector" else query.keyword_deep
        memories: list[str] = []
        for chunk_id, _distance, _score in entries:
            memory_id = cache.chunks[chunk_id].memory_id
            if memory_id not in memories:
                memories.append(memory_id)
        docs = [document(cache, m) for m in memories[:10]]
        out[query.split].append(ndcg_at_10(docs, cache.qrels[query.split][query.claim_id]))
    return {split: float(np.mean(values)) for split, values in out.items()}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("caches", type=Path, nargs="+", help="the first is the baseline")
    parser.add_argument("--names", nargs="*", default=None, help="a label per cache (default: file names)")
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args(argv)
    names = args.names or [path.stem for path in args.caches]
    if len(names) != len(args.caches):
        parser.error("--names needs one label per cache")
    figures, chunks, alone = [], [], []
    for path in args.caches:
        with path.open("rb") as handle:
            cache: Cache = _Unpickler(handle).load()
        figures.append(per_claim(cache))
        chunks.append(len(cache.chunks))
        alone.append({leg: leg_alone(cache, leg) for leg in ("vector", "keyword")})
    base = figures[0]
    lines = [
        "| store | chunks | " + " | ".join(f"{s} nDCG@10 | Δ {s} ± SE (paired)" for s in SPLITS) + " |",
        "|---|---:|" + "---:|---:|" * len(SPLITS),
    ]
    legs = [
        "| store | vector leg alone, train / test | keyword leg alone, train / test |",
        "|---|---|---|",
    ]
    for name, legs_alone in zip(names, alone, strict=True):
        cells = [name] + [" / ".join(f"{legs_alone[leg][s]:.4f}" for s in SPLITS) for leg in ("vector", "keyword")]
        legs.append("| " + " | ".join(cells) + " |")
    for name, n_chunks, figure in zip(names, chunks, figures, strict=True):
        cells = [name, str(n_chunks)]
        for split in SPLITS:
            claim_ids = sorted(base[split])
            assert sorted(figure[split]) == claim_ids, f"{name}: not the same {split} claims as the baseline"
            mine = np.array([figure[split][c] for c in claim_ids])
            diff = mine - np.array([base[split][c] for c in claim_ids])
            se = diff.std(ddof=1) / np.sqrt(len(diff))
            cells += [f"{mine.mean():.4f}", f"{diff.mean():+.4f} ± {se:.4f}"]
        lines.append("| " + " | ".join(cells) + " |")
    text = "\n".join(lines) + "\n\n" + "\n".join(legs) + "\n"
    print(text)
    if args.output:
        args.output.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
