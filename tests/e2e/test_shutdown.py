"""Graceful shutdown on EOF, SIGINT and SIGTERM: in-flight writes land, the database is released."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import SMALL_CHUNKS, open_core, server_pids, wait_for
from tests.processes import ZAPOMNI, RawServer, mcp_session, server_env
from zapomni_core import Settings
from zapomni_core.memories.requests import MAX_TEXT_BYTES

pytestmark = pytest.mark.anyio
# These tests are about a write being indexed inside its request (texts below the background
# threshold are); long texts make the timing easy, so the threshold is lifted for them.
REPO = Path(__file__).resolve().parents[2]
INDEX_IN_REQUEST = {"ZAPOMNI_BACKGROUND_ADD_BYTES": str(MAX_TEXT_BYTES + 1), **SMALL_CHUNKS}


def add_call(request_id: int, text: str) -> dict[str, Any]:
    """An add that asks for progress: the server reports each embedding slice (64 chunks) as it ends."""
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": "add_memory", "arguments": {"text": text}, "_meta": {"progressToken": request_id}},
    }


def wait_embedding(server: RawServer, request_id: int) -> None:
    """Until the add has embedded its first slice and has more to embed: it is in flight, not yet written."""
    progress = server.receive_until(lambda message: message.get("method") == "notifications/progress")
    assert progress["params"]["progressToken"] == request_id
    assert 0 < progress["params"]["progress"] < progress["params"]["total"], progress


async def stored_memories(data_dir: Path) -> int:
    async with open_core(Settings.from_variables(ZAPOMNI_DATA_DIR=data_dir, LOG_LEVEL="WARNING")) as (core, _info):
        return (await core.workspaces.stats()).total_memories


def long_text(paragraphs: int) -> str:
    return "\n\n".join(
        " ".join(f"Paragraph {p} sentence {s} records a detail worth keeping." for s in range(20))
        for p in range(paragraphs)
    )


def shutdown_event(stderr: Path) -> dict[str, Any]:
    events = [json.loads(line) for line in stderr.read_text().splitlines() if line.startswith("{")]
    return next(e for e in events if e["event"] == "core.shutting_down")


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
async def test_a_signal_lets_the_write_in_flight_finish(data_dir: Path, tmp_path: Path, signum: int) -> None:
    server = RawServer(data_dir, tmp_path / "stderr.log", extra_env=INDEX_IN_REQUEST)
    try:
        server.initialize()
        server.send(add_call(2, long_text(30)))  # two embedding slices (100 chunks)
        wait_embedding(server, 2)
        server.send_signal(signum)
        assert server.wait() == 0
    finally:
        server.kill()
    assert shutdown_event(tmp_path / "stderr.log")["writes_in_flight"] == 1, "the signal came too late to test"
    assert wait_for(lambda: not server_pids(data_dir)), "the database must be stopped with the last client"
    assert await stored_memories(data_dir) == 1


async def test_end_of_input_stops_cleanly_and_keeps_the_data(raw_server: Any, data_dir: Path) -> None:
    server: RawServer = raw_server()
    server.initialize()
    reply = server.request(2, "tools/call", {"name": "add_memory", "arguments": {"text": "Acknowledged fact."}})
    assert reply["result"]["isError"] is False
    server.close_stdin()
    assert server.wait() == 0
    assert wait_for(lambda: not server_pids(data_dir))
    assert await stored_memories(data_dir) == 1


def test_end_of_input_while_a_10_mib_add_is_cut_up_by_its_job_stops_within_the_grace(
    data_dir: Path, tmp_path: Path
) -> None:
    """The job's chunking of the text (tens of seconds for 10 MiB) went on after the engine had closed, and the
    process waited for it at exit: 49 s after stdin closed, where the grace is 30 s (here 5) and MCP clients kill
    a server after 4. The job goes back to pending; the next server does it."""
    log = tmp_path / "stderr.log"
    server = RawServer(data_dir, log, extra_env={"ZAPOMNI_SHUTDOWN_GRACE_S": "5"})
    try:
        server.initialize()
        text = " ".join(f"entry{n} notes value{n * 7} for batch{n % 97}." for n in range(300_000))[: 10 * 2**20 - 1]
        reply = server.request(2, "tools/call", {"name": "add_memory", "arguments": {"text": text}})
        assert reply["result"]["structuredContent"]["status"] == "indexing", reply
        assert wait_for(lambda: '"job.started"' in server.stderr(), timeout_s=60)
        server.close_stdin()
        assert server.wait(timeout_s=5 + 25) == 0  # the grace, and room for the database's own stop
    finally:
        server.kill()
    assert '"job.released"' in log.read_text()


async def test_a_write_still_embedding_after_the_grace_period_is_dropped_whole(
    raw_server: Any, data_dir: Path, tmp_path: Path
) -> None:
    no_grace = {**INDEX_IN_REQUEST, "ZAPOMNI_SHUTDOWN_GRACE_S": "0"}
    server = RawServer(data_dir, tmp_path / "stderr.log", extra_env=no_grace)
    try:
        server.initialize()
        server.send(add_call(2, long_text(60)))  # four slices: the grace ends while the second embeds
        wait_embedding(server, 2)
        server.send_signal(signal.SIGTERM)
        assert server.wait() == 0
    finally:
        server.kill()
    assert shutdown_event(tmp_path / "stderr.log")["writes_in_flight"] == 1
    assert "memory.add_abandoned" in (tmp_path / "stderr.log").read_text()
    assert await stored_memories(data_dir) == 0


async def test_a_killed_server_loses_no_acknowledged_write(data_dir: Path) -> None:
    """kill -9 of one client: the other keeps serving, and everything acknowledged is there after."""
    async with mcp_session(data_dir) as survivor:
        victim = RawServer(data_dir, data_dir.parent / f"{data_dir.name}-victim.log")
        try:
            victim.initialize()
            reply = victim.request(
                2, "tools/call", {"name": "add_memory", "arguments": {"text": "Written by the victim."}}
            )
            assert reply["result"]["isError"] is False
            victim.process.send_signal(signal.SIGKILL)
            victim.process.wait()
        finally:
            victim.kill()
        result = await survivor.call_tool("search_memory", {"query": "who wrote this?", "include_unrelated": True})
        assert result.structured_content["count"] == 1
    assert wait_for(lambda: not server_pids(data_dir))
    assert await stored_memories(data_dir) == 1


async def test_a_cancelled_add_stores_nothing_and_its_retry_stores_one(data_dir: Path, tmp_path: Path) -> None:
    """notifications/cancelled stops an add still embedding; the client's retry then stores it once."""
    server = RawServer(data_dir, tmp_path / "stderr.log", extra_env=INDEX_IN_REQUEST)
    text = long_text(30)  # two embedding slices (100 chunks): seconds of work before the database write
    try:
        server.initialize()
        server.send(add_call(2, text))
        wait_embedding(server, 2)
        server.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}})
        assert wait_for(lambda: '"request.cancelled"' in server.stderr(), timeout_s=60)
        server.send(add_call(3, text))
        retry = server.receive_until(lambda message: message.get("id") == 3)  # past progress reports
        assert retry["result"]["isError"] is False
        assert retry["result"]["structuredContent"]["deduplicated"] is False  # the cancelled add left nothing
        server.send(add_call(4, text))
        again = server.receive_until(lambda message: message.get("id") == 4)
        assert again["result"]["structuredContent"]["deduplicated"] is True
        server.close_stdin()
        assert server.wait() == 0
    finally:
        server.kill()
    replies = [json.loads(line) for line in server.stdout_lines]
    assert 2 not in {reply.get("id") for reply in replies}  # a cancelled request gets no answer
    assert await stored_memories(data_dir) == 1


