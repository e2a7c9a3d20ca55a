"""Entity and relation extraction: quality on hand-labelled sentences, throughput on SciFact chunks.

Quality, on bench/data/graph_sentences.jsonl (sentences written for the project and labelled by hand; rules
in bench/data/README.md), reported for the dev half (the rules were tuned on it), the held-out test half
and both:
- entities: precision, recall and F1, overall and per type. A predicted entity counts as correct when a
  labelled entity of the same sentence has the same name, compared case-insensitively, AND the same type;
  each labelled entity matches at most once.
- typed relations (every method but co-occurrence): precision overall and per method, and recall. Correct
  when a labelled relation of the sentence has the same type and the same subject and object (names
  compared case-insensitively; either direction for the symmetric FAMILY_OF and KNOWS).
- co-occurrence pairs: the share that correspond to a labelled relation of any type, in either direction
  (how often "mentioned together" hides a real relation).
Throughput: chunks/s of `extract_sync` on SciFact abstracts cut by the product's chunker (256 tokens, 15 %
overlap), with and without the dependency parser, alternating in rounds so that load from other work on the
shared cores falls on both alike; and each configuration's model load time.

Cost per 1,000 memories: wall seconds and CPU seconds of this process for `extract` called once per memory
(as the build_graph job calls it), on the same SciFact abstracts (one abstract a memory) and on turns of the
LoCoMo development half (one `speaker: text` turn a memory, ../shared/data/locomo-dev; skipped if absent).

The Ollama stand-in rows: `OllamaExtractor` against tests/fakes/ollama_server.py's `FakeOllama`, a real local
HTTP server speaking Ollama's /api/chat, run in a child process. Its default answer is a deterministic
extraction computed by a regular expression in microseconds, so these rows measure OUR side only: building
the prompt, the HTTP round trip, parsing and checking the answer, repairs. A real model adds its own
generation time (seconds per chunk for an 8B model on CPU) on top; that cannot be measured here. Their
"quality" is the fake's regular expression, not a model's, and is reported in the JSON only.

CoNLL04 dev and the everyday sentences (bench/data/everyday_graph.jsonl) go through the product's own path:
stored as memories, graph built by a build_graph job, read back with the export (bench/graph_store_path.py,
scoring in bench/conll04.py); the everyday cases also through the LLM path against the Ollama stand-in.

Run: `.venv/bin/python -m bench.graph_extraction` (about 3 minutes on 2 cores); `--docs 4 --rounds 1` for a
smoke run. Without SciFact (../shared/data/scifact) throughput falls back to the labelled sentences.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench import conll04 as conll
from bench.common import DATA_DIR, load_scifact
from bench.graph_store_path import conll04, everyday, load_everyday
from bench.locomo import LOCOMO, load_locomo
from zapomni_core.content.chunking import Chunker
from zapomni_core.embedders.tokens import TokenCounter
from zapomni_core.graph.extraction import ChunkGraph, Extractor
from zapomni_core.graph.llm_extractor import OllamaExtractor
from zapomni_core.graph.spacy_extractor import SpacyExtractor
from zapomni_core.logs import configure_logging

RESULTS = Path(__file__).resolve().parent / "results"
LABELS = Path(__file__).resolve().parent / "data" / "graph_sentences.jsonl"
DOCS = 120
ROUNDS = 4
COST_TURNS = 200  # LoCoMo turns in the cost sample
STAND_IN_MODEL = "llama3.1:8b"  # the appliance's model name; the fake answers for any configured name
STAND_IN_LABEL = "Ollama stand-in (OllamaExtractor -> FakeOllama over HTTP; our overhead only)"
SYMMETRIC = {"FAMILY_OF", "KNOWS"}
SPLITS = ("dev", "test", "all")


def load_labels(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def ratio(hits: int, total: int) -> float | None:
    return round(hits / total, 3) if total else None


def f1(precision: float | None, recall: float | None) -> float | None:
    if not precision or not recall:
        return 0.0 if precision is not None and recall is not None else None
    return round(2 * precision * recall / (precision + recall), 3)


def _key(name: str) -> str:
    return " ".join(name.casefold().split())


def _relation_key(subject: str, type_: str, obj: str) -> tuple[str, str, str]:
    ends = sorted((_key(subject), _key(obj))) if type_ in SYMMETRIC else [_key(subject), _key(obj)]
    return ends[0], type_, ends[1]


class Score:
    """Counts for one split: entities by type, typed relations by method, co-occurrence pairs."""

    def __init__(self) -> None:
        self.entity = Counter[str]()  # "tp|TYPE", "fp|TYPE" (by predicted type), "fn|TYPE" (by labelled type)
        self.relation = Counter[str]()  # "tp|method", "fp|method", "fn"
        self.cooccurrence = Counter[str]()  # "related", "unrelated"
        self.errors: list[dict[str, Any]] = []

    def add(self, row: dict[str, Any], graph: ChunkGraph) -> None:
        gold = Counter((_key(e["name"]), e["type"]) for e in row["entities"])
        wrong: list[str] = []
        for mention in graph.entities:
            key = (_key(mention.name), mention.type)
            if gold[key] > 0:
                gold[key] -= 1
                self.entity[f"tp|{mention.type}"] += 1
            else:
                self.entity[f"fp|{mention.type}"] += 1
                wrong.append(f"+{mention.name}/{mention.type}")
        for (name, type_), left in gold.items():
            self.entity[f"fn|{type_}"] += left
            wrong += [f"-{name}/{type_}"] * left
        labelled = {_relation_key(r["subject"], r["type"], r["object"]) for r in row["relations"]}
        related = {frozenset((_key(r["subject"]), _key(r["object"]))) for r in row["relations"]}
        found: set[tuple[str, str, str]] = set()
        for relation in graph.relations:
            if relation.method == "cooccurrence":
                pair = frozenset((_key(relation.subject), _key(relation.object)))
                self.cooccurrence["related" if pair in related else "unrelated"] += 1
                continue
            stated = _relation_key(relation.subject, relation.type, relation.object)
            if stated in found:
                continue
            found.add(stated)
            hit = stated in labelled
            self.relation[f"{'tp' if hit else 'fp'}|{relation.method}"] += 1
            if not hit:
                wrong.append(f"+{relation.subject} {relation.type} {relation.object} ({relation.method})")
        for subject, type_, object_ in labelled - found:
            self.relation["fn"] += 1
            wrong.append(f"-{subject} {type_} {object_}")
        if wrong:
            self.errors.append({"id": row["id"], "text": row["text"], "errors": wrong})

    def report(self) -> dict[str, Any]:
        types = sorted({k.split("|")[1] for k in self.entity})
        per_type = {}
        for type_ in types:
            tp, fp, fn = (self.entity[f"{kind}|{type_}"] for kind in ("tp", "fp", "fn"))
            p, r = ratio(tp, tp + fp), ratio(tp, tp + fn)
            per_type[type_] = {"precision": p, "recall": r, "f1": f1(p, r), "predicted": tp + fp, "labelled": tp + fn}
        tp = sum(v for k, v in self.entity.items() if k.startswith("tp|"))
        fp = sum(v for k, v in self.entity.items() if k.startswith("fp|"))
        fn = sum(v for k, v in self.entity.items() if k.startswith("fn|"))
        p, r = ratio(tp, tp + fp), ratio(tp, tp + fn)
        methods = sorted({k.split("|")[1] for k in self.relation if "|" in k})
        rel_tp = sum(self.relation[f"tp|{m}"] for m in methods)
        rel_fp = sum(self.relation[f"fp|{m}"] for m in methods)
        co = self.cooccurrence
        return {
            "entities": {"precision": p, "recall": r, "f1": f1(p, r), "predicted": tp + fp, "labelled": tp + fn},
            "entities_by_type": per_type,
            "typed_relations": {
                "precision": ratio(rel_tp, rel_tp + rel_fp),
                "recall": ratio(rel_tp, rel_tp + self.relation["fn"]),
                "predicted": rel_tp + rel_fp,
                "labelled": rel_tp + self.relation["fn"],
                "by_method": {
                    m: {
                        "precision": ratio(
                            self.relation[f"tp|{m}"], self.relation[f"tp|{m}"] + self.relation[f"fp|{m}"]
                        ),
                        "predicted": self.relation[f"tp|{m}"] + self.relation[f"fp|{m}"],
                    }
                    for m in methods
                },
            },
            "cooccurrence": {
                "pairs": co["related"] + co["unrelated"],
                "share_labelled": ratio(co["related"], co["related"] + co["unrelated"]),
            },
        }


async def quality(extractor: Extractor, rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Scores of one extractor on the labelled sentences (one sentence = one chunk), by split."""
    graphs = await extractor.extract([row["text"] for row in rows])
    scores = {split: Score() for split in SPLITS}
    strengths: dict[str, list[float]] = {}
    for row, graph in zip(rows, graphs, strict=True):
        for split in (row.get("split", "test"), "all"):
            scores[split].add(row, graph)
        for relation in graph.relations:
            strengths.setdefault(relation.method, []).append(relation.strength)
    report: dict[str, Any] = {split: score.report() for split, score in scores.items()}
    report["strength_range"] = {m: [min(v), max(v)] for m, v in sorted(strengths.items())}
    report["errors"] = scores["all"].errors
    return report


