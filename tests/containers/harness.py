"""Driving the appliance in containers: podman, the compose stack with its stand-in images, the operator's
make targets, and MCP clients started the way the README tells Claude Desktop to start them.

Everything runs for real: podman (configured by ops/setup-podman), the image built from the Dockerfile,
compose.yaml brought up by podman-compose with tests/containers/compose.standins.yaml swapping in the
stand-ins of tests/containers/standins for the images no registry can give here.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TextIO

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
PROJECT = "zapomni"  # compose.yaml's `name:`; the README's network and volume names follow from it
IMAGE = "localhost/zapomni:local"
NETWORK = f"{PROJECT}_default"
SECRETS_VOLUME = f"{PROJECT}_secrets"
PODMAN_COMPOSE = Path(sys.executable).parent / "podman-compose"
# compose.yaml as the README tells podman users to run it, plus the stand-in images.
COMPOSE = " ".join(
    [str(PODMAN_COMPOSE), "-f compose.yaml -f ops/podman/compose.podman.yaml -f tests/containers/compose.standins.yaml"]
)
# The long-running services, as compose.yaml names them.
SERVICES = ("falkordb", "redis", "ollama", "zapomni")


def engine_env(**extra: str) -> dict[str, str]:
    """The environment of every podman and make call: our engine configuration, Docker-format builds."""
    env = {key: value for key, value in os.environ.items() if not key.startswith(("ZAPOMNI_", "FALKORDB_"))}
    env |= {
        "CONTAINERS_CONF": str(REPO / "ops" / "podman" / "containers.conf"),
        "BUILDAH_FORMAT": "docker",  # keeps the image's HEALTHCHECK (OCI format drops it)
        "COMPOSE": COMPOSE,
    }
    return env | extra


def run(
    args: list[str], *, check: bool = True, timeout: float = 600, stdin: str | None = None, **extra_env: str
) -> subprocess.CompletedProcess[str]:
    """Run a command in the repository with the engine's environment; its output captured."""
    result = subprocess.run(
        args,
        cwd=REPO,
        env=engine_env(**extra_env),
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if check and result.returncode != 0:
        raise AssertionError(f"{shlex.join(args)} exited {result.returncode}:\n{result.stdout}\n{result.stderr}")
    return result


def podman(*args: str, check: bool = True, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return run(["podman", *args], check=check, timeout=timeout)


def make(target: str, *variables: str, check: bool = True, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    """`make TARGET` exactly as the README gives it, with the engine's compose command."""
    return run(["make", "--no-print-directory", target, f"COMPOSE={COMPOSE}", *variables], check=check, timeout=timeout)


def compose(*args: str, check: bool = True, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """The engine's compose command (podman-compose with the podman override and the stand-ins)."""
    return run([*COMPOSE.split(), *args], check=check, timeout=timeout)


def container(service: str) -> str:
    return f"{PROJECT}_{service}_1"


def inspect(name: str) -> dict[str, Any]:
    inspected: list[dict[str, Any]] = json.loads(podman("inspect", name).stdout)
    return inspected[0]


def main_pid(service: str) -> int:
    return int(podman("inspect", "--format", "{{.State.Pid}}", container(service)).stdout)


def probe(service: str = "zapomni") -> subprocess.CompletedProcess[str]:
    """The readiness probe, asked inside the zapomni service (its stdout is /readyz's body)."""
    return podman("exec", container(service), "/app/healthchecks/probe", check=False, timeout=30)


def wait_until(condition: Callable[[], bool], timeout_s: float, interval_s: float = 1.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(interval_s)
    return condition()


def readme_client_entry(marker: str) -> list[str]:
    """The README's Claude Desktop entry whose args contain `marker`: [command, *args], `docker` replaced
    by `podman` (the same CLI), so the test starts the server exactly as a client configured so would."""
    for block in re.findall(r"```json\n(\{\s*\"mcpServers\".*?)```", README.read_text(), flags=re.S):
        entry = json.loads(block)["mcpServers"]["zapomni"]
        if entry["command"] == "docker" and marker in entry["args"]:
            return ["podman", *entry["args"]]
    raise AssertionError(f"no Claude Desktop entry with {marker!r} in the README")


def standalone_entry(volume: str) -> list[str]:
    """The README's standalone entry with its data volume renamed (never a volume of the user's)."""
    return [arg.replace("zapomni-data:", f"{volume}:") for arg in readme_client_entry("standalone")]


def with_options(entry: list[str], *options: str) -> list[str]:
    """`entry` with more `podman run` options before the image name (a mounted folder, a name...)."""
    at = next(i for i, arg in enumerate(entry) if arg.endswith("zapomni:local"))
    return [*entry[:at], *options, *entry[at:]]


@asynccontextmanager
async def mcp_client(command: list[str], errlog: TextIO) -> AsyncIterator[ClientSession]:
    """The official MCP client, talking to the server that `command` (podman run -i ...) starts."""
    params = StdioServerParameters(command=command[0], args=command[1:], env=engine_env())
    async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


async def call(session: ClientSession, tool: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    """A tool call that must succeed; its structured content."""
    result = await session.call_tool(tool, arguments or {})
    content: dict[str, Any] | None = result.structured_content
    assert not result.is_error and content is not None, result.content
    return content
