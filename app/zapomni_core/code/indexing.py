"""`index_codebase`: source files parsed with tree-sitter into searchable chunks and a code graph, as a job.

Files are walked like documents (`files.sync`); each changed file's parse is stored with its File
node. Calls, inheritance and imports reach across files, so after any change they are resolved
again for the whole codebase from the stored parses (cheap: no file is read again) and rewritten.
"""

from __future__ import annotations

import json
from dataclasses import asdict

import structlog

from zapomni_core.code import LANGUAGES, Import, ParsedFile, Symbol, language_for, parse_source, resolve
from zapomni_core.code.chunks import code_pieces
from zapomni_core.content.chunking import Chunker
from zapomni_core.errors import ZapomniError
from zapomni_core.files.formats import UnreadableFile
from zapomni_core.files.sync import FileContent, FileRef, FileWalk, WalkArgs, walk_outcome
from zapomni_core.files.walker import FoundFile
from zapomni_core.kernel.registry import Workspace
from zapomni_core.kernel.runner import JobOutcome, JobRun
from zapomni_core.kernel.writing import new_id
from zapomni_core.threads import off_loop
from zapomni_db import CodeFileRow, GraphStores, JobRow, SymbolRow

log = structlog.get_logger(__name__)

KIND = "index_codebase"


class CodeReader:
    kind = "code"

    def __init__(self, chunker: Chunker) -> None:
        self._chunker = chunker

    def suffixes(self, args: WalkArgs) -> frozenset[str]:
        languages = args.languages or list(LANGUAGES)
        return frozenset(suffix for language in languages for suffix in LANGUAGES[language])

    def read(self, found: FoundFile, data: bytes) -> FileContent:
        language = language_for(found.relative)
        if language is None:
            raise UnreadableFile(f"no parser for {found.relative!r}")
        try:
            source = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise UnreadableFile(f"not UTF-8 source (invalid byte at offset {exc.start})") from None
        parsed = parse_source(found.relative, data, language)
        return FileContent(source, code_pieces(self._chunker, source, parsed), extra=parsed)

    async def finish(self, stores: GraphStores, memory_id: str, file: FileRef, content: FileContent) -> bool:
        parsed = content.extra
        assert isinstance(parsed, ParsedFile)
        row = CodeFileRow(
            id=new_id(),
            path=file.path,
            relative=file.relative,
            codebase=str(file.base),
            language=parsed.language,
            module=parsed.module,
            file_hash=file.file_hash,
            parsed_json=parsed_to_json(parsed),
        )
        return await stores.code.write_file(memory_id, row, symbol_rows(parsed))


class IndexCodebase:
    kind = KIND

    def __init__(self, walk: FileWalk) -> None:
        self._walk = walk

    def refuses(self, job: JobRow) -> ZapomniError | None:
        return self._walk.refuses(WalkArgs.from_json(job.args_json))

    async def run(self, job: JobRow, run: JobRun[Workspace]) -> JobOutcome | None:
        outcome = await self._walk.run(WalkArgs.from_json(job.args_json), run)
        if outcome.changed:
            codebase = str(outcome.plan.base)
            parsed = [parsed_from_json(value) for value in await run.workspace.stores.code.parsed_files(codebase)]
            links = await off_loop(resolve, parsed)
            await run.report(run.progress.with_message("linking calls, inheritance and imports"))
            await run.workspace.stores.code.replace_links(
                codebase, calls=links.calls, inherits=links.inherits, imports=links.imports
            )
            outcome.counts.update(
                symbols=sum(len(p.symbols) for p in parsed),
                calls=len(links.calls),
                inherits=len(links.inherits),
                imports=len(links.imports),
                unresolved_calls=links.unresolved_calls,
                ambiguous_calls=links.ambiguous_calls,
            )
        log.info("code.indexed", workspace=run.workspace.name, job_id=job.id, **outcome.counts)
        return walk_outcome(job, outcome)


def symbol_rows(parsed: ParsedFile) -> list[SymbolRow]:
    ids = [new_id() for _ in parsed.symbols]
    # A name defined twice in a file (a redefinition, an overload) contains what follows its first definition.
    first: dict[str, str] = {}
    for symbol, symbol_id in zip(parsed.symbols, ids, strict=True):
        first.setdefault(symbol.qualified_name, symbol_id)
    return [
        SymbolRow(id=symbol_id, symbol=s, parent_id=first.get(s.parent) if s.parent else None)
        for s, symbol_id in zip(parsed.symbols, ids, strict=True)
    ]


def parsed_to_json(parsed: ParsedFile) -> str:
    return json.dumps(asdict(parsed), separators=(",", ":"))


def parsed_from_json(value: str) -> ParsedFile:
    raw = json.loads(value)
    symbols = tuple(Symbol(**{**s, "bases": tuple(s["bases"]), "calls": tuple(s["calls"])}) for s in raw["symbols"])
    imports = tuple(Import(**{**i, "names": tuple(tuple(pair) for pair in i["names"])}) for i in raw["imports"])
    return ParsedFile(**{**raw, "symbols": symbols, "imports": imports})
