"""A file's chunks with their place in it: documents cut section by section, never across two sections."""

from __future__ import annotations

from dataclasses import dataclass

from zapomni_core.content.chunking import Chunker
from zapomni_core.files.formats import Document
from zapomni_db import ChunkPlace

# A section this short (a heading with nothing under it before the next heading) joins the next one.
_LONE_HEADING_CHARS = 120


@dataclass(frozen=True)
class Piece:
    text: str
    place: ChunkPlace


def document_text(document: Document) -> str:
    """The memory's text: the sections in reading order, a blank line apart."""
    return "\n\n".join(section.text.strip() for section in document.sections if section.text.strip())


def document_pieces(chunker: Chunker, document: Document) -> list[Piece]:
    """Each section chunked on its own, so a chunk has one page and one heading path.

    A section that is only a heading line (e.g. `## Install` directly followed by `### From
    source`) is not a chunk of its own: it is prefixed to the next section on the same page.
    """
    pieces: list[Piece] = []
    carried = ""
    for i, section in enumerate(document.sections):
        text = section.text.strip()
        if not text:
            continue
        following = document.sections[i + 1] if i + 1 < len(document.sections) else None
        if _lone_heading(text) and following is not None and following.page == section.page:
            carried = f"{carried}{text}\n\n"
            continue
        place = ChunkPlace(page=section.page, section=section.heading)
        pieces += [Piece(chunk, place) for chunk in chunker.split(carried + text)]
        carried = ""
    return pieces


def line_span(text: str, start: int, end: int, first_line: int = 1) -> tuple[int, int]:
    """The 1-based lines that characters `start:end` of `text` cover, `text` starting at `first_line`."""
    line_start = first_line + text.count("\n", 0, start)
    return line_start, line_start + text.count("\n", start, max(start, end - 1))


def located(chunks: list[str], text: str, first_line: int, section: str | None) -> list[Piece]:
    """Chunks cut from `text` (in order, overlapping), each with the lines it covers."""
    pieces: list[Piece] = []
    cursor = 0
    for chunk in chunks:
        # A chunk is a stripped slice of `text`; it starts at or after the previous one (overlap).
        start = text.find(chunk, cursor)
        if start < 0:
            start = max(0, text.find(chunk))
        lines = line_span(text, start, start + len(chunk), first_line)
        pieces.append(Piece(chunk, ChunkPlace(section=section, line_start=lines[0], line_end=lines[1])))
        cursor = start + 1
    return pieces


def _lone_heading(text: str) -> bool:
    return "\n" not in text and len(text) <= _LONE_HEADING_CHARS
