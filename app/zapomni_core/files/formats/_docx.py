"""DOCX: paragraphs and tables in document order, sectioned by heading styles (python-docx).

python-docx finds the main part through the package's relationships (not a fixed path) and resolves style
names, including a custom style based on "Heading 2"; the lxml it needs also parses HTML here.
"""

from __future__ import annotations

import io
import re
import zipfile

import docx
from docx.table import Table
from docx.text.paragraph import Paragraph

from ._document import Block, Document, UnreadableFile, library_reason, sections_from_blocks

NOT_DOCX = "not a DOCX file (wrong extension?)"
# A few MB of DOCX can inflate to gigabytes (a zip bomb); python-docx would load every part into memory.
MAX_UNPACKED = 512 * 1024 * 1024
_HEADING = re.compile(r"heading ([1-9])$")


def _heading_level(paragraph: Paragraph) -> int | None:
    style = paragraph.style
    for _ in range(10):  # follow "based on" a few steps: custom heading styles derive from built-in ones
        if style is None:
            return None
        name = (style.name or "").lower()
        if name == "title":
            return 0
        match = _HEADING.match(name)
        if match:
            return int(match.group(1))
        style = style.base_style
    return None


def _table_rows(table: Table) -> list[str]:
    rows = []
    for row in table.rows:
        cells, seen = [], set()
        for cell in row.cells:
            if id(cell._tc) in seen:  # a merged cell is returned once per grid column it spans
                continue
            seen.add(id(cell._tc))
            text = re.sub(r"\s+", " ", cell.text).strip()
            if text:
                cells.append(text)
        if cells:
            rows.append(" | ".join(cells))
    return rows


def _open(data: bytes) -> docx.document.Document:
    if data.startswith(b"\xd0\xcf\x11\xe0"):
        raise UnreadableFile("not a DOCX file: an old binary .doc or a password-protected document (wrong extension?)")
    if not data.startswith(b"PK"):
        raise UnreadableFile(NOT_DOCX)
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            if sum(info.file_size for info in archive.infolist()) > MAX_UNPACKED:
                raise UnreadableFile("DOCX unpacks to more than 512 MB; refusing it")
            if "[Content_Types].xml" not in archive.namelist():
                raise UnreadableFile(NOT_DOCX)
        return docx.Document(io.BytesIO(data))
    except UnreadableFile:
        raise
    except zipfile.BadZipFile:
        raise UnreadableFile(NOT_DOCX) from None
    except ValueError as exc:  # python-docx: "file ... is not a Word file, content type is ..."
        if "content type" in str(exc):
            raise UnreadableFile(NOT_DOCX) from None
        raise UnreadableFile(f"corrupt DOCX: {library_reason(exc)}") from None
    except Exception as exc:
        raise UnreadableFile(f"corrupt DOCX: {library_reason(exc)}") from None


def extract_docx(data: bytes) -> Document:
    document = _open(data)
    blocks: list[Block] = []
    try:
        for item in document.iter_inner_content():
            if isinstance(item, Paragraph):
                blocks.append(Block(item.text, _heading_level(item)))
            elif isinstance(item, Table):
                blocks.append(Block("\n".join(_table_rows(item))))
    except Exception as exc:
        raise UnreadableFile(f"corrupt DOCX: {library_reason(exc)}") from None
    return Document(format="docx", sections=sections_from_blocks(blocks))
