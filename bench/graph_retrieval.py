"""Retrieval with and without graph expansion: LoCoMo (development half) by question category, SciFact test.

LoCoMo, following the project's metric (../shared/data/README.md): each conversation in a fresh data
directory; every turn stored with `add_memory` as one memory, `speaker: text` (a shared photo as
` [shares a photo: caption]`, as bench/relevance.py stores it), with the session's date as the memory's
`metadata.date` — what an agent would store today; then the graph built by a `build_graph` job with the
embedded spaCy extractor through the real core (the product's default extractor and settings, with
ZAPOMNI_GRAPH_AUTO off so extraction is timed on its own); then every question of categories 1-4 that
has evidence asked through `ZapomniCore.search` (hybrid, limit 10), scoring evidence recall@5 and @10
(the share of the question's evidence turns among the top 5 / 10 memories), averaged over questions.

LoCoMo's category numbers, from the authors' evaluation code (snap-research/locomo task_eval/evaluation.py:
category 1 is scored by splitting the answer into sub-answers, "multi-hop"; 2, 3, 4 without splitting;
5 adversarial; evaluation_stats.py prints them in the paper's order 4, 1, 2, 3, 5 = single-hop,
multi-hop, temporal, open-domain, adversarial): 1 multi-hop, 2 temporal, 3 open-domain (commonsense /
world knowledge), 4 single-hop. The data agrees: 137 of the 142 category-1 questions of this half cite
two or more evidence turns. Category 1 is the multi-hop set; 2-4 show what expansion does elsewhere.

Variants (`zapomni_core.graph.expansion.ExpansionConfig`) run over one store per conversation: the
vector and keyword legs are memoised, so every variant sees the same two lists and only the graph
list and the fusion differ. Latency is measured apart, with live legs, for the baseline and the
default configuration.

SciFact (bench/quality.py's code path: every abstract stored with `add_memory`, the test claims searched
in hybrid mode, limit 100, best chunk per memory = the document ranking; RRF k 10 as bench/quality.py
chose on the train claims) with the graph built the same way: nDCG@10 and Recall@100 per variant.

Extraction cost: wall seconds of the build job and CPU seconds (this process: spaCy, merging, the
driver; and the database server), per 1,000 memories, for both corpora.

SciFact is subsampled by default (`--scifact-docs 2000`: every document relevant to a test claim, then
evenly spaced others up to 2,000 — fewer distractors, so an easier corpus: compare its rows with each
other, not with bench/results/quality.md); `--scifact-docs 0` stores the whole corpus (about 25 more
minutes on 2 cores, most of it embedding and extracting 9,913 chunks).

Run: `.venv/bin/python -m bench.graph_retrieval` (about 30 minutes on 2 shared cores); `--skip-scifact` for
LoCoMo only (about 8 minutes).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import DATA_DIR, SciFact, load_scifact, summary_ms
from bench.locomo import CATEGORIES, LOCOMO, Conversation, Question, load_locomo
from bench.metrics import evidence_recall, mean_ndcg, recall_at_100
from bench.relevance import MemoisedLeg, default_workspace
from zapomni_core import Settings, ZapomniCore, open_core
from zapomni_core.graph.expansion import ExpansionConfig, GraphExpansion
from zapomni_core.graph.requests import BuildGraphRequest, GraphStatusRequest
from zapomni_core.logs import configure_logging
from zapomni_core.memories.requests import AddMemoryRequest, MemoryMetadata, SearchRequest
from zapomni_core.search import Retriever, SearchPipeline
from zapomni_db.graph_neighbours import GraphNeighbours

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
CONCURRENCY = 4
LIMIT = 10
SCIFACT_RRF_K = 10  # bench/quality.py's choice on the train claims (bench/results/quality.json)
SCIFACT_DOCS = 2000  # the default subsample (0: the whole corpus)
LATENCY_QUESTIONS = 40  # per conversation, with live legs
BASELINE = "baseline (no expansion)"
DEFAULT = "default: shared entities, idf, depth 1, hubs skipped, no dates (ExpansionConfig())"
VARIANTS: dict[str, ExpansionConfig | None] = {
    BASELINE: None,
    DEFAULT: ExpansionConfig(),
    "+ query entities": ExpansionConfig(query_entities=True),
    "unweighted (every entity counts 1)": ExpansionConfig(weighted=False),
    "depth 2 (+ RELATED_TO neighbours)": ExpansionConfig(depth=2),
    "+ query entities, depth 2": ExpansionConfig(query_entities=True, depth=2),
    "fusion weight 0.5": ExpansionConfig(weight=0.5),
    "hubs capped (20 nearest chunks) instead of skipped": ExpansionConfig(hubs="cap"),
    "hub threshold 50 mentions (instead of 20)": ExpansionConfig(per_entity=50),
    "dates expanded too": ExpansionConfig(dates=True),
}
# What "a clear gain without hurting elsewhere" means for the decision (absolute recall / nDCG points).
CLEAR_GAIN = 0.02
NO_HARM = 0.005


# -- data --------------------------------------------------------------------------------------------


def scifact_sample(data: SciFact, docs: int | None) -> tuple[list[str], list[str]]:
    """Every document, or every document relevant to a test claim plus evenly spaced others up to `docs`."""
    if docs is None or docs >= len(data.doc_ids):
        return data.doc_ids, data.doc_texts
    relevant = {d for q in data.query_ids for d in data.qrels[q]}
    keep = [i for i, d in enumerate(data.doc_ids) if d in relevant]
    others = [i for i, d in enumerate(data.doc_ids) if d not in relevant]
    room = max(0, docs - len(keep))
    keep += others[:: max(1, len(others) // room)][:room] if room else []
    keep.sort()
    return [data.doc_ids[i] for i in keep], [data.doc_texts[i] for i in keep]


# -- the core ----------------------------------------------------------------------------------------


async def use_variant(
    core: ZapomniCore, legs: Sequence[Retriever], settings: Settings, config: ExpansionConfig | None
) -> None:
    """Give the default workspace a pipeline over `legs` with this expansion (the bench's reach into the engine)."""
    workspace = await default_workspace(core)
    expansion = None
    if config is not None:
        expansion = GraphExpansion(GraphNeighbours(workspace.stores.client), workspace.stores.search, config)
    pipeline = SearchPipeline(
        legs,
        rrf_k=settings.rrf_k,
        leg_depth=settings.search_leg_depth,
        relevance_floor=settings.relevance_floor,
        expansion=expansion,
    )
    core.workspaces.registry._open[workspace.name] = replace(workspace, search=pipeline)


async def ingest(
    core: ZapomniCore, items: Sequence[tuple[str, str, str | None]], label: str
) -> tuple[dict[str, str], float]:
    """Store (key, text, date) items, CONCURRENCY adds at a time; memory id -> key, and the seconds it took."""
    to_key: dict[str, str] = {}
    queue = list(reversed(items))
    started = time.perf_counter()

    async def worker() -> None:
        while queue:
            key, text, date = queue.pop()
            metadata = MemoryMetadata(date=date) if date else None
            result = await core.memories.add(AddMemoryRequest(text=text, metadata=metadata))
            to_key[result.memory_id] = key

    await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
    seconds = time.perf_counter() - started
    print(f"{label}: {len(items)} memories stored in {seconds:.1f} s", file=sys.stderr)
    return to_key, seconds


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process so far (from /proc; 0 where that is not readable)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def build_graph(core: ZapomniCore, label: str) -> dict[str, Any]:
    """Queue `build_graph` over every memory, wait for it, and say what it cost."""
    workspace = await default_workspace(core)
    info = await workspace.stores.client.command("INFO", "server")
    db_pid = int(info["process_id"])
    cpu0, db0, wall0 = time.process_time(), process_cpu_s(db_pid), time.perf_counter()
    queued = await core.graph.build(BuildGraphRequest())
    while True:
        status = await core.graph.status(GraphStatusRequest(job_id=queued.job_id, wait_s=50))
        assert status.job is not None
        if status.job.state not in ("pending", "running"):
            break
    wall = time.perf_counter() - wall0
    cpu, db_cpu = time.process_time() - cpu0, process_cpu_s(db_pid) - db0
    job = status.job
    assert job.started_at and job.finished_at
    job_s = (datetime.fromisoformat(job.finished_at) - datetime.fromisoformat(job.started_at)).total_seconds()
    memories = job.progress.done
    print(f"{label}: graph of {memories} memories built in {job_s:.1f} s ({job.state})", file=sys.stderr)
    return {
        "memories": memories,
        "state": job.state,
        "job_s": round(job_s, 2),
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
        "db_cpu_s": round(db_cpu, 2),
        "entities": status.graph.entities,
        "relations": status.graph.relations,
        "entities_by_type": status.graph.entities_by_type,
        "failed_items": job.failed_items,
    }


def per_thousand(builds: Sequence[dict[str, Any]]) -> dict[str, float]:
    memories = sum(b["memories"] for b in builds) or 1
    return {
        "memories": sum(b["memories"] for b in builds),
        "seconds": round(sum(b["job_s"] for b in builds) / memories * 1000, 1),
        "cpu_s": round(sum(b["cpu_s"] for b in builds) / memories * 1000, 1),
        "db_cpu_s": round(sum(b["db_cpu_s"] for b in builds) / memories * 1000, 1),
    }


# -- LoCoMo ------------------------------------------------------------------------------------------


@dataclass
class Scored:
    """Per variant: one (category, recall@5, recall@10, graph-found results in the top 10) per question."""

    rows: dict[str, list[tuple[int, float, float, int]]] = field(default_factory=dict)
    latency_ms: dict[str, list[float]] = field(default_factory=dict)


def recall(ranking: Sequence[str], evidence: frozenset[str], k: int) -> float:
    return evidence_recall(ranking[:k], evidence)


async def ask(core: ZapomniCore, question: Question, to_turn: dict[str, str]) -> tuple[list[str], int]:
    hits = (await core.memories.search(SearchRequest(query=question.text[:1000], limit=LIMIT))).results
    return [to_turn[h.memory_id] for h in hits], sum("graph" in h.matched_by for h in hits)


async def locomo_run(
    conversations: Sequence[Conversation], workdir: Path, variants: dict[str, ExpansionConfig | None]
) -> tuple[Scored, list[dict[str, Any]]]:
    scored = Scored()
    builds = []
    for number, conversation in enumerate(conversations):
        settings = Settings.from_variables(
            ZAPOMNI_DATA_DIR=workdir / f"locomo-{number}",
            ZAPOMNI_APPENDFSYNC="everysec",
            ZAPOMNI_GRAPH_AUTO=False,
            LOG_LEVEL="WARNING",
        )
        async with open_core(settings) as (core, _info):
            items = [(t.dia_id, t.line, t.date) for t in conversation.turns]
            to_turn, ingest_s = await ingest(core, items, conversation.sample_id)
            build = await build_graph(core, conversation.sample_id)
            builds.append(
                {"conversation": conversation.sample_id, "turns": len(items), "ingest_s": round(ingest_s, 1), **build}
            )
            live = (await default_workspace(core)).search.retrievers
            memo = [MemoisedLeg(leg) for leg in live]
            for name, config in variants.items():
                await use_variant(core, memo, settings, config)
                for question in conversation.questions:
                    ranking, from_graph = await ask(core, question, to_turn)
                    scored.rows.setdefault(name, []).append(
                        (
                            question.category,
                            recall(ranking, question.evidence, 5),
                            recall(ranking, question.evidence, 10),
                            from_graph,
                        )
                    )
            for name in (BASELINE, DEFAULT):
                if name not in variants:
                    continue
                await use_variant(core, live, settings, variants[name])
                for question in conversation.questions[:LATENCY_QUESTIONS]:
                    started = time.perf_counter()
                    await ask(core, question, to_turn)
                    scored.latency_ms.setdefault(name, []).append((time.perf_counter() - started) * 1000)
    return scored, builds


def locomo_figures(scored: Scored) -> dict[str, dict[str, dict[str, float]]]:
    """variant -> category ('1'..'4', 'all') -> recall5, recall10, questions, share with a graph result in top 10."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for name, rows in scored.rows.items():
        by: dict[str, dict[str, float]] = {}
        for category in [*CATEGORIES, "all"]:
            picked = [r for r in rows if category == "all" or r[0] == category]
            if not picked:
                continue
            by[str(category)] = {
                "questions": len(picked),
                "recall5": round(float(np.mean([r[1] for r in picked])), 4),
                "recall10": round(float(np.mean([r[2] for r in picked])), 4),
                "graph_in_top10": round(float(np.mean([r[3] > 0 for r in picked])), 4),
            }
        out[name] = by
    return out


# -- SciFact -----------------------------------------------------------------------------------------


async def scifact_run(
    data_dir: Path, docs: int | None, workdir: Path, variants: dict[str, ExpansionConfig | None]
) -> dict[str, Any]:
    data = load_scifact(data_dir, None)
    doc_ids, texts = scifact_sample(data, docs)
    known = set(doc_ids)
    test = [(q, t) for q, t in zip(data.query_ids, data.query_texts, strict=True) if set(data.qrels[q]) & known]
    settings = Settings.from_variables(
        ZAPOMNI_DATA_DIR=workdir / "scifact",
        ZAPOMNI_APPENDFSYNC="everysec",
        ZAPOMNI_GRAPH_AUTO=False,
        ZAPOMNI_RRF_K=SCIFACT_RRF_K,
        LOG_LEVEL="WARNING",
    )
    out: dict[str, Any] = {
        "documents": len(doc_ids),
        "subsample": len(doc_ids) < len(data.doc_ids),
        "test_queries": len(test),
        "rrf_k": SCIFACT_RRF_K,
        "variants": {},
    }
    async with open_core(settings) as (core, _info):
        to_doc, ingest_s = await ingest(core, [(d, t, None) for d, t in zip(doc_ids, texts, strict=True)], "SciFact")
        out["ingest_s"] = round(ingest_s, 1)
        out["build"] = await build_graph(core, "SciFact")
        memo = [MemoisedLeg(leg) for leg in (await default_workspace(core)).search.retrievers]
        for name, config in variants.items():
            await use_variant(core, memo, settings, config)
            rankings = []
            for _qid, text in test:
                hits = (await core.memories.search(SearchRequest(query=text[:1000], limit=100))).results
                rankings.append([to_doc[h.memory_id] for h in hits])
            ids = [q for q, _ in test]
            out["variants"][name] = {
                "ndcg10": round(mean_ndcg(rankings, ids, data.qrels), 4),
                "recall100": round(recall_at_100(rankings, ids, data.qrels), 4),
            }
            print(f"SciFact {name}: nDCG@10 {out['variants'][name]['ndcg10']}", file=sys.stderr)
    return out


# -- the decision and the report ---------------------------------------------------------------------


def verdicts(
    locomo: dict[str, dict[str, dict[str, float]]], scifact: dict[str, Any] | None
) -> dict[str, dict[str, Any]]:
    """Per variant: its gain on category 1 and the worst change elsewhere, and whether it clears the bar."""
    base = locomo[BASELINE]
    out = {}
    for name, by in locomo.items():
        if name == BASELINE or "1" not in by:
            continue
        gain = min(by["1"]["recall5"] - base["1"]["recall5"], by["1"]["recall10"] - base["1"]["recall10"])
        others = [by[c][m] - base[c][m] for c in ("2", "3", "4") if c in by for m in ("recall5", "recall10")]
        worst = min(others) if others else 0.0
        ndcg = None
        if scifact and name in scifact["variants"]:
            ndcg = scifact["variants"][name]["ndcg10"] - scifact["variants"][BASELINE]["ndcg10"]
        clears = gain >= CLEAR_GAIN and worst >= -NO_HARM and (ndcg is None or ndcg >= -NO_HARM)
        out[name] = {
            "category1_gain": round(gain, 4),
            "worst_elsewhere": round(worst, 4),
            "scifact_ndcg_change": None if ndcg is None else round(ndcg, 4),
            "clears_the_bar": bool(clears and scifact is not None),
        }
    return out


def _pct(value: float) -> str:
    return f"{value:.3f}"


def _delta(value: float, base: float) -> str:
    diff = value - base
    return f"{value:.3f} ({'+' if diff >= 0 else '−'}{abs(diff):.3f})"


def render(results: dict[str, Any]) -> str:
    locomo, builds = results["locomo"], results["locomo_builds"]
    base = locomo[BASELINE]
    lines = [
        "# Graph expansion in search — LoCoMo (development half) and SciFact",
        "",
        f"- date: {results['date']}; CPUs: {results['cpus']} (shared; load average at the end "
        f"{results['load_average']}); produced by `python -m bench.graph_retrieval`.",
        f"- LoCoMo: {len(builds)} conversations of the development half, {sum(b['turns'] for b in builds)} turns, "
        "one memory each (`speaker: text`, session date as `metadata.date`), a fresh data directory per "
        "conversation; graph built by a `build_graph` job with the embedded spaCy extractor; every question "
        f"of categories 1–4 with evidence ({base['all']['questions']}) asked through `ZapomniCore.search` "
        "(hybrid, limit 10). Evidence recall@5 / @10, averaged over questions (the data README's metric).",
        "- Categories (the authors' evaluation code, snap-research/locomo task_eval): 1 multi-hop, "
        "2 temporal, 3 open-domain, 4 single-hop. Category 1 is the multi-hop set.",
        "- The vector and keyword lists are the same for every variant (memoised per store): only the graph "
        "list and the fusion differ. Variants were chosen and are reported on this same half (it is the "
        "development half: the held-out half is not used).",
        "",
        "## LoCoMo: evidence recall by category (change against the baseline)",
        "",
        "| variant | 1 multi-hop @5 | 1 multi-hop @10 | 2 temporal @10 | 3 open-domain @10 | 4 single-hop @10 "
        "| all @5 | all @10 | questions with a graph result in the top 10 |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, by in locomo.items():
        cells = []
        for category, metric in (("1", "recall5"), ("1", "recall10"), ("2", "recall10"), ("3", "recall10"),
                                 ("4", "recall10"), ("all", "recall5"), ("all", "recall10")):  # fmt: skip
            if category not in by:
                cells.append("–")
            elif name == BASELINE:
                cells.append(_pct(by[category][metric]))
            else:
                cells.append(_delta(by[category][metric], base[category][metric]))
        share = by["all"]["graph_in_top10"]
        lines.append(f"| {name} | {' | '.join(cells)} | {share * 100:.0f} % |")
    counts = ", ".join(f"{c} {CATEGORIES[int(c)]}: {base[c]['questions']}" for c in ("1", "2", "3", "4") if c in base)
    lines += ["", f"Questions per category: {counts}.", ""]
    lines += ["Recall@5 for categories 2–4:", "", "| variant | 2 @5 | 3 @5 | 4 @5 |", "|---|---:|---:|---:|"]
    for name, by in locomo.items():
        cells = [
            "–"
            if c not in by
            else _pct(by[c]["recall5"])
            if name == BASELINE
            else _delta(by[c]["recall5"], base[c]["recall5"])
            for c in ("2", "3", "4")
        ]
        lines.append(f"| {name} | {' | '.join(cells)} |")
    latency = results.get("latency_ms", {})
    if latency:
        lines += ["", "Search latency with live legs (the first questions of each conversation, limit 10, ms):", ""]
        lines += ["| pipeline | p50 | p95 | mean |", "|---|---:|---:|---:|"]
        for name, summary in latency.items():
            lines.append(f"| {name} | {summary['p50']} | {summary['p95']} | {summary['mean']} |")
    scifact = results.get("scifact")
    lines += ["", "## SciFact test (bench/quality.py's code path, hybrid, limit 100)", ""]
    if scifact is None:
        lines.append(f"Not measured: {results.get('scifact_note', 'skipped')}.")
    else:
        sample = (
            "the whole corpus; bench/results/quality.md has hybrid nDCG@10 0.718 on it"
            if not scifact.get("subsample")
            else "a subsample: every document relevant to a test claim plus evenly spaced others, fewer "
            "distractors than the whole corpus, so the figures are higher than bench/results/quality.md's 0.718 "
            "and only comparable with each other"
        )
        lines += [
            f"{scifact['documents']} documents ({sample}); {scifact['test_queries']} test claims, RRF k "
            f"{scifact['rrf_k']} (bench/quality.py's choice on the train claims).",
            "",
            "| variant | nDCG@10 | Recall@100 |",
            "|---|---:|---:|",
        ]
        sbase = scifact["variants"][BASELINE]
        for name, row in scifact["variants"].items():
            if name == BASELINE:
                lines.append(f"| {name} | {_pct(row['ndcg10'])} | {_pct(row['recall100'])} |")
            else:
                lines.append(
                    f"| {name} | {_delta(row['ndcg10'], sbase['ndcg10'])} "
                    f"| {_delta(row['recall100'], sbase['recall100'])} |"
                )
    lines += ["", "## Extraction cost (spaCy, `build_graph` job through the core)", ""]
    lines += [
        "| corpus | memories | job s | s per 1,000 memories | CPU s per 1,000 (Zapomni) | CPU s per 1,000 (database) "
        "| entities | relations |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    rows = [("LoCoMo dev (one turn a memory)", builds)]
    if scifact is not None:
        rows.append(("SciFact (one abstract a memory)", [scifact["build"]]))
    for label, group in rows:
        cost = per_thousand(group)
        lines.append(
            f"| {label} | {cost['memories']} | {sum(b['job_s'] for b in group):.1f} | {cost['seconds']} "
            f"| {cost['cpu_s']} "
            f"| {cost['db_cpu_s']} | {sum(b['entities'] for b in group)} | {sum(b['relations'] for b in group)} |"
        )
    lines += [
        "",
        "Job s: from the job's start to its end (extraction, entity resolution, the fenced writes). CPU: this "
        "process (spaCy runs on its worker thread in it) and the FalkorDB server, over the same span.",
        "",
        "## Verdict per variant",
        "",
        f"The bar: category-1 recall@5 and @10 both up by at least {CLEAR_GAIN}, no recall of categories 2–4 "
        f"down by more than {NO_HARM}, SciFact nDCG@10 not down by more than {NO_HARM}.",
        "",
        "| variant | category-1 gain (min of @5, @10) | worst change in 2–4 | SciFact nDCG@10 change | clears |",
        "|---|---:|---:|---:|---|",
    ]
    for name, v in results["verdicts"].items():
        ndcg = "–" if v["scifact_ndcg_change"] is None else f"{v['scifact_ndcg_change']:+.4f}"
        lines.append(
            f"| {name} | {v['category1_gain']:+.4f} | {v['worst_elsewhere']:+.4f} | {ndcg} | "
            f"{'yes' if v['clears_the_bar'] else 'no'} |"
        )
    return "\n".join(lines) + "\n"


async def run(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    conversations = load_locomo(args.locomo)[: args.conversations]
    if args.questions is not None:
        conversations = [replace(c, questions=c.questions[: args.questions]) for c in conversations]
    scored, builds = await locomo_run(conversations, workdir, VARIANTS)
    results: dict[str, Any] = {
        "locomo": locomo_figures(scored),
        "locomo_builds": builds,
        "locomo_cost_per_1000": per_thousand(builds),
        "latency_ms": {name: summary_ms(samples) for name, samples in scored.latency_ms.items()},
        "variants": {name: (None if c is None else c.__dict__) for name, c in VARIANTS.items()},
    }
    if args.skip_scifact:
        results["scifact"], results["scifact_note"] = None, "skipped (--skip-scifact)"
    elif not (args.data_dir / "corpus.jsonl").is_file():
        print(f"SciFact not found at {args.data_dir}: its check is skipped", file=sys.stderr)
        results["scifact"], results["scifact_note"] = None, f"SciFact not found at {args.data_dir}"
    else:
        docs = args.scifact_docs or None
        results["scifact"] = await scifact_run(args.data_dir, docs, workdir, VARIANTS)
        results["scifact_cost_per_1000"] = per_thousand([results["scifact"]["build"]])
    results["verdicts"] = verdicts(results["locomo"], results["scifact"])
    results.update(
        {
            "date": f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
            "cpus": os.cpu_count(),
            "load_average": [round(x, 2) for x in os.getloadavg()],
        }
    )
    return results


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--locomo", type=Path, default=LOCOMO, help="LoCoMo development half (locomo-dev.json)")
    parser.add_argument("--data-dir", type=Path, default=DATA_DIR, help="SciFact (BEIR layout)")
    parser.add_argument("--conversations", type=int, default=None, help="the first N conversations only")
    parser.add_argument("--questions", type=int, default=None, help="the first N questions of each conversation")
    parser.add_argument(
        "--scifact-docs", type=int, default=SCIFACT_DOCS, help="SciFact subsample size, 0 for the whole corpus"
    )
    parser.add_argument("--skip-scifact", action="store_true")
    parser.add_argument("--output", type=Path, default=RESULTS / "graph_retrieval.md")
    parser.add_argument("--json", type=Path, default=RESULTS / "graph_retrieval.json")
    args = parser.parse_args(argv)
    if not args.locomo.is_file():
        print(f"LoCoMo development half not found at {args.locomo}: nothing to measure", file=sys.stderr)
        return 2
    configure_logging("WARNING")
    workdir = Path(tempfile.mkdtemp(prefix="zg-", dir="/tmp"))
    try:
        results = asyncio.run(run(args, workdir))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    report = render(results)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(report)
    args.json.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n")
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
