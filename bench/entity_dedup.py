"""How well does entity resolution tell one thing from two, at which rapidfuzz threshold, with which scorer?

Data: `bench/data/entity_pairs.jsonl`, pairs of entity names written for the project and labelled by the
rule in `bench/data/README.md` ("Entity pairs"). Each pair is decided the way an extraction job decides
it: an `EntityIndex` knows entity A, and B arrives as a mention; "same" is predicted when B resolves to
A's key. Precision, recall and F1 of "same" are swept over thresholds 70..100 (step 5) and 80..95
(step 1) for three scorers (fuzz.ratio, fuzz.token_sort_ratio, fuzz.WRatio), beside two baselines:
exact keys only, and each scorer alone on the canonical names of one family (no folding, no guards).

Speed: `resolve()` against 10K and 100K synthetic known entities (pseudo-words; a realistic mix of
families, and the worst case of every entity in one family), for mentions that hit exactly, carry a
typo, or are new (a new name is the slow path: it scans the fuzzy candidates).

Run from the repository root: `.venv/bin/python -m bench.entity_dedup` (about 2 minutes on 2 cores).
Results go to `bench/results/entity_dedup.md` and `.json`.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import random
import statistics
import time
import tracemalloc
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path
from typing import Any

from zapomni_core.graph.extraction import Mention
from zapomni_core.graph.merge import (
    DEFAULT_SCORER,
    SCORERS,
    EntityIndex,
    canonical,
    entity_key,
    type_family,
)
from zapomni_core.settings import Settings
from zapomni_db import KnownEntity

ROOT = Path(__file__).resolve().parent.parent
PAIRS = ROOT / "bench" / "data" / "entity_pairs.jsonl"
RESULTS = ROOT / "bench" / "results"
COARSE = list(range(70, 101, 5))
FINE = list(range(80, 96))
SIZES = [10_000, 100_000]
TIE = 0.005  # F1 differences below this are one pair or less
LENGTH_BOUNDED = ("ratio", "token_sort_ratio")  # scorers the index pre-filters by length (lossless)


@dataclass(frozen=True)
class Pair:
    name_a: str
    type_a: str
    name_b: str
    type_b: str
    same: bool
    category: str


def load_pairs(path: Path) -> list[Pair]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [
        Pair(r["name_a"], r["type_a"], r["name_b"], r["type_b"], bool(r["same"]), r.get("category", "")) for r in rows
    ]


def resolves_together(known: tuple[str, str], arriving: tuple[str, str], scorer: str, threshold: float) -> bool:
    """The pipeline's answer: does `arriving` resolve to the entity `known` made?"""
    key = entity_key(*known)
    index = EntityIndex([KnownEntity(key, known[0], known[1], (), 0.5)], threshold=threshold, scorer=scorer)
    return index.resolve(Mention(arriving[0], arriving[1], 0.5)).key == key


def scorer_alone(pair: Pair, scorer: str, threshold: float) -> bool:
    """Baseline: the scorer on canonical names of one family, nothing else."""
    if type_family(pair.type_a) != type_family(pair.type_b):
        return False
    a, b = canonical(pair.name_a, pair.type_a), canonical(pair.name_b, pair.type_b)
    return SCORERS[scorer](a, b) >= threshold


def metrics(pairs: Sequence[Pair], predicted: Sequence[bool]) -> dict[str, Any]:
    tp = sum(p.same and guess for p, guess in zip(pairs, predicted, strict=True))
    fp = sum(not p.same and guess for p, guess in zip(pairs, predicted, strict=True))
    fn = sum(p.same and not guess for p, guess in zip(pairs, predicted, strict=True))
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "precision": round(precision, 4),
        "recall": round(recall, 4),
        "f1": round(f1, 4),
    }


def sweep(pairs: Sequence[Pair], thresholds: Sequence[int]) -> dict[str, dict[str, dict[str, Any]]]:
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for scorer in SCORERS:
        out[scorer] = {
            str(t): metrics(
                pairs, [resolves_together((p.name_a, p.type_a), (p.name_b, p.type_b), scorer, t) for p in pairs]
            )
            for t in thresholds
        }
        out[f"{scorer} alone"] = {
            str(t): metrics(pairs, [scorer_alone(p, scorer, t) for p in pairs]) for t in thresholds
        }
    return out


