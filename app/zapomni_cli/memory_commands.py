"""The memory subcommands, one per MCP tool: arguments -> the engine's request -> the engine -> a result.

Each command validates its request before the database and the model are started, so a typo is
refused at once; the error names the flag (see `errors`). Requests are the very models the MCP
tools take, so both adapters enforce one set of rules.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from zapomni_cli import ids, render
from zapomni_cli.commands import Command, Prepared, add_command, given
from zapomni_cli.errors import CliError, validate
from zapomni_cli.inputs import STDIN, read_text
from zapomni_core import (
    MAX_DELETE_IDS,
    MAX_LIMIT,
    MAX_PAGE,
    SEARCH_MODES,
    AddMemoryRequest,
    DeleteMemoryRequest,
    DeleteWorkspaceRequest,
    GetMemoryRequest,
    ListMemoriesRequest,
    SearchRequest,
    StatsRequest,
    UpdateMemoryRequest,
    ZapomniCore,
)


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    for command in COMMANDS:
        add_command(commands, common, command)


# -- shared arguments ----------------------------------------------------------------------------


def _filter_arguments(parser: argparse.ArgumentParser, verb: str) -> None:
    parser.add_argument(
        "--tag",
        action="append",
        dest="tags",
        metavar="TAG",
        help=f"{verb} memories with any of these tags (repeatable)",
    )
    parser.add_argument("--source", help=f"{verb} memories with exactly this source")
    parser.add_argument("--date-from", metavar="DATE", help=f"{verb} memories dated at or after DATE (ISO 8601)")
    parser.add_argument(
        "--date-to", metavar="DATE", help=f"{verb} memories dated at or before DATE (a whole day counts)"
    )
    parser.add_argument(
        "--kind",
        choices=["note", "turn", "document", "code"],
        help=f"{verb} notes, conversation turns, documents (ingest) or code",
    )
    parser.add_argument("--thread", help=f"{verb} the conversation turns of this thread")
    parser.add_argument("--speaker", help=f"{verb} the conversation turns said by this speaker (exactly)")


def _filters(args: argparse.Namespace) -> dict[str, Any] | None:
    filters = given(
        tags=args.tags,
        source=args.source,
        date_from=args.date_from,
        date_to=args.date_to,
        kind=args.kind,
        thread=args.thread,
        speaker=args.speaker,
    )
    return filters or None


def _metadata_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tag", action="append", dest="tags", metavar="TAG", help="a tag (repeatable)")
    parser.add_argument("--source", help="where the text came from")
    parser.add_argument("--date", help="the ISO 8601 date the memory is about, e.g. 2024-05-01")


# -- add_memory ----------------------------------------------------------------------------------


def _add_configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("text", nargs="?", metavar="TEXT", help=f"the text to remember; '{STDIN}' reads stdin")
    parser.add_argument("--file", type=Path, metavar="PATH", help="read the text from this UTF-8 file instead")
    _metadata_arguments(parser)


def _add_prepare(args: argparse.Namespace) -> Prepared:
    text = read_text(args.text, args.file)
    if text is None:
        if sys.stdin.isatty():
            raise CliError(f"give the text: as TEXT, with --file PATH, or on stdin with '{STDIN}'", code=2)
        text = read_text(STDIN, None)
        assert text is not None
    labels = {"text": text.label}
    metadata = given(tags=args.tags, source=args.source, date=args.date)
    request = validate(
        AddMemoryRequest, given(workspace=args.workspace, text=text.value, metadata=metadata or None), labels
    )
    return Prepared(request, labels)


async def _add_execute(core: ZapomniCore, prepared: Prepared, args: argparse.Namespace) -> BaseModel:
    assert isinstance(prepared.request, AddMemoryRequest)
    return await core.memories.add(prepared.request)


# -- search_memory -------------------------------------------------------------------------------


def _search_configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("query", metavar="QUERY", help="what to look for")
    parser.add_argument("--limit", type=int, help=f"how many results (1-{MAX_LIMIT}, default 10)")
    _filter_arguments(parser, "only")
    parser.add_argument("--mode", choices=SEARCH_MODES, help="hybrid (default), vector or keyword")
    parser.add_argument("--min-score", type=float, metavar="SCORE", help="drop results below this similarity (0-1)")
    parser.add_argument("--all-chunks", action="store_true", help="every matching chunk, not the best per memory")
    parser.add_argument(
        "--include-unrelated",
        action="store_true",
        help="also show memories that share no word with the query and are not similar to it",
    )


def _search_prepare(args: argparse.Namespace) -> Prepared:
    request = validate(
        SearchRequest,
        given(
            workspace=args.workspace,
            query=args.query,
            limit=args.limit,
            filters=_filters(args),
            mode=args.mode,
            min_score=args.min_score,
            all_chunks=args.all_chunks,
            include_unrelated=args.include_unrelated,
        ),
    )
    return Prepared(request)


async def _search_execute(core: ZapomniCore, prepared: Prepared, args: argparse.Namespace) -> BaseModel:
    assert isinstance(prepared.request, SearchRequest)
    return await core.memories.search(prepared.request)


# -- get_memory ----------------------------------------------------------------------------------


def _id_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("memory_id", metavar="ID", help="the memory's id, or its first 8 characters")


def _get_prepare(args: argparse.Namespace) -> Prepared:
    memory_id = ids.normalise(args.memory_id)
    request = validate(GetMemoryRequest, given(workspace=args.workspace, memory_id=ids.for_validation(memory_id)))
    return Prepared(request)


async def _get_execute(core: ZapomniCore, prepared: Prepared, args: argparse.Namespace) -> BaseModel:
    assert isinstance(prepared.request, GetMemoryRequest)
    [memory_id] = await ids.resolve(core, args.workspace, [ids.normalise(args.memory_id)])
    return await core.memories.get(prepared.request.model_copy(update={"memory_id": memory_id}))


# -- list_memories -------------------------------------------------------------------------------


def _list_configure(parser: argparse.ArgumentParser) -> None:
    _filter_arguments(parser, "only")
    parser.add_argument("--limit", type=int, help=f"memories per page (1-{MAX_PAGE}, default 20)")
    parser.add_argument("--cursor", help="continue where the previous page ended (it prints the cursor)")
    parser.add_argument("--order", choices=["newest", "oldest"], help="newest first (default) or oldest first")


def _list_prepare(args: argparse.Namespace) -> Prepared:
    request = validate(
        ListMemoriesRequest,
        given(workspace=args.workspace, filters=_filters(args), limit=args.limit, cursor=args.cursor, order=args.order),
    )
    return Prepared(request)


async def _list_execute(core: ZapomniCore, prepared: Prepared, args: argparse.Namespace) -> BaseModel:
    assert isinstance(prepared.request, ListMemoriesRequest)
    return await core.memories.page(prepared.request)


# -- update_memory -------------------------------------------------------------------------------


def _update_configure(parser: argparse.ArgumentParser) -> None:
    _id_argument(parser)
    parser.add_argument("--text", help=f"the new text ('{STDIN}' reads stdin); unchanged chunks keep their vectors")
    parser.add_argument("--file", type=Path, metavar="PATH", help="read the new text from this UTF-8 file")
    parser.add_argument("--tag", action="append", dest="tags", metavar="TAG", help="replace the tags (repeatable)")
    parser.add_argument("--source", help="replace the source")
    parser.add_argument("--date", help="replace the date (ISO 8601)")
    parser.add_argument("--no-tags", action="store_true", help="remove every tag")
    parser.add_argument("--no-source", action="store_true", help="remove the source")
    parser.add_argument("--no-date", action="store_true", help="remove the date")
    parser.epilog = "Metadata flags change only what they name; the other tags, source, date and keys are kept."


def _update_prepare(args: argparse.Namespace) -> Prepared:
    for name in ("tags", "source", "date"):
        if getattr(args, name) is not None and getattr(args, f"no_{name}"):
            flag = "--tag" if name == "tags" else f"--{name}"
            raise CliError(f"{flag} and --no-{name} contradict each other", code=2)
    text = read_text(args.text, args.file, argument_label="--text")
    changes = given(tags=args.tags, source=args.source, date=args.date)
    metadata_given = bool(changes) or args.no_tags or args.no_source or args.no_date
    if text is None and not metadata_given:
        raise CliError("nothing to update: give --text or --file, and/or --tag, --source, --date", code=2)
    labels = {"text": text.label} if text else {}
    memory_id = ids.normalise(args.memory_id)
    # The metadata flags are validated on their own here; merged with the stored metadata at run time.
    request = validate(
        UpdateMemoryRequest,
        given(
            workspace=args.workspace,
            memory_id=ids.for_validation(memory_id),
            text=text.value if text else None,
            metadata=changes if metadata_given else None,
        ),
        labels,
    )
    return Prepared(request, labels)


async def _update_execute(core: ZapomniCore, prepared: Prepared, args: argparse.Namespace) -> BaseModel:
    request = prepared.request
    assert isinstance(request, UpdateMemoryRequest)
    [memory_id] = await ids.resolve(core, args.workspace, [ids.normalise(args.memory_id)])
    request = request.model_copy(update={"memory_id": memory_id})
    if request.metadata is not None:
        current = await core.memories.get(GetMemoryRequest(workspace=args.workspace, memory_id=memory_id))
        metadata: dict[str, Any] = {
            **current.metadata,
            "tags": [] if args.no_tags else (args.tags if args.tags is not None else current.tags),
            "source": None if args.no_source else (args.source if args.source is not None else current.source),
            "date": None if args.no_date else (args.date if args.date is not None else current.date),
        }
        request = validate(
            UpdateMemoryRequest,
            given(
                workspace=args.workspace,
                memory_id=memory_id,
                text=request.text,
                metadata={key: value for key, value in metadata.items() if value is not None},
            ),
            prepared.labels,
        )
    return await core.memories.update(request)


# -- delete_memory -------------------------------------------------------------------------------


def _delete_configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "memory_ids",
        nargs="*",
        metavar="ID",
        help=f"the memories to delete (ids or 8-character prefixes, up to {MAX_DELETE_IDS})",
    )
    _filter_arguments(parser, "delete")
    parser.add_argument("--dry-run", action="store_true", help="only show what would be deleted")
    parser.add_argument("--yes", action="store_true", help="delete by filter without asking")
    parser.epilog = (
        "Deleting by filter asks for confirmation on a terminal; without one it needs --yes. "
        "Deleting by id does not ask."
    )


def _delete_prepare(args: argparse.Namespace) -> Prepared:
    memory_ids = [ids.normalise(value) for value in args.memory_ids]
    filters = _filters(args)
    selectors = "--tag, --source, --date-from, --date-to, --kind, --thread, --speaker"
    if memory_ids and filters:
        raise CliError(f"give IDs or filters ({selectors}), not both", code=2)
    if not memory_ids and not filters:
        raise CliError(f"give the IDs to delete, or filters ({selectors}) to delete every memory matching them", 2)
    if filters and not args.dry_run and not args.yes and not sys.stdin.isatty():
        raise CliError(
            "deleting by filter needs confirmation and stdin is not a terminal: pass --yes "
            "(or --dry-run to see what would be deleted); nothing was deleted"
        )
    request = validate(
        DeleteMemoryRequest,
        given(
            workspace=args.workspace,
            memory_ids=[ids.for_validation(value) for value in memory_ids] or None,
            filters=filters,
            dry_run=args.dry_run,
        ),
    )
    return Prepared(request)


async def _delete_execute(core: ZapomniCore, prepared: Prepared, args: argparse.Namespace) -> BaseModel:
    request = prepared.request
    assert isinstance(request, DeleteMemoryRequest)
    if request.memory_ids is not None:
        memory_ids = await ids.resolve(core, args.workspace, [ids.normalise(value) for value in args.memory_ids])
        return await core.memories.delete(request.model_copy(update={"memory_ids": memory_ids}))
    if not request.dry_run and not args.yes:
        preview = await core.memories.delete(request.model_copy(update={"dry_run": True}))
        if preview.deleted_count == 0:
            return preview.model_copy(update={"dry_run": False})
        count = render.plural(preview.deleted_count, "memory", "memories")
        if not await asyncio.to_thread(_confirm, f"Delete {count} from workspace {preview.workspace!r}?"):
            raise CliError("nothing was deleted")
    return await core.memories.delete(request)


def _confirm(question: str) -> bool:
    print(f"{question} [y/N] ", end="", file=sys.stderr, flush=True)
    return sys.stdin.readline().strip().lower() in {"y", "yes"}


# -- get_stats -----------------------------------------------------------------------------------


def _stats_configure(parser: argparse.ArgumentParser) -> None:
    parser.epilog = (
        "The table leaves out the per-process figures (avg_query_latency_ms, cache_hit_rate, uptime_s): "
        "they describe this short-lived command, not the store. --json prints get_stats's result whole."
    )


def _stats_prepare(args: argparse.Namespace) -> Prepared:
    return Prepared(validate(StatsRequest, given(workspace=args.workspace)))


async def _stats_execute(core: ZapomniCore, prepared: Prepared, args: argparse.Namespace) -> BaseModel:
    assert isinstance(prepared.request, StatsRequest)
    return await core.workspaces.stats(prepared.request)


# -- workspaces ----------------------------------------------------------------------------------


def _nothing(parser: argparse.ArgumentParser) -> None:
    pass


def _no_request(args: argparse.Namespace) -> Prepared:
    return Prepared(None)


async def _workspaces_execute(core: ZapomniCore, prepared: Prepared, args: argparse.Namespace) -> BaseModel:
    return await core.workspaces.list()


def _delete_workspace_configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", metavar="NAME", help="the workspace to delete, with every memory in it")
    parser.add_argument("--confirm", metavar="NAME", help="the workspace's name again: required, to confirm")


def _delete_workspace_prepare(args: argparse.Namespace) -> Prepared:
    if args.confirm is None:
        raise CliError(
            f"deleting a workspace deletes every memory in it: repeat its name, --confirm {args.name}", code=2
        )
    return Prepared(validate(DeleteWorkspaceRequest, {"name": args.name, "confirm": args.confirm}))


async def _delete_workspace_execute(core: ZapomniCore, prepared: Prepared, args: argparse.Namespace) -> BaseModel:
    assert isinstance(prepared.request, DeleteWorkspaceRequest)
    return await core.workspaces.delete(prepared.request)


COMMANDS = (
    Command("add_memory", ("add",), "store a memory", _add_configure, _add_prepare, _add_execute),
    Command(
        "search_memory",
        ("search",),
        "search memories by meaning and keywords",
        _search_configure,
        _search_prepare,
        _search_execute,
    ),
    Command("get_memory", ("get",), "show one memory in full", _id_argument, _get_prepare, _get_execute),
    Command(
        "list_memories", ("list",), "list memories, a page at a time", _list_configure, _list_prepare, _list_execute
    ),
    Command(
        "update_memory",
        ("update",),
        "change a memory's text or metadata",
        _update_configure,
        _update_prepare,
        _update_execute,
    ),
    Command(
        "delete_memory",
        ("delete",),
        "delete memories by id or by filter",
        _delete_configure,
        _delete_prepare,
        _delete_execute,
    ),
    Command("get_stats", ("stats",), "show the store's statistics", _stats_configure, _stats_prepare, _stats_execute),
    Command(
        "list_workspaces",
        ("workspaces",),
        "list the workspaces with their counts",
        _nothing,
        _no_request,
        _workspaces_execute,
        scoped=False,
    ),
    Command(
        "delete_workspace",
        (),
        "delete a workspace and every memory in it",
        _delete_workspace_configure,
        _delete_workspace_prepare,
        _delete_workspace_execute,
        scoped=False,
    ),
)
