"""Which language a file is in, and the tree-sitter grammars, parsers and queries to read it.

Grammars and compiled queries are built once per process on first use and shared: both are immutable.
Parsers and query cursors carry per-parse state, so each thread gets its own (parse_source runs in
worker threads), created once per thread and language.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import PurePosixPath

import tree_sitter

LANGUAGES: dict[str, tuple[str, ...]] = {
    "python": (".py", ".pyi"),
    "javascript": (".js", ".mjs", ".cjs", ".jsx"),
    "typescript": (".ts", ".tsx", ".mts", ".cts"),
    "go": (".go",),
    "rust": (".rs",),
}
_BY_EXTENSION = {ext: language for language, exts in LANGUAGES.items() for ext in exts}


def _loader(grammar: str) -> Callable[[], object]:
    # Imported lazily so a process that never indexes Rust never loads the Rust grammar.
    if grammar == "python":
        import tree_sitter_python

        return tree_sitter_python.language
    if grammar == "javascript":
        import tree_sitter_javascript

        return tree_sitter_javascript.language
    if grammar in ("typescript", "tsx"):
        import tree_sitter_typescript

        return tree_sitter_typescript.language_tsx if grammar == "tsx" else tree_sitter_typescript.language_typescript
    if grammar == "go":
        import tree_sitter_go

        return tree_sitter_go.language
    if grammar == "rust":
        import tree_sitter_rust

        return tree_sitter_rust.language
    raise ValueError(f"no tree-sitter grammar for {grammar!r}")


_lock = threading.Lock()
_grammars: dict[str, tree_sitter.Language] = {}
_queries: dict[str, tree_sitter.Query] = {}
_local = threading.local()


def language_for(path: str) -> str | None:
    """The language of a file by its extension, or None for files the code indexer does not read."""
    return _BY_EXTENSION.get(PurePosixPath(path).suffix.lower())


def grammar_for(path: str, language: str) -> str:
    """The grammar that reads `path`: TypeScript files ending in .tsx need the TSX grammar."""
    if language == "typescript" and path.lower().endswith(".tsx"):
        return "tsx"
    return language


def get_grammar(grammar: str) -> tree_sitter.Language:
    found = _grammars.get(grammar)
    if found is None:
        with _lock:
            found = _grammars.get(grammar)
            if found is None:
                found = tree_sitter.Language(_loader(grammar)())
                _grammars[grammar] = found
    return found


def get_query(grammar: str, source: str) -> tree_sitter.Query:
    found = _queries.get(grammar)
    if found is None:
        language = get_grammar(grammar)
        with _lock:
            found = _queries.get(grammar)
            if found is None:
                found = tree_sitter.Query(language, source)
                _queries[grammar] = found
    return found


def get_parser(grammar: str) -> tree_sitter.Parser:
    parsers: dict[str, tree_sitter.Parser] = _local.__dict__.setdefault("parsers", {})
    parser = parsers.get(grammar)
    if parser is None:
        parser = parsers[grammar] = tree_sitter.Parser(get_grammar(grammar))
    return parser


def get_cursor(grammar: str, query: tree_sitter.Query) -> tree_sitter.QueryCursor:
    cursors: dict[str, tree_sitter.QueryCursor] = _local.__dict__.setdefault("cursors", {})
    cursor = cursors.get(grammar)
    if cursor is None:
        cursor = cursors[grammar] = tree_sitter.QueryCursor(query)
    return cursor