def choose(fine: dict[str, dict[str, dict[str, Any]]]) -> tuple[str, int, list[int]]:
    """The scorer with the best F1, where F1s within TIE of each other tie and the faster scorer wins (one
    pair more or less in 325 is noise; a length-bounded scorer scans a fraction of the candidates). Its
    threshold: the middle of the widest run of thresholds reaching its best F1, for a margin both sides."""
    best_f1 = {scorer: max(m["f1"] for m in fine[scorer].values()) for scorer in SCORERS}
    top = max(best_f1.values())
    tied = [scorer for scorer in SCORERS if best_f1[scorer] >= top - TIE]
    scorer = max(tied, key=lambda name: (name in LENGTH_BOUNDED, best_f1[name], name == DEFAULT_SCORER))
    plateau = [t for t in map(int, fine[scorer]) if fine[scorer][str(t)]["f1"] == best_f1[scorer]]
    runs: list[list[int]] = []
    for t in plateau:
        if runs and t == runs[-1][-1] + 1:
            runs[-1].append(t)
        else:
            runs.append([t])
    widest = max(runs, key=len)
    return scorer, widest[len(widest) // 2], plateau


def errors(pairs: Sequence[Pair], scorer: str, threshold: int) -> list[dict[str, Any]]:
    out = []
    for p in pairs:
        guess = resolves_together((p.name_a, p.type_a), (p.name_b, p.type_b), scorer, threshold)
        if guess != p.same:
            out.append({**p.__dict__, "predicted": guess})
    return out


# ---------------------------------------------------------------------------------------------------
# Speed

SYLLABLES = "ka to ri mo sen lar bel qui dra fen po zu ix ven thal gor mir sta pol dex an el or un".split()
MIX = {"CONCEPT": 0.35, "ORG": 0.2, "PERSON": 0.2, "PRODUCT": 0.15, "PLACE": 0.1}


def pseudo_name(rng: random.Random, words: int) -> str:
    return " ".join("".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4))).title() for _ in range(words))


def known_entities(size: int, rng: random.Random, one_family: bool) -> list[KnownEntity]:
    types = list(MIX)
    weights = list(MIX.values())
    out: dict[str, KnownEntity] = {}
    while len(out) < size:
        entity_type = "CONCEPT" if one_family else rng.choices(types, weights)[0]
        name = pseudo_name(rng, 2 if entity_type == "PERSON" else rng.randint(1, 3))
        key = entity_key(name, entity_type)
        out.setdefault(key, KnownEntity(key, name, entity_type, (), 0.8))
    return list(out.values())


def typo(name: str, rng: random.Random) -> str:
    position = rng.randrange(len(name))
    return name[:position] + rng.choice("aeiouxz") + name[position + 1 :]


def index_mb(known: Sequence[KnownEntity], scorer: str, threshold: float) -> float:
    """Python memory the index holds (tracemalloc; a separate build, as tracing slows it down)."""
    gc.collect()
    tracemalloc.start()
    index = EntityIndex(known, threshold=threshold, scorer=scorer)
    held = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    del index
    return held / 2**20


