"""Prometheus metrics: counters from the MCP call path, gauges read from the store at scrape time.

Counters and histograms count what this process served (sum them across replicas); the gauges
(memories, jobs) are read from the shared database, the same on every replica. The cache hit
ratio is this process's embedding cache (or its view of the shared Redis one).
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, ProcessCollector, generate_latest

from zapomni_core import ZapomniCore

# Seconds: from a cached query embedding to a cold multi-leg search under load.
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
# The job states shown (queued is the store's "pending").
JOB_STATES = {"queued": "pending", "running": "running", "failed": "failed"}


class Metrics:
    def __init__(self, core: ZapomniCore) -> None:
        self._core = core
        self.registry = CollectorRegistry()
        ProcessCollector(registry=self.registry)
        r = self.registry
        self.calls = Counter(
            "zapomni_tool_calls", "MCP tool calls by tool and outcome.", ["tool", "outcome"], registry=r
        )
        self.adds = Counter("zapomni_adds", "Memories added (add_memory calls that succeeded).", registry=r)
        self.searches = Counter(
            "zapomni_searches", "Searches answered (search_memory calls that succeeded).", registry=r
        )
        self.errors = Counter(
            "zapomni_errors", "Failed tool calls and refused HTTP requests, by error type.", ["type"], registry=r
        )
        self.search_latency = Histogram(
            "zapomni_search_latency_seconds", "search_memory duration.", buckets=LATENCY_BUCKETS, registry=r
        )
        self.embedding_latency = Histogram(
            "zapomni_embedding_latency_seconds",
            "Time the embedding model took per call (cache misses only), by kind (query, document).",
            ["kind"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.memories = Gauge("zapomni_memories", "Memories stored, by workspace.", ["workspace"], registry=r)
        self.cache_hit_ratio = Gauge(
            "zapomni_embedding_cache_hit_ratio",
            "Embedding cache hits / lookups in this process (0 before any).",
            registry=r,
        )
        self.jobs = Gauge("zapomni_jobs", "Background jobs by state, across workspaces.", ["state"], registry=r)
        self.writes_in_flight = Gauge(
            "zapomni_writes_in_flight", "Memory writes begun, not yet stored or abandoned (this process).", registry=r
        )
        core.embedder.on_embedded = self._embedded

    def observe_call(self, tool: str, error: str | None, seconds: float) -> None:
        """The MCP server's CallObserver."""
        self.calls.labels(tool, "ok" if error is None else "error").inc()
        if error is not None:
            self.errors.labels(error).inc()
        elif tool == "add_memory":
            self.adds.inc()
        elif tool == "search_memory":
            self.searches.inc()
            self.search_latency.observe(seconds)

    def refused(self, kind: str) -> None:
        self.errors.labels(kind).inc()

    def _embedded(self, kind: str, texts: int, seconds: float) -> None:
        self.embedding_latency.labels(kind).observe(seconds)

    async def render(self) -> bytes:
        """The exposition, with the gauges read from the store now."""
        listed = await self._core.workspaces.list()
        self.memories.clear()  # a deleted workspace leaves no stale series
        jobs = dict.fromkeys(JOB_STATES, 0)
        for workspace in listed.workspaces:
            self.memories.labels(workspace.name).set(workspace.memories)
            counts = await self._core.jobs.counts(workspace.name)
            for shown, stored in JOB_STATES.items():
                jobs[shown] += counts.get(stored, 0)
        for state, count in jobs.items():
            self.jobs.labels(state).set(count)
        self.cache_hit_ratio.set(self._core.embedder.hit_rate or 0.0)
        self.writes_in_flight.set(self._core.writes_in_flight)
        return generate_latest(self.registry)
