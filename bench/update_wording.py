"""The update rules alone on pairs of short notes in wordings the rules were not first written for.

bench/data/updates/wording.jsonl holds batches of pairs (older, newer, `link`) written to try shapes the other sets
lack: a sentence's frame kept and one word or number swapped, a state denied then stated, and near-misses of the
same shapes (bench/data/README.md, Updates). Each pair is judged by `find_updates` with the two texts' cosine in the
embedded model, as a store compares a memory with a candidate: no store, no search. Figures per batch: the updates
linked, and the near-misses linked (wrongly), with every pair the rules get wrong listed.

Run: `.venv/bin/python -m bench.update_wording` (seconds).
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import commit, read_jsonl, write_results
from zapomni_core import Settings
from zapomni_core.content.updates import Said, find_updates
from zapomni_core.embedders.factory import build_embedder
from zapomni_core.logs import configure_logging

HERE = Path(__file__).resolve().parent
PAIRS = HERE / "data" / "updates" / "wording.jsonl"
RESULTS = HERE / "results"


@dataclass(frozen=True)
class Judged:
    pair: dict[str, Any]
    similarity: float
    attribute: str | None  # the link's, None when unlinked

    @property
    def right(self) -> bool:
        return (self.attribute is not None) == bool(self.pair["link"])


async def pair_vectors(pairs: Sequence[tuple[str, str]]) -> tuple[np.ndarray, np.ndarray]:
    """The embedded model's vectors of each pair's older and newer text, of length 1 (a row a pair): their product
    summed is the cosine a store compares a memory with a candidate by."""
    embedder = await build_embedder(Settings.from_variables(LOG_LEVEL="WARNING"))
    vectors = np.array(await embedder.embed_documents([text for pair in pairs for text in pair]))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors[0::2], vectors[1::2]


async def judge_all(pairs: Sequence[dict[str, Any]]) -> list[Judged]:
    older_vectors, newer_vectors = await pair_vectors([(p["older"], p["newer"]) for p in pairs])
    judged = []
    for i, pair in enumerate(pairs):
        similarity = float(older_vectors[i] @ newer_vectors[i])
        older = Said(memory_id="older", text=pair["older"], speaker=None, when=1.0, added=1.0)
        newer = Said(memory_id="newer", text=pair["newer"], speaker=None, when=2.0, added=2.0)
        links = find_updates(newer, [(older, similarity)])
        judged.append(Judged(pair, round(similarity, 3), links[0].attribute if links else None))
    return judged


def figures(judged: Sequence[Judged]) -> dict[str, Any]:
    batches: dict[str, dict[str, Any]] = {}
    for j in judged:
        batch = batches.setdefault(j.pair["batch"], {"updates": 0, "linked": 0, "near_misses": 0, "wrongly_linked": 0})
        if j.pair["link"]:
            batch["updates"] += 1
            batch["linked"] += j.attribute is not None
        else:
            batch["near_misses"] += 1
            batch["wrongly_linked"] += j.attribute is not None
    return batches


def report(results: dict[str, Any]) -> str:
    lines = [
        "# The update rules alone on new wordings",
        "",
        f"- date: {results['date']}; commit {results['commit']}; produced by `python -m bench.update_wording`.",
        "- each pair judged by `find_updates` with its MiniLM cosine; pairs in bench/data/updates/wording.jsonl.",
        "",
        "| batch | updates | linked | near-misses | wrongly linked |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, b in results["batches"].items():
        lines.append(f"| {name} | {b['updates']} | {b['linked']} | {b['near_misses']} | {b['wrongly_linked']} |")
    lines += ["", "Pairs the rules get wrong:", ""]
    for w in results["wrong"]:
        got = f"linked as {w['attribute']}" if w["attribute"] else "not linked"
        lines.append(f"- {w['id']} ({'update' if w['link'] else 'near-miss'}, cosine {w['similarity']}): "
                     f"{w['older']!r} → {w['newer']!r}: {got}")  # fmt: skip
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=Path, default=PAIRS)
    parser.add_argument("--json", type=Path, default=RESULTS / "update_wording.json")
    parser.add_argument("--output", type=Path, default=RESULTS / "update_wording.md")
    args = parser.parse_args(argv)
    configure_logging("WARNING")
    judged = asyncio.run(judge_all(list(read_jsonl(args.pairs))))
    results = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": commit(),
        "batches": figures(judged),
        "wrong": [{**j.pair, "similarity": j.similarity, "attribute": j.attribute} for j in judged if not j.right],
    }
    write_results(report(results), results, args.output, args.json)
    print(report(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