def speed(size: int, queries: int, scorer: str, threshold: float, one_family: bool) -> dict[str, Any]:
    rng = random.Random(size)
    known = known_entities(size, rng, one_family)
    grown = index_mb(known, scorer, threshold)
    gc.collect()
    started, cpu = time.perf_counter(), time.process_time()
    index = EntityIndex(known, threshold=threshold, scorer=scorer)
    build_s, build_cpu_s = time.perf_counter() - started, time.process_time() - cpu
    sample = rng.sample(known, queries)
    fresh = known_entities(queries, random.Random(size + 1), one_family)
    kinds = {
        "exact": [Mention(e.name, e.type, 0.9) for e in sample],
        "typo": [Mention(typo(e.name, rng), e.type, 0.9) for e in sample],
        "new": [Mention(e.name + " Zq", e.type, 0.9) for e in fresh],
    }
    out: dict[str, Any] = {
        "entities": len(index),
        "build_s": round(build_s, 2),
        "build_cpu_s": round(build_cpu_s, 2),
        "index_mb": round(grown, 1),
    }
    for kind, mentions in kinds.items():
        times = []
        for mention in mentions:
            started = time.perf_counter()
            index.resolve(mention)
            times.append((time.perf_counter() - started) * 1e3)
        times.sort()
        out[kind] = {
            "p50_ms": round(statistics.median(times), 3),
            "p95_ms": round(times[int(0.95 * (len(times) - 1))], 3),
            "mean_ms": round(statistics.fmean(times), 3),
        }
    return out


# ---------------------------------------------------------------------------------------------------
# Report


def table(rows: dict[str, dict[str, Any]], thresholds: Sequence[int]) -> list[str]:
    lines = ["| setting | " + " | ".join(str(t) for t in thresholds) + " |", "|---" * (len(thresholds) + 1) + "|"]
    for name, by_t in rows.items():
        cells = [f"{by_t[str(t)]['f1']:.3f}" for t in thresholds]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines


