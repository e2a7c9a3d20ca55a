"""Markdown: sections at ATX and setext headings, text kept as Markdown source (nothing is rendered).

markdown-it-py's CommonMark block parser finds the headings, so a `#` line inside a fenced or indented
code block, an HTML block or a list item's code is never taken for one; its line map lets each section be
sliced from the source as written. It is already installed with rich, and parses ~1 MB/s here, far ahead
of the embedder (docs/decisions/0013-document-extraction.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from markdown_it import MarkdownIt

from ._document import Document, Section
from ._text import decode_text

# YAML front matter is not CommonMark: parsed as is, its closing `---` would turn the line above it
# into a setext heading.
_FRONT_MATTER = re.compile(r"\A---[ \t]*\n.*?\n(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.S)
_BLANK_RUNS = re.compile(r"\n{3,}")


@dataclass(frozen=True)
class _Heading:
    first_line: int
    end_line: int  # exclusive
    level: int
    title: str


def _headings(source: str) -> list[_Heading]:
    front = _FRONT_MATTER.match(source)
    if front:  # blank it out line for line, so the parser's line numbers still index `source`
        source = "\n" * front.group(0).count("\n") + source[front.end() :]
    tokens = MarkdownIt("commonmark").parse(source)
    found = []
    for i, token in enumerate(tokens):
        if token.type == "heading_open" and token.level == 0 and token.map:
            title = re.sub(r"\s+", " ", tokens[i + 1].content).strip()
            found.append(_Heading(token.map[0], token.map[1], int(token.tag[1]), title))
    return found


def extract_markdown(data: bytes) -> Document:
    source = decode_text(data)
    lines = source.split("\n")
    sections: list[Section] = []
    path: list[tuple[int, str]] = []
    headings = _headings(source)

    def add(body_lines: list[str], heading_line: str | None, heading: str | None, deeper_follows: bool) -> None:
        body = _BLANK_RUNS.sub("\n\n", "\n".join(body_lines).strip("\n")).rstrip()
        if not body.strip() and (heading_line is None or deeper_follows):
            return  # nothing, or a title whose only content is its subsections (their paths carry it)
        text = "\n\n".join(part for part in (heading_line, body) if part and part.strip())
        sections.append(Section(text=text, heading=heading))

    first = headings[0].first_line if headings else len(lines)
    add(lines[:first], None, None, False)
    for n, head in enumerate(headings):
        while path and path[-1][0] >= head.level:
            path.pop()
        path.append((head.level, head.title))
        following = headings[n + 1] if n + 1 < len(headings) else None
        end = following.first_line if following else len(lines)
        deeper = following is not None and following.level > head.level
        # Setext headings are written back in ATX form, so every section starts with a one-line heading.
        heading_line = "#" * head.level + " " + head.title if head.title else None
        add(lines[head.end_line : end], heading_line, " > ".join(t for _, t in path if t) or None, deeper)
    return Document(format="markdown", sections=tuple(sections))
