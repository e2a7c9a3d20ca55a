"""A database outage while a token is checked: 503 with Retry-After, never 401 (the token is fine; a client
told otherwise would drop it), and the same token works again once the database is back."""

from __future__ import annotations

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
    }
    try:
        token = create_token(child_env(env), "outage", "read")
        with http_server(tmp_path / "replica", tmp_path / "server.log", **env) as server:
            assert server.post(LIST_WORKSPACES, token).status_code == 200
            database.kill()
            down = server.post(LIST_WORKSPACES, token)
            assert down.status_code == 503, (down.status_code, down.text)
            assert down.headers["Retry-After"].isdigit()
            assert "could not be checked" in down.json()["error"]["message"]
            assert server.get("/metrics", token).status_code == 503
            assert server.post(LIST_WORKSPACES, "zap_000000000000_not-a-token").status_code == 401  # malformed: no read
            database.start()
            assert wait_for(lambda: server.post(LIST_WORKSPACES, token).status_code == 200, timeout_s=60)
    finally:
        database.kill()
