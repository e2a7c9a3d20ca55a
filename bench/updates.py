"""Knowing which fact is current: update links found, near-misses left alone, the current fact ranked first.

Through `ZapomniCore` in process (the path the MCP tools take), on the embedded defaults with graph extraction
off. The sets are in bench/data/updates/ (README.md there says where each case comes from):
- `cases`: hand-written pairs (older, newer) with a label; each case in a workspace of its own: the older memory
  added, then the newer one, with their speaker and date, as an agent would. A linked case's `question` asks for
  the current value: the newer memory must come first; its `past_question` asks for the old one.
- `locomo`: pairs of turns of LoCoMo's development half, by reference (the text is read from
  ../shared/data/locomo-dev, CC BY-NC 4.0, never copied here); each conversation stored whole the README way
  (speaker, date, thread), one workspace per conversation, and its labelled pairs checked in it. Links made
  between other turns are counted and listed for reading; they cannot be scored.
- `facts`: pairs of terse facts about the owner, written without a subject as memory tools store them ("Lives in
  Lyon"), stored and judged like `cases` (a development set of session 29, reported on its own row).
- `heldout`: public cases written elsewhere (mem0, Graphiti, Letta, LangMem, Memobase), checked on landed code.

Figures: precision (links made that are labelled updates, in the right direction, over all links made among the
judged memories), recall (labelled updates linked), near-misses left unlinked, and the share of "what is ... now"
questions whose first result is the newer memory (before the change: the order of relevance alone, measured with
the links hidden from the search, same run).

`--cost` measures what detection adds to a write: LoCoMo's turns added with detection on and off (adds per
second; two stores side by side fed in turn, so the machine's drift falls on both alike), and search p95 at a 10K-memory
store with the links read and ordered, and without. `--cost-notes` adds the same texts as notes (no speaker, no
thread): a note is compared whole, with a floor of cosine 0.1 instead of a turn's 0.25.

Run: `.venv/bin/python -m bench.updates` (about 4 minutes on 2 cores; `--cost` about 9 more).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import tempfile
import time
from collections.abc import Iterable, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.common import DATA_DIR, commit, sentences, summary_ms, write_results
from zapomni_core import Settings, ZapomniCore, open_core
from zapomni_core.logs import configure_logging
from zapomni_core.memories import supersession
from zapomni_core.memories.requests import AddMemoryRequest, GetMemoryRequest, MemoryMetadata, SearchRequest

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "updates"
RESULTS = HERE / "results"
LOCOMO = HERE.parent.parent / "shared" / "data" / "locomo-dev" / "locomo-dev.json"
SETS = ("cases", "locomo", "facts", "heldout")


@dataclass(frozen=True)
class Turn:
    text: str
    speaker: str | None
    date: str
    thread: str | None = None


@dataclass
class Case:
    id: str
    link: bool
    older: Turn
    newer: Turn
    kind: str = ""
    near_miss: str | None = None
    question: str | None = None
    past_question: str | None = None
    conversation: str | None = None  # a LoCoMo case: the conversation it is stored in


@dataclass
class Outcome:
    case: Case
    linked: bool = False  # older -> newer linked
    reversed: bool = False  # newer -> older linked (wrong direction)
    first: bool | None = None  # the question's first result is the newer memory
    first_unordered: bool | None = None  # the same without the links (the order of relevance alone)
    past_rank: int | None = None  # where the older memory comes for the past question (1-based)
    confidence: float | None = None


@dataclass
class SetResult:
    name: str
    outcomes: list[Outcome] = field(default_factory=list)
    other_links: list[dict[str, Any]] = field(default_factory=list)  # made between memories no case names


def load_cases(path: Path) -> list[Case]:
    cases = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            raw = json.loads(line)
            cases.append(
                Case(
                    id=raw["id"],
                    link=raw["link"],
                    older=Turn(raw["older"]["text"], raw["older"].get("speaker"), raw["older"]["date"]),
                    newer=Turn(raw["newer"]["text"], raw["newer"].get("speaker"), raw["newer"]["date"]),
                    kind=raw.get("kind", ""),
                    near_miss=raw.get("near_miss"),
                    question=raw.get("question"),
                    past_question=raw.get("past_question"),
                )
            )
    return cases


def locomo_turns(path: Path) -> dict[str, list[tuple[str, Turn]]]:
    """Each conversation's turns in order as (dia_id, turn), stored the README way."""
    if not path.exists():
        raise SystemExit(f"LoCoMo development half not found at {path} (see ../shared/data/README.md)")
    conversations: dict[str, list[tuple[str, Turn]]] = {}
    for sample in json.loads(path.read_text(encoding="utf-8")):
        talk = sample["conversation"]
        sessions = sorted((k for k in talk if k.startswith("session_") and k.count("_") == 1),
                          key=lambda k: int(k.split("_")[1]))  # fmt: skip
        turns = []
        for session in sessions:
            when = datetime.strptime(talk[f"{session}_date_time"], "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)
            for turn in talk[session]:
                text = turn["text"] + (f" [shares a photo: {turn['blip_caption']}]" if turn.get("blip_caption") else "")
                thread = f"{sample['sample_id']} {session.replace('_', ' ')}"
                turns.append((turn["dia_id"], Turn(text, turn["speaker"], when.isoformat(), thread)))
        conversations[sample["sample_id"]] = turns
    return conversations


def locomo_cases(path: Path, turns: dict[str, list[tuple[str, Turn]]]) -> list[Case]:
    cases = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        raw = json.loads(line)
        by_id = dict(turns[raw["sample_id"]])
        cases.append(
            Case(
                id=raw["id"],
                link=raw["link"],
                older=by_id[raw["older"]],
                newer=by_id[raw["newer"]],
                kind=raw.get("kind", ""),
                near_miss=raw.get("near_miss"),
                question=raw.get("question"),
                conversation=raw["sample_id"],
            )
        )
    return cases


async def add(core: ZapomniCore, workspace: str, turn: Turn) -> str:
    metadata = MemoryMetadata.model_validate(
        {
            "date": turn.date,
            **({"speaker": turn.speaker} if turn.speaker else {}),
            **({"thread": turn.thread} if turn.thread else {}),
        }
    )
    result = await core.memories.add(AddMemoryRequest(workspace=workspace, text=turn.text, metadata=metadata))
    return result.memory_id


async def newer_ids(core: ZapomniCore, workspace: str, memory_id: str) -> dict[str, float]:
    detail = await core.memories.get(GetMemoryRequest(workspace=workspace, memory_id=memory_id))
    return {linked.memory_id: linked.confidence for linked in detail.superseded_by}


async def ranks(core: ZapomniCore, workspace: str, query: str) -> tuple[list[str], list[str]]:
    """The memory ids a search returns (the links ordering them and bringing replacements along), and those it
    returns with the links hidden: the order of relevance alone, what search returned before links existed."""
    request = SearchRequest(workspace=workspace, query=query, limit=10)
    ordered = await core.memories.search(request)
    with links_hidden():
        plain = await core.memories.search(request)
    return [hit.memory_id for hit in ordered.results], [hit.memory_id for hit in plain.results]


class links_hidden:  # a context manager read as a phrase
    """Search as it was before links (for its cost): no links read, so none to order by."""

    def __enter__(self) -> None:
        self._annotate = supersession.UpdateLinker.annotate

        async def plain(
            _self: supersession.UpdateLinker, _stores: Any, results: Sequence[Any], _nodes: Any = None
        ) -> list[Any]:
            return list(results)

        # Replaced for the measurement only, and put back on exit: the cost of the links read is what is measured.
        supersession.UpdateLinker.annotate = plain  # type: ignore[method-assign,assignment]  # a bench's stand-in

    def __exit__(self, *_exc: object) -> None:
        supersession.UpdateLinker.annotate = self._annotate  # type: ignore[method-assign]  # put back


async def judge(core: ZapomniCore, workspace: str, case: Case, older_id: str, newer_id: str) -> Outcome:
    outcome = Outcome(case)
    forward = await newer_ids(core, workspace, older_id)
    outcome.linked = newer_id in forward
    outcome.confidence = forward.get(newer_id)
    outcome.reversed = older_id in await newer_ids(core, workspace, newer_id)
    if case.link and case.question:
        ordered, plain = await ranks(core, workspace, case.question)
        outcome.first = bool(ordered) and ordered[0] == newer_id
        outcome.first_unordered = bool(plain) and plain[0] == newer_id
    if case.link and case.past_question:
        ordered, _plain = await ranks(core, workspace, case.past_question)
        outcome.past_rank = ordered.index(older_id) + 1 if older_id in ordered else None
    return outcome


async def run_pairs(core: ZapomniCore, name: str, cases: Sequence[Case]) -> SetResult:
    result = SetResult(name)
    for case in cases:
        workspace = f"upd-{name}-{case.id}"
        older_id = await add(core, workspace, case.older)
        newer_id = await add(core, workspace, case.newer)
        result.outcomes.append(await judge(core, workspace, case, older_id, newer_id))
    return result


async def run_locomo(core: ZapomniCore, cases: Sequence[Case], turns: dict[str, list[tuple[str, Turn]]]) -> SetResult:
    result = SetResult("locomo")
    for conversation in sorted({c.conversation for c in cases if c.conversation}):
        workspace = f"upd-locomo-{conversation}"
        ids: dict[str, str] = {}
        for dia_id, turn in turns[conversation]:
            ids[dia_id] = await add(core, workspace, turn)
        mine = [c for c in cases if c.conversation == conversation]
        labelled = set()
        by_turn = {id(turn): dia for dia, turn in turns[conversation]}
        for case in mine:
            older_id, newer_id = ids[by_turn[id(case.older)]], ids[by_turn[id(case.newer)]]
            labelled |= {(older_id, newer_id), (newer_id, older_id)}
            result.outcomes.append(await judge(core, workspace, case, older_id, newer_id))
        dia_of = {memory_id: dia for dia, memory_id in ids.items()}
        space = await core.workspaces.registry.get(workspace, create=False)
        assert space is not None
        for stored in await space.stores.updates.of(list(ids.values())):
            pair = (stored.link.older, stored.link.newer)
            if pair not in labelled and not any(o["pair"] == [dia_of[p] for p in pair] for o in result.other_links):
                result.other_links.append({
                    "conversation": conversation, "pair": [dia_of[p] for p in pair],
                    "attribute": stored.link.attribute, "cues": list(stored.link.cues),
                    "confidence": stored.link.confidence,
                })  # fmt: skip
    return result


def figures(results: Iterable[SetResult]) -> dict[str, Any]:
    outcomes = [o for r in results for o in r.outcomes]
    links = [o for o in outcomes if o.case.link]
    misses = [o for o in outcomes if not o.case.link]
    true_positives = sum(o.linked for o in links)
    made = sum(o.linked or o.reversed for o in outcomes)
    asked = [o for o in links if o.first is not None]
    past = [o for o in links if o.case.past_question]
    return {
        "cases": len(outcomes),
        "updates": len(links),
        "near_misses": len(misses),
        "links_made": made,
        "precision": round(true_positives / made, 3) if made else None,
        "recall": round(true_positives / len(links), 3) if links else None,
        "near_misses_unlinked": round(sum(not (o.linked or o.reversed) for o in misses) / len(misses), 3)
        if misses else None,
        "current_first": round(sum(bool(o.first) for o in asked) / len(asked), 3) if asked else None,
        "current_first_by_relevance": round(sum(bool(o.first_unordered) for o in asked) / len(asked), 3)
        if asked else None,
        "questions": len(asked),
        "past_in_top_2": round(sum(o.past_rank is not None and o.past_rank <= 2 for o in past) / len(past), 3)
        if past else None,
        "past_questions": len(past),
    }  # fmt: skip


def by_group(result: SetResult, key: str) -> dict[str, dict[str, Any]]:
    groups: dict[str, list[Outcome]] = {}
    for o in result.outcomes:
        label = (o.case.kind if o.case.link else o.case.near_miss) if key == "kind" else str(o.case.link)
        groups.setdefault(label or "?", []).append(o)
    return {label: figures([SetResult(result.name, group)]) for label, group in sorted(groups.items())}


def misses(result: SetResult) -> list[dict[str, Any]]:
    """What went wrong, case by case, for reading."""
    rows = []
    for o in result.outcomes:
        wrong = []
        if o.case.link and not o.linked:
            wrong.append("update not linked")
        if not o.case.link and (o.linked or o.reversed):
            wrong.append(f"near-miss linked ({o.case.near_miss})")
        if o.reversed:
            wrong.append("linked backwards")
        if o.first is False:
            wrong.append("current not first")
        if wrong:
            rows.append({"id": o.case.id, "kind": o.case.kind, "wrong": wrong})
    return rows


async def measure_quality(core: ZapomniCore, sets: Sequence[str], limit: int | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in sets:
        started = time.perf_counter()
        if name == "locomo":
            turns = locomo_turns(LOCOMO)
            result = await run_locomo(core, locomo_cases(DATA / "locomo_dev.jsonl", turns)[:limit], turns)
        else:
            result = await run_pairs(core, name, load_cases(DATA / f"{name}.jsonl")[:limit])
        out[name] = {
            "figures": figures([result]),
            "by_kind": by_group(result, "kind"),
            "misses": misses(result),
            "other_links": result.other_links,
            "seconds": round(time.perf_counter() - started, 1),
        }
    return out


def _cost_settings(workdir: Path, detection: bool) -> Settings:
    return Settings.from_variables(
        ZAPOMNI_DATA_DIR=workdir, LOG_LEVEL="WARNING", ZAPOMNI_GRAPH_AUTO="false",
        ZAPOMNI_UPDATE_DETECTION=str(detection).lower(), ZAPOMNI_APPENDFSYNC="everysec",
    )  # fmt: skip


async def adds_cost(work: Path, stream: Sequence[Turn], *, passes: int, block: int) -> dict[str, Any]:
    """Adds per second with detection off and on: in each of `passes`, two new stores (detection off, on) open side
    by side in one process are fed the stream in turn, `block` turns at a time, which side first alternating; so
    every block of one side is timed within a second of the same block of the other.

    Sessions 26 to 35 ran each side's whole stream one after the other, in rounds: this machine's speed drifts by
    more than the difference (the same 2,760 adds with detection off took 27.5 s, then 37.0 s, minutes apart), so
    rounds of one code ranged from -7 to -25 %. Interleaved, the drift falls on both sides alike. New stores each
    pass: a store that has embedded a text answers it again from its cache. A block ends when the keyword catch-up
    it started is done (20 to 50 ms, every 2 s with detection on), where it would have overlapped the next adds:
    what detection costs is counted whole."""
    took: dict[str, list[float]] = {"off": [], "on": []}
    for n in range(passes):
        seconds = {"off": 0.0, "on": 0.0}
        async with AsyncExitStack() as stack:
            cores = {
                label: (
                    await stack.enter_async_context(open_core(_cost_settings(work / f"{label}{n}", label == "on")))
                )[0]
                for label in seconds
            }
            for i, first in enumerate(range(0, len(stream), block)):
                for label in ("off", "on") if i % 2 == 0 else ("on", "off"):
                    started = time.perf_counter()
                    for turn in stream[first : first + block]:
                        await add(cores[label], "cost", turn)
                    await _catch_ups()  # a side's own: not left to run in the other's block
                    seconds[label] += time.perf_counter() - started
        for label, spent in seconds.items():
            took[label].append(spent)
    adds = len(stream) * passes
    pooled = {
        label: {"adds": adds, "seconds": round(sum(spent), 2), "adds_per_s": round(adds / sum(spent), 2)}
        for label, spent in took.items()
    }
    return {
        **pooled,
        "block": block,
        "changes": [round(off / on - 1, 4) for off, on in zip(took["off"], took["on"], strict=True)],
        "change": round(pooled["on"]["adds_per_s"] / pooled["off"]["adds_per_s"] - 1, 4),
        "ms_per_add": round((sum(took["on"]) - sum(took["off"])) * 1000 / adds, 3),
    }


async def _catch_ups() -> None:
    """Wait for the keyword index catch-ups running in the background (`KeywordIndex._refresh`)."""
    running = [t for t in asyncio.all_tasks() if t.get_name().startswith("zapomni-keyword-catch-up")]
    await asyncio.gather(*running, return_exceptions=True)


async def search_p95(workdir: Path, store: int, searches: int) -> dict[str, Any]:
    """Search latency at a `store`-memory store (SciFact sentences, borrowed vectors, as bench/memory_ops grows
    it), with the links read and ordered, and without; each query asked both ways, which first alternating, with the
    query-embedding cache off (else the second would find its embedding cached: 20 ms of a 35 ms search)."""
    import numpy as np

    from bench.memory_ops import grow

    settings = Settings.from_variables(
        ZAPOMNI_DATA_DIR=workdir, LOG_LEVEL="WARNING", ZAPOMNI_GRAPH_AUTO="false", ZAPOMNI_CACHE_MAX_ENTRIES="0"
    )
    async with open_core(settings) as (core, _info):
        texts = sentences(DATA_DIR)[:store]
        base = np.asarray(await core.embedder.embed_documents(texts[:256]), dtype=np.float32)
        await grow(core, "p95", texts, base, np.random.default_rng(7))
        queries = random.Random(7).sample(texts, searches)
        timings: dict[str, list[float]] = {"with links": [], "without": []}
        for number, query in enumerate(queries):
            for label in ("with links", "without") if number % 2 else ("without", "with links"):
                request = SearchRequest(workspace="p95", query=query[:200], limit=10)
                started = time.perf_counter()
                if label == "without":
                    with links_hidden():
                        await core.memories.search(request)
                else:
                    await core.memories.search(request)
                timings[label].append((time.perf_counter() - started) * 1000)
        return {label: summary_ms(samples) for label, samples in timings.items()} | {"store": store}


async def regression(core: ZapomniCore, *, scifact: bool = True) -> dict[str, Any]:
    """What the links do to retrieval elsewhere, in one run on the same stores: LoCoMo (development half) evidence
    recall@10, stored the README way and as `Name: text` with a date (bench/conversations.py's `full` and
    `name_date`), and SciFact test nDCG@10 (abstracts stored the issue-25 way), each with the links ordering the
    results and in the order of relevance alone (what search returned before links; detection changes nothing
    else of a search)."""
    from bench.common import claims, scifact_documents
    from bench.conversations import VARIANTS
    from bench.locomo import load_locomo
    from bench.metrics import evidence_recall, mean_ndcg

    out: dict[str, Any] = {}
    conversations = load_locomo(LOCOMO)
    for variant in (VARIANTS["full"], VARIANTS["name_date"]):
        recalls: dict[str, list[float]] = {"with links": [], "by relevance": []}
        links = 0
        for conversation in conversations:
            workspace = f"reg-{variant.name}-{conversation.sample_id}"
            to_turns: dict[str, list[str]] = {}
            for turn in conversation.turns:
                metadata = MemoryMetadata.model_validate(variant.metadata(turn, conversation.sample_id))
                request = AddMemoryRequest(workspace=workspace, text=variant.text(turn), metadata=metadata)
                to_turns.setdefault((await core.memories.add(request)).memory_id, []).append(turn.dia_id)
            for question in conversation.questions:
                for label, order in zip(recalls, await ranks(core, workspace, question.text), strict=True):
                    turns = [dia for memory_id in order[:10] for dia in to_turns.get(memory_id, [])]
                    recalls[label].append(evidence_recall(turns, question.evidence))
            links += await _links_in(core, workspace)
        out[f"locomo_{variant.name}"] = {label: round(statistics.mean(v), 4) for label, v in recalls.items()} | {
            "questions": len(recalls["with links"]),
            "links": links,
        }
    if not scifact:
        return out
    ids, texts, qrels = claims(DATA_DIR, "test")
    to_doc: dict[str, str] = {}
    for doc_id, text, source in scifact_documents(DATA_DIR, "issue"):
        added = await core.memories.add(
            AddMemoryRequest(workspace="reg-scifact", text=text, metadata=MemoryMetadata.model_validate(source))
        )
        to_doc[added.memory_id] = doc_id
    rankings: dict[str, list[list[str]]] = {"with links": [], "by relevance": []}
    for text in texts:
        for label, order in zip(rankings, await ranks(core, "reg-scifact", text), strict=True):
            rankings[label].append([to_doc[m] for m in order])
    out["scifact"] = {label: round(mean_ndcg(r, ids, qrels), 4) for label, r in rankings.items()} | {
        "questions": len(ids),
        "links": await _links_in(core, "reg-scifact"),
    }
    return out


async def _links_in(core: ZapomniCore, workspace: str) -> int:
    space = await core.workspaces.registry.get(workspace, create=False)
    return await space.stores.updates.count() if space is not None else 0


def report(results: dict[str, Any]) -> str:
    lines = [
        "# Knowing which fact is current — update links and ranking",
        "",
        f"- date: {results['date']}; commit {results['commit']}; produced by `python -m bench.updates`.",
        "- through ZapomniCore in process, embedded defaults, graph extraction off; sets and provenance in "
        "bench/data/README.md (Updates).",
    ]
    if results.get("quality"):
        lines += [
            "",
            "| set | cases | updates | near-misses | links made | precision | recall | near-misses unlinked | "
            "current first | by relevance alone | past value in top 2 |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
    for name, data in results.get("quality", {}).items():
        f = data["figures"]
        lines.append(
            f"| {name} | {f['cases']} | {f['updates']} | {f['near_misses']} | {f['links_made']} | {f['precision']} | "
            f"{f['recall']} | {f['near_misses_unlinked']} | {f['current_first']} ({f['questions']}) | "
            f"{f['current_first_by_relevance']} | {f['past_in_top_2']} ({f['past_questions']}) |"
        )
    for name, data in results.get("quality", {}).items():
        lines += ["", f"## {name}: by kind (updates) and near-miss type", "",
                  "| group | cases | links made | recall | near-misses unlinked | current first |",
                  "|---|---:|---:|---:|---:|---:|"]  # fmt: skip
        for label, f in data["by_kind"].items():
            lines.append(
                f"| {label} | {f['cases']} | {f['links_made']} | {f['recall']} | {f['near_misses_unlinked']} | "
                f"{f['current_first']} |"
            )
        if data["misses"]:
            lines += ["", "Cases not right:", ""]
            lines += [f"- {m['id']} ({m['kind']}): {'; '.join(m['wrong'])}" for m in data["misses"]]
        if data["other_links"]:
            lines += ["", f"Links between turns no case names ({len(data['other_links'])}), for reading:", ""]
            lines += [
                f"- {o['conversation']} {o['pair'][0]} → {o['pair'][1]}: {o['attribute']}, cues {o['cues']}, "
                f"confidence {o['confidence']}"
                for o in data["other_links"]
            ]
    if "regression" in results:
        lines += ["", "## Retrieval elsewhere, with the links ordering results and without (same stores)", "",
                  "| measure | questions | links made | with links | by relevance alone | change |",
                  "|---|---:|---:|---:|---:|---:|"]  # fmt: skip
        names = {
            "locomo_full": "LoCoMo dev recall@10, README way",
            "locomo_name_date": "LoCoMo dev recall@10, `Name: text` + date",
            "scifact": "SciFact test nDCG@10",
        }
        for key, row in results["regression"].items():
            change = row["with links"] - row["by relevance"]
            lines.append(
                f"| {names[key]} | {row['questions']} | {row['links']} | {row['with links']} | {row['by relevance']} | "
                f"{change:+.4f} |"
            )
    if "cost" in results:
        cost = results["cost"]
        lines += ["", "## What detection costs", ""]
        for label in ("on", "off") if "adds" in cost else ():
            a = cost["adds"][label]
            added = "turns' texts added as notes" if cost.get("as") == "notes" else "turns added"
            lines.append(f"- LoCoMo {added} with detection {label}: {a['adds']} adds in {a['seconds']} s, "
                         f"{a['adds_per_s']} adds/s")  # fmt: skip
        if "adds" in cost:
            adds = cost["adds"]
            parts = ", ".join(f"{c:+.1%}" for c in adds["changes"])
            lines.append(
                f"- the two stores open side by side, fed the stream in turn, {adds['block']} turns at a time; "
                f"adds per second with detection, each pass (two new stores): {parts}"
            )
            lines.append(
                f"- **adds per second with detection: {adds['change']:+.1%}** ({adds['ms_per_add']:+.2f} ms an add)"
            )
        s = cost["search"]
        lines.append(
            f"- search at {s['store']:,} memories, p50/p95 ms: with links {s['with links']['p50']}/"
            f"{s['with links']['p95']}, without {s['without']['p50']}/{s['without']['p95']} "
            f"(ratio of p95 {s['with links']['p95'] / s['without']['p95']:.2f})"
        )
    return "\n".join(lines) + "\n"


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    results: dict[str, Any] = {"date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"), "commit": commit()}
    with tempfile.TemporaryDirectory(prefix="zapomni-updates-") as tmp:
        work = Path(tmp)
        if args.sets:
            settings = Settings.from_variables(
                ZAPOMNI_DATA_DIR=work / "quality", LOG_LEVEL="WARNING", ZAPOMNI_GRAPH_AUTO="false",
                ZAPOMNI_APPENDFSYNC="everysec",
            )  # fmt: skip
            async with open_core(settings) as (core, _info):
                results["quality"] = await measure_quality(core, args.sets, args.cases)
        if args.regression:
            settings = Settings.from_variables(
                ZAPOMNI_DATA_DIR=work / "regression", LOG_LEVEL="WARNING", ZAPOMNI_GRAPH_AUTO="false",
                ZAPOMNI_APPENDFSYNC="everysec",
            )  # fmt: skip
            async with open_core(settings) as (core, _info):
                results["regression"] = await regression(core, scifact=args.scifact)
        if args.cost and args.cost_adds == 0:  # the search part alone
            results["cost"] = {"search": await search_p95(work / "p95", args.store, args.searches)}
        elif args.cost:
            stream = [turn for turns in locomo_turns(LOCOMO).values() for _dia, turn in turns][: args.cost_adds]
            if args.cost_notes:
                stream = [Turn(turn.text, None, turn.date) for turn in stream]
            results["cost"] = {
                "as": "notes" if args.cost_notes else "turns",
                "adds": await adds_cost(work / "adds", stream, passes=args.cost_passes, block=args.cost_block),
                "search": await search_p95(work / "p95", args.store, args.searches),
            }
    return results


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sets", type=lambda s: [x for x in s.split(",") if x], default=["cases", "locomo", "facts"],
                        help=f"comma list of {', '.join(SETS)} (default cases,locomo,facts; '' for none)")  # fmt: skip
    parser.add_argument("--cases", type=int, default=None, help="the first N cases of each set only")
    parser.add_argument("--cost", action="store_true", help="also measure adds per second and search p95")
    parser.add_argument("--regression", action="store_true",
                        help="also LoCoMo recall@10 and SciFact nDCG@10 with the links and without")  # fmt: skip
    parser.add_argument("--scifact", action=argparse.BooleanOptionalAction, default=True,
                        help="with --regression: SciFact too (most of its time)")  # fmt: skip
    parser.add_argument("--cost-adds", type=int, default=2760, help="turns of the stream --cost adds")
    parser.add_argument("--cost-passes", type=int, default=5, help="times --cost adds the stream, per side")
    parser.add_argument("--cost-block", type=int, default=50, help="turns added to one side before the other")
    parser.add_argument("--cost-notes", action="store_true", help="--cost adds the turns' texts as notes")
    parser.add_argument("--store", type=int, default=10_000, help="memories in the store searched for --cost")
    parser.add_argument("--searches", type=int, default=300, help="searches per side for --cost")
    parser.add_argument("--json", type=Path, default=RESULTS / "updates.json")
    parser.add_argument("--output", type=Path, default=RESULTS / "updates.md")
    args = parser.parse_args(argv)
    unknown = [s for s in args.sets if s not in SETS]
    if unknown:
        parser.error(f"--sets: unknown set {unknown[0]!r} (choose from {', '.join(SETS)})")
    configure_logging("WARNING")
    results = asyncio.run(main_async(args))
    write_results(report(results), results, args.output, args.json)
    print(report(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
