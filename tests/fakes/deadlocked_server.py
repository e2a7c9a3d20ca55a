"""A STAND-IN for a redis-server that deadlocks while it loads (zapomni_db.start_watch): FalkorDB's race cannot
be triggered on demand (0 of 60 restarts of the store it happened on hung), so this plays what it looks like from
outside. On its first start it listens on its unix socket and never answers, its main thread asleep on a lock it
already holds; on the next start (`mark` exists) it answers as a loaded server does: RESP3 to HELLO, PONG to
PING, an empty INFO, OK to anything else, and exits on SHUTDOWN.

Run: ``python -m tests.fakes.deadlocked_server SOCKET MARK``
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sys
import threading
from pathlib import Path


def answer(conn: socket.socket) -> None:
    with conn:
        while data := conn.recv(4096):
            if b"SHUTDOWN" in data.upper():
                os._exit(0)  # as redis-server: no reply, the connection closes
            if b"HELLO" in data.upper():
                conn.sendall(b"%1\r\n+proto\r\n:3\r\n")  # RESP3, which redis-py 8 asks for
            elif b"PING" in data.upper():
                conn.sendall(b"+PONG\r\n")
            elif b"INFO" in data.upper():
                conn.sendall(b"$0\r\n\r\n")
            else:
                conn.sendall(b"+OK\r\n")


def main() -> None:
    path, mark = Path(sys.argv[1]), Path(sys.argv[2])
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(16)
    if not mark.exists():
        mark.write_text("deadlocked once\n")
        lock = threading.Lock()
        lock.acquire()
        lock.acquire()  # never returns: the main thread sleeps on a futex, as FalkorDB's does
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    while True:
        conn, _ = server.accept()
        threading.Thread(target=answer, args=(conn,), daemon=True).start()


if __name__ == "__main__":
    main()
