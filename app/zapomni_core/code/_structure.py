"""The structure the code indexer keeps of source files: symbols, imports, and the links between them.

Every type is a frozen dataclass of plain strings, ints and tuples, so parsed files can cross thread
boundaries, be cached and be compared in tests without any tree-sitter object leaking out.
"""

from __future__ import annotations

from dataclasses import dataclass

from zapomni_db import SymbolDefinition


@dataclass(frozen=True, kw_only=True)
class Symbol(SymbolDefinition):
    """One definition as parsed: what the graph stores of it, and what linking reads. `qualified_name` is
    unique within its file (a later redefinition is merged)."""

    start_byte: int
    end_byte: int
    bases: tuple[str, ...]
    calls: tuple[str, ...]  # callee expressions as written


@dataclass(frozen=True)
class Import:
    """One import as written. Rust `mod x;` is recorded as module "self::x" (it brings file x into scope)."""

    module: str
    names: tuple[tuple[str, str], ...]
    alias: str | None
    line: int


@dataclass(frozen=True)
class ParsedFile:
    path: str
    language: str
    module: str
    symbols: tuple[Symbol, ...]
    imports: tuple[Import, ...]
    syntax_errors: int


@dataclass(frozen=True)
class CodeLinks:
    """Edges between symbols and files that resolve inside the codebase, plus counts of what did not."""

    calls: tuple[tuple[str, str], ...]
    inherits: tuple[tuple[str, str], ...]
    imports: tuple[tuple[str, str], ...]
    unresolved_calls: int
    ambiguous_calls: int
