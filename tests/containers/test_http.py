"""The stack's MCP server over HTTP, as a person connects to it: the token the first start printed (with the
line to paste), the port published on the host's loopback, the official SDK's Streamable HTTP client."""

from __future__ import annotations

import json
import re
import uuid

import pytest

from tests.containers.harness import container, inspect, podman, probe, wait_until
from tests.processes import HttpEndpoint, call, claude_code_line, http_session, status_without_token

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("stack")]

URL = "http://127.0.0.1:8765/mcp"  # compose.yaml's default publication
TOKEN_FILE = "/data/secrets/http.token"


def logs() -> str:
    """The zapomni service's output since its first start (podman keeps it across restarts)."""
    result = podman("logs", container("zapomni"))
    return result.stdout + result.stderr


def printed_tokens() -> list[str]:
    return re.findall(r"Authorization: Bearer (zap_[0-9a-f]{12}_[A-Za-z0-9_-]{43})", logs())


def appliance_tokens() -> list[dict[str, object]]:
    listed = podman("exec", container("zapomni"), "/app/ops/docker-entrypoint.sh", "token", "list", "--json")
    return [token for token in json.loads(listed.stdout)["tokens"] if str(token["name"]).startswith("appliance-")]


async def test_the_printed_token_drives_the_tools_through_the_published_port() -> None:
    (token,) = printed_tokens()
    assert claude_code_line(URL, token) in logs()
    # Kept in the data volume, readable by the service's user only.
    mode = podman("exec", container("zapomni"), "stat", "-c", "%a %u", TOKEN_FILE).stdout.split()
    assert mode == ["600", "10001"], mode
    assert podman("exec", container("zapomni"), "cat", TOKEN_FILE).stdout.strip() == token
    # Published on the host's loopback only, and every request needs the token.
    (binding,) = inspect(container("zapomni"))["HostConfig"]["PortBindings"]["8765/tcp"]
    assert binding["HostIp"] == "127.0.0.1", binding
    assert status_without_token(URL) == 401

    workspace = f"http-{uuid.uuid4().hex[:8]}"
    async with http_session(HttpEndpoint(URL), token) as session:
        added = await call(session, "add_memory", {"text": "The ferry leaves pier 4 at 07:15.", "workspace": workspace})
        found = await call(session, "search_memory", {"query": "when does the ferry leave?", "workspace": workspace})
        assert found["results"][0]["memory_id"] == added["memory_id"]
        listed = await call(session, "list_memories", {"workspace": workspace})
        assert [memory["memory_id"] for memory in listed["memories"]] == [added["memory_id"]]


async def test_a_restart_keeps_the_token_and_prints_nothing_again() -> None:
    (token,) = printed_tokens()
    assert len(appliance_tokens()) == 1
    podman("restart", "--time", "45", container("zapomni"), timeout=120)
    assert wait_until(lambda: probe().returncode == 0, 180), probe().stdout
    assert printed_tokens() == [token]
    assert len(appliance_tokens()) == 1
    assert podman("exec", container("zapomni"), "cat", TOKEN_FILE).stdout.strip() == token
    async with http_session(HttpEndpoint(URL), token) as session:
        assert (await call(session, "list_workspaces"))["workspaces"] is not None
