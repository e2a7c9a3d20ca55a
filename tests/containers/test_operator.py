"""The operator's make targets exactly as the README gives them, against the running stack with the engine's
compose command: health, migrate, backup, restore (exactly what the backup held), export, import, down/up."""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.containers.harness import (
    PROJECT,
    REPO,
    SERVICES,
    call,
    container,
    make,
    mcp_client,
    podman,
    readme_client_entry,
)

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("stack")]


async def tools(tmp_path: Path, *calls: tuple[str, dict[str, Any]]) -> list[Any]:
    """One client session (the README's stack entry) making `calls` in order; their structured results."""
    results = []
    with (tmp_path / "client.log").open("a") as errlog:
        async with mcp_client(readme_client_entry("zapomni_default"), errlog) as session:
            for tool, arguments in calls:
                results.append(await call(session, tool, arguments))
    return results


def memories(export: Path) -> dict[str, str]:
    """The memory records of an export, by id (each record whole: text, metadata, chunks and vectors)."""
    records = {}
    for line in export.read_text().splitlines():
        record = json.loads(line)
        if record.get("type") == "memory":
            records[record["id"]] = line
    return records


def test_health_lists_every_check_ready_and_migrate_has_nothing_to_do() -> None:
    health = make("health")
    # disk: the zapomni service sees FalkorDB's volume (FALKORDB_DATA_DIR), so it watches its free space.
    for check in ("falkordb", "schema", "redis", "embedder", "ollama_models", "disk"):
        assert re.search(rf"│ {check} +│ yes", health.stdout), health.stdout
    assert health.stdout.rstrip().endswith("ready")
    migrate = make("migrate")
    assert "the schema is up to date" in migrate.stdout, migrate.stdout + migrate.stderr
    # The stack's database takes connections once its data is loaded and builds its indexes afterwards.
    ask = "REDISCLI_AUTH=$(cat /secrets/falkordb.password) redis-cli --no-raw GRAPH.CONFIG GET DELAY_INDEXING"
    config = podman("exec", container("falkordb"), "sh", "-c", ask).stdout
    assert "DELAY_INDEXING" in config and re.search(r"\(integer\) 1|true", config), config


# What podman printed on every container start where no systemd times the health checks (issue 38 #20).
SYSTEMD_NOISE = "unable to get systemd connection"


def test_make_ps_shows_every_service_healthy_and_starting_them_printed_no_systemd_errors(stack: str) -> None:
    assert SYSTEMD_NOISE not in stack, stack
    listing = make("ps").stdout
    for service in SERVICES:
        (line,) = [line for line in listing.splitlines() if container(service) in line]
        assert "(healthy)" in line, listing


async def test_restore_brings_back_exactly_what_the_backup_held_and_import_adds_the_rest(tmp_path: Path) -> None:
    workspace = f"ops-{uuid.uuid4().hex[:8]}"
    kept, dropped = await tools(
        tmp_path,
        ("add_memory", {"text": "The generator is tested on the first Monday.", "workspace": workspace}),
        ("add_memory", {"text": "Spare fuses are in the grey cabinet.", "workspace": workspace}),
    )
    # Extraction runs in the background: an export taken before it finishes holds what the backup no longer does.
    for _ in range(120):
        (stats,) = await tools(tmp_path, ("get_stats", {"workspace": workspace}))
        if stats["extraction_pending"] == 0:
            break
        await anyio.sleep(1)
    make("export", f"OUT={tmp_path / 'at-backup.jsonl'}")
    at_backup = memories(tmp_path / "at-backup.jsonl")
    assert {kept["memory_id"], dropped["memory_id"]} <= set(at_backup)

    backups_before = set((REPO / "backups").iterdir())
    make("backup")
    (backup,) = set((REPO / "backups").iterdir()) - backups_before
    assert (backup / "manifest.json").is_file()

    # After the backup: one memory added, one deleted; an export holds the addition.
    (later, _) = await tools(
        tmp_path,
        ("add_memory", {"text": "The roof hatch key hangs by the boiler.", "workspace": workspace}),
        ("delete_memory", {"memory_ids": [dropped["memory_id"]], "workspace": workspace}),
    )
    make("export", f"OUT={tmp_path / 'after-backup.jsonl'}")
    assert later["memory_id"] in memories(tmp_path / "after-backup.jsonl")

    make("restore", f"BACKUP={backup.name}")
    make("export", f"OUT={tmp_path / 'restored.jsonl'}")
    assert memories(tmp_path / "restored.jsonl") == at_backup  # every record, chunks and vectors included

    imported = make("import", f"FILE={tmp_path / 'after-backup.jsonl'}")
    make("export", f"OUT={tmp_path / 'imported.jsonl'}")
    now = memories(tmp_path / "imported.jsonl")
    assert later["memory_id"] in now and dropped["memory_id"] in now, imported.stdout
    again = make("import", f"FILE={tmp_path / 'after-backup.jsonl'}")
    assert memories(tmp_path / "imported.jsonl").keys() == now.keys()
    assert "skipped" in (again.stdout + again.stderr).lower(), again.stdout + again.stderr

    query = {"query": "where is the roof hatch key", "workspace": workspace}
    (found,) = await tools(tmp_path, ("search_memory", query))
    assert found["results"][0]["memory_id"] == later["memory_id"]


async def test_down_keeps_the_volumes_and_up_brings_the_same_memories_back(tmp_path: Path) -> None:
    workspace = f"down-{uuid.uuid4().hex[:8]}"
    (added,) = await tools(tmp_path, ("add_memory", {"text": "The well pump is on circuit 7.", "workspace": workspace}))

    make("down")
    running = podman("ps", "--filter", f"label=com.docker.compose.project={PROJECT}", "--format", "{{.Names}}").stdout
    assert running.strip() == ""
    volumes = podman("volume", "ls", "--filter", f"label=com.docker.compose.project={PROJECT}", "--format", "{{.Name}}")
    assert {f"{PROJECT}_falkordb-data", f"{PROJECT}_secrets"} <= set(volumes.stdout.split())

    make("up")
    query = {"query": "which circuit is the well pump on", "workspace": workspace}
    (found,) = await tools(tmp_path, ("search_memory", query))
    assert found["results"][0]["memory_id"] == added["memory_id"]
