"""The relevance rule on BEIR SciFact: calibrate the floor on the train claims, check it on test.

The rule (`zapomni_core.search.fusion.relevant_only`): a result is kept when the keyword leg found
it (it shares a query term) or its cosine similarity to the query is at least the floor; the rest
is dropped unless the caller asks for unrelated results. A floor of 0 keeps everything, i.e. it is
the search without the rule (`include_unrelated`).

One store (every corpus document stored with `add_memory`). For the sweep, every train claim is
searched through `ZapomniCore.search` once per floor, mode and limit, with the two legs memoised
(the rule acts after the legs, so they return the same candidates whatever the floor); the sweep's
rankings at the chosen floor are checked equal to an un-memoised pipeline's. The floor chosen is
the highest at which train nDCG@10 *and* Recall@100 stay within `TOLERANCE` of no floor in both
`hybrid` and `vector` mode: nDCG@10 alone cannot see what the rule removes below rank 10. Test
figures (every mode, with and without the rule) go through `ZapomniCore.search` with plain legs.

Two checks on the development half of LoCoMo, reported, not tuned on:
- what the rule costs on short conversational questions (closer to what an agent asks than
  SciFact's claims): each turn stored as one memory, one store per conversation, evidence
  recall@5/@10 at every floor;
- what it removes: questions asked of a store that cannot answer them (LoCoMo questions of the
  SciFact store, SciFact train claims of each LoCoMo store), where every result is unrelated.
Run: `.venv/bin/python -m bench.relevance` (about 20 minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from bench.common import DATA_DIR, load_scifact
from bench.locomo import LOCOMO, Conversation, load_locomo
from bench.metrics import evidence_recall, mean_ndcg, recall_at_100
from bench.quality import ingest, query_splits
from zapomni_core import Settings, ZapomniCore, open_core
from zapomni_core.kernel.registry import Workspace
from zapomni_core.logs import configure_logging
from zapomni_core.memories.requests import SearchRequest
from zapomni_core.search import Candidate, RetrievalQuery, Retriever, SearchPipeline
from zapomni_core.search.types import LegName, SearchMode

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
MODES: tuple[SearchMode, ...] = ("hybrid", "vector", "keyword")
SWEPT_MODES: tuple[SearchMode, ...] = ("hybrid", "vector")  # keyword mode keeps every hit whatever the floor
FLOORS = tuple(round(0.025 * i, 3) for i in range(17))  # 0.0 ... 0.40
LIMITS = (100, 10)
TOLERANCE = 0.001  # train nDCG@10 a floor may cost, per mode
CROSS_CLAIMS = 200  # SciFact train claims asked of each LoCoMo conversation


class MemoisedLeg:
    """A retrieval leg that answers each (query, depth) once; the sweep re-runs the pipeline over it."""

    def __init__(self, leg: Retriever) -> None:
        self.name: LegName = leg.name
        self._leg = leg
        self._seen: dict[tuple[str, int], list[Candidate]] = {}

    async def retrieve(self, query: RetrievalQuery, k: int) -> list[Candidate]:
        key = (query.text, k)
        if key not in self._seen:
            self._seen[key] = await self._leg.retrieve(query, k)
        return self._seen[key]


async def default_workspace(core: ZapomniCore) -> Workspace:
    workspace = await core.workspaces.registry.get(None, create=True)
    assert workspace is not None
    return workspace


async def use_pipeline(core: ZapomniCore, legs: Sequence[Retriever], settings: Settings, floor: float) -> None:
    """Give the default workspace a pipeline with this floor (the bench's only reach into the engine)."""
    workspace = await default_workspace(core)
    pipeline = SearchPipeline(  # one store, many floors, no restart
        legs, rrf_k=settings.rrf_k, leg_depth=settings.search_leg_depth, relevance_floor=floor
    )
    core.workspaces.registry._open[workspace.name] = replace(workspace, search=pipeline)


@dataclass
class Run:
    """One mode at one floor and limit over a query set: per query the doc ranking and what it kept."""

    rankings: list[list[str]]
    similarities: list[list[float]]

    def mean_results(self) -> float:
        return float(np.mean([len(r) for r in self.rankings]))

    def share_nonempty(self) -> float:
        return float(np.mean([bool(r) for r in self.rankings]))


async def search_all(
    core: ZapomniCore, texts: Sequence[str], mode: SearchMode, limit: int, memory_to_doc: dict[str, str]
) -> Run:
    rankings, similarities = [], []
    for text in texts:
        hits = (await core.memories.search(SearchRequest(query=text[:1000], limit=limit, mode=mode))).results
        rankings.append([memory_to_doc[hit.memory_id] for hit in hits])
        similarities.append([hit.similarity_score or 0.0 for hit in hits])  # None only before a load: not here
    return Run(rankings, similarities)


def relevant_dropped(without: Run, with_rule: Run, qrels: dict[str, dict[str, int]], ids: Sequence[str]) -> float:
    """Of the judged-relevant documents in the unfiltered top 100, the share the rule removes."""
    found = kept = 0
    for before, after, qid in zip(without.rankings, with_rule.rankings, ids, strict=True):
        relevant = {d for d, grade in qrels[qid].items() if grade > 0}
        found += len(relevant & set(before))
        kept += len(relevant & set(after))
    return 1 - kept / found if found else 0.0


def relevant_similarity(run: Run, qrels: dict[str, dict[str, int]], ids: Sequence[str]) -> dict[str, float]:
    """Percentiles of the cosine similarity of judged-relevant documents among the results."""
    sims = [
        s
        for ranking, scores, qid in zip(run.rankings, run.similarities, ids, strict=True)
        for doc, s in zip(ranking, scores, strict=True)
        if qrels[qid].get(doc, 0) > 0
    ]
    if not sims:
        return {}
    return {f"p{q}": round(float(np.percentile(sims, q)), 3) for q in (1, 5, 10, 50)} | {"min": round(min(sims), 3)}


@dataclass
class Report:
    documents: int = 0
    chunks: int = 0
    train_queries: int = 0
    test_queries: int = 0
    rrf_k: int = 60
    leg_depth: int = 50
    # floor -> mode -> figure name -> value, on train
    sweep: dict[float, dict[str, dict[str, float]]] = field(default_factory=dict)
    relevant_similarity_train: dict[str, dict[str, float]] = field(default_factory=dict)
    chosen_floor: float = 0.0
    sweep_matches_pipeline: bool = False
    # "without" / "with" -> mode -> figure name -> value, on test
    test: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)
    # LoCoMo development half: floor -> mode -> figure name -> value
    locomo: dict[float, dict[str, dict[str, float]]] = field(default_factory=dict)
    locomo_questions: int = 0
    # cross-corpus queries (every result unrelated): direction -> floor -> mode -> figure name -> value
    unrelated: dict[str, dict[float, dict[str, dict[str, float]]]] = field(default_factory=dict)
    date: str = field(default_factory=lambda: f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC")


def figures(
    runs: dict[int, Run], base: dict[int, Run] | None, ids: Sequence[str], qrels: dict[str, dict[str, int]]
) -> dict[str, float]:
    top = runs[100]
    out = {
        "ndcg10": mean_ndcg(top.rankings, ids, qrels),
        "recall100": recall_at_100(top.rankings, ids, qrels),
        "ndcg10_at_limit10": mean_ndcg(runs[10].rankings, ids, qrels),
        "mean_results_limit100": top.mean_results(),
        "mean_results_limit10": runs[10].mean_results(),
        "share_nonempty": runs[10].share_nonempty(),
    }
    if base is not None:
        out["relevant_dropped"] = relevant_dropped(base[100], top, qrels, ids)
    return {k: round(v, 4) for k, v in out.items()}


def choose_floor(sweep: dict[float, dict[str, dict[str, float]]]) -> float:
    """The highest floor whose train nDCG@10 and Recall@100 are within TOLERANCE of no floor in every swept mode."""
    base = sweep[0.0]
    chosen = 0.0
    for floor in sorted(sweep):  # stop at the first loss: a lucky bump past it does not count
        if any(
            sweep[floor][mode][metric] < base[mode][metric] - TOLERANCE
            for mode in SWEPT_MODES
            for metric in ("ndcg10", "recall100")
        ):
            break
        chosen = floor
    return chosen


async def sweep_floors(
    core: ZapomniCore,
    legs: Sequence[Retriever],
    settings: Settings,
    texts: Sequence[str],
    limit: int,
    to_doc: dict[str, str],
) -> dict[float, dict[str, Run]]:
    """Every floor and swept mode over `texts` through `ZapomniCore.search` (give it memoised legs)."""
    runs: dict[float, dict[str, Run]] = {}
    for floor in FLOORS:
        await use_pipeline(core, legs, settings, floor)
        for mode in SWEPT_MODES:
            runs.setdefault(floor, {})[mode] = await search_all(core, texts, mode, limit, to_doc)
    return runs


def unrelated_figures(runs: Sequence[dict[float, dict[str, Run]]]) -> dict[float, dict[str, dict[str, float]]]:
    """Results kept per query and the share of queries keeping any, when every result is unrelated."""
    out: dict[float, dict[str, dict[str, float]]] = {}
    for floor in FLOORS:
        for mode in SWEPT_MODES:
            rankings = [r for part in runs for r in part[floor][mode].rankings]
            out.setdefault(floor, {})[mode] = {
                "mean_results": round(float(np.mean([len(r) for r in rankings])), 3),
                "share_with_any": round(float(np.mean([bool(r) for r in rankings])), 4),
            }
    return out


async def locomo_sweep(
    conversations: Sequence[Conversation], claims: Sequence[str], workdir: Path
) -> tuple[dict[float, dict[str, dict[str, float]]], dict[float, dict[str, dict[str, float]]]]:
    """Per floor and mode: evidence recall@5/@10 (limit 10) over every conversation's questions, and
    what is kept of the unrelated results when the SciFact `claims` are asked of each conversation."""
    found: dict[float, dict[str, list[tuple[list[str], frozenset[str]]]]] = {}
    cross: list[dict[float, dict[str, Run]]] = []
    for number, conversation in enumerate(conversations):
        settings = Settings.from_variables(
            ZAPOMNI_DATA_DIR=workdir / f"locomo-{number}", ZAPOMNI_APPENDFSYNC="everysec", LOG_LEVEL="WARNING"
        )
        async with open_core(settings) as (core, _info):
            ids, texts = [t.dia_id for t in conversation.turns], [t.line for t in conversation.turns]
            to_turn, _seconds = await ingest(core, ids, texts)
            legs = (await default_workspace(core)).search.retrievers  # the same legs under every pipeline
            memo = [MemoisedLeg(leg) for leg in legs]
            questions = [q.text for q in conversation.questions]
            for floor, by_mode in (await sweep_floors(core, memo, settings, questions, 10, to_turn)).items():
                for mode, run_ in by_mode.items():
                    evidence = zip(run_.rankings, (q.evidence for q in conversation.questions), strict=True)
                    found.setdefault(floor, {}).setdefault(mode, []).extend(evidence)
            cross.append(await sweep_floors(core, memo, settings, claims, 10, to_turn))
    sweep: dict[float, dict[str, dict[str, float]]] = {}
    for floor, found_by_mode in found.items():
        for mode, pairs in found_by_mode.items():
            sweep.setdefault(floor, {})[mode] = {
                "recall5": round(float(np.mean([evidence_recall(r[:5], e) for r, e in pairs])), 4),
                "recall10": round(float(np.mean([evidence_recall(r[:10], e) for r, e in pairs])), 4),
                "mean_results_limit10": round(float(np.mean([len(r) for r, _ in pairs])), 2),
                "share_nonempty": round(float(np.mean([bool(r) for r, _ in pairs])), 4),
            }
    return sweep, unrelated_figures(cross)


async def run(data_dir: Path, limit_docs: int | None, workdir: Path, locomo: Path | None) -> Report:
    data = load_scifact(data_dir, limit_docs)
    test_ids, test_texts, tr_ids, tr_texts, train_qrels = query_splits(data_dir, data)

    conversations = load_locomo(locomo) if locomo is not None and locomo.is_file() else []
    locomo_questions = [q.text for conversation in conversations for q in conversation.questions]
    settings = Settings.from_variables(
        ZAPOMNI_DATA_DIR=workdir / "scifact", ZAPOMNI_APPENDFSYNC="everysec", LOG_LEVEL="WARNING"
    )
    report = Report(
        documents=len(data.doc_ids),
        train_queries=len(tr_ids),
        test_queries=len(test_ids),
        rrf_k=settings.rrf_k,
        leg_depth=settings.search_leg_depth,
    )
    async with open_core(settings) as (core, _info):
        memory_to_doc, _seconds = await ingest(core, data.doc_ids, data.doc_texts)
        report.chunks = (await core.workspaces.stats()).total_chunks
        legs = (await default_workspace(core)).search.retrievers  # the same legs under every pipeline
        memo = [MemoisedLeg(leg) for leg in legs]

        # Sweep on train, legs memoised.
        sweep_runs: dict[float, dict[str, dict[int, Run]]] = {}
        for limit in LIMITS:
            for floor, by_mode in (await sweep_floors(core, memo, settings, tr_texts, limit, memory_to_doc)).items():
                for mode, run_ in by_mode.items():
                    sweep_runs.setdefault(floor, {}).setdefault(mode, {})[limit] = run_
        for floor, runs_by_mode in sweep_runs.items():
            report.sweep[floor] = {
                mode: figures(runs, sweep_runs[0.0][mode] if floor else None, tr_ids, train_qrels)
                for mode, runs in runs_by_mode.items()
            }
        for mode in SWEPT_MODES:
            report.relevant_similarity_train[mode] = relevant_similarity(
                sweep_runs[0.0][mode][100], train_qrels, tr_ids
            )
        report.chosen_floor = choose_floor(report.sweep) if tr_ids else 0.0

        # The memoised sweep equals the real pipeline at the chosen floor.
        await use_pipeline(core, legs, settings, report.chosen_floor)
        report.sweep_matches_pipeline = True
        for mode in SWEPT_MODES:
            check = await search_all(core, tr_texts, mode, 100, memory_to_doc)
            report.sweep_matches_pipeline &= check.rankings == sweep_runs[report.chosen_floor][mode][100].rankings

        # Test: every mode, without (floor 0) and with the rule, plain legs.
        test_runs: dict[str, dict[str, dict[int, Run]]] = {}
        for label, floor in (("without", 0.0), ("with", report.chosen_floor)):
            await use_pipeline(core, legs, settings, floor)
            for mode in MODES:
                for limit in LIMITS:
                    run_ = await search_all(core, test_texts, mode, limit, memory_to_doc)
                    test_runs.setdefault(label, {}).setdefault(mode, {})[limit] = run_
        for label, tested_by_mode in test_runs.items():
            report.test[label] = {
                mode: figures(runs, test_runs["without"][mode] if label == "with" else None, test_ids, data.qrels)
                for mode, runs in tested_by_mode.items()
            }
        if locomo_questions:
            cross = await sweep_floors(core, memo, settings, locomo_questions, 10, memory_to_doc)
            report.unrelated["LoCoMo questions → SciFact store"] = unrelated_figures([cross])
    if conversations:
        report.locomo_questions = len(locomo_questions)
        claims = tr_texts[:CROSS_CLAIMS]
        report.locomo, from_claims = await locomo_sweep(conversations, claims, workdir)
        report.unrelated[f"{len(claims)} SciFact train claims → each LoCoMo store"] = from_claims
    return report


def render(report: Report) -> str:
    floor = report.chosen_floor
    lines = [
        "# Relevance rule — BEIR SciFact",
        "",
        f"- date: {report.date}; CPUs: {os.cpu_count()}; {report.documents} documents ({report.chunks} chunks), "
        f"{report.train_queries} train claims, {report.test_queries} test claims",
        "- rule: keep a result if the keyword leg found it (it shares a query term) or its cosine similarity "
        "is ≥ the floor; floor 0 = no rule (`include_unrelated`)",
        f"- search: `ZapomniCore.search`, best chunk per memory, RRF k {report.rrf_k}, leg depth "
        f"max({report.leg_depth}, 2 × limit); nDCG@10 and Recall@100 from limit 100",
        f"- chosen floor: **{floor}** — the highest at which train nDCG@10 and Recall@100 stay within "
        f"{TOLERANCE} of no floor in both `hybrid` and `vector` mode (memoised sweep equal to the plain "
        f"pipeline at that floor: {'yes' if report.sweep_matches_pipeline else 'NO'})",
        "",
        "## Test (reported)",
        "",
        "| mode | rule | nDCG@10 | Recall@100 | mean results, limit 100 | mean results, limit 10 "
        "| queries with ≥1 result | relevant docs dropped |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for mode in MODES:
        for label in ("without", "with"):
            f = report.test[label][mode]
            rule = "none" if label == "without" else f"floor {floor}"
            dropped = f"{f['relevant_dropped'] * 100:.2f} %" if "relevant_dropped" in f else "–"
            lines.append(
                f"| `{mode}` | {rule} | {f['ndcg10']} | {f['recall100']} | {f['mean_results_limit100']} "
                f"| {f['mean_results_limit10']} | {f['share_nonempty'] * 100:.1f} % | {dropped} |"
            )
    lines += [
        "",
        "## Train sweep (calibration)",
        "",
        "| floor | nDCG@10 hybrid | nDCG@10 vector | R@100 hybrid | R@100 vector | mean results @100 h / v "
        "| mean results @10 h / v | queries with ≥1 result h / v | relevant dropped h / v |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for fl, by_mode in sorted(report.sweep.items()):
        h, v = by_mode["hybrid"], by_mode["vector"]
        dropped = (
            f"{h['relevant_dropped'] * 100:.2f} % / {v['relevant_dropped'] * 100:.2f} %"
            if "relevant_dropped" in h
            else "–"
        )
        mark = "**" if fl == floor else ""
        lines.append(
            f"| {mark}{fl}{mark} | {h['ndcg10']} | {v['ndcg10']} | {h['recall100']} | {v['recall100']} "
            f"| {h['mean_results_limit100']} / {v['mean_results_limit100']} "
            f"| {h['mean_results_limit10']} / {v['mean_results_limit10']} "
            f"| {h['share_nonempty'] * 100:.1f} % / {v['share_nonempty'] * 100:.1f} % | {dropped} |"
        )
    if report.locomo:
        lines += [
            "",
            f"## LoCoMo development half (check, not tuned on): {report.locomo_questions} questions, limit 10",
            "",
            "| floor | evidence recall@5 h / v | evidence recall@10 h / v | mean results h / v "
            "| questions with ≥1 result h / v |",
            "|---:|---:|---:|---:|---:|",
        ]
        for fl, by_mode in sorted(report.locomo.items()):
            h, v = by_mode["hybrid"], by_mode["vector"]
            mark = "**" if fl == floor else ""
            lines.append(
                f"| {mark}{fl}{mark} | {h['recall5']} / {v['recall5']} | {h['recall10']} / {v['recall10']} "
                f"| {h['mean_results_limit10']} / {v['mean_results_limit10']} "
                f"| {h['share_nonempty'] * 100:.1f} % / {v['share_nonempty'] * 100:.1f} % |"
            )
    for direction, by_floor in report.unrelated.items():
        lines += [
            "",
            f"## Unrelated results kept: {direction} (limit 10; every result is unrelated)",
            "",
            "| floor | mean results h / v | queries keeping any h / v |",
            "|---:|---:|---:|",
        ]
        for fl, by_mode in sorted(by_floor.items()):
            h, v = by_mode["hybrid"], by_mode["vector"]
            mark = "**" if fl == floor else ""
            lines.append(
                f"| {mark}{fl}{mark} | {h['mean_results']} / {v['mean_results']} "
                f"| {h['share_with_any'] * 100:.1f} % / {v['share_with_any'] * 100:.1f} % |"
            )
    sims = report.relevant_similarity_train
    lines += [
        "",
        "Cosine similarity of judged-relevant documents among the unfiltered top 100 (train): "
        + "; ".join(f"{mode}: " + ", ".join(f"{k} {v}" for k, v in s.items()) for mode, s in sims.items()),
        "",
        "Produced by `bench/relevance.py`.",
    ]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path, default=DATA_DIR)
    parser.add_argument("--limit-docs", type=int, default=None, help="first N documents only (smoke runs)")
    parser.add_argument("--output", type=Path, default=RESULTS / "relevance.md")
    parser.add_argument("--json", type=Path, default=RESULTS / "relevance.json")
    parser.add_argument("--locomo", type=Path, default=LOCOMO, help="LoCoMo development half (skipped if absent)")
    args = parser.parse_args(argv)
    if not (args.data_dir / "corpus.jsonl").is_file():
        print(f"SciFact not found at {args.data_dir}: nothing to measure", file=sys.stderr)
        return 2
    configure_logging("WARNING")
    workdir = Path(tempfile.mkdtemp(prefix="zr-", dir="/tmp"))
    try:
        report = asyncio.run(run(args.data_dir, args.limit_docs, workdir, args.locomo))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    text = render(report)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text)
    args.json.write_text(json.dumps(report.__dict__, indent=2))
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
