"""What every importer writes (zapomni_core.transfer.sources.lines): export lines the import accepts, stable ids,
and what a source says twice kept once."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime

from zapomni_core import ImportQueued, for_remote
from zapomni_core.transfer.format import BODY_LINE, EmbedderInfo, EndLine, EntityLine, MemoryLine, RelationLine
from zapomni_core.transfer.sources import LineWriter


def writer(out: io.BytesIO, workspace: str = "default") -> LineWriter:
    return LineWriter(out, format="test", workspace=workspace, embedder=EmbedderInfo("m", 3), pieces=lambda t: [t])


def lines(out: io.BytesIO) -> list[object]:
    raw = out.getvalue().splitlines()
    assert json.loads(raw[0])["type"] == "zapomni-export"
    return [BODY_LINE.validate_json(line, context={"dimension": 3}) for line in raw[1:]]


def test_the_lines_are_an_export_with_ids_that_do_not_change_from_run_to_run() -> None:
    first, second = io.BytesIO(), io.BytesIO()
    for out in (first, second):
        w = writer(out)
        when = datetime(2024, 6, 3, 7, 33, tzinfo=UTC)
        a = w.memory("msg-1", "Maria moved to Lisbon.", when=when, speaker="Maria", thread="t1", tags=["move"])
        b = w.memory("msg-2", "Lisbon is in Portugal.", when=None)
        assert a is not None and b is not None
        maria = w.entity("Maria", "PERSON", a.chunk_ids)
        lisbon = w.entity("Lisbon", "PLACE", [*a.chunk_ids, *b.chunk_ids])
        assert maria and lisbon
        w.relation(maria, "LIVES_IN", "lives in", lisbon, a, "Maria moved to Lisbon.")
        w.finish()

    def timeless(out: io.BytesIO) -> list[dict[str, object]]:  # an undated item is created when imported
        return [
            {k: v for k, v in json.loads(line).items() if k != "created_at"} for line in out.getvalue().splitlines()[1:]
        ]

    assert timeless(first) == timeless(second)
    memory, _other, person, place, relation, end = lines(first)
    assert isinstance(memory, MemoryLine) and memory.tags == ["imported:test", "move"]
    assert memory.date == "2024-06-03T07:33:00+00:00" and memory.metadata == {
        "imported_from": "test", "original_id": "msg-1", "speaker": "Maria", "thread": "t1",
    }  # fmt: skip
    assert isinstance(person, EntityLine) and isinstance(place, EntityLine) and len(place.mentions) == 2
    assert isinstance(relation, RelationLine) and relation.method == "imported"
    assert isinstance(end, EndLine) and (end.memories, end.chunks, end.entities, end.relations) == (2, 2, 2, 1)


def test_what_a_source_says_twice_is_kept_once_and_said_so() -> None:
    out = io.BytesIO()
    w = writer(out)
    assert w.memory("same", "First telling.", when=None) is not None
    assert w.memory("same", "Second telling.", when=None) is None
    assert w.memory("blank", "  \n", when=None) is None
    one = w.memory("x", "Acme Inc. hired Maria.", when=None)
    assert one is not None
    assert w.entity("Acme Inc.", "ORG", one.chunk_ids) == w.entity("Acme", "ORG", one.chunk_ids)  # one key
    conversion = w.finish()
    assert conversion.items == 2
    assert conversion.skipped == {"items the source holds twice (same id)": 1, "empty text": 1}
    entity = next(line for line in lines(out) if isinstance(line, EntityLine))
    assert entity.name == "Acme Inc." and entity.aliases == ["Acme"] and len(entity.mentions) == 1


def test_the_same_item_in_two_workspaces_has_two_ids() -> None:
    ids = set()
    for workspace in ("default", "team"):
        placed = writer(io.BytesIO(), workspace).memory("msg-1", "Hello.", when=None)
        assert placed is not None
        ids.add(placed.memory_id)
    assert len(ids) == 2


def test_a_queued_import_names_the_path_as_asked_to_a_client_on_another_machine() -> None:
    queued = ImportQueued(job_id="j", workspace="default", format="chatgpt", path="/home/maria/exports/chat.zip")
    remote = for_remote(queued.asked_as("~/exports/chat.zip"))
    assert remote.path == "~/exports/chat.zip" and queued.path == "/home/maria/exports/chat.zip"
