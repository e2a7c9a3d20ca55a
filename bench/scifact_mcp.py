"""SciFact test nDCG@10 through MCP, for each way a client may store the abstracts and each search limit.

Why this exists (issue 25): an independent run through MCP — each abstract stored as `title` + newline +
text with a `source`, one `add_memory` per document, `search_memory` with `limit` 10 — measured 0.710
at the defaults, while bench/conversations.py reported 0.719 (title + space + text, no source, limit
100). This bench stores the corpus one way in a fresh `zapomni serve` (official MCP client, a few calls
in flight on one session) and asks every test claim in hybrid mode at each limit given, so the
differences can be told apart:

- `--way issue`: `title` + "\\n" + text, metadata `source` = `scifact/<doc id>` (the issue's run);
- `--way bench`: `title` + " " + text, no metadata (bench/conversations.py before issue 25).

A ranking is the documents of the memories returned, in order (a memory the server deduplicated stands
for every document stored as it; SciFact has no two equal texts, so there are none). nDCG@10 over the
300 test claims (bench/metrics.py). About 15 minutes on 2 cores, most of it ingestion.

Run: `python -m bench.scifact_mcp` (the issue way, limits 10 and 100; bench/results/scifact_mcp.md); `--way bench`,
`--env KEY=VALUE` (server settings), `--store DIR` (search a copy of a stored corpus), `--keep DIR` (copy the
corpus this run stored there, for later `--store` runs), `--split train` (ask the 809 judged train claims
instead: settings are chosen on train, docs/decisions/0030-scifact-through-mcp.md), `--merge a.json b.json`
(one report of saved runs).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.common import (
    DATA_DIR,
    REPO_ROOT,
    call,
    claims,
    commit,
    in_scratch_dir,
    scifact_documents,
    summary_ms,
    write_results,
)
from bench.conversations import add, mcp_server
from bench.metrics import mean_ndcg

RESULTS = REPO_ROOT / "bench" / "results"
CONCURRENCY = 4
WAYS = ("issue", "bench")


def source_doc(hit: dict[str, Any]) -> str:
    """The document a hit is, by the `source` it was stored with (`scifact/<doc id>`)."""
    return str(hit.get("source") or "").removeprefix("scifact/")


async def search_hits(session: Any, query: str, limit: int) -> tuple[list[dict[str, Any]], float]:
    found, ms = await call(session, "search_memory", {"query": query[:1000], "limit": limit, "mode": "hybrid"})
    return list(found["results"]), ms


async def run(
    data_dir: Path,
    way: str,
    limits: Sequence[int],
    env: dict[str, str],
    workdir: Path,
    store: Path | None = None,
    *,
    split: str = "test",
    keep: Path | None = None,
) -> dict[str, Any]:
    docs = scifact_documents(data_dir, way)
    ids, texts, qrels = claims(data_dir, split)
    to_docs: dict[str, list[str]] = {}
    queue = [] if store else list(reversed(docs))
    if store:  # a copy of a data directory that holds the corpus stored `issue`'s way: documents by source
        shutil.copytree(store, workdir / "scifact", ignore=shutil.ignore_patterns("run"))
    async with mcp_server(workdir / "scifact", env) as session:
        started = time.perf_counter()

        async def worker() -> None:
            while queue:
                doc_id, text, metadata = queue.pop()
                to_docs.setdefault(await add(session, text, metadata), []).append(doc_id)

        await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
        ingest_s = time.perf_counter() - started
        print(f"SciFact ({way}): {len(docs)} documents stored in {ingest_s:.0f} s", file=sys.stderr)
        by_limit = {}
        for limit in limits:
            rankings, latency = [], []
            for text in texts:
                found, ms = await search_hits(session, text, limit)
                rankings.append([doc for hit in found for doc in to_docs.get(hit["memory_id"], [source_doc(hit)])])
                latency.append(ms)
            by_limit[str(limit)] = {
                "ndcg10": round(mean_ndcg(rankings, ids, qrels), 4),
                "search_ms": summary_ms(latency),
            }
            print(f"SciFact ({way}) {split} limit {limit}: nDCG@10 {by_limit[str(limit)]['ndcg10']}", file=sys.stderr)
    if keep is not None:  # the stored corpus, for later runs with --store (copied once the server has closed)
        shutil.copytree(workdir / "scifact", keep, ignore=shutil.ignore_patterns("run"))
    return {
        "way": way,
        "store": str(store) if store else None,
        "server_env": env,
        "documents": len(docs),
        "memories": len(to_docs),
        "split": split,
        "claims": len(ids),
        "ingest_s": round(ingest_s, 1),
        "by_limit": by_limit,
    }


def render(runs: Sequence[dict[str, Any]]) -> str:
    lines = [
        "# SciFact test through MCP, by storage way, server settings and limit",
        "",
        f"- date: {runs[0].get('date', '?')}; produced by `python -m bench.scifact_mcp` (official MCP client, "
        "`zapomni serve`; hybrid mode; nDCG@10 over the 300 test claims, or the 809 train claims where marked).",
        "- `issue`: `title` + newline + text, metadata `source` (issue 25's independent run); `bench`: `title` + "
        "space + text, no metadata. A run marked *copy* searched a copy of an `issue` store another run made.",
        "",
        "| way | code | server settings | limit | nDCG@10 | search p50 ms | p95 ms |",
        "|---|---|---|---:|---:|---:|---:|",
    ]
    for run in runs:
        env = ", ".join(f"{k}={v}" for k, v in run["server_env"].items()) or "defaults"
        way = run["way"] + (" (copy)" if run.get("store") else "") + (", train" if run.get("split") == "train" else "")
        for limit, figures in run["by_limit"].items():
            ms = figures["search_ms"]
            head = f"| {way} | {run.get('code', '?')} | {env} | {limit}"
            lines.append(f"{head} | {figures['ndcg10']:.4f} | {ms['p50']} | {ms['p95']} |")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path, default=DATA_DIR)
    parser.add_argument("--way", choices=WAYS, default="issue")
    parser.add_argument("--limits", default="10,100", help="comma list of search limits")
    parser.add_argument("--env", action="append", default=[], help="KEY=VALUE for the server (repeatable)")
    parser.add_argument("--json", type=Path, default=RESULTS / "scifact_mcp.json")
    parser.add_argument("--output", type=Path, default=RESULTS / "scifact_mcp.md")
    parser.add_argument("--store", type=Path, default=None,
                        help="search a copy of this data dir (stored the issue way), storing nothing")  # fmt: skip
    parser.add_argument("--split", choices=("test", "train"), default="test", help="which claims to ask")
    parser.add_argument("--keep", type=Path, default=None, help="copy the stored corpus here when done")
    parser.add_argument("--merge", type=Path, nargs="+", default=None,
                        help="only write the report (and --json) from these saved runs")  # fmt: skip
    args = parser.parse_args(argv)
    if args.merge:
        runs = [run for path in args.merge for run in json.loads(path.read_text())["runs"]]
        write_results(render(runs), {"runs": runs}, args.output, args.json)
        return 0
    if not (args.data_dir / "corpus.jsonl").is_file():
        print(f"SciFact not found at {args.data_dir}: nothing to measure", file=sys.stderr)
        return 2
    limits = [int(x) for x in args.limits.split(",") if x.strip()]
    env = dict(item.split("=", 1) for item in args.env)
    results = in_scratch_dir(
        "zs-",
        lambda workdir: run(
            args.data_dir, args.way, limits, env, workdir, args.store, split=args.split, keep=args.keep
        ),
    )
    results["date"] = f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC"
    results["code"] = commit()
    write_results(render([results]), {"runs": [results]}, args.output, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
