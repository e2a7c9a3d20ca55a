"""The repairs a workspace's opening makes that write, and when they run: at once, or once the index build that a
store the database has just loaded is still making has ended (decision 0036).

Until then the workspace's writes are held (`WriteFence.hold`): FalkorDB makes a write sent during a build wait
for the whole build, and can leave what it wrote out of the index.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import structlog

from zapomni_core.content.turns import stored_speaker
from zapomni_core.kernel.writing import content_hash
from zapomni_db import (
    DERIVED,
    DerivedField,
    GraphClient,
    GraphStores,
    IndexBuild,
    SchemaSettings,
    WriteFence,
    describe_builds,
    indexes_building,
    repair_vector_index,
    stored_head,
    wait_for_indexes,
)

log = structlog.get_logger(__name__)

# A large add that crashed leaves unlinked chunks; anything this old is certainly not in progress.
ORPHAN_GRACE_S = 3600.0
# Memories read per backfill query: a text may be 10 MB, a turn's metadata and inferred JSON are small.
_BACKFILL_BATCH = {"text": 100, "small": 1000}
# A build with at most this many entities left to index (seconds) is waited for at opening, as every build was
# before decision 0036, for this long at most; a larger one (a large store just loaded: minutes) is not.
_BRIEF_BUILD_NODES = 2_000
_BRIEF_BUILD_S = 30.0
# Seconds between tries to settle a workspace whose index build or repairs failed (writes stay held meanwhile).
_SETTLE_RETRY_S = 5.0


async def settle(name: str, stores: GraphStores, schema: SchemaSettings) -> None:
    """The repairs that write: the vector index's duplicates after a replay, a crashed large add's leftover
    chunks, derived fields of old memories, the pruned change log."""
    await repair_vector_index(stores.client, schema)
    removed = await stores.maintenance.remove_orphan_chunks(time.time() - ORPHAN_GRACE_S)
    if removed:
        log.warning("db.orphans_removed", workspace=name, chunks=removed)
    await _backfill_derived(stores)
    await stores.maintenance.prune_changes()


async def indexes_still_building(client: GraphClient) -> list[IndexBuild]:
    """The indexes still building, after a brief wait when little is left to build: a graph another process has
    just created builds its empty indexes in milliseconds, and its writes need not be refused for that."""
    deadline = time.monotonic() + _BRIEF_BUILD_S
    while (building := await indexes_building(client)) and time.monotonic() < deadline:
        if sum(build.left for build in building) > _BRIEF_BUILD_NODES:
            break
        await asyncio.sleep(0.05)
    return building


async def settle_after_build(
    name: str,
    stores: GraphStores,
    schema: SchemaSettings,
    fence: WriteFence,
) -> None:
    """Wait for the build that holds the workspace's writes, make the repairs (through the hold), and let writes
    through. A failure keeps them held: logged, and tried again."""
    started = time.perf_counter()
    while True:
        try:
            await wait_for_indexes(stores.client, poll_s=1.0, on_progress=lambda now: fence.hold(describe_builds(now)))
            with fence.maintaining():
                await settle(name, stores, schema)
            break
        except Exception:  # writes stay held (they could be left out of an index); logged, tried again
            log.exception("workspace.settle_failed", workspace=name, retry_in_s=_SETTLE_RETRY_S)
            await asyncio.sleep(_SETTLE_RETRY_S)
    fence.release()
    log.info("workspace.writes_resumed", workspace=name, held_s=round(time.perf_counter() - started, 1))


# How each derived field (`zapomni_db.DERIVED`, which names what it is computed from) is computed from those
# sources; writes compute it the same way (`memory_record`, `MemoryWrites`).
DERIVE: dict[DerivedField, Callable[[list[Any]], str | None]] = {
    "content_hash": lambda sources: content_hash(sources[0]),
    "head": lambda sources: stored_head(sources[0]),
    "speaker": lambda sources: stored_speaker(sources[0], sources[1]),
}


async def _backfill_derived(stores: GraphStores) -> None:
    """Memories stored before deduplication, page heads or the speaker property existed get them, once: the store
    records each field done, and the next opening reads nothing for it."""
    maintenance = stores.maintenance
    done = await maintenance.derived()
    for field, value_of in DERIVE.items():
        if field in done:
            continue
        after = ""
        size = _BACKFILL_BATCH["text" if "text" in DERIVED[field].sources else "small"]
        while batch := await maintenance.memories_without(field, after, size):
            values = [(mid, value_of(sources), sources) for mid, sources in batch]
            await maintenance.set_derived(field, [row for row in values if row[1] is not None])
            after = batch[-1][0]
        await maintenance.mark_derived(field)