def throughput(extractor: Any, chunks: list[str]) -> tuple[int, float]:
    """Chunks and seconds of one synchronous pass (the extractor's own worker is bypassed: no queueing)."""
    started = time.perf_counter()
    extractor.extract_sync(chunks)
    return len(chunks), time.perf_counter() - started


def scifact_chunks(data_dir: Path, docs: int) -> list[str]:
    return [chunk for memory in scifact_memories(data_dir, docs) for chunk in memory]


def scifact_memories(data_dir: Path, docs: int) -> list[list[str]]:
    """Evenly spaced abstracts, each cut into its chunks by the product's chunker."""
    texts = load_scifact(data_dir, None).doc_texts
    sample = texts[:: max(1, len(texts) // docs)][:docs]
    chunker = Chunker(TokenCounter(), max_tokens=256, overlap_tokens=int(256 * 0.15))  # the product's defaults
    return [chunker.split(text) for text in sample]


def locomo_turns(path: Path, count: int) -> list[str]:
    """Evenly spaced turns of the LoCoMo development half as `speaker: text` (empty when the file is absent)."""
    if not path.is_file() or count <= 0:
        return []
    turns = [f"{turn.speaker}: {turn.said}" for conversation in load_locomo(path) for turn in conversation.turns]
    return turns[:: max(1, len(turns) // count)][:count]


async def cost(extractor: Extractor, memories: Sequence[Sequence[str]]) -> dict[str, float] | None:
    """Wall and CPU seconds (this process) per 1,000 memories, `extract` called once per memory like the job."""
    if not memories:
        return None
    cpu, started = time.process_time(), time.perf_counter()
    for chunks in memories:
        await extractor.extract(list(chunks))
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    return {
        "memories": len(memories),
        "chunks": sum(len(m) for m in memories),
        "seconds_per_1000": round(wall / len(memories) * 1000, 1),
        "cpu_s_per_1000": round(cpu / len(memories) * 1000, 1),
        "memories_per_s": round(len(memories) / wall, 2) if wall else 0.0,
    }


@contextlib.contextmanager
def stand_in_server() -> Iterator[str]:
    """tests/fakes/ollama_server.py's FakeOllama in a child process (so its work is not counted as ours); its URL."""
    script = (
        "import sys\nfrom tests.fakes.ollama_server import FakeOllama\n"
        "with FakeOllama(models=[sys.argv[1]]) as fake:\n    print(fake.url, flush=True)\n    sys.stdin.read()\n"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", script, STAND_IN_MODEL],
        cwd=Path(__file__).resolve().parent.parent,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        url = child.stdout.readline().strip()
        if not url.startswith("http://"):
            raise RuntimeError("the Ollama stand-in (tests/fakes/ollama_server.py) did not start")
        yield url
    finally:
        if child.stdin is not None:
            child.stdin.close()
        try:
            child.wait(timeout=10)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


def fallback_chunks(rows: Sequence[dict[str, Any]]) -> list[str]:
    """The labelled sentences packed ten to a chunk: short, entity-dense text, so not comparable to SciFact."""
    texts = [row["text"] for row in rows]
    return [" ".join(texts[i : i + 10]) for i in range(0, len(texts), 10)]


async def measure(extractor: Extractor, rows: Sequence[dict[str, Any]], chunks: list[str]) -> dict[str, Any]:
    """One report row for any extractor: quality on the labelled sentences, chunks/s through `extract`."""
    started = time.perf_counter()
    await extractor.extract(chunks)
    seconds = time.perf_counter() - started
    return {
        "load_s": None,
        "quality": await quality(extractor, rows),
        "chunks_per_s": round(len(chunks) / seconds, 2) if seconds else None,
    }


async def later_extractors(url: str) -> list[tuple[str, Extractor]]:
    """The LLM rows: (label, extractor) pairs; `run` passes each to `measure` and `cost`, on the same sentences,
    chunks and memories as the spaCy rows. Today the stand-in at `url` (a real Ollama would be one more pair)."""
    return [(STAND_IN_LABEL, OllamaExtractor(host=url, model=STAND_IN_MODEL, timeout_s=60.0, retries=0))]


async def run(
    labels: Path,
    data_dir: Path,
    docs: int,
    rounds: int,
    locomo: Path = LOCOMO,
    cost_turns: int = COST_TURNS,
    conll04_sentences: int | None = None,
) -> dict[str, Any]:
    rows = load_labels(labels)
    if (data_dir / "corpus.jsonl").is_file():
        memories, source = scifact_memories(data_dir, docs), f"SciFact: {docs} abstracts"
        chunks = [chunk for memory in memories for chunk in memory]
    else:
        print(f"SciFact not found at {data_dir}: timing on the labelled sentences instead", file=sys.stderr)
        chunks, source = fallback_chunks(rows), "labelled sentences, 10 to a chunk (SciFact not found)"
        memories = [[chunk] for chunk in chunks]
    turns = locomo_turns(locomo, cost_turns)
    if not turns:
        print(f"LoCoMo development half not found at {locomo}: no cost on conversation turns", file=sys.stderr)
    kinds = [("SciFact abstract" if "SciFact" in source else "ten labelled sentences", memories)]
    kinds.append(("LoCoMo turn", [[turn] for turn in turns]))
    started = time.perf_counter()
    import spacy  # noqa: F401  (timed apart: the first extractor built would pay for it)

    import_s = time.perf_counter() - started
    configurations: dict[str, SpacyExtractor] = {}
    load_s: dict[str, float] = {}
    for label, parse in (("spacy (with parser)", True), ("spacy (NER only, no parser)", False)):
        spacy_extractor = SpacyExtractor(parse=parse)
        configurations[label], load_s[label] = spacy_extractor, spacy_extractor.load_seconds
    results: dict[str, Any] = {"extractors": {}}
    for label, extractor in configurations.items():
        results["extractors"][label] = {"load_s": round(load_s[label], 2), "quality": await quality(extractor, rows)}
        extractor.extract_sync(chunks[:4])  # warm-up: first-call allocations out of the clock
    totals: dict[str, list[float]] = {label: [0, 0.0] for label in configurations}
    size = -(-len(chunks) // rounds)
    for start in range(0, len(chunks), size):
        for label, extractor in configurations.items():
            count, seconds = throughput(extractor, chunks[start : start + size])
            totals[label][0] += count
            totals[label][1] += seconds
        print(f"round {start // size + 1}/{rounds} done", file=sys.stderr)
    for label, (chunks_done, spent_s) in totals.items():
        results["extractors"][label]["chunks_per_s"] = round(chunks_done / spent_s, 2) if spent_s else None
    default = "spacy (with parser)"  # the product's configuration
    results["cost_per_1000"] = {default: {kind: await cost(configurations[default], group) for kind, group in kinds}}
    for extractor in configurations.values():
        await extractor.aclose()
    # The LLM rows go apart from "extractors": the stand-in's quality is a regular expression's, not a model's.
    results["llm_stand_in"] = {}
    with stand_in_server() as url:
        for label, llm in await later_extractors(url):
            try:
                results["llm_stand_in"][label] = await measure(llm, rows, chunks)
                results["cost_per_1000"][label] = {kind: await cost(llm, group) for kind, group in kinds}
            finally:
                await llm.aclose()
    with tempfile.TemporaryDirectory(prefix="zapomni-graph-bench-") as workdir:
        # CoNLL04 dev and the everyday sentences through the product's path: store, build_graph, export.
        if conll04_sentences == 0:
            pass
        elif (conll.CONLL04 / "conll04_dev.json").is_file():
            sentences = conll.load("dev")[:conll04_sentences]
            results["conll04_dev"] = await conll04(sentences, Path(workdir) / "conll04")
        else:
            print(f"CoNLL04 not found at {conll.CONLL04}: no CoNLL04 rows", file=sys.stderr)
        results["everyday"] = await everyday(load_everyday(), Path(workdir) / "everyday")
        with stand_in_server() as url:  # the appliance's path: OllamaExtractor through the same store
            results["everyday_llm_stand_in"] = await everyday(
                load_everyday(),
                Path(workdir) / "everyday-llm",
                ZAPOMNI_GRAPH_EXTRACTOR="ollama",
                OLLAMA_HOST=url,
                LLM_MODEL=STAND_IN_MODEL,
            )
    words = [len(chunk.split()) for chunk in chunks]
    results.update(
        {
            "date": f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
            "cpus": os.cpu_count(),
            "spacy_import_s": round(import_s, 2),
            "load_average": [round(x, 2) for x in os.getloadavg()],
            "sentences": len(rows),
            "splits": dict(Counter(row.get("split", "test") for row in rows)),
            "throughput_source": source,
            "chunks": len(chunks),
            "mean_words_per_chunk": round(sum(words) / max(1, len(words)), 1),
            "rounds": rounds,
            "cost_turns": len(turns),
        }
    )
    return results


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{value * 100:.0f} %"


def render(results: dict[str, Any]) -> str:
    lines = [
        "# Graph extraction — labelled sentences and SciFact chunks",
        "",
        f"- date: {results['date']}; CPUs: {results['cpus']} (shared; load average at the end "
        f"{results['load_average']}); produced by `python -m bench.graph_extraction`.",
        f"- quality: {results['sentences']} hand-labelled sentences ({results['splits']}), bench/data/"
        "graph_sentences.jsonl; the rules were tuned on the dev half only, the test half is held out.",
        "- entity match: same name, compared case-insensitively, and the same type. Relation match: same type,"
        " subject and object (either direction for FAMILY_OF and KNOWS).",
        f"- throughput: {results['chunks']} chunks from {results['throughput_source']} (mean "
        f"{results['mean_words_per_chunk']} words), {results['rounds']} round(s) alternating the configurations. "
        f"Load s: `spacy.load` of the model with that configuration's components, after `import spacy` "
        f"({results['spacy_import_s']} s, paid once per process).",
        "",
        "| extractor | load s | chunks/s | entity P (test) | entity R (test) | entity F1 (test) | entity P/R (all) "
        "| typed relation P (test) | typed R (test) | typed P (all) | co-occurrence pairs that are labelled "
        "relations (all) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for label, row in results["extractors"].items():
        test, every = row["quality"]["test"], row["quality"]["all"]
        lines.append(
            f"| {label} | {row['load_s'] if row['load_s'] is not None else '–'} | {row['chunks_per_s']} "
            f"| {_pct(test['entities']['precision'])} | {_pct(test['entities']['recall'])} "
            f"| {_pct(test['entities']['f1'])} "
            f"| {_pct(every['entities']['precision'])} / {_pct(every['entities']['recall'])} "
            f"| {_pct(test['typed_relations']['precision'])} ({test['typed_relations']['predicted']}) "
            f"| {_pct(test['typed_relations']['recall'])} "
            f"| {_pct(every['typed_relations']['precision'])} ({every['typed_relations']['predicted']}) "
            f"| {_pct(every['cooccurrence']['share_labelled'])} of {every['cooccurrence']['pairs']} |"
        )
    for label, row in results["extractors"].items():
        q = row["quality"]
        lines += [
            "",
            f"## {label}",
            "",
            "| split | entity P | entity R | entity F1 | typed relation P | typed R | by method (P, count) |",
            "|---|---:|---:|---:|---:|---:|---|",
        ]
        for split in SPLITS:
            s = q[split]
            methods = ", ".join(
                f"{m} {_pct(v['precision'])} ({v['predicted']})" for m, v in s["typed_relations"]["by_method"].items()
            )
            lines.append(
                f"| {split} | {_pct(s['entities']['precision'])} | {_pct(s['entities']['recall'])} "
                f"| {_pct(s['entities']['f1'])} | {_pct(s['typed_relations']['precision'])} "
                f"| {_pct(s['typed_relations']['recall'])} | {methods} |"
            )
        lines += ["", "Entities by type (all sentences):", "", "| type | P | R | F1 | predicted | labelled |"]
        lines.append("|---|---:|---:|---:|---:|---:|")
        for type_, v in q["all"]["entities_by_type"].items():
            lines.append(
                f"| {type_} | {_pct(v['precision'])} | {_pct(v['recall'])} | {_pct(v['f1'])} "
                f"| {v['predicted']} | {v['labelled']} |"
            )
        ranges = ", ".join(f"{m} {lo}–{hi}" for m, (lo, hi) in q["strength_range"].items())
        lines += ["", f"Relation strengths seen: {ranges}."]
    for label, row in results.get("llm_stand_in", {}).items():
        lines += [
            "",
            f"## {label}",
            "",
            "`OllamaExtractor` (the product's LLM path: prompt, HTTP, lenient parsing, checks against the chunk, "
            "repairs) against tests/fakes/ollama_server.py's `FakeOllama`, a real HTTP server in a child process "
            "whose answer is a deterministic extraction made by a regular expression in microseconds. So this "
            "measures **our side only**; a real model's generation time (seconds per chunk for an 8B model on a "
            "CPU) comes on top and cannot be measured on these machines. Its quality figures are the fake's "
            "regular expression, not a model's (JSON only).",
            "",
            f"Throughput, the same {results['chunks']} chunks in one `extract` call: "
            f"**{row['chunks_per_s']} chunks/s**.",
        ]
    lines += render_store_path(results)
    costs = results.get("cost_per_1000", {})
    if costs:
        lines += [
            "",
            "## Extraction cost per 1,000 memories",
            "",
            "`extract` called once per memory (as the build_graph job does), extraction only (no database). CPU: "
            "this process (spaCy's worker thread is in it; the stand-in's server is not). LoCoMo turns: "
            f"{results.get('cost_turns', 0)} evenly spaced turns of the development half, `speaker: text`.",
            "",
            "| extractor | memory | memories | chunks | s per 1,000 memories | CPU s per 1,000 memories | memories/s |",
            "|---|---|---:|---:|---:|---:|---:|",
        ]
        for label, by_kind in costs.items():
            for kind, figures in by_kind.items():
                if figures is None:
                    lines.append(f"| {label} | {kind} | – | – | – | – | – |")
                    continue
                lines.append(
                    f"| {label} | {kind} | {figures['memories']} | {figures['chunks']} | {figures['seconds_per_1000']} "
                    f"| {figures['cpu_s_per_1000']} | {figures['memories_per_s']} |"
                )
    return "\n".join(lines) + "\n"


def render_store_path(results: dict[str, Any]) -> list[str]:
    """The CoNLL04 and everyday rows (store -> build_graph -> export)."""
    lines: list[str] = []
    dev = results.get("conll04_dev")
    if dev:
        lines += [
            "",
            "## CoNLL04 dev through the store (each sentence a memory -> build_graph -> export)",
            "",
            f"{dev['sentences']} sentences stored in {dev['store_s']} s, graph built in {dev['build_s']} s. Types "
            "mapped as issue 23 (bench/conll04.py). Strict: names equal on letters and digits; chains: a gold place "
            'written "A, B" as one span read as A, relations to its B not counted.',
            "",
            "| type | strict P | strict R | strict F1 | chains P | chains R | chains F1 |",
            "|---|---:|---:|---:|---:|---:|---:|",
        ]
        for type_, row in dev["strict"].items():
            lenient = dev["chains"][type_]
            lines.append(
                f"| {type_} | {_pct(row['precision'])} ({row['tp']}/{row['predicted']}) | {_pct(row['recall'])} "
                f"(of {row['gold']}) | {_pct(row['f1'])} | {_pct(lenient['precision'])} | {_pct(lenient['recall'])} "
                f"| {_pct(lenient['f1'])} |"
            )
    for key, label in (("everyday", "spacy (the default)"), ("everyday_llm_stand_in", STAND_IN_LABEL)):
        row = results.get(key)
        if not row:
            continue
        typed = row["typed_relations"]
        reached = sum(r["reached"] for r in row["reaches"])
        typed_reach = sum(r["by_typed_relations"] for r in row["reaches"])
        lines += [
            "",
            f"## Everyday sentences through the store: {label}",
            "",
            f"{row['cases']} cases of bench/data/everyday_graph.jsonl, each in its own workspace. Typed relations: "
            f"precision {_pct(typed['precision'])} ({typed['tp']}/{typed['predicted']}), recall "
            f"{_pct(typed['recall'])} (of {typed['gold']}), F1 {_pct(typed['f1'])}. `get_related` checks reached: "
            f"{reached} of {len(row['reaches'])} ({typed_reach} along typed relations only).",
        ]
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--labels", type=Path, default=LABELS)
    parser.add_argument("--data-dir", type=Path, default=DATA_DIR, help="SciFact (BEIR layout) for throughput")
    parser.add_argument("--docs", type=int, default=DOCS, help="SciFact abstracts in the throughput sample")
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument("--locomo", type=Path, default=LOCOMO, help="LoCoMo development half, for the cost on turns")
    parser.add_argument("--cost-turns", type=int, default=COST_TURNS, help="LoCoMo turns in the cost sample")
    parser.add_argument(
        "--conll04-sentences", type=int, help="the first N sentences of CoNLL04 dev through the store (0: none; all)"
    )
    parser.add_argument("--output", type=Path, default=RESULTS / "graph_extraction.md")
    parser.add_argument("--json", type=Path, default=RESULTS / "graph_extraction.json")
    args = parser.parse_args(argv)
    configure_logging("WARNING")
    results = asyncio.run(
        run(
            args.labels,
            args.data_dir,
            max(1, args.docs),
            max(1, args.rounds),
            args.locomo,
            args.cost_turns,
            args.conll04_sentences,
        )
    )
    report = render(results)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(report)
    args.json.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n")
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
