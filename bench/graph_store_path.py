"""The graph as a user gets it: texts stored as memories, the graph built by a build_graph job, read back
with the export (`zapomni export` runs `TransferService.export_to`), scored on CoNLL04 and on the everyday
sentences of bench/data/everyday_graph.jsonl.

CoNLL04: every sentence is one memory of one workspace (a store of 231 news sentences); a relation is
credited to the sentences of the memory it came from (`memory_id` of its export line), its ends read as the
names (name and aliases) of the exported entities. Everyday: each case in a workspace of its own (so that
"Maria" of one case is not "Maria" of another); its typed relations against the labelled ones (graph types,
names compared case-insensitively), and each `reaches` check asked through `get_related` as a client would.
"""

from __future__ import annotations

import io
import json
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.conll04 import Predicted, RelationScore, Sentence
from zapomni_core import Settings, ZapomniCore, open_core
from zapomni_core.graph.requests import BuildGraphRequest, GetRelatedRequest, GraphStatusRequest
from zapomni_core.memories.requests import AddMemoryRequest

EVERYDAY = Path(__file__).resolve().parent / "data" / "everyday_graph.jsonl"


@dataclass(frozen=True)
class Exported:
    """One workspace's typed relations as the export gives them, by memory."""

    by_memory: dict[str, list[Predicted]]
    entities: dict[str, list[tuple[str, str]]]  # memory id -> (name, type) of the entities mentioned in it


def settings_for(data_dir: Path, **overrides: Any) -> Settings:
    """The product's settings (the default extractor unless `overrides` name another), graph built on demand."""
    values: dict[str, Any] = {
        "ZAPOMNI_DATA_DIR": data_dir,
        "ZAPOMNI_GRAPH_AUTO": False,
        "ZAPOMNI_APPENDFSYNC": "everysec",
        "LOG_LEVEL": "WARNING",
    }
    return Settings.from_variables(**values, **overrides)


async def store(core: ZapomniCore, texts: Sequence[str], workspace: str | None = None) -> list[str]:
    return [(await core.memories.add(AddMemoryRequest(text=t, workspace=workspace))).memory_id for t in texts]


async def build(core: ZapomniCore, workspace: str | None = None) -> float:
    """Seconds of the build_graph job over every memory of the workspace."""
    started = time.perf_counter()
    queued = await core.graph.build(BuildGraphRequest(workspace=workspace))
    while True:
        status = await core.graph.status(GraphStatusRequest(job_id=queued.job_id, wait_s=30, workspace=workspace))
        assert status.job is not None
        if status.job.state not in ("pending", "running"):
            return time.perf_counter() - started


async def export(core: ZapomniCore) -> dict[str, Exported]:
    """Every workspace's typed relations and mentions, read from the export file."""
    out = io.StringIO()
    await core.transfer.export_to(out)
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    chunk_memory = {c["id"]: m["id"] for m in lines if m.get("type") == "memory" for c in m.get("chunks", [])}
    names: dict[tuple[str, str], tuple[tuple[str, ...], str]] = {}
    result: dict[str, Exported] = {}
    for line in lines:
        if line.get("type") == "entity":
            ws = line["workspace"]
            names[(ws, line["key"])] = ((line["name"], *line.get("aliases", [])), line["entity_type"])
            exported = result.setdefault(ws, Exported({}, {}))
            for mention in line["mentions"]:
                memory = chunk_memory.get(mention["chunk_id"])
                if memory:
                    exported.entities.setdefault(memory, []).append((line["name"], line["entity_type"]))
    for line in lines:
        if line.get("type") != "relation" or line["method"] == "cooccurrence":
            continue
        ws = line["workspace"]
        (subjects, subject_type), (objects, _) = names[(ws, line["subject"])], names[(ws, line["object"])]
        relation = Predicted(subjects, subject_type, line["relation_type"], objects)
        result.setdefault(ws, Exported({}, {})).by_memory.setdefault(line["memory_id"], []).append(relation)
    return result


async def conll04(sentences: Sequence[Sentence], workdir: Path, *, chains: bool = False) -> dict[str, Any]:
    """CoNLL04 through the store: P/R/F1 per type (strict, and with chains read as their first place)."""
    async with open_core(settings_for(workdir)) as (core, _info):
        started = time.perf_counter()
        ids = await store(core, [s.text for s in sentences])
        store_s = time.perf_counter() - started
        build_s = await build(core)
        exported = next(iter((await export(core)).values()), Exported({}, {}))
    reports: dict[str, Any] = {}
    for label, lenient in (("strict", False), ("chains", True)):
        score = RelationScore(chains=lenient)
        for sentence, memory in zip(sentences, ids, strict=True):
            score.add(sentence, exported.by_memory.get(memory, []), exported.entities.get(memory, []))
        reports[label] = score.report()
        reports[f"{label}_errors"] = score.errors
    print(
        f"CoNLL04: {len(sentences)} memories stored in {store_s:.1f} s, graph built in {build_s:.1f} s", file=sys.stderr
    )
    return {"sentences": len(sentences), "store_s": round(store_s, 1), "build_s": round(build_s, 1), **reports}


def load_everyday(path: Path = EVERYDAY) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _key(name: str) -> str:
    return " ".join(name.casefold().split())


async def everyday(cases: Sequence[dict[str, Any]], workdir: Path, **overrides: Any) -> dict[str, Any]:
    """The everyday cases through the store: typed relation P/R and the get_related depth checks."""
    counts = Counter[str]()
    errors: list[str] = []
    reaches: list[dict[str, Any]] = []
    async with open_core(settings_for(workdir, **overrides)) as (core, _info):
        for case in cases:
            await store(core, case["memories"], case["id"])
            await build(core, case["id"])
        exported = await export(core)
        for case in cases:
            gold = {(_key(r["subject"]), r["type"], _key(r["object"])) for r in case["relations"]}
            found: set[tuple[str, str, str]] = set()
            for relations in exported.get(case["id"], Exported({}, {})).by_memory.values():
                for r in relations:
                    keys = {(_key(s), r.type, _key(o)) for s in r.subjects for o in r.objects}
                    hit = next(iter(keys & gold), None)
                    found.add(hit or min(keys))
            counts["tp"] += len(found & gold)
            counts["predicted"] += len(found)
            counts["gold"] += len(gold)
            errors += [f"{case['id']} + {f}" for f in sorted(found - gold)]
            errors += [f"{case['id']} - {g}" for g in sorted(gold - found)]
            for check in case.get("reaches", []):
                reply = await core.graph.related(
                    GetRelatedRequest(entity=check["from"], depth=check["depth"], workspace=case["id"])
                )
                names = {_key(r.entity.name) for r in reply.related} | {
                    _key(a) for r in reply.related for a in r.entity.aliases
                }
                typed = {_key(r.entity.name) for r in reply.related if all(step != "CO_OCCURS" for step in r.path)}
                reaches.append(
                    {
                        **check,
                        "case": case["id"],
                        "reached": _key(check["to"]) in names,
                        "by_typed_relations": _key(check["to"]) in typed,
                    }
                )
    precision = counts["tp"] / counts["predicted"] if counts["predicted"] else None
    recall = counts["tp"] / counts["gold"] if counts["gold"] else None
    return {
        "cases": len(cases),
        "typed_relations": {
            **counts,
            "precision": None if precision is None else round(precision, 3),
            "recall": None if recall is None else round(recall, 3),
            "f1": round(2 * precision * recall / (precision + recall), 3) if precision and recall else 0.0,
        },
        "reaches": reaches,
        "errors": errors,
    }