def render(report: dict[str, Any]) -> str:
    chosen = report["chosen"]
    at = report["fine"][chosen["scorer"]][str(chosen["threshold"])]
    lines = [
        "# Entity deduplication: scorer and threshold",
        "",
        f"Generated {report.get('date', '(undated)')} by `bench/entity_dedup.py` on {report['machine']}; "
        f"rapidfuzz {report['rapidfuzz']}. "
        f"{report['pairs']} labelled pairs ({report['same']} same, {report['pairs'] - report['same']} different) "
        "from `bench/data/entity_pairs.jsonl`; labelling rule in `bench/data/README.md`.",
        "",
        'Each pair is decided as a job decides it: an `EntityIndex` knows A, B arrives as a mention, "same" '
        "when B resolves to A's key (exact key, folded form, surname rule, or fuzzy score ≥ threshold behind the "
        'guards). "alone" rows score the canonical names of one family with nothing else, for comparison.',
        "",
        "## Chosen",
        "",
        f"**{chosen['scorer']} at {chosen['threshold']}**: precision {at['precision']:.3f}, recall "
        f"{at['recall']:.3f}, F1 {at['f1']:.3f} ({at['tp']} merged right, {at['fp']} wrong merges, {at['fn']} "
        f"missed). {chosen['scorer']} reaches its best F1 at {', '.join(map(str, chosen['plateau']))}; the "
        f"middle of the widest run is taken. Scorers within {TIE} F1 of the best count as tied and the faster "
        f"wins. Exact keys only: F1 {report['exact_only']['f1']:.3f} (precision "
        f"{report['exact_only']['precision']:.3f}, recall {report['exact_only']['recall']:.3f}).",
        "",
        f"The other direction (B known, A arriving) at the chosen setting: F1 {report['reverse']['f1']:.3f} "
        f"(precision {report['reverse']['precision']:.3f}, recall {report['reverse']['recall']:.3f}): the surname "
        "rule only joins a bare surname to a known full name, not the other way.",
        "",
        "## F1, thresholds 70–100 (step 5)",
        "",
        *table(report["coarse"], COARSE),
        "",
        "## F1, thresholds 80–95 (step 1)",
        "",
        *table(report["fine"], FINE),
        "",
        "## Precision / recall at the chosen threshold",
        "",
        "| setting | precision | recall | F1 | wrong merges | missed |",
        "|---|---|---|---|---|---|",
    ]
    for name, by_t in report["fine"].items():
        m = by_t[str(chosen["threshold"])]
        lines.append(f"| {name} | {m['precision']:.3f} | {m['recall']:.3f} | {m['f1']:.3f} | {m['fp']} | {m['fn']} |")
    lines += [
        "",
        "## Errors at the chosen setting",
        "",
        "| category | A | B | label | predicted |",
        "|---|---|---|---|---|",
    ]
    for e in report["errors"]:
        lines.append(
            f"| {e['category']} | {e['name_a']} ({e['type_a']}) | {e['name_b']} ({e['type_b']}) | "
            f"{'same' if e['same'] else 'different'} | {'same' if e['predicted'] else 'different'} |"
        )
    lines += ["", "## Per category at the chosen setting", "", "| category | pairs | errors |", "|---|---|---|"]
    for category, count in report["categories"].items():
        lines.append(f"| {category} | {count} | {report['category_errors'].get(category, 0)} |")
    lines += [
        "",
        "## resolve() speed",
        "",
        "Synthetic known entities (pseudo-words, 1–3 words); mixed = 35 % CONCEPT, 20 % ORG, 20 % PERSON, "
        "15 % PRODUCT, 10 % PLACE; one family = all CONCEPT (the worst case: every new name is compared with "
        "all of them). resolve() per call in milliseconds (wall clock); the index build in seconds, wall and "
        "CPU, and the Python memory it holds (tracemalloc). Load average when the run started: "
        f"{report['load_average']} on {os.cpu_count()} cores (other work shares the machine: wall times are "
        "upper bounds).",
        "",
        "| scorer | entities | families | build s (CPU) | index MB | exact p50 / p95 | typo p50 / p95 "
        "| new p50 / p95 |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in report["speed"]:
        lines.append(
            f"| {row['scorer']} | {row['entities']:,} | {row['families']} | {row['build_s']} ({row['build_cpu_s']}) | "
            f"{row['index_mb']} | "
            f"{row['exact']['p50_ms']} / {row['exact']['p95_ms']} | "
            f"{row['typo']['p50_ms']} / {row['typo']['p95_ms']} | "
            f"{row['new']['p50_ms']} / {row['new']['p95_ms']} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=Path, default=PAIRS)
    parser.add_argument("--sizes", type=int, nargs="*", default=SIZES, help="known entities for the speed runs")
    parser.add_argument("--queries", type=int, default=300, help="mentions per kind in each speed run")
    parser.add_argument("--out", type=Path, default=RESULTS, help="where entity_dedup.md/.json go")
    args = parser.parse_args(argv)
    load_average = " / ".join(f"{value:.1f}" for value in os.getloadavg())

    pairs = load_pairs(args.pairs)
    coarse, fine = sweep(pairs, COARSE), sweep(pairs, FINE)
    scorer, threshold, plateau = choose(fine)
    exact = metrics(pairs, [entity_key(p.name_a, p.type_a) == entity_key(p.name_b, p.type_b) for p in pairs])
    reverse = metrics(
        pairs, [resolves_together((p.name_b, p.type_b), (p.name_a, p.type_a), scorer, threshold) for p in pairs]
    )
    wrong = errors(pairs, scorer, threshold)
    speed_rows = []
    for size in args.sizes:
        for one_family in (False, True):
            scorers = [scorer] + ([name for name in SCORERS if name != scorer] if size <= 10_000 else ["ratio"])
            for name in dict.fromkeys(scorers):
                row = speed(size, min(args.queries, size), name, threshold, one_family)
                speed_rows.append({"scorer": name, "families": "one" if one_family else "mixed", **row})
    report = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{platform.system()} {platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}",
        "rapidfuzz": version("rapidfuzz"),
        "load_average": load_average,
        "pairs": len(pairs),
        "same": sum(p.same for p in pairs),
        "settings_threshold": Settings().entity_match_threshold,
        "chosen": {"scorer": scorer, "threshold": threshold, "plateau": plateau},
        "exact_only": exact,
        "reverse": reverse,
        "coarse": coarse,
        "fine": fine,
        "errors": wrong,
        "categories": dict(Counter(p.category for p in pairs)),
        "category_errors": dict(Counter(e["category"] for e in wrong)),
        "speed": speed_rows,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "entity_dedup.json").write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    (args.out / "entity_dedup.md").write_text(render(report))
    print(f"chosen: {scorer} at {threshold}; F1 {fine[scorer][str(threshold)]['f1']}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
