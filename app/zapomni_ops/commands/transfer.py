"""`zapomni export` and `zapomni import`: every memory to and from a portable JSONL file.

The format and the import's guarantees are in `zapomni_core.transfer` and docs/export-format.md;
this module parses the command line, opens the files, delegates and prints.
"""

from __future__ import annotations

import argparse
import asyncio
import errno
import io
import json
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import IO, BinaryIO

from pydantic import ValidationError

from zapomni_core import (
    IMPORT_FORMATS,
    IMPORTING,
    ExportReport,
    ImportPreview,
    ImportReport,
    ImportSourceRequest,
    Progress,
    Settings,
    SourceImport,
    TransferError,
    ZapomniError,
    open_core,
)

ZAPOMNI_FORMAT = "zapomni"

# Failures of the output file itself, reported as such (others keep their traceback).
_WRITE_ERRORS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO, errno.EISDIR, errno.EACCES, errno.EROFS}
# A long export or import says how far it got on stderr at most this often.
PROGRESS_EVERY_S = 2.0


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    export = commands.add_parser(
        "export",
        help="write every memory to a portable JSONL file",
        description="Write every memory (text, metadata, chunks and their embeddings) as JSONL: "
        "a header line, one line per memory, an end line. Read it back with `zapomni import`.",
    )
    export.add_argument(
        "--output",
        "-o",
        default="-",
        metavar="FILE",
        help="where to write; '-' (the default) is stdout. A file is written under a temporary name "
        "beside it and renamed when complete, so FILE is never left half written.",
    )
    export.set_defaults(run=run_export)

    imports = commands.add_parser(
        "import",
        help="add the memories of a `zapomni export` file, or of another tool's files (--from)",
        description="Read the whole file first (a truncated or malformed file changes nothing), then add "
        "the memories the store lacks; what is already there is skipped, so running it again is safe. "
        "Embeddings in an export are used when they come from the configured embedder, else recomputed. "
        "With --from, FILE is another tool's: "
        + "; ".join(f"{f.name}: {f.reads}" for f in IMPORT_FORMATS.values())
        + ". Each memory imported so is tagged imported:FORMAT and keeps its original id and time.",
    )
    imports.add_argument("file", metavar="FILE", help="what to read; '-' reads an export from stdin")
    imports.add_argument(
        "--from",
        dest="source_format",
        choices=[ZAPOMNI_FORMAT, *IMPORT_FORMATS],
        default=ZAPOMNI_FORMAT,
        help=f"what FILE is (default: {ZAPOMNI_FORMAT}, an export of this tool)",
    )
    imports.add_argument("--workspace", "-w", help="where another tool's memories go (default: the default one)")
    imports.add_argument(
        "--user-name", help="chat exports: who you are in them (default: the export's name, else user)"
    )
    imports.add_argument("--dry-run", action="store_true", help="only read FILE and say what would be added")
    imports.add_argument("--json", action="store_true", help="print the counts as JSON")
    imports.set_defaults(run=run_import)


def run_export(args: argparse.Namespace, settings: Settings) -> int:
    if args.output == "-":
        # The export is UTF-8 whatever the locale says stdout is.
        stdout = io.TextIOWrapper(sys.stdout.buffer, encoding="utf-8", newline="\n")
        try:
            report = asyncio.run(_export(settings, stdout))
        except BrokenPipeError:
            # The reader went away (`zapomni export | head`): what it got has no end line, so no import
            # takes it. Whatever is still buffered goes to /dev/null instead of failing again at exit.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            print("zapomni export: the output was closed before the export finished", file=sys.stderr)
            return 1
        finally:
            stdout.detach()  # leave sys.stdout usable (and open)
        where = "stdout"
    else:
        target = Path(args.output)
        try:
            # Private (0600) like the data it holds; renamed into place or removed below.
            out = tempfile.NamedTemporaryFile(  # noqa: SIM115
                "w",
                encoding="utf-8",
                newline="\n",
                dir=target.parent,
                prefix=f".{target.name}.",
                suffix=".partial",
                delete=False,
            )
        except OSError as exc:
            raise TransferError(f"cannot write to {target.parent}: {exc.strerror}") from None
        try:
            with out:
                report = asyncio.run(_export(settings, out))
                out.flush()
                os.fsync(out.fileno())
            os.replace(out.name, target)
        except BaseException as exc:
            Path(out.name).unlink(missing_ok=True)
            if isinstance(exc, OSError) and exc.errno in _WRITE_ERRORS:
                raise TransferError(f"cannot write {target}: {exc.strerror}; nothing was written there") from None
            raise
        where = str(target)
    print(
        f"zapomni export: {report.memories} memories ({report.chunks} chunks, {report.embedder}) "
        f"written to {where} in {report.duration_s:.1f} s",
        file=sys.stderr,
    )
    return 0


def run_import(args: argparse.Namespace, settings: Settings) -> int:
    if args.source_format != ZAPOMNI_FORMAT:
        return _run_source_import(args, settings)
    if args.workspace is not None or args.user_name is not None:
        raise TransferError("--workspace and --user-name go with --from: an export names who and where")
    with ExitStack() as stack:
        if args.file == "-":
            src: BinaryIO = sys.stdin.buffer
        else:
            try:
                src = stack.enter_context(open(args.file, "rb"))
            except OSError as exc:
                raise TransferError(f"cannot read {args.file}: {exc.strerror}") from None
        if args.dry_run:
            preview = asyncio.run(_preview(settings, src))
            print(json.dumps(asdict(preview), indent=2) if args.json else _describe_preview(preview))
            return 0
        report = asyncio.run(_import(settings, src))
    if args.json:
        print(json.dumps(asdict(report), indent=2))
    else:
        print(_describe_import(report))
    return 0