def make_run_project(tmp_path: Path) -> tuple[Path, Path]:
    """A copy of the Makefile whose runtime counts as installed (`VENV`'s stamp), its `zapomni` this venv's."""
    project, venv = tmp_path / "project", tmp_path / "venv"
    project.mkdir()
    (venv / "bin").mkdir(parents=True)
    for name in ("Makefile", "pyproject.toml", "constraints.txt"):
        shutil.copy(REPO / name, project / name)
    (venv / "bin" / "python").symlink_to(sys.executable)
    (venv / "bin" / "zapomni").symlink_to(Path(ZAPOMNI))
    env = {key: value for key, value in os.environ.items() if key not in {"MAKEFLAGS", "MAKELEVEL", "MFLAGS"}}
    dry = subprocess.run(
        ["make", "-n", "-C", str(project), f"VENV={venv}", "install"], env=env, capture_output=True, text=True
    )
    digest = dry.stdout.split(".installed-runtime-")[1].split()[0]
    (venv / f".installed-runtime-{digest}").touch()
    return project, venv


def test_make_run_stopped_as_a_client_stops_it_leaves_no_make_error(data_dir: Path, tmp_path: Path) -> None:
    """A client's stop: stdin closed, then (the SDK after 2 s, others at once) SIGTERM to the process group.
    The signal reaches make and the server; one landing while the server already stops must not kill it
    half way, or make reports `make: *** [Makefile: run] Terminated` on the client's stderr."""
    project, venv = make_run_project(tmp_path)
    stderr_path = tmp_path / "stderr.log"
    env = server_env(data_dir)
    with stderr_path.open("w") as stderr:
        make = subprocess.Popen(
            ["make", "-s", "-C", str(project), f"VENV={venv}", "run"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            env=env,
            text=True,
            start_new_session=True,  # as the SDK starts a server: a process group of its own
        )
        try:
            assert make.stdin is not None and make.stdout is not None
            make.stdin.write(
                json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
                + "\n"
            )  # fmt: skip
            make.stdin.flush()
            assert json.loads(make.stdout.readline())["id"] == 1
            make.stdin.close()
            assert wait_for(lambda: "server.stopping" in stderr_path.read_text(), 60)
            os.killpg(make.pid, signal.SIGTERM)
            make.wait(timeout=60)
        finally:
            if make.poll() is None:
                os.killpg(make.pid, signal.SIGKILL)
                make.wait()
    text = stderr_path.read_text()
    assert "make: ***" not in text, text[-2000:]
    assert '"event": "server.stopped"' in text
    assert wait_for(lambda: not server_pids(data_dir), 60)
