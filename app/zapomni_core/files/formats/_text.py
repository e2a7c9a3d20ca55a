"""Plain text: strict UTF-8 (a BOM is honoured), one section; anything binary or in another encoding is refused.

Guessing a legacy encoding would silently store mojibake in memory, so the user is told to convert instead.
"""

from __future__ import annotations

import codecs

from ._document import Document, Section, UnreadableFile

# Signatures of binary formats people most often mislabel; a NUL byte catches most of the rest.
_BINARY_MAGIC = (
    b"%PDF-",
    b"PK\x03\x04",
    b"\x89PNG",
    b"\xff\xd8\xff",
    b"GIF8",
    b"\x1f\x8b",
    b"\xd0\xcf\x11\xe0",
    b"\x7fELF",
    b"BZh",
    b"7z\xbc\xaf",
)
BINARY = "binary content, not text (wrong extension?)"


def looks_binary(data: bytes) -> bool:
    return data.startswith(_BINARY_MAGIC) or b"\x00" in data


def decode_text(data: bytes) -> str:
    """UTF-8 (BOM stripped) or UTF-16 with a BOM, newlines normalised to \\n; raises UnreadableFile."""
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)) and not data.startswith(codecs.BOM_UTF32_LE):
        try:
            text = data.decode("utf-16")
        except UnicodeDecodeError as exc:
            raise UnreadableFile(
                f"not valid UTF-16 text (bad bytes at offset {exc.start}); convert it to UTF-8"
            ) from None
        if "\x00" in text:
            raise UnreadableFile(BINARY)
        return _newlines(text)
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8) :]
    if looks_binary(data):
        raise UnreadableFile(BINARY)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        byte = data[exc.start]
        raise UnreadableFile(
            f"not UTF-8 text (invalid byte 0x{byte:02x} at offset {exc.start}); convert it to UTF-8"
        ) from None
    return _newlines(text)


def _newlines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def extract_text(data: bytes) -> Document:
    text = decode_text(data).strip()
    return Document(format="text", sections=(Section(text=text),) if text else ())