def _run_source_import(args: argparse.Namespace, settings: Settings) -> int:
    given = {
        "format": args.source_format, "path": args.file, "workspace": args.workspace, "dry_run": args.dry_run,
        "user_name": args.user_name,
    }  # fmt: skip
    try:
        request = ImportSourceRequest.model_validate(given)
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        flags = {"workspace": "--workspace", "path": "FILE", "user_name": "--user-name"}
        field = flags.get(str(error["loc"][0]), str(error["loc"][0]))
        raise TransferError(f"{field}: {error['msg'].removeprefix('Value error, ')}") from None
    if args.file == "-" or not Path(args.file).exists():
        raise TransferError(f"cannot read {args.file}: no such file or folder")
    done = asyncio.run(_import_source(settings, request))
    print(json.dumps(asdict(done), indent=2, default=str) if args.json else _describe_source_import(done))
    return 0


async def _export(settings: Settings, out: IO[str]) -> ExportReport:
    async with open_core(settings, background_jobs=False) as (core, _info):
        return await core.transfer.export_to(out, _Progress("export"))


async def _import(settings: Settings, src: BinaryIO) -> ImportReport:
    async with open_core(settings, background_jobs=False) as (core, _info):
        with _said_if_stopped() as progress:
            return await core.transfer.import_from(src, progress)


async def _preview(settings: Settings, src: BinaryIO) -> ImportPreview:
    async with open_core(settings, background_jobs=False) as (core, _info):
        return await core.transfer.preview_from(src)


async def _import_source(settings: Settings, request: ImportSourceRequest) -> SourceImport:
    async with open_core(settings, background_jobs=False) as (core, _info):
        with _said_if_stopped() as progress:
            return await core.transfer.import_source(request, progress)


@contextmanager
def _said_if_stopped() -> Iterator[_Progress]:
    """An import stopped while writing (interrupted, the database gone) says how far it got and how to finish:
    every memory is written whole, and a second run skips those already stored."""
    progress = _Progress("import")
    try:
        yield progress
    except (ZapomniError, KeyboardInterrupt, asyncio.CancelledError):
        if progress.writing is not None:
            done, total = progress.writing.done, progress.writing.total
            print(
                f"zapomni import: stopped with {done} of {total} memories written; run the same command again to "
                "write the rest (those already written are skipped)",
                file=sys.stderr,
                flush=True,
            )
        raise


def _describe_preview(preview: ImportPreview) -> str:
    return (
        f"dry run, nothing written: the file holds {preview.memories_in_file} memories ({preview.chunks_in_file} "
        f"chunks), {preview.entities_in_file} entities and {preview.relations_in_file} relations; "
        f"{preview.already_stored} of the memories are already in the store"
    )


def _describe_source_import(done: SourceImport) -> str:
    conversion = done.conversion
    lines = [f"read {conversion.items} memories from {done.path} ({conversion.format}), for {done.workspace!r}"]
    if done.preview is not None:
        lines.append(
            f"dry run, nothing written: would add {done.preview.memories_in_file - done.preview.already_stored} "
            f"(already there: {done.preview.already_stored}), with {done.preview.entities_in_file} entities and "
            f"{done.preview.relations_in_file} relations"
        )
        lines += ["sample:"] + [f"  {json.dumps(item, ensure_ascii=False)}" for item in conversion.sample]
    elif done.report is not None:
        report = done.report
        lines.append(
            f"added {report.imported} memories ({report.chunks_written} chunks), {report.entities_imported} entities "
            f"and {report.relations_imported} relations; already there: {report.skipped}"
        )
    lines += [f"skipped {count}: {reason}" for reason, count in _by_count(conversion.skipped)]
    lines += [f"note ({count}): {note}" for note, count in _by_count(conversion.notes)]
    return "\n".join(lines)


def _by_count(counts: dict[str, int]) -> list[tuple[str, int]]:
    return sorted(counts.items(), key=lambda item: -item[1])


def _describe_import(report: ImportReport) -> str:
    lines = [
        f"imported {report.imported} memories ({report.chunks_written} chunks); "
        f"skipped {report.skipped} already in the store; the file held {report.memories_in_file}",
    ]
    if not report.re_embedded:
        lines.append(f"embeddings: from the file, made by {report.file_embedder} as configured; nothing re-embedded")
    elif report.file_embedder != report.embedder:
        lines.append(
            f"embeddings: re-embedded {report.chunks_embedded} chunks with {report.embedder}; the file's were "
            f"made by {report.file_embedder} ({report.rechunked} memories chunked again for it)"
        )
    else:
        lines.append(
            f"embeddings: re-embedded {report.chunks_embedded} chunks the file had no vectors for, "
            f"{report.chunks_from_file} taken from the file ({report.embedder})"
        )
    return "\n".join(lines)


class _Progress:
    """Prints how far a long transfer got, on stderr; quiet for the first couple of seconds."""

    def __init__(self, command: str) -> None:
        self._command = command
        self._last = time.monotonic()
        self.writing: Progress | None = None  # the last progress of an import's writing pass

    def __call__(self, progress: Progress) -> None:
        if progress.message == IMPORTING:
            self.writing = progress
        now = time.monotonic()
        if now - self._last < PROGRESS_EVERY_S:
            return
        self._last = now
        print(f"zapomni {self._command}: {progress.describe()}", file=sys.stderr, flush=True)
