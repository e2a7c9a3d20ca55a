"""Tokens over HTTP, with real tokens in the real database: 401 without a valid one, 403 outside its role or
workspaces on every tool, with nothing changed after each refusal, and listings that show only what a token sees.

One `zapomni serve --http` serves the whole module; every test leaves the store as it found it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp.shared.exceptions import MCPError

from tests.helpers import access_service, make_tokens, resource_text
from tests.processes import HttpServer, call, http_server, http_session
from zapomni_core import RevokeTokenRequest
from zapomni_mcp.tools import TOOLS

pytestmark = pytest.mark.anyio

TOKENS: dict[str, dict[str, Any]] = {
    "admin": {"role": "admin", "workspaces": None},
    "reader": {"role": "read", "workspaces": None},
    "team-writer": {"role": "write", "workspaces": ["team"]},
    "team-admin": {"role": "admin", "workspaces": ["team"]},
    "gone": {"role": "write", "workspaces": None, "revoked": True},
    "lapsed": {"role": "write", "workspaces": None, "expired": True},
}
READ_TOOLS = {tool.name for tool in TOOLS if tool.role == "read"}


@pytest.fixture(scope="module")
def server(store: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    log = tmp_path_factory.mktemp("access") / "server.log"
    with http_server(store, log, ZAPOMNI_ALLOWED_ROOTS=str(store), ZAPOMNI_HTTP_RATE="0") as started:
        yield started


@pytest.fixture(scope="module")
def tokens(server: HttpServer, store: Path) -> dict[str, str]:
    return asyncio.run(make_tokens(store, TOKENS))


@pytest.fixture(scope="module")
def stored(server: HttpServer, tokens: dict[str, str]) -> dict[str, str]:
    """A memory and a finished job in `default`, and a memory in `team`, made through the admin token."""

    async def make() -> dict[str, str]:
        async with http_session(server, tokens["admin"]) as admin:
            default = await call(admin, "add_memory", {"text": "The boiler was serviced in March by Ivan."})
            team = await call(admin, "add_memory", {"text": "The team offsite is in Porto.", "workspace": "team"})
            job = await call(admin, "build_graph", {"memory_ids": [default["memory_id"]]})
            await call(admin, "job_status", {"job_id": job["job_id"], "wait_s": 50})
        return {"memory": default["memory_id"], "team_memory": team["memory_id"], "job": job["job_id"]}

    return asyncio.run(make())


def arguments(tool: str, ids: dict[str, str], store: Path) -> dict[str, Any]:
    """Arguments under which each tool, if it ran, would read or change the `default` workspace."""
    memory, job = ids["memory"], ids["job"]
    by_tool: dict[str, dict[str, Any]] = {
        "add_memory": {"text": "A memory the token may not add."},
        "search_memory": {"query": "boiler"},
        "get_memory": {"memory_id": memory},
        "list_memories": {},
        "update_memory": {"memory_id": memory, "text": "Rewritten by a token that may not."},
        "delete_memory": {"memory_ids": [memory]},
        "find_updates": {},
        "get_stats": {},
        "list_workspaces": {},
        "delete_workspace": {"name": "default", "confirm": "default"},
        "job_status": {"job_id": job},
        "list_jobs": {},
        "cancel_job": {"job_id": job},
        "build_graph": {},
        "graph_status": {},
        "get_related": {"entity": "Ivan"},
        "ingest_path": {"path": str(store)},
        "index_codebase": {"path": str(store)},
        "find_symbol": {"name": "main"},
        "get_callers": {"symbol": "main"},
        "get_callees": {"symbol": "main"},
        "import_memories": {"format": "claude", "path": str(store)},
    }
    return by_tool[tool]


async def snapshot(server: HttpServer, admin: str) -> Any:
    """What a refused call must not have changed: the workspaces, their memories, and default's jobs."""
    async with http_session(server, admin) as session:
        workspaces = await call(session, "list_workspaces")
        memories = {
            w["name"]: [
                (m["memory_id"], m["preview"])
                for m in (await call(session, "list_memories", {"workspace": w["name"]}))["memories"]
            ]
            for w in workspaces["workspaces"]
        }
        jobs = [(j["job_id"], j["state"]) for j in (await call(session, "list_jobs"))["jobs"]]
    return workspaces, memories, jobs


