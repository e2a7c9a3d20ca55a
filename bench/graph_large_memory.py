"""A large memory's knowledge-graph job through MCP: how long it takes, and how a stopped one resumes.

One memory of `--kilobytes` KB (default 256) of prose naming people, companies and places is added
(indexed in the background) on a server without automatic extraction; then:
- `build_graph` runs uninterrupted: seconds from queued to completed, chunks per second;
- the memory is rebuilt (`build_graph(memory_ids)`), and the server is stopped the way a client stops
  it (stdin closed) once about half of its chunks are written; a second server resumes the job: the
  chunk it resumed from (its log's `graph.memory_resumed`) and the seconds it needed to finish.
Run: `.venv/bin/python -m bench.graph_large_memory [--kilobytes 256]`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from bench.common import call, in_scratch_dir, write_results

ROOT = Path(__file__).resolve().parent.parent
ZAPOMNI = str(Path(sys.executable).parent / "zapomni")
RESULTS = ROOT / "bench" / "results"


def prose(kilobytes: int) -> str:
    people = ["Maria Garcia", "John Smith", "Aiko Tanaka", "Lars Eriksen", "Priya Patel", "Omar Haddad"]
    companies = ["Siemens", "Acme Corp", "Globex", "Initech", "Umbrella Labs", "Stark Industries"]
    cities = ["Berlin", "Lisbon", "Tokyo", "Oslo", "Mumbai", "Cairo", "Toronto"]
    paragraphs: list[str] = []
    i = 0
    while sum(len(p) + 2 for p in paragraphs) < kilobytes * 1024:
        person, company, city = people[i % 6], companies[(i // 6) % 6], cities[i % 7]
        paragraphs.append(
            f"In meeting {i}, {person} said that {company} opened an office in {city}. {person} works for "
            f"{company} and lives in {city}; the team uses PostgreSQL and reviewed ticket ERR_{i:05d} together."
        )
        i += 1
    return "\n\n".join(paragraphs)


def params(data_dir: Path) -> StdioServerParameters:
    env = {"ZAPOMNI_DATA_DIR": str(data_dir), "LOG_LEVEL": "INFO", "PATH": os.environ.get("PATH", ""),
           "ZAPOMNI_GRAPH_AUTO": "false", "ZAPOMNI_JOB_POLL_S": "0.2"}  # fmt: skip
    if "PYTHONPATH" in os.environ:
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return StdioServerParameters(command=ZAPOMNI, args=["serve"], env=env)


async def until_ended(session: ClientSession, job_id: str) -> dict[str, Any]:
    while True:
        job, _ = await call(session, "job_status", {"job_id": job_id, "wait_s": 50})
        if job["state"] not in ("pending", "running"):
            return job


async def run(workdir: Path, kilobytes: int) -> dict[str, Any]:
    data_dir, text = workdir / "data", prose(kilobytes)
    with (workdir / "first.log").open("w") as errlog:
        async with stdio_client(params(data_dir), errlog=errlog) as (r, w), ClientSession(r, w) as session:
            await session.initialize()
            started = time.perf_counter()
            added, _ = await call(session, "add_memory", {"text": text})
            indexed = await until_ended(session, added["job_id"])
            index_s = time.perf_counter() - started
            chunks = indexed["progress"]["total"]
            started = time.perf_counter()
            build, _ = await call(session, "build_graph", {})
            built = await until_ended(session, build["job_id"])
            build_s = time.perf_counter() - started
            assert built["state"] == "completed", built
            rebuild, _ = await call(session, "build_graph", {"memory_ids": [added["memory_id"]]})
            started = time.perf_counter()
            while True:  # stop once about half the memory is written
                job, _ = await call(session, "job_status", {"job_id": rebuild["job_id"]})
                reached = re.search(r"chunk (\d+)/", job["message"] or "")
                if reached and int(reached[1]) >= chunks // 2:
                    break
                assert job["state"] in ("pending", "running"), job
                await asyncio.sleep(0.2)
            first_s = time.perf_counter() - started
    log = workdir / "second.log"
    with log.open("w") as errlog:
        async with stdio_client(params(data_dir), errlog=errlog) as (r, w), ClientSession(r, w) as session:
            await session.initialize()
            started = time.perf_counter()
            resumed = await until_ended(session, rebuild["job_id"])
            second_s = time.perf_counter() - started
    assert resumed["state"] == "completed", resumed
    events = [json.loads(line) for line in log.read_text().splitlines() if "graph.memory_resumed" in line]
    return {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "cpus": os.cpu_count(),
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "memory_kb": round(len(text.encode()) / 1024, 1),
        "chunks": chunks,
        "index_s": round(index_s, 1),
        "build_s": round(build_s, 1),
        "build_chunks_per_s": round(chunks / build_s, 1),
        "entities": built["counts"].get("entities"),
        "relations": built["counts"].get("relations"),
        "stopped_after_s": round(first_s, 1),
        "resumed_from_chunk": events[0]["chunks_done"] if events else None,
        "resumed_finish_s": round(second_s, 1),
    }


def render(r: dict[str, Any]) -> str:
    return "\n".join(
        [
            "# A large memory's knowledge-graph job, and its resumption after a server stop",
            "",
            f"- date: {r['date']}; CPUs: {r['cpus']}; load average at the end {r['load_average_after']}; "
            "produced by `python -m bench.graph_large_memory` (`make bench`); spaCy extractor, embedded defaults.",
            "",
            "| measure | result |",
            "|---|---:|",
            f"| memory | {r['memory_kb']:,} KB, {r['chunks']:,} chunks |",
            f"| indexing (add_memory's background job) | {r['index_s']} s |",
            f"| build_graph, uninterrupted | {r['build_s']} s ({r['build_chunks_per_s']} chunks/s) |",
            f"| rebuild stopped (stdin closed) after | {r['stopped_after_s']} s |",
            f"| the next server resumed from chunk | {r['resumed_from_chunk']} of {r['chunks']} |",
            f"| and finished in | {r['resumed_finish_s']} s (start-up included) |",
            "",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kilobytes", type=int, default=256)
    parser.add_argument("--output", type=Path, default=RESULTS / "graph_large_memory.md")
    parser.add_argument("--json", type=Path, default=RESULTS / "graph_large_memory.json")
    args = parser.parse_args(argv)
    result = in_scratch_dir("zg-", lambda workdir: run(workdir, args.kilobytes))
    write_results(render(result), result, args.output, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
