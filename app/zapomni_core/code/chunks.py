"""A source file's chunks: whole functions and classes where they fit the embedder, split where they do not.

A class too long for one chunk becomes its methods (each whole if it fits) plus the rest of its
body (declaration, attributes); a function too long is cut by the ordinary chunker. Code outside
any symbol (imports, constants, scripts) is chunked by contiguous runs of lines. Every chunk keeps
its line range and, as its section, the qualified name of the symbol it belongs to.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence

from zapomni_core.code import ParsedFile, Symbol
from zapomni_core.content.chunking import Chunker
from zapomni_core.files.pieces import Piece, located
from zapomni_db import ChunkPlace


def code_pieces(chunker: Chunker, source: str, parsed: ParsedFile) -> list[Piece]:
    lines = source.splitlines(keepends=True)
    children: dict[str | None, list[Symbol]] = defaultdict(list)
    for symbol in parsed.symbols:
        children[symbol.parent].append(symbol)
    pieces: list[Piece] = []
    top = children[None]
    for symbol in top:
        pieces += _symbol_pieces(chunker, lines, symbol, children)
    for first, last in _gaps(1, len(lines), top):
        pieces += _run_pieces(chunker, lines, first, last, section=None)
    return sorted(pieces, key=lambda p: (p.place.line_start or 0, p.place.line_end or 0))


def _symbol_pieces(
    chunker: Chunker, lines: Sequence[str], symbol: Symbol, children: dict[str | None, list[Symbol]]
) -> list[Piece]:
    body = _text(lines, symbol.line_start, symbol.line_end)
    if chunker.fits(body):
        place = ChunkPlace(section=symbol.qualified_name, line_start=symbol.line_start, line_end=symbol.line_end)
        return [Piece(body.rstrip(), place)]
    inner = children.get(symbol.qualified_name, [])
    if not inner:
        return located(chunker.split(body), body, symbol.line_start, symbol.qualified_name)
    pieces: list[Piece] = []
    for child in inner:
        pieces += _symbol_pieces(chunker, lines, child, children)
    for first, last in _gaps(symbol.line_start, symbol.line_end, inner):
        pieces += _run_pieces(chunker, lines, first, last, section=symbol.qualified_name)
    return pieces


def _run_pieces(chunker: Chunker, lines: Sequence[str], first: int, last: int, section: str | None) -> list[Piece]:
    text = _text(lines, first, last)
    if not text.strip():
        return []
    # Leading blank lines would shift the line numbers `located` counts from `first`.
    skipped = len(text) - len(text.lstrip("\n"))
    first += text.count("\n", 0, skipped)
    text = text[skipped:]
    return located(chunker.split(text), text, first, section)


def _gaps(first: int, last: int, symbols: Iterable[Symbol]) -> list[tuple[int, int]]:
    """The runs of lines in first..last that none of `symbols` covers."""
    runs: list[tuple[int, int]] = []
    line = first
    for symbol in sorted(symbols, key=lambda s: s.line_start):
        if symbol.line_start > line:
            runs.append((line, symbol.line_start - 1))
        line = max(line, symbol.line_end + 1)
    if line <= last:
        runs.append((line, last))
    return runs


def _text(lines: Sequence[str], first: int, last: int) -> str:
    return "".join(lines[first - 1 : last])