def tools_call(tool: str, args: dict[str, Any], request_id: int = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": {"name": tool, "arguments": args}}


async def test_a_request_without_a_valid_token_gets_401_and_changes_nothing(
    server: HttpServer, tokens: dict[str, str], stored: dict[str, str]
) -> None:
    before = await snapshot(server, tokens["admin"])
    add = tools_call("add_memory", {"text": "Stored by nobody."})
    metadata_url = f"{server.base}/.well-known/oauth-protected-resource/mcp"
    for token in [None, "not-a-token", "zap_000000000000_" + "x" * 43, tokens["gone"], tokens["lapsed"]]:
        refused = server.post(add, token)
        assert refused.status_code == 401, (token, refused.text)
        challenge = refused.headers["www-authenticate"]
        assert challenge.startswith("Bearer ") and f'resource_metadata="{metadata_url}"' in challenge
    assert await snapshot(server, tokens["admin"]) == before

    metadata = server.get("/.well-known/oauth-protected-resource/mcp").json()
    assert metadata["resource"] == server.url
    # OAuth is off: no authorization server is named, and none answers (tests/e2e/test_oauth.py has it on).
    assert "authorization_servers" not in metadata
    assert server.get("/.well-known/oauth-authorization-server").status_code == 404
    refused_errors: list[Exception] = []
    try:  # the SDK's client is refused as well, at its first request
        async with http_session(server, tokens["gone"]) as session:
            await session.list_tools()
    except* MCPError as group:
        refused_errors += group.exceptions
    assert refused_errors


async def test_a_read_token_reads_and_is_refused_403_on_every_other_tool(
    server: HttpServer, tokens: dict[str, str], stored: dict[str, str], store: Path
) -> None:
    async with http_session(server, tokens["reader"]) as reader:
        for name in sorted(READ_TOOLS):  # each is answered (a refusal would raise)
            await reader.call_tool(name, arguments(name, stored, store))
        found = await call(reader, "search_memory", {"query": "who serviced the boiler"})
        assert found["results"][0]["memory_id"] == stored["memory"]

    before = await snapshot(server, tokens["admin"])
    for tool in TOOLS:
        if tool.name in READ_TOOLS:
            continue
        refused = server.post(tools_call(tool.name, arguments(tool.name, stored, store)), tokens["reader"])
        assert refused.status_code == 403, (tool.name, refused.text)
        assert refused.headers["www-authenticate"].startswith('Bearer error="insufficient_scope"')
        message = refused.json()["error"]["message"]
        assert f"{tool.name} needs the {tool.role} role" in message and "has role read" in message, message
        assert "Nothing was done" in message
        assert await snapshot(server, tokens["admin"]) == before, f"{tool.name} changed the store"


async def test_a_token_for_another_workspace_is_refused_403_on_every_tool(
    server: HttpServer, tokens: dict[str, str], stored: dict[str, str], store: Path
) -> None:
    before = await snapshot(server, tokens["admin"])
    for tool in TOOLS:
        args = arguments(tool.name, stored, store)
        if tool.name == "list_workspaces":
            continue  # it acts on no one workspace: it lists those the token sees (below)
        refused = server.post(tools_call(tool.name, args), tokens["team-writer"])
        assert refused.status_code == 403, (tool.name, refused.text)
        assert "may not use workspace 'default'" in refused.json()["error"]["message"] or tool.role == "admin"
        assert await snapshot(server, tokens["admin"]) == before, f"{tool.name} changed the store"
    # The admin of one workspace may delete that one only.
    refused = server.post(
        tools_call("delete_workspace", {"name": "default", "confirm": "default"}), tokens["team-admin"]
    )
    assert refused.status_code == 403 and "may not use workspace 'default'" in refused.json()["error"]["message"]
    assert await snapshot(server, tokens["admin"]) == before


async def test_listings_show_only_the_workspaces_a_token_sees(
    server: HttpServer, tokens: dict[str, str], stored: dict[str, str]
) -> None:
    async with http_session(server, tokens["team-writer"]) as team:
        listed = await call(team, "list_workspaces")
        assert [w["name"] for w in listed["workspaces"]] == ["team"]
        resources = await team.list_resources()
        assert [str(r.uri) for r in resources.resources] == [f"memory://team/{stored['team_memory']}"]
        read = await team.read_resource(f"memory://team/{stored['team_memory']}")
        assert resource_text(read) == "The team offsite is in Porto."
        with pytest.raises(MCPError, match="may not use workspace 'default'"):
            await team.read_resource(f"memory://default/{stored['memory']}")
        # get_stats tells it nothing of the rest of the store: neither how many workspaces, nor the database's size.
        stats = await call(team, "get_stats", {"workspace": "team"})
        assert (stats["workspaces"], stats["database_size_mb"]) == (1, None)
        # Inside its workspace the token writes; the new memory is there for the admin too.
        added = await call(team, "add_memory", {"text": "Porto hotel is booked.", "workspace": "team"})
        await call(team, "delete_memory", {"memory_ids": [added["memory_id"]], "workspace": "team"})
    async with http_session(server, tokens["admin"]) as admin:
        names = [w["name"] for w in (await call(admin, "list_workspaces"))["workspaces"]]
        assert sorted(names) == ["default", "team"]
        whole = await call(admin, "get_stats")
        assert whole["workspaces"] == 2 and whole["database_size_mb"] > 0


async def test_a_revoked_token_is_refused_from_the_next_request_on(server: HttpServer, store: Path) -> None:
    fresh = (await make_tokens(store, {"short-lived": {"role": "read", "workspaces": None}}))["short-lived"]
    assert server.post(tools_call("list_workspaces", {}), fresh).status_code == 200
    async with access_service(store) as access:
        await access.revoke(RevokeTokenRequest(name_or_id="short-lived"))
    assert server.post(tools_call("list_workspaces", {}), fresh).status_code == 401
