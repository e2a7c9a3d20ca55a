"""Text out of documents for `ingest_path`: PDF, DOCX, HTML, Markdown and plain text.

`extract_document(path, data)` turns a file's bytes into a `Document` of `Section`s in reading order
(per page for PDF, per heading for the structured formats) or raises `UnreadableFile` with a reason
written for the user. It is synchronous and CPU-bound: callers run it in a thread. Libraries and the
measurements behind them: docs/decisions/0013-document-extraction.md.
"""

from __future__ import annotations

from pathlib import Path

from ._document import Document, Section, UnreadableFile

__all__ = ["DOCUMENT_EXTENSIONS", "Document", "Section", "UnreadableFile", "document_format", "extract_document"]

_FORMATS: dict[str, str] = {
    ".pdf": "pdf",
    ".docx": "docx",
    ".html": "html",
    ".htm": "html",
    ".xhtml": "html",
    ".md": "markdown",
    ".markdown": "markdown",
    ".mdown": "markdown",
    ".mkd": "markdown",
    # Prose-like text; source code and configuration go through the code indexer instead.
    ".txt": "text",
    ".text": "text",
    ".rst": "text",
    ".adoc": "text",
    ".asciidoc": "text",
    ".org": "text",
    ".tex": "text",
    ".csv": "text",
    ".tsv": "text",
    ".log": "text",
}

DOCUMENT_EXTENSIONS: frozenset[str] = frozenset(_FORMATS)


def document_format(path: Path) -> str | None:
    """ "pdf" | "docx" | "html" | "markdown" | "text" by the file's extension; None when unsupported."""
    return _FORMATS.get(path.suffix.lower())


def extract_document(path: Path, data: bytes) -> Document:
    """The text of `data`, read as the format `path`'s extension names; raises UnreadableFile.

    `path` only names the format and is never opened. Libraries are imported on first use, so a server
    that never ingests a PDF never loads pypdf.
    """
    kind = document_format(path)
    if kind == "pdf":
        from ._pdf import extract_pdf

        return extract_pdf(data)
    if kind == "docx":
        from ._docx import extract_docx

        return extract_docx(data)
    if kind == "html":
        from ._html import extract_html

        return extract_html(data)
    if kind == "markdown":
        from ._markdown import extract_markdown

        return extract_markdown(data)
    if kind == "text":
        from ._text import extract_text

        return extract_text(data)
    raise UnreadableFile(f"unsupported file type {path.suffix or '(no extension)'!r}")
