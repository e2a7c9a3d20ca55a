"""The text of `add` and `update`: from the command line, a file or stdin, refused in one line when unusable."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from zapomni_cli.errors import CliError
from zapomni_core import MAX_TEXT_BYTES

STDIN = "-"


@dataclass(frozen=True)
class Text:
    value: str
    label: str  # how to name it in an error: TEXT, --file notes.md, stdin


def read_text(argument: str | None, file: Path | None, *, argument_label: str = "TEXT") -> Text | None:
    """The text given as `argument` (or '-' for stdin) or in `file`; None when neither was given."""
    if argument is not None and file is not None:
        raise CliError(f"give the text as {argument_label} or with --file, not both", code=2)
    if file is not None:
        return read_file(file)
    if argument == STDIN:
        return read_stdin()
    if argument is not None:
        return Text(argument, argument_label)
    return None


def read_file(path: Path) -> Text:
    label = f"--file {path}"
    if path.is_dir():
        raise CliError(f"{label}: is a directory; give a text file", code=2)
    try:
        with path.open("rb") as handle:
            return Text(_decode(_read_bounded(handle, label), label), label)
    except FileNotFoundError:
        raise CliError(f"{label}: no such file", code=2) from None
    except OSError as exc:
        raise CliError(f"{label}: cannot read it ({exc.strerror or type(exc).__name__})", code=2) from None


def read_stdin() -> Text:
    return Text(_decode(_read_bounded(sys.stdin.buffer, "stdin"), "stdin"), "stdin")


def _read_bounded(handle: BinaryIO, label: str) -> bytes:
    data = handle.read(MAX_TEXT_BYTES + 1)
    if len(data) > MAX_TEXT_BYTES:
        raise CliError(f"{label}: more than {MAX_TEXT_BYTES} bytes; a memory holds at most 10 MB of text", code=2)
    return data


def _decode(data: bytes, label: str) -> str:
    if b"\x00" in data:
        raise CliError(f"{label}: not a text file (it contains NUL bytes)", code=2)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise CliError(f"{label}: not UTF-8 text (undecodable byte at offset {exc.start})", code=2) from None
