"""Folder jobs on servers with different allowed roots, and what a job tells a client on another machine
(issue 38 #10): a server leaves a job whose path is outside its roots to one that may read it (it failed
them before), and a remote client is shown a job's failures without the server's paths, but with its own."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, ClientSession

from tests.helpers import configured, open_core, text_of
from zapomni_core import Settings
from zapomni_core.errors import REDACTED_PATH
from zapomni_core.files.requests import IngestPathRequest
from zapomni_core.jobs import JobStatusRequest
from zapomni_mcp.handlers import build_server
from zapomni_mcp.opening import Opening
from zapomni_mcp.tools import build_registry

pytestmark = pytest.mark.anyio


def folder_with_notes(root: Path, name: str) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "boiler.md").write_text("# Boiler\n\nThe boiler is serviced every October by Hansen & Sons.\n")
    return folder


async def test_a_server_leaves_a_folder_outside_its_roots_to_a_server_that_may_read_it(
    settings: Settings, tmp_path: Path
) -> None:
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    notes = folder_with_notes(ours, "notes")
    theirs.mkdir()
    fast = {"ZAPOMNI_JOB_POLL_S": "0.2"}
    # A command (no job runner) on the roots that hold the folder queues the walk.
    async with open_core(configured(settings, ZAPOMNI_ALLOWED_ROOTS=str(ours)), background_jobs=False) as (cmd, _):
        queued = await cmd.files.ingest(IngestPathRequest(path=str(notes)))
    # A server whose roots do not hold it leaves it pending, and says why without its own roots.
    async with open_core(configured(settings, ZAPOMNI_ALLOWED_ROOTS=str(theirs), **fast)) as (other, _):
        left = await other.jobs.status(JobStatusRequest(job_id=queued.job_id, wait_s=3))
        assert left.state == "pending" and left.error is None, left
        assert left.message is not None and "waiting for a server that may run it" in left.message, left
        assert "outside the allowed roots" in left.message and str(theirs) not in left.message, left.message
    # A server on the folder's roots runs it.
    async with open_core(configured(settings, ZAPOMNI_ALLOWED_ROOTS=str(ours), **fast)) as (server, _):
        done = await server.jobs.status(JobStatusRequest(job_id=queued.job_id, wait_s=50))
        assert done.state == "completed" and done.counts["added"] == 1, done


@asynccontextmanager
async def local_and_remote(settings: Settings) -> AsyncIterator[tuple[ClientSession, ClientSession]]:
    """Two sessions of the official client on one engine: as stdio serves a client on this machine, and as HTTP
    serves one on another."""
    async with open_core(settings) as (core, _info):
        registry = build_registry(core)
        async with (
            Client(build_server(Opening.of(core, registry), local=True), mode="legacy") as local,
            Client(build_server(Opening.of(core, registry), local=False), mode="legacy") as remote,
        ):
            yield local.session, remote.session


async def structured(session: ClientSession, tool: str, arguments: dict[str, Any]) -> Any:
    result = await session.call_tool(tool, arguments)
    assert not result.is_error, result.content
    return result.structured_content


async def test_a_remote_client_sees_a_jobs_failures_without_server_paths_and_its_own_path_whole(
    settings: Settings, tmp_path: Path
) -> None:
    roots, outside = tmp_path / "roots", tmp_path / "private-elsewhere"
    notes = folder_with_notes(roots, "notes")
    outside.mkdir()
    (outside / "secret.md").write_text("not for the index")
    (notes / "leak.md").symlink_to(outside / "secret.md")
    async with local_and_remote(configured(settings, ZAPOMNI_ALLOWED_ROOTS=str(roots))) as (local, remote):
        queued = await structured(remote, "ingest_path", {"path": str(notes)})
        asked = {"job_id": queued["job_id"], "wait_s": 50}
        seen_remotely = await structured(remote, "job_status", asked)
        seen_locally = await structured(local, "job_status", asked)
        assert seen_remotely["state"] == "completed_with_errors", seen_remotely
        (line,) = seen_locally["failures"]
        assert f"{notes / 'leak.md'}: symlink leading outside the allowed roots (to {outside / 'secret.md'})" == line
        (line,) = seen_remotely["failures"]
        assert str(outside) not in line and f"(to {REDACTED_PATH})" in line, line
        assert line.startswith(f"{notes / 'leak.md'}:"), line  # inside the folder the client named: shown
        listed = await structured(remote, "list_jobs", {})
        assert all(str(outside) not in str(job) for job in listed["jobs"]), listed

        # An immediate refusal names the path the client sent, and hides only what it did not send.
        missing = await remote.call_tool("ingest_path", {"path": str(roots / "no-such-folder")})
        text = text_of(missing)
        assert missing.is_error and f"'{roots / 'no-such-folder'}' does not exist" in text, text


async def test_a_link_whose_name_extends_its_targets_does_not_reveal_the_target(
    settings: Settings, tmp_path: Path
) -> None:
    """`notes-2025` leads to `notes`: the client's path starts with the server's, but the server path is not one
    the client sent (a sibling, not a parent), so failure lines hide it."""
    roots = tmp_path / "roots"
    notes = folder_with_notes(roots, "notes")
    (notes / "leak.md").symlink_to(tmp_path / "nowhere.md")
    link = roots / "notes-2025"
    link.symlink_to(notes)
    async with local_and_remote(configured(settings, ZAPOMNI_ALLOWED_ROOTS=str(roots))) as (local, remote):
        queued = await structured(remote, "ingest_path", {"path": str(link)})
        assert queued["path"] == str(link)  # not where the link leads
        shown = await remote.call_tool("ingest_path", {"path": str(link)})
        assert str(link) in text_of(shown) and f"{notes}" not in text_of(shown).replace(str(link), "")
        assert (await structured(local, "ingest_path", {"path": str(link)}))["path"] == str(notes)
        asked = {"job_id": queued["job_id"], "wait_s": 50}
        (line,) = (await structured(remote, "job_status", asked))["failures"]
        assert str(notes / "leak.md") not in line and line.startswith(REDACTED_PATH), line
        (line,) = (await structured(local, "job_status", asked))["failures"]
        assert line.startswith(f"{notes / 'leak.md'}:"), line
