"""Hostile strings in every tool's string arguments, through the official client and the real server object (in
process: what `zapomni serve` runs, over the SDK's in-memory transport).

FalkorDB's client writes query parameters into the query text (`CYPHER name="value" ...`), and a NUL
character ends that text early: such a string must be refused at the edge, naming the field, and no
other string may break the encoding.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from hypothesis import HealthCheck, given
from hypothesis import settings as examples_of
from hypothesis import strategies as st
from mcp import ClientSession

from tests.helpers import configured, examples, local_session, text_of
from tests.processes import call
from zapomni_core import Settings

pytestmark = pytest.mark.anyio

NUL = "\x00"

# The places the hostile client found, and the rest of each tool's free-text fields.
NUL_CALLS: list[tuple[str, dict[str, Any], str]] = [
    ("add_memory", {"text": f"before{NUL}after"}, "text"),
    ("add_memory", {"text": "ok", "metadata": {"source": f"notes{NUL}.md"}}, "metadata.source"),
    ("add_memory", {"text": "ok", "metadata": {"tags": ["fine", f"ta{NUL}g"]}}, "metadata.tags.1"),
    ("add_memory", {"text": "ok", "metadata": {"speaker": f"Ann{NUL}"}}, "metadata.speaker"),
    ("add_memory", {"text": "ok", "metadata": {"colour": f"bl{NUL}ue"}}, "metadata.colour"),
    ("add_memory", {"text": "ok", "metadata": {f"col{NUL}our": "blue"}}, "metadata"),
    ("search_memory", {"query": f"what{NUL}"}, "query"),
    ("search_memory", {"query": "x", "filters": {"tags": [f"t{NUL}"]}}, "filters.tags.0"),
    ("search_memory", {"query": "x", "filters": {"source": f"s{NUL}"}}, "filters.source"),
    ("list_memories", {"cursor": f"c{NUL}"}, "cursor"),
    ("delete_memory", {"filters": {"source": f"s{NUL}"}}, "filters.source"),
    ("get_related", {"entity": f"Maria{NUL}Garcia"}, "entity"),
    ("find_symbol", {"name": f"load{NUL}config"}, "name"),
    ("get_callers", {"symbol": f"main{NUL}"}, "symbol"),
    ("ingest_path", {"path": f"/tmp/x{NUL}y"}, "path"),
    ("index_codebase", {"path": "/tmp", "exclude": [f"*{NUL}"]}, "exclude.0"),
]


async def totals(session: ClientSession) -> tuple[int, int, int]:
    """Workspaces, memories and chunks in the whole store."""
    listed = await call(session, "list_workspaces")
    spaces = listed["workspaces"]
    return len(spaces), sum(w["memories"] for w in spaces), sum(w["chunks"] for w in spaces)


async def test_a_nul_character_is_refused_naming_the_field(settings: Settings) -> None:
    async with local_session(settings) as session:
        await call(session, "add_memory", {"text": "The only memory.", "metadata": {"tags": ["t"], "source": "s"}})
        before = await totals(session)
        for tool, arguments, field in NUL_CALLS:
            result = await session.call_tool(tool, arguments)
            text = text_of(result)
            assert result.is_error, (tool, arguments, text)
            assert f"- {field}: " in text and "NUL" in text, (tool, field, text)
            assert await totals(session) == before, (tool, arguments)


# Characters whose NFC form is longer than they are, which FalkorDB's `left` and `substring` cut
# wrongly (tests/integration/test_memory_lifecycle.py).
NFC_GROWS = ["\ufb4d", "\u0b5c"]


# --- any string, every tool ------------------------------------------------------------------------

# What has broken parameter encodings before: quotes, escapes (as text, not as escapes), line and
# paragraph separators, NEL, a BOM, backticks, Cypher's own words. Lone surrogates cannot be sent by the
# official client (its JSON writer refuses them); tests/e2e/test_jsonrpc_edges.py sends them raw.
SPECIALS = [NUL, "\\", '"', "'", "`", "\\u0000", "\\x00", "\\n", "\n", "\r", "\t", "\u2028", "\u2029", "\x85"]
SPECIALS += ["\ufeff", "\x7f", "\x1b", "$", "{", "}", "[", "]", "CYPHER x=1 ", "*/", "//", "\U0010ffff", "é", "😀"]
SPECIALS += NFC_GROWS
piece = st.one_of(st.characters(exclude_categories=["Cs"]), st.sampled_from(SPECIALS))
hostile = st.lists(piece, max_size=16).map("".join)
# Examples per tool (20 tools), so that the whole run stays well under a minute on a busy 2-core machine.
EXAMPLES_PER_TOOL = examples(15)
KNOWN = "<the id of a stored memory>"  # replaced by a real id, so that some calls reach the stored data
some_id = st.one_of(hostile, st.just(KNOWN))
workspace = st.one_of(st.sampled_from(["default", "second"]), hostile)
date = st.one_of(st.sampled_from(["2024-05-01", "2024-05-01T13:45:00Z"]), hostile)
words = st.lists(hostile, max_size=3)
text = st.one_of(hostile, hostile.map(lambda tail: f"A note: {tail}"))  # half of them with something to store


def args(required: dict[str, Any], **optional: Any) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(required, optional={"workspace": workspace, **optional})


metadata = st.fixed_dictionaries(
    {}, optional={"tags": words, "source": hostile, "date": date, "speaker": hostile, "thread": hostile}
).flatmap(lambda fixed: st.dictionaries(hostile, hostile, max_size=2).map(lambda extra: {**extra, **fixed}))
filters = st.fixed_dictionaries({}, optional={"tags": words, "source": hostile, "date_from": date, "date_to": date})
walk = {"include": words, "exclude": words}

TOOL_CALLS: dict[str, st.SearchStrategy[dict[str, Any]]] = {
    "add_memory": args({"text": text}, metadata=metadata),
    "search_memory": args({"query": hostile}, filters=filters),
    "get_memory": args({"memory_id": some_id}),
    "list_memories": args({}, cursor=hostile, filters=filters),
    # The stored memory, in its workspace: a bad id or workspace is get_memory's to try.
    "update_memory": st.fixed_dictionaries(
        {"memory_id": st.just(KNOWN)}, optional={"text": text, "metadata": metadata}
    ),
    "delete_memory": st.one_of(
        args({"memory_ids": st.lists(some_id, min_size=1, max_size=2)}, dry_run=st.booleans()),
        args({"filters": filters}, dry_run=st.booleans()),
    ),
    "get_stats": args({}),
    "list_workspaces": st.just({}),
    "delete_workspace": st.fixed_dictionaries({"name": workspace, "confirm": hostile}),
    "job_status": st.fixed_dictionaries({"job_id": hostile}),
    "cancel_job": st.fixed_dictionaries({"job_id": hostile}),
    "list_jobs": args({}, state=hostile),
    "build_graph": args({"memory_ids": st.lists(hostile, min_size=1, max_size=2)}),
    "graph_status": args({}, job_id=hostile),
    "get_related": args({"entity": hostile}),
    "ingest_path": args({"path": hostile}, tags=words, **walk),
    "index_codebase": args({"path": hostile}, **walk),
    "find_symbol": args({"name": hostile}),
    "get_callers": args({"symbol": hostile}),
    "get_callees": args({"symbol": hostile}),
    "import_memories": args(
        {"format": st.one_of(st.sampled_from(["chatgpt", "markdown"]), hostile), "path": hostile},
        user_name=hostile,
        dry_run=st.booleans(),
    ),
}


def _with_known_id(value: Any, memory_id: str) -> Any:
    if value == KNOWN:
        return memory_id
    if isinstance(value, dict):
        return {key: _with_known_id(item, memory_id) for key, item in value.items()}
    if isinstance(value, list):
        return [_with_known_id(item, memory_id) for item in value]
    return value


async def _one_call(session: ClientSession, tool: str, arguments: dict[str, Any]) -> bool:
    """Call `tool`, check what it answered and did; whether it succeeded."""
    before = await totals(session)
    result = await session.call_tool(tool, arguments)
    text = text_of(result) if result.content else ""
    after = await totals(session)  # answering this is the server still serving
    if result.is_error:
        assert text and not text.startswith("Internal error"), (tool, arguments, text)
        assert after == before, (tool, arguments, text)
        return False
    added = result.structured_content or {}
    if tool == "add_memory" and not added["deduplicated"]:  # what was stored is what was sent
        stored = await call(session, "get_memory", {"memory_id": added["memory_id"], "workspace": added["workspace"]})
        assert stored["text"] == arguments["text"], (arguments, stored)
        assert stored["source"] == (arguments.get("metadata") or {}).get("source"), (arguments, stored)
    return True


def _try_tool(portal: BlockingPortal, session: ClientSession, tool: str, known_id: str) -> int:
    """Hostile calls of one tool; how many succeeded."""
    succeeded = 0

    @examples_of(max_examples=EXAMPLES_PER_TOOL, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(arguments=TOOL_CALLS[tool])
    def any_call(arguments: dict[str, Any]) -> None:
        nonlocal succeeded
        succeeded += portal.call(_one_call, session, tool, _with_known_id(arguments, known_id))

    any_call()
    return succeeded


@pytest.mark.property
def test_any_string_in_any_tool_answers_success_or_a_clear_error(settings: Settings, tmp_path: Path) -> None:
    roots = tmp_path / "roots"  # empty: a walk that is allowed finds nothing, so no job adds memories later
    roots.mkdir()
    session_cm = local_session(configured(settings, ZAPOMNI_ALLOWED_ROOTS=str(roots)))
    with start_blocking_portal() as portal, portal.wrap_async_context_manager(session_cm) as session:
        known = portal.call(call, session, "add_memory", {"text": "A memory some hostile calls name."})["memory_id"]
        # The deleting tools last, so that the calls naming the stored memory find it.
        order = sorted(TOOL_CALLS, key=lambda tool: (tool.startswith("delete_"), tool))
        succeeded = {tool: _try_tool(portal, session, tool, known) for tool in order}
    # Hostile strings reached the database, not only the validation in front of it.
    assert succeeded["add_memory"] > 0 and succeeded["search_memory"] > 0, succeeded
