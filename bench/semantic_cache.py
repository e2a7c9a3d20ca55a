"""Would a semantic cache pay? Reusing a search's answer for a later query at cosine similarity >= 0.8.

The design asks for one (LRU-bounded, hit rate reported). Before building it, this measures on a query
log with repeats and near-repeats:
- which near-repeats it would catch: each BEIR SciFact test claim and four rewordings of it (lower case
  without the final stop, "Is it true that ...?", "Evidence about: ...", the last word dropped), embedded
  with the embedded model; a near-repeat is caught when its cosine to the original is >= the threshold;
- how often it would answer a different question: for each distinct claim, the nearest other claim
  (SciFact train + test), a false hit when that is >= the threshold;
- what a caught near-repeat's cached answer would change: the keyword leg's top 10 (Zapomni's own BM25
  over the SciFact corpus) for the original against the rewording, as the overlap of the two top 10s;
- what a hit can save: the query must be embedded to look the cache up, so only the search after the
  embedding is saved; that figure is the scale benchmark's "cached embedding" latency (bench/results/scale.md).

Run: `.venv/bin/python -m bench.semantic_cache`; results in bench/results/semantic_cache.{md,json}.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import DATA_DIR, commit, load_scifact, read_jsonl, write_results
from bench.handwritten_bm25 import Bm25Index
from zapomni_core.embedders.onnx_minilm import OnnxMiniLMEmbedder
from zapomni_core.search.analyzer import Analyzer

RESULTS = Path(__file__).resolve().parent / "results"
THRESHOLDS = (0.8, 0.9, 0.95)


def rewordings(claim: str) -> dict[str, str]:
    bare = claim.rstrip(" .?!")
    words = bare.split()
    return {
        "lower case, no stop": bare.lower(),
        "is it true that": f"Is it true that {bare[0].lower()}{bare[1:]}?",
        "evidence about": f"Evidence about: {bare}",
        "last word dropped": " ".join(words[:-1]) if len(words) > 3 else bare,
    }


async def run(data_dir: Path) -> dict[str, Any]:
    data = load_scifact(data_dir, None)
    claims = data.query_texts
    every_claim = list(dict.fromkeys([str(q["text"]) for q in read_jsonl(data_dir / "queries.jsonl")]))
    variants = [rewordings(c) for c in claims]
    kinds = list(variants[0])
    embedder = OnnxMiniLMEmbedder()
    embed = embedder.embed_sync
    originals = np.asarray(embed(claims), dtype=np.float32)
    others = np.asarray(embed(every_claim), dtype=np.float32)
    reworded = {k: np.asarray(embed([v[k] for v in variants]), dtype=np.float32) for k in kinds}

    analyzer, index = Analyzer(), Bm25Index()
    for doc_id, text in zip(data.doc_ids, data.doc_texts, strict=True):
        counts = analyzer.count(text)
        index.add(doc_id, counts.terms, counts.counts, counts.length)

    def top10(text: str) -> list[str]:
        return [doc for doc, _ in index.search(analyzer.query_terms(text), 10)]

    out: dict[str, Any] = {"claims": len(claims), "other_claims": len(every_claim), "near_repeats": {}}
    for kind in kinds:
        similarity = np.sum(originals * reworded[kind], axis=1)
        overlaps = [
            len(set(top10(claim)) & set(top10(v[kind]))) / 10
            for claim, v, s in zip(claims, variants, similarity, strict=True)
            if s >= THRESHOLDS[0]
        ]
        out["near_repeats"][kind] = {
            "caught": {str(t): round(float(np.mean(similarity >= t)), 3) for t in THRESHOLDS},
            "median_similarity": round(float(np.median(similarity)), 3),
            "keyword_top10_overlap_when_caught": round(float(np.mean(overlaps)), 3) if overlaps else None,
            "caught_with_identical_keyword_top10": round(float(np.mean([o == 1.0 for o in overlaps])), 3)
            if overlaps
            else None,
        }
    # The nearest other claim: cosine between distinct SciFact claims (the same text twice is skipped).
    texts = np.asarray(every_claim, dtype=object)
    gram = others @ others.T
    gram[texts[:, None] == texts[None, :]] = -1.0
    nearest = gram.max(axis=1)
    out["distinct_claims_nearest_other"] = {
        "false_hit_rate": {str(t): round(float(np.mean(nearest >= t)), 3) for t in THRESHOLDS},
        "median": round(float(np.median(nearest)), 3),
    }
    return out


def render(results: dict[str, Any]) -> str:
    lines = [
        "# Semantic cache — would reusing answers at cosine ≥ 0.8 pay?",
        "",
        f"- date: {results['date']}; commit {results['commit']}; load average {results['load']}; CPUs: "
        f"{os.cpu_count()}; produced by `python -m bench.semantic_cache`.",
        f"- {results['claims']} SciFact test claims, four rewordings each; false hits against "
        f"{results['other_claims']} distinct SciFact claims (train + test); embedded model all-MiniLM-L6-v2 int8.",
        "",
        "| near-repeat | caught at 0.8 | at 0.9 | at 0.95 | median cosine | keyword top-10 overlap when caught "
        "| caught with the same keyword top 10 |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for kind, r in results["near_repeats"].items():
        c = r["caught"]
        lines.append(
            f"| {kind} | {c['0.8']} | {c['0.9']} | {c['0.95']} | {r['median_similarity']} | "
            f"{r['keyword_top10_overlap_when_caught']} | {r['caught_with_identical_keyword_top10']} |"
        )
    f = results["distinct_claims_nearest_other"]
    lines += [
        "",
        f"Distinct claims whose nearest other claim is at or above the threshold (a cache hit that answers another "
        f"question): {f['false_hit_rate']['0.8']} at 0.8, {f['false_hit_rate']['0.9']} at 0.9, "
        f"{f['false_hit_rate']['0.95']} at 0.95 (median nearest {f['median']}).",
        "",
        "Produced by `bench/semantic_cache.py`.",
    ]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path, default=DATA_DIR)
    parser.add_argument("--output", type=Path, default=RESULTS / "semantic_cache.md")
    args = parser.parse_args(argv)
    if not (args.data_dir / "corpus.jsonl").is_file():
        print(f"{args.data_dir}/corpus.jsonl not found", file=sys.stderr)
        return 2
    results = asyncio.run(run(args.data_dir))
    results |= {
        "date": f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
        "commit": commit(),
        "load": [round(x, 2) for x in os.getloadavg()],
    }
    write_results(render(results), results, args.output, args.output.with_suffix(".json"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
