"""The `conversations.json` of a chat data export (ChatGPT's, Claude's): found in the export's zip, its unpacked
folder or given itself, and read one conversation at a time (ijson), so a file of any size fits in memory."""

from __future__ import annotations

import contextlib
import zipfile
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

import ijson

from zapomni_core.transfer.format import TransferError
from zapomni_core.validation import parse_iso8601

CONVERSATIONS = "conversations.json"


@contextlib.contextmanager
def export_member(path: Path, name: str) -> Iterator[tuple[IO[bytes], str] | None]:
    """`name` in the export at `path` (a zip, a folder, or its conversations.json), with what to call it in
    messages; None when the export has no such file."""
    if path.is_dir():
        found = path / name
        if not found.is_file():
            yield None
            return
        with _opened(found) as stream:
            yield stream, str(found)
    elif zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            members = [m for m in archive.namelist() if m == name or m.endswith("/" + name)]
            if not members:
                yield None
                return
            member = min(members, key=len)  # the export's own, not one nested deeper
            with archive.open(member) as stream:
                yield stream, f"{path}:{member}"
    elif name == CONVERSATIONS:
        with _opened(path) as stream:
            yield stream, str(path)
    elif (path.parent / name).is_file():  # conversations.json given alone: the export's other files beside it
        with _opened(path.parent / name) as stream:
            yield stream, str(path.parent / name)
    else:
        yield None


def conversations(path: Path) -> Iterator[dict[str, Any]]:
    """Each conversation of the export at `path`, in the file's order; `TransferError` naming the file and the
    conversation for a file that is not such an export or ends early."""
    with export_member(path, CONVERSATIONS) as found:
        if found is None:
            raise TransferError(f"{path}: no {CONVERSATIONS} in it: not a chat data export")
        stream, name = found
        count = 0
        try:
            for item in ijson.items(stream, "item", use_float=True):
                count += 1
                if not isinstance(item, dict):
                    raise TransferError(f"{name}: conversation {count}: not a JSON object; nothing was imported")
                yield item
        except ijson.JSONError as exc:
            # ijson's C parser raises IncompleteJSONError for every error; only "premature EOF" is an early end.
            if "premature EOF" in str(exc) or "Incomplete JSON" in str(exc):
                raise TransferError(
                    f"{name}: the file ends inside conversation {count + 1}: it is truncated; nothing was imported"
                ) from None
            raise TransferError(
                f"{name}: not valid JSON after conversation {count} ({_first_line(exc)}); nothing was imported"
            ) from None
        except UnicodeDecodeError:
            raise TransferError(f"{name}: not UTF-8 text; nothing was imported") from None
        if count == 0:
            raise TransferError(f"{name}: no conversations (an export's file is a JSON array of them)")


def require(path: Path, number: int, system: str, present: dict[str, bool]) -> None:
    """Refuse conversation `number` of the export unless every field named in `present` is there."""
    missing = [name for name, there in present.items() if not there]
    if missing:
        raise TransferError(
            f"{path}: conversation {number}: {', '.join(missing)}: missing, so not a {system} export's conversation; "
            "nothing was imported"
        )


def timestamp(value: Any) -> datetime | None:
    """A time as the exports write them (seconds since 1970, or ISO 8601), None when absent or unreadable."""
    if isinstance(value, int | float) and not isinstance(value, bool) and 0 < value < 1e11:
        return datetime.fromtimestamp(value, UTC)
    if isinstance(value, str) and value:
        with contextlib.suppress(ValueError):
            return parse_iso8601(value)
    return None


def text_field(item: dict[str, Any], key: str) -> str:
    value = item.get(key)
    return value if isinstance(value, str) else ""


@contextlib.contextmanager
def _opened(path: Path) -> Iterator[IO[bytes]]:
    try:
        stream = path.open("rb")
    except OSError as exc:
        raise TransferError(f"cannot read {path}: {exc.strerror}") from None
    with stream:
        yield stream


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0][:120] if str(exc).strip() else type(exc).__name__
