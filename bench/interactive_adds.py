"""One-sentence adds while a large add is embedded in the background: do they wait behind the job?

Drives `zapomni serve` (embedded defaults) with the official MCP client, as an agent would:
1. idle: one-sentence adds, one after another (each a new sentence: the embedding cache never helps);
2. busy: a large document (SciFact abstracts, ~330 KB by default) is added and answered `indexing`; while its
   job embeds it, the same kind of one-sentence adds, one every `--pause-s`.
Reported: the client-measured round trip of each add (p50/p95), the busy/idle ratio of the p95s (issue 38 asks
for at most 3), and how long the large add's job took.

Run: `.venv/bin/python -m bench.interactive_adds` (about 3 minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mcp import ClientSession

from bench.common import DATA_DIR, call, load_scifact, summary_ms
from bench.large_adds import document, server
from zapomni_core.logs import configure_logging

RESULTS = Path(__file__).resolve().parent / "results"


def sentences(abstracts: Sequence[str]) -> Iterator[str]:
    """First sentences of abstracts, each once: what an agent stores in one add."""
    for abstract in abstracts:
        first = abstract.split(". ")[0].strip()
        if 40 <= len(first) <= 300:
            yield first.rstrip(".") + "."


async def add_ms(session: ClientSession, text: str) -> float:
    added, elapsed = await call(session, "add_memory", {"text": text})
    assert added["status"] == "indexed" and not added["deduplicated"], added
    return elapsed


async def run(data_dir: Path, size_kb: int, count: int, pause_s: float, workdir: Path) -> dict[str, Any]:
    data = load_scifact(data_dir, None)
    abstracts = [t for t in data.doc_texts if len(t) > 200]
    small = sentences(abstracts[: len(abstracts) // 2])
    large = document(abstracts[len(abstracts) // 2 :], size_kb * 1024)
    async with server(workdir / "store") as session:
        for _ in range(3):  # warm: model, keyword index, the first write's schema checks
            await add_ms(session, next(small))
        idle = [await add_ms(session, next(small)) for _ in range(count)]
        added, answer_ms = await call(session, "add_memory", {"text": large})
        assert added["status"] == "indexing", added
        started = time.perf_counter()
        busy: list[float] = []
        while len(busy) < count:
            state = (await call(session, "job_status", {"job_id": added["job_id"]}))[0]["state"]
            if state not in ("pending", "running"):
                break
            busy.append(await add_ms(session, next(small)))
            await asyncio.sleep(pause_s)
        while (await call(session, "job_status", {"job_id": added["job_id"], "wait_s": 30}))[0]["state"] in (
            "pending",
            "running",
        ):
            pass
        job_s = time.perf_counter() - started
    idle_ms, busy_ms = summary_ms(idle), summary_ms(busy)
    return {
        "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "large_add_bytes": len(large.encode()),
        "large_add_answer_ms": round(answer_ms, 1),
        "large_add_job_s": round(job_s, 1),
        "idle_ms": idle_ms,
        "busy_ms": busy_ms,
        "adds_idle": len(idle),
        "adds_busy": len(busy),
        "p95_ratio": round(busy_ms["p95"] / idle_ms["p95"], 2),
    }


def render(report: dict[str, Any]) -> str:
    idle, busy = report["idle_ms"], report["busy_ms"]
    return "\n".join(
        [
            "# One-sentence adds while a large add is embedded in the background",
            "",
            f"Measured {report['measured_at']} on this machine (2 cores), `zapomni serve` on the embedded defaults, "
            "driven by the official MCP client. Source: `bench/interactive_adds.py`.",
            "",
            f"The large add: {report['large_add_bytes'] / 1000:.0f} KB, answered `indexing` in "
            f"{report['large_add_answer_ms']} ms, its job done {report['large_add_job_s']} s later.",
            "",
            "| one-sentence add | p50 ms | p95 ms | mean ms | adds |",
            "|---|---|---|---|---|",
            f"| idle server | {idle['p50']} | {idle['p95']} | {idle['mean']} | {report['adds_idle']} |",
            f"| while the large add's job embeds | {busy['p50']} | {busy['p95']} | {busy['mean']} | "
            f"{report['adds_busy']} |",
            "",
            f"p95 busy / idle: **{report['p95_ratio']}×** (issue 38 asks for at most 3×).",
            "",
        ]
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=DATA_DIR, help="BEIR SciFact folder")
    parser.add_argument("--size-kb", type=int, default=330, help="the large add's size")
    parser.add_argument("--adds", type=int, default=30, help="one-sentence adds, idle and busy each")
    parser.add_argument("--pause-s", type=float, default=0.5, help="between two adds while the job runs")
    parser.add_argument("--out", type=Path, default=RESULTS, help="where interactive_adds.md/.json go")
    parser.add_argument("--name", default="interactive_adds", help="the results' file name, without suffix")
    args = parser.parse_args(argv)
    configure_logging("WARNING")
    if not (args.data_dir / "corpus.jsonl").exists():
        print(f"SciFact not found in {args.data_dir} (see ../shared/data/README.md)", file=sys.stderr)
        return 2
    workdir = Path(tempfile.mkdtemp(prefix="zb-inter-", dir="/tmp"))
    try:
        report = asyncio.run(run(args.data_dir, args.size_kb, args.adds, args.pause_s, workdir))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{args.name}.json").write_text(json.dumps(report, indent=2) + "\n")
    (args.out / f"{args.name}.md").write_text(render(report))
    print(render(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
