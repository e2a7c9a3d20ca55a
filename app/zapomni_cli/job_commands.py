"""The job subcommands, one per MCP job tool: job_status, list_jobs, cancel_job.

Jobs are run by servers (`zapomni serve`); these commands only look at them and cancel them. A
job id may be shortened to the first characters list_jobs shows, as memory ids may: a prefix is
looked up among the newest jobs of every workspace.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from typing import get_args

from pydantic import BaseModel
from rich.console import Console

from zapomni_cli import ids, render
from zapomni_cli.commands import Command, Prepared, add_command
from zapomni_cli.errors import CliError, validate
from zapomni_core import (
    ACTIVE_STATES,
    MAX_JOBS,
    MAX_WAIT_S,
    CancelJobRequest,
    JobList,
    JobState,
    JobStatusRequest,
    ListJobsRequest,
    Progress,
    RequestContext,
    ZapomniCore,
)

# A terminal on stderr gets the progress of a waiting job_status at most this often.
PROGRESS_EVERY_S = 1.0


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    for command in COMMANDS:
        add_command(commands, common, command)


def _job_id_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("job_id", metavar="JOB_ID", help="the job's id, or the first 8 characters list_jobs shows")


async def resolve(core: ZapomniCore, value: str) -> str:
    """The full id of `value`; a prefix must match exactly one of the newest jobs of some workspace."""
    if not ids.is_prefix(value):
        return value
    found = []
    for workspace in (await core.workspaces.list()).workspaces:
        listed = await core.jobs.list(ListJobsRequest(workspace=workspace.name, limit=MAX_JOBS))
        found += [job.job_id for job in listed.jobs if job.job_id.startswith(value)]
    if not found:
        raise CliError(
            f"JOB_ID {value}: no job starts with it among the {MAX_JOBS} newest of each workspace; give the full id"
        )
    if len(found) > 1:
        shown = ", ".join(job_id[:13] + "…" for job_id in found[:5])
        raise CliError(f"JOB_ID {value}: {len(found)} jobs start with it ({shown}); give more characters")
    return found[0]


# -- job_status ----------------------------------------------------------------------------------


def _status_configure(parser: argparse.ArgumentParser) -> None:
    _job_id_argument(parser)
    parser.add_argument(
        "--wait",
        type=int,
        default=0,
        metavar="SECONDS",
        help="wait up to SECONDS for the job to end before answering (default 0: answer at once)",
    )
    parser.epilog = (
        "Jobs are run by a Zapomni server (`zapomni serve`, as MCP clients start it); a pending job waits for one. "
        "The exit code is 0 whatever the job's state: read it from the output, or from `state` with --json."
    )


def _status_prepare(args: argparse.Namespace) -> Prepared:
    job_id = ids.normalise(args.job_id)
    # The tool waits at most MAX_WAIT_S per call; a longer --wait is several calls (see _status_execute).
    wait = min(args.wait, MAX_WAIT_S)
    return Prepared(validate(JobStatusRequest, {"job_id": ids.for_validation(job_id), "wait_s": wait}))


async def _status_execute(core: ZapomniCore, prepared: Prepared, args: argparse.Namespace) -> BaseModel:
    job_id = await resolve(core, ids.normalise(args.job_id))
    deadline = time.monotonic() + args.wait
    with _ProgressLine() as progress:
        ctx = RequestContext(progress_sink=progress.show)
        while True:
            remaining = max(0, math.ceil(deadline - time.monotonic()))
            wait = min(remaining, MAX_WAIT_S)
            info = await core.jobs.status(JobStatusRequest(job_id=job_id, wait_s=wait), ctx)
            if info.state not in ACTIVE_STATES or info.waiting_for == "server" or wait == remaining:
                return info  # no server to run it: said at once, not after the wait


class _ProgressLine:
    """A waiting job's progress, redrawn on one line of stderr when stderr is a terminal; else nothing."""

    def __init__(self) -> None:
        self._terminal = sys.stderr.isatty()
        self._drawn = 0
        self._last = 0.0

    async def show(self, progress: Progress) -> None:
        now = time.monotonic()
        if not self._terminal or now - self._last < PROGRESS_EVERY_S:
            return
        self._last = now
        line = render.clip(f"waiting: {progress.describe()}", 79)
        sys.stderr.write("\r" + line.ljust(self._drawn))
        sys.stderr.flush()
        self._drawn = len(line)

    def __enter__(self) -> _ProgressLine:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._drawn:
            sys.stderr.write("\r" + " " * self._drawn + "\r")
            sys.stderr.flush()


# -- list_jobs -----------------------------------------------------------------------------------


def _list_configure(parser: argparse.ArgumentParser) -> None:
    states = get_args(JobState)
    parser.add_argument(
        "--state", choices=states, metavar="STATE", help=f"only jobs in this state: {', '.join(states)}"
    )
    parser.add_argument(
        "--limit", type=int, metavar="N", help=f"at most N jobs, newest first (1-{MAX_JOBS}, default 20)"
    )


def _list_prepare(args: argparse.Namespace) -> Prepared:
    given = {"workspace": args.workspace, "state": args.state, "limit": args.limit}
    return Prepared(validate(ListJobsRequest, {key: value for key, value in given.items() if value is not None}))


async def _list_execute(core: ZapomniCore, prepared: Prepared, args: argparse.Namespace) -> BaseModel:
    assert isinstance(prepared.request, ListJobsRequest)
    return await core.jobs.list(prepared.request)


def _list_show(result: BaseModel, args: argparse.Namespace, out: Console) -> None:
    assert isinstance(result, JobList)
    render.jobs(result, out, args.state)


# -- cancel_job ----------------------------------------------------------------------------------


def _cancel_configure(parser: argparse.ArgumentParser) -> None:
    _job_id_argument(parser)
    parser.epilog = (
        "Cancelling a large add's indexing job withdraws the add: its memory is deleted. "
        "A job that already ended is left as it is."
    )


def _cancel_prepare(args: argparse.Namespace) -> Prepared:
    job_id = ids.normalise(args.job_id)
    return Prepared(validate(CancelJobRequest, {"job_id": ids.for_validation(job_id)}))


async def _cancel_execute(core: ZapomniCore, prepared: Prepared, args: argparse.Namespace) -> BaseModel:
    job_id = await resolve(core, ids.normalise(args.job_id))
    return await core.jobs.cancel(CancelJobRequest(job_id=job_id))


COMMANDS = (
    Command(
        "job_status",
        ("job",),
        "show a background job's state and progress",
        _status_configure,
        _status_prepare,
        _status_execute,
        scoped=False,
    ),
    Command(
        "list_jobs",
        ("jobs",),
        "list a workspace's background jobs, newest first",
        _list_configure,
        _list_prepare,
        _list_execute,
        show=_list_show,
    ),
    Command(
        "cancel_job",
        ("cancel",),
        "cancel a pending or running job",
        _cancel_configure,
        _cancel_prepare,
        _cancel_execute,
        scoped=False,
    ),
)
