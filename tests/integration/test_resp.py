"""The keeper's plain RESP commands (`zapomni_db.resp`) against the worker's real FalkorDB: every kind of reply
it reads, an error reply, a socket nobody listens on, and a reply cut short."""

from __future__ import annotations

import io
import socket
import threading
from pathlib import Path

import pytest

from tests.shared_database import SharedDatabase
from zapomni_db import resp


def test_replies_of_each_kind_come_back_as_python_values(shared_database: SharedDatabase) -> None:
    at = shared_database.database.socket
    assert resp.command(at, "PING", timeout_s=5) == b"PONG"  # a simple string
    assert resp.command(at, "ECHO", "zapomni é", timeout_s=5) == "zapomni é".encode()  # a bulk string, UTF-8
    assert resp.command(at, "EXISTS", "no-such-key-here", timeout_s=5) == 0  # an integer
    assert resp.command(at, "GET", "no-such-key-here", timeout_s=5) is None  # a null bulk string
    assert resp.command(at, "CONFIG", "GET", "appendonly", timeout_s=5) == [b"appendonly", b"yes"]  # an array
    info = resp.info_fields(resp.command(at, "INFO", "persistence", timeout_s=5))
    assert info["aof_enabled"] == "1" and info["aof_rewrite_in_progress"] in {"0", "1"}


def test_an_error_reply_raises_with_the_servers_words(shared_database: SharedDatabase) -> None:
    with pytest.raises(resp.ReplyError, match="unknown command"):
        resp.command(shared_database.database.socket, "NO-SUCH-COMMAND", timeout_s=5)
    assert resp.command(shared_database.database.socket, "PING", timeout_s=5) == b"PONG"  # and it still serves


def test_nobody_listening_and_a_reply_cut_short_are_connection_errors(tmp_path: Path) -> None:
    with pytest.raises(OSError):
        resp.command(tmp_path / "nothing.sock", "PING", timeout_s=1)
    with pytest.raises(ConnectionError, match="in the middle of a reply"):
        resp._read(io.BytesIO(b"$10\r\nabc"))
    with pytest.raises(ConnectionError, match="before answering"):
        resp._read(io.BytesIO(b""))

    # A server that takes the command and closes without a word.
    path = tmp_path / "mute.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        listener.bind(str(path))
        listener.listen(1)

        def hang_up() -> None:
            conn, _ = listener.accept()
            conn.recv(64)
            conn.close()

        threading.Thread(target=hang_up, daemon=True).start()
        with pytest.raises(ConnectionError):
            resp.command(path, "PING", timeout_s=5)
