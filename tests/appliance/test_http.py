"""The native appliance's MCP server over HTTP: the first start makes its token (0600, printed once with
the client line), and the official SDK's Streamable HTTP client works with it."""

from __future__ import annotations

import stat

import pytest

from tests.appliance.harness import Appliance
from tests.processes import HttpEndpoint, call, claude_code_line, http_session, status_without_token

pytestmark = pytest.mark.anyio


async def test_the_first_start_prints_the_token_once_and_it_opens_the_http_server(appliance: Appliance) -> None:
    assert appliance.first_up is not None
    token = appliance.token_file.read_text().strip()
    assert token.startswith("zap_")
    assert stat.S_IMODE(appliance.token_file.stat().st_mode) == 0o600
    assert stat.S_IMODE(appliance.token_file.parent.stat().st_mode) == 0o700
    # Printed once, on stderr, with the exact line to paste; no log file has it.
    printed = appliance.first_up.stderr
    assert printed.count(token) == 1 and claude_code_line(appliance.http_url, token) in printed, printed
    assert token not in appliance.first_up.stdout
    for log in (appliance.dir / "log").iterdir():
        assert token not in log.read_text(errors="replace"), log

    assert status_without_token(appliance.http_url) == 401
    async with http_session(HttpEndpoint(appliance.http_url), token) as session:
        workspace = "http-native"
        added = await call(session, "add_memory", {"text": "The kayaks hang in the boathouse.", "workspace": workspace})
        found = await call(session, "search_memory", {"query": "where are the kayaks?", "workspace": workspace})
        assert found["results"][0]["memory_id"] == added["memory_id"]
        listed = await call(session, "list_memories", {"workspace": workspace})
        assert [memory["memory_id"] for memory in listed["memories"]] == [added["memory_id"]]
