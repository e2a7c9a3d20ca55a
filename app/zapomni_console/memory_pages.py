"""Memories: the filtered list (newest first), one memory with its chunks, edit, delete, delete by filter
after a dry run, and a workspace's export."""

from __future__ import annotations

import json
import tempfile
from typing import Any

from starlette.responses import RedirectResponse, Response, StreamingResponse
from starlette.routing import Route

from zapomni_console.console import Console, Ctx
from zapomni_core import (
    DeleteMemoryRequest,
    GetMemoryRequest,
    ListMemoriesRequest,
    UpdateMemoryRequest,
)

FILTER_FIELDS = ("tag", "source", "kind", "speaker", "thread", "date_from", "date_to")
# The delete-by-filter preview shows a line of text for this many memories, then how many more go too.
PREVIEW_LINES = 50
LINE_CHARS = 160


def one_line(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= LINE_CHARS else flat[: LINE_CHARS - 1] + "…"


def filters(ctx: Ctx) -> dict[str, Any] | None:
    """The list's filters as the engine's request takes them (tags comma-separated); None when none is set."""
    chosen: dict[str, Any] = {}
    tags = [tag.strip() for tag in ctx.field("tag").split(",") if tag.strip()]
    if tags:
        chosen["tags"] = tags
    for name in FILTER_FIELDS[1:]:
        if value := ctx.field(name):
            chosen[name] = value
    return chosen or None


def _query(ctx: Ctx) -> dict[str, str]:
    return {name: ctx.field(name) for name in FILTER_FIELDS if ctx.field(name)}


def _metadata(ctx: Ctx) -> dict[str, Any]:
    """Tags, source and date from their fields, the other keys from the JSON object in 'extra': what the page
    showed comes back unchanged when nothing was edited."""
    raw = ctx.field("extra") or "{}"
    try:
        extra = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ValueError(f"extra: not a JSON object ({exc.msg})") from None
    if not isinstance(extra, dict):
        raise ValueError("extra: must be a JSON object of flat keys")
    metadata: dict[str, Any] = dict(extra)
    # A field per tag, taken as typed (a tag may hold commas and spaces); an emptied field drops its tag.
    metadata["tags"] = [tag for tag in ctx.posted("tags") if tag]
    if source := "".join(ctx.posted("source")):
        metadata["source"] = source
    if date := ctx.field("date"):
        metadata["date"] = date
    return metadata


def routes(console: Console) -> list[Route]:
    core = console.core

    async def listing(ctx: Ctx) -> Response:
        request = ListMemoriesRequest.model_validate(
            {
                "workspace": ctx.workspace,
                "filters": filters(ctx),
                "cursor": ctx.field("cursor") or None,
                "order": ctx.field("order") or "newest",
                "limit": int(ctx.field("limit") or 25) if ctx.field("limit").isdigit() else 25,
            }
        )
        page = await core.memories.page(request)
        query = _query(ctx)
        next_query = {"workspace": ctx.workspace, "order": request.order, "cursor": page.next_cursor or ""} | query
        return ctx.render(
            "memories.html", page=page, query=query, order=request.order, next_query=next_query,
            speakers=await core.memories.speakers(ctx.workspace), active="memories",
        )  # fmt: skip

    async def detail(ctx: Ctx) -> Response:
        request = GetMemoryRequest.model_validate(
            {"workspace": ctx.workspace, "memory_id": ctx.request.path_params["memory_id"]}
        )
        memory = await core.memories.get(request)
        chunks = await core.memories.chunks(request)
        return ctx.render(
            "memory.html",
            memory=memory,
            chunks=chunks.chunks,
            extra=json.dumps(memory.metadata, ensure_ascii=False, sort_keys=True),
            active="memories",
            message=ctx.field("message"),
        )

    async def edit(ctx: Ctx) -> Response:
        memory_id = ctx.request.path_params["memory_id"]
        try:
            metadata = _metadata(ctx)
        except ValueError as exc:
            return console.error(ctx.request, 400, str(exc))
        raw = ctx.form.get("text") if ctx.form is not None else None
        text = raw.replace("\r\n", "\n") if isinstance(raw, str) and raw.strip() else None  # browsers send CRLF
        request = UpdateMemoryRequest.model_validate(
            {"workspace": ctx.workspace, "memory_id": memory_id, "text": text, "metadata": metadata}
        )
        result = await core.memories.update(request)
        said = f"saved: text {'changed' if result.text_changed else 'unchanged'}, metadata " + (
            "changed" if result.metadata_changed else "unchanged"
        )
        return RedirectResponse(
            ctx.request.url_for("memory", memory_id=memory_id).include_query_params(
                workspace=ctx.workspace, message=said
            ),
            status_code=303,
        )

    async def unlink(ctx: Ctx) -> Response:
        """A wrong update link undone: the older memory is current again, and the pair is never linked again."""
        memory_id = ctx.request.path_params["memory_id"]
        request = UpdateMemoryRequest.model_validate(
            {"workspace": ctx.workspace, "memory_id": memory_id, "not_replaced_by": [ctx.field("newer")]}
        )
        result = await core.memories.update(request)
        said = "unlinked: it is current again" if result.unlinked else "it was not linked"
        return RedirectResponse(
            ctx.request.url_for("memory", memory_id=memory_id).include_query_params(
                workspace=ctx.workspace, message=said
            ),
            status_code=303,
        )

    async def delete(ctx: Ctx) -> Response:
        request = DeleteMemoryRequest.model_validate(
            {"workspace": ctx.workspace, "memory_ids": [ctx.request.path_params["memory_id"]]}
        )
        result = await core.memories.delete(request)
        return ctx.render("deleted.html", result=result, active="memories")

    async def forget_form(ctx: Ctx) -> Response:
        speakers = await core.memories.speakers(ctx.workspace)
        return ctx.render("forget.html", query=_query(ctx), speakers=speakers, preview=None, active="forget")

    async def forget_preview(ctx: Ctx) -> Response:
        request = DeleteMemoryRequest.model_validate(
            {"workspace": ctx.workspace, "filters": filters(ctx), "dry_run": True}
        )
        preview = await core.memories.delete(request)
        # One read per line shown (a primary-key lookup each), for the first PREVIEW_LINES only.
        lines = []
        for memory_id in preview.memory_ids[:PREVIEW_LINES]:
            got = await core.memories.get(GetMemoryRequest(workspace=ctx.workspace, memory_id=memory_id))
            lines.append((memory_id, one_line(got.text)))
        return ctx.render(
            "forget.html", query=_query(ctx), speakers=await core.memories.speakers(ctx.workspace), preview=preview,
            lines=lines, active="forget",
            unshown=max(0, preview.deleted_count - len(lines)),
        )  # fmt: skip

    async def forget(ctx: Ctx) -> Response:
        # Exactly the ids the preview showed (sent back with the confirmation): what was previewed is what
        # goes, even if memories matching the filter were added in between.
        ids = [value for value in (ctx.form.getlist("memory_id") if ctx.form else []) if isinstance(value, str)]
        request = DeleteMemoryRequest.model_validate({"workspace": ctx.workspace, "memory_ids": ids or None})
        result = await core.memories.delete(request)
        return ctx.render("deleted.html", result=result, active="forget")

    async def export(ctx: Ctx) -> Response:
        spool = tempfile.SpooledTemporaryFile(max_size=8 * 1024 * 1024, mode="w+", encoding="utf-8")  # noqa: SIM115
        await core.transfer.export_to(spool, only=ctx.workspace)
        spool.seek(0)

        def chunks() -> Any:
            with spool:
                while block := spool.read(64 * 1024):
                    yield block.encode()

        filename = f"zapomni-{ctx.workspace}.jsonl"
        return StreamingResponse(
            chunks(),
            media_type="application/x-ndjson",
            headers={"content-disposition": f'attachment; filename="{filename}"'},
        )

    return [
        Route("/", console.page("read", listing), methods=["GET"], name="memories"),
        Route("/memories/{memory_id}", console.page("read", detail), methods=["GET"], name="memory"),
        Route("/memories/{memory_id}/edit", console.page("write", edit), methods=["POST"]),
        Route("/memories/{memory_id}/delete", console.page("write", delete), methods=["POST"]),
        Route("/memories/{memory_id}/unlink", console.page("write", unlink), methods=["POST"]),
        Route("/forget", console.page("write", forget_form), methods=["GET"], name="forget"),
        Route("/forget/preview", console.page("write", forget_preview), methods=["POST"]),
        Route("/forget", console.page("write", forget), methods=["POST"]),
        Route("/export", console.page("read", export), methods=["GET"]),
    ]
