"""The file and code subcommands: ingest_path (`zapomni ingest PATH...`), index_codebase, find_symbol,
get_callers and get_callees.

A command line has no server to hand the work to, so `ingest` and `index_codebase` queue their job
and run it in this process, with a progress bar on a terminal. If a running server claims the job
first, the command follows it there instead. The result is each job as job_status shows it.
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from pydantic import BaseModel
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from zapomni_cli import render
from zapomni_cli.commands import Command, Prepared, add_command, given
from zapomni_cli.errors import validate
from zapomni_core import (
    ACTIVE_STATES,
    MAX_SYMBOLS,
    MAX_WAIT_S,
    CallGraph,
    FindSymbolRequest,
    IndexCodebaseRequest,
    IngestPathRequest,
    JobInfo,
    JobList,
    JobStatusRequest,
    SymbolList,
    SymbolRequest,
    WalkQueued,
    ZapomniCore,
)

# How often the progress bar asks the job how far it got.
POLL_S = 0.25


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    for command in COMMANDS:
        add_command(commands, common, command)


def _walk_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--include", action="append", metavar="GLOB", help="only files matching GLOB (repeatable)")
    parser.add_argument("--exclude", action="append", metavar="GLOB", help="leave out what matches GLOB (repeatable)")


async def follow(core: ZapomniCore, queued: WalkQueued) -> JobInfo:
    """Run a queued job here (or follow it where a server runs it) to its end, drawing a bar on a terminal."""
    runner = asyncio.create_task(core.run_job_here(queued.workspace, queued.job_id))
    with _Bar(f"{queued.kind} {queued.path}") as bar:
        while not runner.done():
            bar.show(await core.jobs.status(JobStatusRequest(job_id=queued.job_id)))
            await asyncio.wait({runner}, timeout=POLL_S)
        wait = 0 if runner.result() else MAX_WAIT_S  # a server has it: wait for its end in long polls
        while True:
            info = await core.jobs.status(JobStatusRequest(job_id=queued.job_id, wait_s=wait))
            bar.show(info)
            if info.state not in ACTIVE_STATES:
                return info


class _Bar:
    """A rich progress bar on stderr when it is a terminal; nothing otherwise."""

    def __init__(self, label: str) -> None:
        self._progress = (
            Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=Console(stderr=True),
                transient=True,
            )
            if sys.stderr.isatty()
            else None
        )
        self._label = render.clip(label, 50)
        self._task = self._progress.add_task(self._label, total=None) if self._progress else None

    def show(self, info: JobInfo) -> None:
        if self._progress is None or self._task is None:
            return
        note = f" — {render.clip(info.message, 30)}" if info.message else ""
        self._progress.update(
            self._task, completed=info.progress.done, total=info.progress.total, description=self._label + note
        )

    def __enter__(self) -> _Bar:
        if self._progress is not None:
            self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()


# -- ingest_path, index_codebase -----------------------------------------------------------------


def _ingest_configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", metavar="PATH", help="files or directories to read")
    _walk_arguments(parser)
    parser.add_argument("--tag", action="append", dest="tags", metavar="TAG", help="tag every memory (repeatable)")


def _ingest_prepare(args: argparse.Namespace) -> Prepared:
    requests = [
        validate(
            IngestPathRequest,
            given(workspace=args.workspace, path=path, include=args.include, exclude=args.exclude, tags=args.tags),
        )
        for path in args.paths
    ]
    return Prepared(requests[0], extra=requests)


def _index_configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", metavar="PATH", help="source directories (or files) to index")
    _walk_arguments(parser)
    parser.add_argument(
        "--language",
        action="append",
        dest="languages",
        choices=["python", "javascript", "typescript", "go", "rust"],
        help="only this language (repeatable; default: all)",
    )


def _index_prepare(args: argparse.Namespace) -> Prepared:
    requests = [
        validate(
            IndexCodebaseRequest,
            given(
                workspace=args.workspace,
                path=path,
                include=args.include,
                exclude=args.exclude,
                languages=args.languages,
            ),
        )
        for path in args.paths
    ]
    return Prepared(requests[0], extra=requests)


async def _walks_execute(core: ZapomniCore, prepared: Prepared, args: argparse.Namespace) -> BaseModel:
    finished = []
    for request in prepared.extra:
        if isinstance(request, IngestPathRequest):
            queued = await core.files.ingest(request)
        else:
            assert isinstance(request, IndexCodebaseRequest)  # what _index_prepare gives
            queued = await core.files.index_codebase(request)
        finished.append(await follow(core, queued))
    workspace = finished[0].workspace
    return JobList(workspace=workspace, jobs=finished, count=len(finished))


def _walks_show(result: BaseModel, args: argparse.Namespace, out: Console) -> None:
    assert isinstance(result, JobList)
    for job in result.jobs:
        render.render(job, out)


# -- find_symbol, get_callers, get_callees -------------------------------------------------------


def _find_configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", metavar="NAME", help="a name or part of one (matched fuzzily)")
    parser.add_argument("--kind", choices=["function", "method", "class"], help="only this kind of symbol")
    parser.add_argument("--limit", type=int, help=f"at most this many (1-{MAX_SYMBOLS}, default 10)")


def _find_prepare(args: argparse.Namespace) -> Prepared:
    request = given(workspace=args.workspace, name=args.name, kind=args.kind, limit=args.limit)
    return Prepared(validate(FindSymbolRequest, request))


async def _find_execute(core: ZapomniCore, prepared: Prepared, args: argparse.Namespace) -> BaseModel:
    assert isinstance(prepared.request, FindSymbolRequest)
    return await core.code.find(prepared.request)


def _calls_configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("symbol", metavar="SYMBOL", help="a qualified name (from find_symbol) or a plain name")
    parser.add_argument("--limit", type=int, help=f"at most this many (1-{MAX_SYMBOLS}, default 50)")


def _calls_prepare(args: argparse.Namespace) -> Prepared:
    return Prepared(validate(SymbolRequest, given(workspace=args.workspace, symbol=args.symbol, limit=args.limit)))


async def _callers_execute(core: ZapomniCore, prepared: Prepared, args: argparse.Namespace) -> BaseModel:
    assert isinstance(prepared.request, SymbolRequest)
    return await core.code.callers(prepared.request)


async def _callees_execute(core: ZapomniCore, prepared: Prepared, args: argparse.Namespace) -> BaseModel:
    assert isinstance(prepared.request, SymbolRequest)
    return await core.code.callees(prepared.request)


def _symbols_show(result: BaseModel, args: argparse.Namespace, out: Console) -> None:
    assert isinstance(result, SymbolList | CallGraph)
    if isinstance(result, CallGraph):
        names = ", ".join(s.qualified_name for s in result.matched)
        out.print(f"{result.count} {result.direction} of {names}", highlight=False)
    elif not result.symbols:
        out.print(f"No symbol matches in workspace {result.workspace!r}.", highlight=False)
    for symbol in result.symbols:
        out.print(
            f"{symbol.kind:<8} {symbol.qualified_name}  {symbol.path}:{symbol.line_start}-{symbol.line_end}",
            highlight=False,
            soft_wrap=True,
        )


COMMANDS = (
    Command(
        "ingest_path",
        ("ingest",),
        "remember documents (PDF, DOCX, HTML, Markdown, text) from files or directories, incrementally",
        _ingest_configure,
        _ingest_prepare,
        _walks_execute,
        show=_walks_show,
    ),
    Command(
        "index_codebase",
        ("index-codebase",),
        "index source code (Python, JavaScript, TypeScript, Go, Rust): searchable symbols and a call graph",
        _index_configure,
        _index_prepare,
        _walks_execute,
        show=_walks_show,
    ),
    Command(
        "find_symbol",
        ("symbol",),
        "find functions, methods and classes of indexed code by name (fuzzy)",
        _find_configure,
        _find_prepare,
        _find_execute,
        show=_symbols_show,
    ),
    Command(
        "get_callers",
        ("callers",),
        "list the functions that call a symbol",
        _calls_configure,
        _calls_prepare,
        _callers_execute,
        show=_symbols_show,
    ),
    Command(
        "get_callees",
        ("callees",),
        "list what a symbol calls inside the indexed code",
        _calls_configure,
        _calls_prepare,
        _callees_execute,
        show=_symbols_show,
    ),
)
