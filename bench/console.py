"""What the web console costs a browser at a 10K-memory store: time to first paint and to interactive of the
memory list and of a graph of 200 entities, and each page's payload (HTML and assets, compressed and not).

The store grows as `bench/memory_ops.py` grows it (real SciFact sentences, perturbed copies of real
vectors, through `MemoryWrites.insert`); the graph is written through `GraphStore`'s import writes: a hub
with 100 neighbours, the first of which has 99 more. A read returns at most 100 related entities
(`MAX_RELATED`), so the graph page draws 101 of them and a click on that first neighbour adds the other
99: "graph 200" is the time from the click to the 200 laid out.

The console is served by `zapomni serve --http` (a subprocess, as people run it) and loaded in Debian's
headless chromium through playwright, each load in a fresh browser context (empty cache, the session
cookie copied in). Times come from the page's own Performance API: first-contentful-paint;
domContentLoadedEventEnd as "interactive" for the list (htmx and console.js are deferred scripts, so
they have run); the `zapomni-graph-drawn` mark graph.js sets once Cytoscape has laid the graph out.
Payload: the navigation's and every resource's encodedBodySize (on the wire, gzip) and decodedBodySize.

Run: `.venv/bin/python -m bench.console` (about 3 minutes on 2 cores); results in bench/results/console.md.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import signal
import statistics
import subprocess
import sys
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import DATA_DIR, commit, free_port, in_scratch_dir, sentences, serve_http, write_results
from bench.memory_ops import grow
from zapomni_core import CreateTokenRequest, Settings, open_core
from zapomni_core.graph.merge import entity_key
from zapomni_core.logs import configure_logging
from zapomni_db import EntityRow, MentionRow, RelationRow

RESULTS = Path(__file__).resolve().parent / "results"
CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]
HUB, FIRST = "Hub Person", "Person 001"
TIMINGS = """() => {
  const nav = performance.getEntriesByType("navigation")[0];
  const paint = performance.getEntriesByName("first-contentful-paint")[0];
  const mark = (name) => { const m = performance.getEntriesByName(name); return m.length ? m[0].startTime : null; };
  const sizes = [nav, ...performance.getEntriesByType("resource")]
    .map(e => [e.name, e.encodedBodySize, e.decodedBodySize]);
  return {fcp: paint ? paint.startTime : null, interactive: nav.domContentLoadedEventEnd,
          drawn: mark("zapomni-graph-drawn"), sizes};
}"""


def people(count: int) -> list[str]:
    return [f"Person {i:03d}" for i in range(1, count + 1)]


async def write_graph(core: Any, memory_ids: list[str]) -> int:
    """A hub with 100 neighbours, the first of them with 99 more: 200 entities, 199 relations, each relation
    stated by a chunk of its own memory (which mentions both its ends)."""
    space = await core.workspaces.registry.get(None, create=False)
    stores = space.stores
    pairs = [(HUB, name) for name in people(100)] + [(FIRST, name) for name in people(199)[100:]]
    entities: dict[str, EntityRow] = {}
    mentions: list[Any] = []
    relations: list[Any] = []
    now = time.time()
    for (subject, obj), memory_id in zip(pairs, memory_ids, strict=False):
        [chunk] = await stores.reads.chunks(memory_id)
        for name in (subject, obj):
            key = entity_key(name, "PERSON")
            entities.setdefault(key, EntityRow(key=key, id=str(uuid.uuid4()), name=name, type="PERSON"))
            mentions.append(MentionRow(chunk.id, key))
        relations.append(
            RelationRow(
                subject_key=entity_key(subject, "PERSON"), object_key=entity_key(obj, "PERSON"), type="KNOWS",
                predicate="works with", strength=0.5 + (len(relations) % 50) / 100, evidence=chunk.text[:80],
                method="rule",
                id=str(uuid.uuid4()), chunk_id=chunk.id, valid_from=None, valid_from_ts=None, memory_id=memory_id,
            )
        )  # fmt: skip
    await stores.graph.import_entities(list(entities.values()), mentions, now=now)
    await stores.graph.import_relations(relations)
    await stores.graph.finish_import(memory_ids[: len(pairs)], [], now=now)
    return len(entities)


async def build_store(workdir: Path, memories: int) -> str:
    """Grow the store, draw its graph, and make a read token; the engine is closed again before serving."""
    pool, pyrng = sentences(DATA_DIR), random.Random(5)
    texts = [f"{pyrng.choice(pool)} {pyrng.choice(pool)} ({i})" for i in range(memories)]
    async with open_core(Settings.from_variables(ZAPOMNI_DATA_DIR=workdir, LOG_LEVEL="WARNING")) as (core, _info):
        base = np.asarray(await core.embedder.embed_documents(texts[:300]), dtype=np.float32)
        ids = await grow(core, None, texts, base, np.random.default_rng(5))
        entities = await write_graph(core, ids)
        assert entities == 200, entities
        made = await core.access.create(CreateTokenRequest(name="bench", role="read", all_workspaces=True))
        return made.token


def serve(workdir: Path, port: int) -> subprocess.Popen[bytes]:
    env = os.environ | {"ZAPOMNI_DATA_DIR": str(workdir), "LOG_LEVEL": "WARNING", "ZAPOMNI_GRAPH_AUTO": "false"}
    # The rate limit is the HTTP API's; the bench's own loads should not meet it.
    return serve_http(env | {"ZAPOMNI_HTTP_RATE": "0"}, port, timeout_s=120)


def payload(sizes: list[list[Any]]) -> dict[str, Any]:
    return {
        "requests": len(sizes),
        "compressed_kb": round(sum(s[1] for s in sizes) / 1024, 1),
        "uncompressed_kb": round(sum(s[2] for s in sizes) / 1024, 1),
        "files": {s[0].split("/", 3)[-1].split("?")[0] or "/": [s[1], s[2]] for s in sizes},
    }


def measure(base: str, token: str, repeats: int) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    pages: dict[str, list[dict[str, Any]]] = {"list": [], "graph": []}
    with sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            signin = browser.new_context()
            page = signin.new_page()
            page.goto(f"{base}/login")
            page.fill("#token", token)
            page.click("button[type=submit]")
            page.wait_for_url(f"{base}/")
            cookies: Any = signin.cookies()  # what add_cookies takes, though typed apart
            signin.close()
            for _ in range(repeats):
                for name, path in (("list", "/"), ("graph", f"/graph?entity={HUB.replace(' ', '+')}&depth=1")):
                    context = browser.new_context(viewport={"width": 1440, "height": 900})
                    context.add_cookies(cookies)
                    page = context.new_page()
                    page.goto(base + path, wait_until="load")
                    wait_for_entry(page, "first-contentful-paint")  # on a loaded machine it may follow `load`
                    if name == "graph":
                        page.wait_for_selector("#cy[data-ready=true]")
                        wait_for_entry(page, "zapomni-graph-drawn")
                    else:
                        assert page.locator(".memory").count() > 0
                    got = page.evaluate(TIMINGS)
                    if name == "graph":
                        got |= expand(page)
                        got["sizes"] = page.evaluate(TIMINGS)["sizes"]  # with the expansion's read
                    pages[name].append(got)
                    context.close()
        finally:
            browser.close()
    return pages


def wait_for_entry(page: Any, name: str, timeout_s: float = 60.0) -> None:
    """Poll for a performance entry (wait_for_function would need eval, which the console's CSP forbids)."""
    deadline = time.monotonic() + timeout_s
    while page.evaluate(f"performance.getEntriesByName('{name}').length") == 0:
        if time.monotonic() > deadline:
            raise RuntimeError(f"no {name} entry in {timeout_s} s")
        page.wait_for_timeout(20)


def expand(page: Any) -> dict[str, Any]:
    """Click the first neighbour: its 99 others join the drawing, 200 entities laid out again."""
    drawn = page.evaluate("window.zapomniGraph.nodes().length")
    box = page.locator("#cy").bounding_box()
    where = page.evaluate(f"window.zapomniGraph.getElementById('{FIRST}').renderedPosition()")
    page.mouse.click(box["x"] + where["x"], box["y"] + where["y"])
    wait_for_entry(page, "zapomni-expand-drawn")
    took = page.evaluate(
        "performance.getEntriesByName('zapomni-expand-drawn')[0].startTime"
        " - performance.getEntriesByName('zapomni-expand-start')[0].startTime"
    )
    return {"first_nodes": drawn, "nodes": page.evaluate("window.zapomniGraph.nodes().length"), "expand": took}


def median(runs: list[dict[str, Any]], key: str) -> float:
    return round(float(statistics.median(run[key] for run in runs)), 1)


def summarise(pages: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    graph = pages["graph"]
    return {
        "list": {"fcp_ms": median(pages["list"], "fcp"), "interactive_ms": median(pages["list"], "interactive"),
                 "payload": payload(pages["list"][-1]["sizes"])},
        "graph": {"fcp_ms": median(graph, "fcp"), "drawn_ms": median(graph, "drawn"),
                  "first_nodes": graph[-1]["first_nodes"], "nodes": graph[-1]["nodes"],
                  "expand_ms": median(graph, "expand"), "payload": payload(graph[-1]["sizes"])},
    }  # fmt: skip


async def run(workdir: Path, memories: int, repeats: int) -> dict[str, Any]:
    started = time.perf_counter()
    token = await build_store(workdir, memories)
    grown_s = time.perf_counter() - started
    port = free_port()
    server = serve(workdir, port)
    try:
        pages = await asyncio.to_thread(measure, f"http://127.0.0.1:{port}", token, repeats)
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
    return {
        "date": f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
        "commit": commit(),
        "memories": memories,
        "repeats": repeats,
        "grow_s": round(grown_s, 1),
        "load": [round(x, 2) for x in os.getloadavg()],
        **summarise(pages),
    }


def render(r: dict[str, Any]) -> str:
    rows = []
    for name, label in (("list", "memory list (25 newest)"), ("graph", f"graph ({r['graph']['first_nodes']} drawn)")):
        p = r[name]
        ready = p.get("interactive_ms", p.get("drawn_ms"))
        rows.append(
            f"| {label} | {p['fcp_ms']:.0f} | {ready:.0f} | {p['payload']['requests']} "
            f"| {p['payload']['compressed_kb']:.1f} | {p['payload']['uncompressed_kb']:.1f} |"
        )
    return "\n".join(
        [
            "# Console: first paint, interactive, payload",
            "",
            f"{r['date']}, commit {r['commit']}; {r['memories']:,} memories; `zapomni serve --http`, Debian's headless "
            f"chromium, each load in a fresh context (empty cache), median of {r['repeats']}; load "
            f"{r['load'][0]:.2f}. Produced by `bench/console.py`.",
            "",
            "| page | first paint (ms) | interactive / drawn (ms) | requests | payload gzip (KB) | uncompressed (KB) |",
            "|---|---:|---:|---:|---:|---:|",
            *rows,
            "",
            f"Graph of {r['graph']['nodes']} entities: a click on a neighbour reads its 99 others and lays all "
            f"{r['graph']['nodes']} out again in {r['graph']['expand_ms']:.0f} ms "
            "(read, draw, cose layout). The graph page's payload includes Cytoscape.js and the expansion's read.",
            "",
            "Interactive is domContentLoadedEventEnd for the list (the deferred htmx and console.js have run) and "
            "graph.js's `zapomni-graph-drawn` mark for the graph (Cytoscape has laid the neighbourhood out).",
            "",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--output", type=Path, default=RESULTS / "console.md")
    parser.add_argument("--json", type=Path, default=RESULTS / "console.json")
    args = parser.parse_args(argv)
    if not CHROMIUM.exists():
        print(f"bench.console: {CHROMIUM} is missing: run ops/setup-chromium", file=sys.stderr)
        return 1
    if args.memories < 200:
        print(
            "bench.console: --memories must be at least 200 (the graph's relations need a memory each)", file=sys.stderr
        )
        return 2
    configure_logging("WARNING")
    results = in_scratch_dir("zm-console-", lambda workdir: run(workdir, args.memories, args.repeats))
    write_results(render(results), results, args.output, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
