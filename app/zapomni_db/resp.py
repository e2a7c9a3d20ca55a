"""One Redis command on a unix socket, in plain RESP2: what the keeper says to the server it owns.

The keeper (`zapomni_db.keeper`) starts with every first client of a data directory, and needs two commands
(CONFIG SET while the disk is full, INFO persistence before a stop). redis-py and structlog were most of its
start-up: 0.32 s of imports against 0.05 s for this and the standard library (measured with `-X importtime`).
"""

from __future__ import annotations

import contextlib
import socket as _socket
from pathlib import Path
from typing import BinaryIO

Reply = bytes | int | list["Reply"] | None


class ReplyError(Exception):
    """The server answered the command with an error (`-ERR ...`)."""


def command(socket: Path, *args: str, timeout_s: float) -> Reply:
    """Send one command and read its reply. A refused, closed or silent connection raises OSError."""
    with contextlib.closing(_socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)) as conn:
        conn.settimeout(timeout_s)
        conn.connect(str(socket))
        conn.sendall(encode(args))
        with conn.makefile("rb") as reader:
            return _read(reader)


def encode(args: tuple[str, ...]) -> bytes:
    parts = [f"*{len(args)}\r\n".encode()]
    for arg in args:
        data = arg.encode()
        parts += [f"${len(data)}\r\n".encode(), data, b"\r\n"]
    return b"".join(parts)


def info_fields(reply: Reply) -> dict[str, str]:
    """The `field:value` lines of an INFO reply."""
    if not isinstance(reply, bytes):
        raise ReplyError(f"INFO answered {type(reply).__name__}, not text")
    lines = reply.decode(errors="replace").splitlines()
    return dict(line.split(":", 1) for line in lines if ":" in line and not line.startswith("#"))


def _read(reader: BinaryIO) -> Reply:
    line = reader.readline()
    if not line.endswith(b"\r\n"):
        raise ConnectionError("the server closed the connection before answering")
    kind, rest = line[:1], line[1:-2]
    if kind == b"+":
        return rest
    if kind == b"-":
        raise ReplyError(rest.decode(errors="replace"))
    if kind == b":":
        return int(rest)
    if kind == b"$":
        size = int(rest)
        if size < 0:
            return None
        data = reader.read(size + 2)
        if len(data) != size + 2:
            raise ConnectionError("the server closed the connection in the middle of a reply")
        return data[:-2]
    if kind == b"*":
        count = int(rest)
        return None if count < 0 else [_read(reader) for _ in range(count)]
    raise ConnectionError(f"not a RESP reply: {line[:40]!r}")
