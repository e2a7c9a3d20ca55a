"""What checking a token costs on every HTTP request (docs/decisions/0018-access-tokens.md).

On the embedded defaults (unix socket, appendfsync always), with `--tokens` tokens stored:
- `verify` of a working token: one indexed read of its row, SHA-256 and a constant-time comparison;
- `verify` of a well-formed token nobody has (the same read, no row) and of malformed text (no read);
- a PING round trip, the floor under any read;
- the write that recording the last use on every request would cost (`AccessStore.touch`, forced);
- `verify` and that write while another graph takes long writes, as a large add does;
- `verify` from 32 concurrent tasks, as 32 HTTP clients would call it.

Run: `.venv/bin/python -m bench.token_verify`; results in bench/results/token_verify.md.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.common import commit, in_scratch_dir, summary_ms, timed_ms, write_results
from zapomni_core import CreateTokenRequest, Settings
from zapomni_core.access.service import AccessService
from zapomni_core.database import open_database
from zapomni_core.logs import configure_logging
from zapomni_db import AccessStore, GraphClient

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
CONCURRENT = 32


async def samples(call: Callable[[], Awaitable[Any]], count: int) -> dict[str, float]:
    return summary_ms([await timed_ms(call) for _ in range(count)])


async def run(workdir: Path, tokens: int, count: int) -> dict[str, Any]:
    load_before = os.getloadavg()
    settings = Settings.from_variables(ZAPOMNI_DATA_DIR=workdir)
    async with AsyncExitStack() as stack:
        database = await open_database(settings, stack)
        store = AccessStore(database.connection, settings.graph_name)
        access = AccessService(store)
        started = time.perf_counter()
        made = [
            await access.create(CreateTokenRequest(name=f"t{i}", role="read", workspaces=["default"]))
            for i in range(tokens)
        ]
        create_ms = (time.perf_counter() - started) * 1000 / tokens
        token = made[len(made) // 2]
        assert await access.verify(token.token) is not None  # records the last use: the rest only read
        unknown = "zap_000000000000_" + token.token.split("_", 2)[2]

        async def verify() -> None:
            assert await access.verify(token.token) is not None

        async def refuse() -> None:
            assert await access.verify(unknown) is None

        async def malformed() -> None:
            assert await access.verify("not a token") is None

        async def touch() -> None:
            now = time.time()
            await store.touch(token.info.token_id, now, now + 1)

        started = time.perf_counter()
        for _ in range(count):
            await malformed()
        malformed_us = (time.perf_counter() - started) * 1e6 / count
        results: dict[str, Any] = {
            "verify": await samples(verify, count),
            "verify_unknown": await samples(refuse, count),
            "verify_malformed_us": round(malformed_us, 1),
            "ping": await samples(database.client.ping, count),
            "write_per_request": await samples(touch, max(count // 5, 10)),
        }
        # The same two calls while another graph takes long writes, as a large add does (FalkorDB runs one write
        # at a time; reads run beside it).
        filler = GraphClient(database.connection, f"{settings.graph_name}:bench-filler")
        busy, done = asyncio.Event(), asyncio.Event()

        async def write_load() -> None:
            # Ends after the write in flight, not by cancellation: a cancelled write is not abandoned half way.
            while not done.is_set():
                await filler.query("UNWIND range(1, 20000) AS i CREATE (:Filler {i: i})", create=True)
                busy.set()

        load = asyncio.create_task(write_load())
        await busy.wait()
        try:
            results["verify_under_writes"] = await samples(verify, max(count // 5, 10))
            results["write_under_writes"] = await samples(touch, max(count // 5, 10))
        finally:
            done.set()
            await load
        per_task = max(count // CONCURRENT, 1)
        latencies: list[float] = []

        async def client() -> None:
            for _ in range(per_task):
                latencies.append(await timed_ms(verify))

        started = time.perf_counter()
        await asyncio.gather(*(client() for _ in range(CONCURRENT)))
        elapsed = time.perf_counter() - started
        results["concurrent"] = {
            "tasks": CONCURRENT,
            "verifies": len(latencies),
            "per_s": round(len(latencies) / elapsed),
            **summary_ms(latencies),
        }
    return {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": commit(),
        "cpus": os.cpu_count(),
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "tokens": tokens,
        "samples": count,
        "create_ms_mean": round(create_ms, 2),
        **results,
    }


def render(result: dict[str, Any]) -> str:
    rows = [
        ("verify, a working token (one indexed read)", "verify"),
        ("verify, a well-formed token nobody has", "verify_unknown"),
        ("PING round trip (the floor of any read)", "ping"),
        ("recording the last use: the write per request not made", "write_per_request"),
        ("verify while another graph takes long writes", "verify_under_writes"),
        ("the last-use write while another graph takes long writes", "write_under_writes"),
        (f"verify from {result['concurrent']['tasks']} concurrent tasks", "concurrent"),
    ]
    lines = [
        "# Token verification — the cost of checking a bearer token on every request",
        "",
        f"- date: {result['date']}; commit {result['commit']}; CPUs: {result['cpus']}; load average before "
        f"{result['load_average_before']}, after {result['load_average_after']}",
        f"- embedded FalkorDB (unix socket, appendfsync always), {result['tokens']:,} tokens stored, "
        f"{result['samples']:,} calls per row in sequence; produced by `python -m bench.token_verify`.",
        f"- creating a token: {result['create_ms_mean']} ms on average; malformed text is refused in "
        f"{result['verify_malformed_us']} µs (no read); 32 concurrent tasks verified "
        f"{result['concurrent']['per_s']:,} tokens/s; the long writes create 20,000 nodes per query.",
        "",
        "| call | p50 ms | p95 ms | p99 ms | mean ms |",
        "|---|---:|---:|---:|---:|",
    ]
    for label, key in rows:
        figures = result[key]
        lines.append(f"| {label} | {figures['p50']} | {figures['p95']} | {figures['p99']} | {figures['mean']} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tokens", type=int, default=1000, help="tokens in the store (default 1,000)")
    parser.add_argument("--count", type=int, default=1000, help="calls per measurement (default 1,000)")
    parser.add_argument("--output", type=Path, default=RESULTS / "token_verify.md")
    parser.add_argument("--json", type=Path, default=RESULTS / "token_verify.json")
    args = parser.parse_args(argv)
    configure_logging("WARNING")
    result = in_scratch_dir("zv-", lambda workdir: run(workdir, args.tokens, args.count))
    write_results(render(result), result, args.output, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
