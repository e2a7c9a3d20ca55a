"""The types every extractor returns, and the heading-path bookkeeping the structured formats share."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from zapomni_core.errors import ZapomniError

MAX_REASON = 200


@dataclass(frozen=True)
class Section:
    text: str  # paragraphs separated by blank lines; a heading is its own first line
    page: int | None = None  # 1-based PDF page number (PDF only)
    heading: str | None = None  # heading path, e.g. "Installation > From source"; None before the first heading


@dataclass(frozen=True)
class Document:
    format: str  # "pdf" | "docx" | "html" | "markdown" | "text"
    sections: tuple[Section, ...]  # reading order; empty sections dropped
    pages: int | None = None  # PDF page count


class UnreadableFile(ZapomniError):
    """The file cannot be read as the document it claims to be; str(exc) is the reason, written for a user."""

    def __init__(self, reason: str) -> None:
        super().__init__(one_line(reason, MAX_REASON))


def one_line(text: str, limit: int) -> str:
    """A library's message squeezed for a user: first line, no runs of spaces, at most `limit` characters."""
    line = re.sub(r"\s+", " ", text.strip().splitlines()[0] if text.strip() else "").strip()
    return line if len(line) <= limit else line[: limit - 1] + "…"


def library_reason(exc: BaseException) -> str:
    return one_line(str(exc), 120) or type(exc).__name__


@dataclass(frozen=True)
class Block:
    """One paragraph or heading of a structured document, before it is grouped into sections."""

    text: str
    level: int | None = None  # heading level (0 = title, 1..9); None for body text


@dataclass
class _Open:
    heading: str | None
    parts: list[str]
    has_body: bool = False


def sections_from_blocks(blocks: Iterable[Block]) -> tuple[Section, ...]:
    """Group blocks into one Section per heading's span, each carrying its heading path.

    A heading directly followed by a deeper heading makes no section of its own: its title lives on in
    the child's path, and a section holding nothing but a title would only add noise to search.
    """
    sections: list[Section] = []
    path: list[tuple[int, str]] = []
    current = _Open(None, [])

    def close(next_level: int | None) -> None:
        heading_only = current.heading is not None and not current.has_body
        deeper_follows = next_level is not None and path and next_level > path[-1][0]
        if current.parts and not (heading_only and deeper_follows):
            sections.append(Section(text="\n\n".join(current.parts), heading=current.heading))

    for block in blocks:
        text = block.text.strip("\n").rstrip()  # leading spaces may be a code block's indentation
        if not text.strip():
            continue
        if block.level is None:
            current.parts.append(text)
            current.has_body = True
            continue
        title = re.sub(r"\s+", " ", text).strip()
        close(block.level)
        while path and path[-1][0] >= block.level:
            path.pop()
        path.append((block.level, title))
        current = _Open(" > ".join(t for _, t in path), [text])
    close(None)
    return tuple(sections)
