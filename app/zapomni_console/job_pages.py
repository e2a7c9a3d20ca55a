"""Jobs: running and recent ones, their progress live over server-sent events, failures with reasons, cancel."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from zapomni_console.access import identify
from zapomni_console.console import Console, Ctx
from zapomni_core import (
    ACTIVE_STATES,
    CancelJobRequest,
    JobInfo,
    JobList,
    JobStatusRequest,
    ListJobsRequest,
    for_remote,
)

TICK_S = 1.0
RECENT = 30


def _state(job: JobInfo) -> dict[str, object]:
    """What the page updates in place: state, progress and message of one job."""
    return {
        "job_id": job.job_id,
        "state": job.state,
        "done": job.progress.done,
        "total": job.progress.total,
        "unit": job.progress.unit,
        "message": job.message,
        "error": job.error,
        "active": job.state in ACTIVE_STATES,
    }


def routes(console: Console) -> list[Route]:
    core = console.core

    async def recent(request: ListJobsRequest) -> JobList:
        # The console is served over HTTP: its reader is on another machine, shown no server paths or hosts.
        return for_remote(await core.jobs.list(request))

    async def listing(ctx: Ctx) -> Response:
        jobs = await recent(ListJobsRequest.model_validate({"workspace": ctx.workspace, "limit": RECENT}))
        template = "jobs_table.html" if "hx-request" in ctx.request.headers else "jobs.html"
        return ctx.render(template, jobs=jobs.jobs, active_states=ACTIVE_STATES, active="jobs")

    async def events(ctx: Ctx) -> Response:
        request = ListJobsRequest.model_validate({"workspace": ctx.workspace, "limit": RECENT})

        async def stream() -> AsyncIterator[bytes]:
            last = ""
            while not await ctx.request.is_disconnected():
                # A token revoked while the page is open stops the stream at the next tick.
                if await identify(ctx.request, core, console.sessions) is None:
                    yield b"event: signed-out\ndata: {}\n\n"
                    return
                jobs = await recent(request)
                payload = json.dumps([_state(job) for job in jobs.jobs])
                if payload != last:
                    yield f"event: jobs\ndata: {payload}\n\n".encode()
                    last = payload
                else:
                    yield b": tick\n\n"  # keeps proxies from closing an idle stream
                await asyncio.sleep(TICK_S)

        return StreamingResponse(stream(), media_type="text/event-stream", headers={"x-accel-buffering": "no"})

    async def cancel(ctx: Ctx) -> Response:
        job_id = {"job_id": ctx.request.path_params["job_id"]}
        # Job ids are unique across workspaces: the right is checked on the job's own workspace.
        ctx.caller.require("write", (await core.jobs.status(JobStatusRequest.model_validate(job_id))).workspace)
        result = await core.jobs.cancel(CancelJobRequest.model_validate(job_id))
        jobs = await recent(ListJobsRequest.model_validate({"workspace": ctx.workspace, "limit": RECENT}))
        note = "cancelled" if result.cancelled else "had already ended"
        return ctx.render(
            "jobs_table.html", jobs=jobs.jobs, active_states=ACTIVE_STATES, note=f"job {result.job.job_id} {note}"
        )

    return [
        Route("/jobs", console.page("read", listing), methods=["GET"], name="jobs"),
        Route("/jobs/events", console.page("read", events), methods=["GET"]),
        Route("/jobs/{job_id}/cancel", console.page("write", cancel), methods=["POST"]),
    ]
