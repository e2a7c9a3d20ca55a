"""A database outage while a token is checked: 503 with Retry-After, never 401 (the token is fine; a client
told otherwise would drop it), and the same token works again once the database is back. The server waits 2 s for
the database to come back (`ZAPOMNI_DB_RECOVERY_S`), not the default 15, before it answers so."""

from __future__ import annotations

import time
from pathlib import Path

from tests.helpers import wait_for
from tests.processes import FalkorDB, child_env, create_token, http_server

PASSWORD = "outage-test-password"
LIST_WORKSPACES = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "tools/call",
    "params": {"name": "list_workspaces", "arguments": {}},
}


def test_a_token_that_cannot_be_checked_gets_503_and_works_again_after(tmp_path: Path) -> None:
    database = FalkorDB(tmp_path / "db", password=PASSWORD, log_file=tmp_path / "db.log")
    (tmp_path / "db").mkdir()
    database.start()
    env = {
        "ZAPOMNI_DB_MODE": "server",
        "FALKORDB_HOST": "127.0.0.1",
        "FALKORDB_PORT": str(database.port),
        "FALKORDB_PASSWORD": PASSWORD,
        "ZAPOMNI_DB_RECOVERY_S": "2",
    }
    try:
        token = create_token(child_env(env), "outage", "read")
        with http_server(tmp_path / "replica", tmp_path / "server.log", **env) as server:
            assert server.post(LIST_WORKSPACES, token).status_code == 200
            database.kill()
            asked = time.monotonic()
            down = server.post(LIST_WORKSPACES, token)
            assert time.monotonic() - asked < 10  # the setting's 2 s, not the default's 15
            assert down.status_code == 503, (down.status_code, down.text)
            assert down.headers["Retry-After"].isdigit()
            assert "could not be checked" in down.json()["error"]["message"]
            assert server.get("/metrics", token).status_code == 503
            assert server.post(LIST_WORKSPACES, "zap_000000000000_not-a-token").status_code == 401  # malformed: no read
            database.start()
            assert wait_for(lambda: server.post(LIST_WORKSPACES, token).status_code == 200, timeout_s=60)
    finally:
        database.kill()
