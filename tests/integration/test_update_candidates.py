"""What update detection compares an added memory with is read while the memory is stored, by its vector
(`Detection.compare_while_stored`): the same memories as read by its stored first chunk afterwards, less itself."""

from __future__ import annotations

import pytest

from zapomni_core import ZapomniCore
from zapomni_core.memories.requests import AddMemoryRequest
from zapomni_db import Candidates

pytestmark = pytest.mark.anyio

STORED = [
    "Our team's office is on Baker Street, second floor.",
    "The office printer jams on double-sided pages.",
    "Lunch on Fridays is at the Thai place near the office.",
    "The kiln in the garage reaches 1260 degrees for stoneware.",
]
NEW = "Update: we moved the office to 14 Kings Road last month, the Baker Street lease ended."


def others(found: Candidates, itself: str) -> dict[str, float]:
    return {c.memory_id: round(c.distance, 4) for c in found.nearest if c.memory_id != itself}


async def test_candidates_read_by_vector_before_storing_are_those_read_by_the_stored_chunk(core: ZapomniCore) -> None:
    for text in STORED:
        await core.memories.add(AddMemoryRequest(text=text))
    workspace = await core.workspaces.registry.require(None)
    reads = workspace.stores.search
    [vector] = await core.embedder.embed_documents([NEW])
    before = await reads.update_candidates("not-stored-yet", vector=vector, k=len(STORED) + 1, max_chars=600)
    added = await core.memories.add(AddMemoryRequest(text=NEW))
    after = await reads.update_candidates(added.memory_id, k=len(STORED) + 1, max_chars=600)
    assert added.memory_id in {c.memory_id for c in after.nearest}  # stored: among its own nearest
    assert len(others(before, "not-stored-yet")) == len(STORED)
    assert others(before, "not-stored-yet").keys() == others(after, added.memory_id).keys()
    for memory_id, distance in others(after, added.memory_id).items():
        assert others(before, "not-stored-yet")[memory_id] == pytest.approx(distance, abs=1e-3)
    # Compared while it was stored, it was linked all the same: the reply names what it replaces.
    assert [linked.memory_id for linked in added.supersedes] == [after_id(after, STORED[0])]


def after_id(found: Candidates, text: str) -> str:
    return next(c.memory_id for c in found.nearest if c.text == text)
