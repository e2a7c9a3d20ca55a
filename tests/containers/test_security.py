"""The stack's promises to whoever else shares the machine or the network: no container runs as root,
FalkorDB and Redis refuse clients without the generated password, and nothing listens beyond the compose
network but the HTTP server (which wants a token), published on the host's loopback only."""

from __future__ import annotations

import subprocess
import uuid
from pathlib import Path

import pytest

from tests.containers.harness import (
    IMAGE,
    NETWORK,
    SECRETS_VOLUME,
    SERVICES,
    container,
    engine_env,
    inspect,
    mcp_client,
    podman,
    readme_client_entry,
    with_options,
)

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("stack")]

# Asked from a container on the compose network: what each server answers to no password, a wrong one,
# and the stack's own (read from the secrets volume, as the stack's clients do).
LOGIN = """
import sys, redis
password = open("/secrets/falkordb.password").read().strip()
for given in ("", "not-the-password", password):
    client = redis.Redis(host=sys.argv[1], port=6379, password=given or None, socket_timeout=5)
    try:
        print(client.ping())
    except redis.exceptions.AuthenticationError as exc:
        print("refused:", exc)
"""


def process_uids(name: str) -> set[str]:
    """The host uid of every process in a container (podman top reads /proc; the images have no ps)."""
    return set(podman("top", name, "huser").stdout.split()[1:])


async def test_no_container_runs_as_root_not_even_a_clients_server(tmp_path: Path) -> None:
    for service in SERVICES:
        assert inspect(container(service))["Config"]["User"] == "10001:10001", service
        assert process_uids(container(service)) == {"10001"}, service
    name = f"zapomni-test-client-{uuid.uuid4().hex[:8]}"
    with (tmp_path / "client.log").open("w") as errlog:
        async with mcp_client(with_options(readme_client_entry("zapomni_default"), "--name", name), errlog) as session:
            await session.list_tools()
            assert process_uids(name) == {"10001"}


@pytest.mark.parametrize("server", ["falkordb", "redis"])
def test_the_databases_refuse_clients_without_the_stacks_password(server: str) -> None:
    result = podman(
        "run", "--rm", "--no-healthcheck", "--network", NETWORK, "-v", f"{SECRETS_VOLUME}:/secrets:ro",
        "--entrypoint", "python", IMAGE, "-c", LOGIN, server,
    )  # fmt: skip
    none, wrong, right = result.stdout.splitlines()
    assert none.startswith("refused:") and "authentic" in none.lower(), none
    assert wrong.startswith("refused:"), wrong
    assert right == "True"


def test_a_client_without_the_secrets_volume_is_told_what_is_missing() -> None:
    entry = [arg for arg in readme_client_entry("zapomni_default") if SECRETS_VOLUME not in arg]
    entry.remove("-v")
    result = subprocess.run(entry, input="", capture_output=True, text=True, timeout=120, env=engine_env())
    assert result.returncode != 0
    assert "FALKORDB_PASSWORD is not set" in result.stderr and "zapomni_secrets:/secrets:ro" in result.stderr
    assert "Traceback" not in result.stderr


def test_only_the_http_server_is_published_on_the_host_loopback_and_health_listens_on_loopback_only() -> None:
    for service in SERVICES:
        details = inspect(container(service))
        # An exposed port is listed with no binding (None); a published one lists its host address.
        published = {**(details["HostConfig"].get("PortBindings") or {}), **details["NetworkSettings"]["Ports"]}
        published = {port: bindings for port, bindings in published.items() if bindings}
        if service == "zapomni":  # MCP over HTTP, on the host's 127.0.0.1 only
            hosts = {binding["HostIp"] for bindings in published.values() for binding in bindings}
            assert list(published) == ["8765/tcp"] and hosts == {"127.0.0.1"}, published
        else:
            assert not published, f"{service} publishes {published}"
        assert list(details["NetworkSettings"]["Networks"]) == [NETWORK], service
    # Inside the zapomni service: the health endpoint on 127.0.0.1:8090, and the HTTP server on every
    # interface of the container (port 8765), which only the stack's network and the publication reach.
    listening = podman(
        "exec", container("zapomni"), "python", "-c",
        "print(*[l.split()[1] for f in ('/proc/net/tcp', '/proc/net/tcp6') for l in open(f).readlines()[1:]"
        " if l.split()[3] == '0A'])",
    ).stdout.split()  # fmt: skip
    assert sorted(listening) == ["00000000:223D", "0100007F:1F9A"], listening  # hex, as /proc/net/tcp writes it
