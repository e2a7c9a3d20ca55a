"""PDF: the text of each page with pypdf, one section per page.

pypdf is pure Python: a hostile or broken file can only raise, never crash the server process that
speaks MCP on stdout (a native parser's crash would). Measured equal to pdfminer.six and pypdfium2 on
words and order for ordinary PDFs, at 1.8 MB (docs/decisions/0013-document-extraction.md).
"""

from __future__ import annotations

import io
import logging
import re
import warnings

from pypdf import PdfReader
from pypdf.errors import DependencyError, FileNotDecryptedError

from ._document import Document, Section, UnreadableFile, library_reason

# pypdf reports every oddity of a real-world file through logging and warnings; stdout is the MCP
# protocol and stderr the server's log, so neither gets them. Module-level: the filters are global anyway.
logging.getLogger("pypdf").setLevel(logging.CRITICAL)
warnings.filterwarnings("ignore", module=r"pypdf(\.|$)")

NO_TEXT = "no extractable text (a scanned PDF? OCR is not supported)"
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")  # unmapped glyphs come out as NULs and the like
_BLANK_RUNS = re.compile(r"\n\s*\n\s*\n+")


def _open(data: bytes) -> PdfReader:
    if b"%PDF-" not in data[:1024]:  # the spec lets the header sit anywhere in the first 1024 bytes
        raise UnreadableFile("not a PDF file (wrong extension?)")
    try:
        reader = PdfReader(io.BytesIO(data), strict=False)
    except Exception as exc:
        raise UnreadableFile(f"corrupt PDF: {library_reason(exc)}") from None
    if reader.is_encrypted:
        # An owner password alone only restricts printing and the like: viewers open such files, so do we.
        try:
            opened = reader.decrypt("")
        except DependencyError:
            raise UnreadableFile("encrypted PDF: its AES encryption needs a password tool; decrypt it first") from None
        except Exception as exc:
            raise UnreadableFile(f"encrypted PDF: {library_reason(exc)}; decrypt it first") from None
        if not opened:
            raise UnreadableFile("encrypted PDF: it needs a password; decrypt it first")
    return reader


def _page_text(raw: str) -> str:
    lines = [line.rstrip() for line in _CONTROL.sub("", raw).split("\n")]
    return _BLANK_RUNS.sub("\n\n", "\n".join(lines)).strip()


def extract_pdf(data: bytes) -> Document:
    reader = _open(data)
    try:
        pages = reader.pages
        count = len(pages)
    except FileNotDecryptedError:
        raise UnreadableFile("encrypted PDF: it needs a password; decrypt it first") from None
    except Exception as exc:
        raise UnreadableFile(f"corrupt PDF: {library_reason(exc)}") from None
    if count == 0:
        raise UnreadableFile("corrupt PDF: no pages")
    sections: list[Section] = []
    first_error: Exception | None = None
    for number in range(1, count + 1):
        try:
            text = _page_text(pages[number - 1].extract_text() or "")
        except Exception as exc:  # one broken page costs that page, not the document
            first_error = first_error or exc
            continue
        if text:
            sections.append(Section(text=text, page=number))
    if not sections:
        if first_error is not None:
            raise UnreadableFile(f"corrupt PDF: {library_reason(first_error)}")
        raise UnreadableFile(NO_TEXT)
    return Document(format="pdf", sections=tuple(sections), pages=count)
