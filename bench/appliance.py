"""The appliance's figures, measured under podman on this machine (2 cores), with the stand-in images of
tests/containers/standins where no registry can give the real ones (FalkorDB's stand-in runs the same
module; Ollama's answers from the project's API stand-in, so embedding costs nothing here):

- the image: size per layer, build time cold (no cache) and warm (unchanged; after a change to app/);
- `docker run -i` (podman here) cold start to an answered tools/list: the README's stack entry and the
  standalone entry on a new volume;
- the stack's start to ready (`make up`): on new volumes, and again on the existing ones;
- a 10,000-memory store (imported with `make import`): `make backup` and `make restore` times.

    make test-appliance   # once: podman, the stand-ins, the venv's podman-compose
    .venv/bin/python -m bench.appliance

It brings the test stack (project `zapomni`) down and up: do not run it beside a stack of your own.
Results: bench/results/appliance.md and .json.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from bench.common import REPO_ROOT, write_results
from tests.containers.harness import (
    IMAGE,
    compose,
    make,
    mcp_client,
    podman,
    readme_client_entry,
    run,
    standalone_entry,
)

RESULTS = REPO_ROOT / "bench" / "results"
MEMORIES = 10_000
RUNS = 3
BUILD_SECRET = "id=pip_ca,src=/etc/ssl/certs/ca-certificates.crt"


def seconds(started: float) -> float:
    return round(time.monotonic() - started, 1)


def build(context: Path, *options: str) -> float:
    started = time.monotonic()
    podman("build", "--format", "docker", "--secret", BUILD_SECRET, *options, "-t", IMAGE, str(context), timeout=1800)
    return seconds(started)


def build_times() -> dict[str, float]:
    cold = build(REPO_ROOT, "--no-cache")
    build(REPO_ROOT)  # a --no-cache build leaves nothing a later build reuses: fill the cache first
    warm = build(REPO_ROOT)
    # A developer's loop: one source file changed, the dependency layers reused.
    with tempfile.TemporaryDirectory(prefix="zapomni-build-") as scratch:
        context = Path(scratch) / "context"
        shutil.copytree(REPO_ROOT, context, ignore=shutil.ignore_patterns(".git", ".venv", "backups", "bench"))
        changed = context / "app" / "zapomni_core" / "__init__.py"
        changed.write_text(changed.read_text() + f"\n# a change: {uuid.uuid4()}\n")  # never built before
        warm_changed = build(context)
    build(REPO_ROOT)  # the image under test is the checkout's again
    return {"cold_s": cold, "warm_unchanged_s": warm, "warm_app_change_s": warm_changed}


def layers() -> list[dict[str, Any]]:
    history = json.loads(podman("history", "--format", "json", IMAGE).stdout)
    return [
        {"size_mb": round(layer["size"] / 1e6, 1), "created_by": " ".join(layer["CreatedBy"].split())[:110]}
        for layer in history
        if layer["size"] > 0
    ]


async def first_tools_list(entry: list[str]) -> float:
    started = time.monotonic()
    with open(os.devnull, "w") as errlog:
        async with mcp_client(entry, errlog) as session:
            await session.list_tools()
            return seconds(started)


def cold_starts() -> dict[str, list[float]]:
    stack = [asyncio.run(first_tools_list(readme_client_entry("zapomni_default"))) for _ in range(RUNS)]
    standalone = []
    for _ in range(RUNS):
        volume = f"zapomni-bench-{uuid.uuid4().hex[:8]}"
        standalone.append(asyncio.run(first_tools_list(standalone_entry(volume))))
        podman("volume", "rm", "-f", volume, check=False)
    return {"stack_serve_s": stack, "standalone_new_volume_s": standalone}


def stack_starts() -> dict[str, Any]:
    """`make up` as an operator runs it (it builds first: cached here), and the start alone (`up -d`, then
    ops/wait-ready) on new volumes and on existing ones."""

    def start() -> float:
        started = time.monotonic()
        compose("up", "-d", timeout=900)
        run(["ops/wait-ready"], timeout=900)
        return seconds(started)

    compose("down", "-v")
    started = time.monotonic()
    make("up")
    make_up = seconds(started)
    fresh, existing = [], []
    for _ in range(RUNS):
        compose("down", "-v")
        fresh.append(start())
        make("down")
        existing.append(start())
    return {"make_up_s": make_up, "new_volumes_s": fresh, "existing_volumes_s": existing}


def export_file(path: Path) -> None:
    """MEMORIES short notes in the export format, without vectors: `make import` embeds them."""
    with path.open("w") as out:
        header = {"type": "zapomni-export", "format_version": 3, "exported_at": "2026-11-26T00:00:00+00:00",
                  "zapomni_version": "0.1.0", "embedder": {"model": "ollama:nomic-embed-text", "dimension": 768},
                  "graph_name": "zapomni", "schema_version": 6}  # fmt: skip
        out.write(json.dumps(header) + "\n")
        for i in range(MEMORIES):
            text = f"Maintenance note {i}: pump {i % 97} at station {i % 13} was serviced and logged {i * 3} hours."
            memory: dict[str, Any] = {
                      "type": "memory", "id": str(uuid.UUID(int=i + 1, version=4)), "workspace": "bench",
                      "text": text, "created_at": "2026-11-26T00:00:00+00:00", "tags": [], "source": None,
                      "date": None, "metadata": {}, "chunks": [{"index": 0, "text": text}]}  # fmt: skip
            out.write(json.dumps(memory) + "\n")
        out.write(json.dumps({"type": "end", "memories": MEMORIES, "chunks": MEMORIES}) + "\n")


def backup_and_restore() -> dict[str, float]:
    backups = REPO_ROOT / "backups"
    backups.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="zapomni-bench-") as scratch:
        export = Path(scratch) / "memories.jsonl"
        export_file(export)
        started = time.monotonic()
        make("import", f"FILE={export}", timeout=3600)
        imported = seconds(started)
    before = set(backups.iterdir())
    started = time.monotonic()
    make("backup", timeout=3600)
    backup_s = seconds(started)
    (backup,) = set(backups.iterdir()) - before
    size_mb = round(sum(f.stat().st_size for f in backup.rglob("*") if f.is_file()) / 1e6, 1)
    started = time.monotonic()
    make("restore", f"BACKUP={backup.name}", timeout=3600)
    restore_s = seconds(started)
    shutil.rmtree(backup, ignore_errors=True)
    return {"memories": MEMORIES, "import_s": imported, "backup_s": backup_s, "backup_mb": size_mb,
            "restore_s": restore_s}  # fmt: skip


def spread(samples: list[float]) -> str:
    return f"{statistics.median(samples)} s ({max(samples)} s)"


def report(figures: dict[str, Any]) -> str:
    build_s, starts, stack, store = figures["build"], figures["cold_start"], figures["stack"], figures["store"]
    total_mb = sum(layer["size_mb"] for layer in figures["layers"])
    lines = [
        "# The appliance under podman: image, builds, cold starts, stack start, backup and restore",
        "",
        f"Measured {figures['measured']} by `python -m bench.appliance` on this machine (2 cores), podman "
        f"{figures['podman']}, with the stand-in images of tests/containers/standins (Ollama's stand-in embeds "
        "by hashing, so embedding time is not in these figures).",
        "",
        "| figure | value |",
        "|---|---:|",
        f"| image build, cold (`--no-cache`; pip downloads from the index) | {build_s['cold_s']} s |",
        f"| image build, warm, nothing changed | {build_s['warm_unchanged_s']} s |",
        f"| image build, warm, one file in app/ changed | {build_s['warm_app_change_s']} s |",
        f"| `run -i` to tools/list, stack entry (median of {RUNS}) | {statistics.median(starts['stack_serve_s'])} s |",
        f"| `run -i` to tools/list, standalone on a new volume (median of {RUNS}) "
        f"| {statistics.median(starts['standalone_new_volume_s'])} s |",
        f"| `make up` to ready (its image build cached), new volumes | {stack['make_up_s']} s |",
        f"| stack start to ready (`up -d`, `ops/wait-ready`), new volumes, median (max) of {RUNS} "
        f"| {spread(stack['new_volumes_s'])} |",
        f"| stack start to ready, existing volumes, median (max) of {RUNS} | {spread(stack['existing_volumes_s'])} |",
        f"| `make import` of {store['memories']:,} memories | {store['import_s']} s |",
        f"| `make backup`, {store['memories']:,} memories ({store['backup_mb']} MB) | {store['backup_s']} s |",
        f"| `make restore` of that backup, to ready | {store['restore_s']} s |",
        "",
        f"## Image layers ({total_mb:.0f} MB in the layers listed; empty layers left out)",
        "",
        "| MB | instruction |",
        "|---:|---|",
        *[f"| {layer['size_mb']} | `{layer['created_by']}` |" for layer in figures["layers"]],
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    figures: dict[str, Any] = {
        "measured": time.strftime("%Y-%m-%d"),
        "podman": podman("version", "--format", "{{.Client.Version}}").stdout.strip(),
    }
    figures["build"] = build_times()
    figures["layers"] = layers()
    figures["stack"] = stack_starts()
    figures["cold_start"] = cold_starts()
    figures["store"] = backup_and_restore()
    compose("down", "-v")
    write_results(report(figures), figures, RESULTS / "appliance.md", RESULTS / "appliance.json")


if __name__ == "__main__":
    main()
