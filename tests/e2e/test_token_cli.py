"""`zapomni token create | list | revoke` through the real command, beside an engine of this process on the
same store: a printed token verifies, a revocation by the command is refused here at once, and bad input is
one line naming the flag that changes nothing."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest

from tests.e2e.test_cli import as_json, assert_fits_80_columns, ok, refused, zapomni
from tests.helpers import open_core
from zapomni_core import Settings

pytestmark = pytest.mark.anyio

TOKEN = re.compile(r"^(zap_[0-9a-f]{12}_[A-Za-z0-9_-]{43})$", re.MULTILINE)


@pytest.mark.own_database  # the command and this process's engine share the data directory
async def test_tokens_from_the_command_line(data_dir: Path, settings: Settings) -> None:
    async with open_core(settings) as (core, _info):
        created = await asyncio.to_thread(
            ok, data_dir, "token", "create", "--name", "ci", "--workspace", "default", "--workspace", "notes",
            "--role", "write", "--expires", "30d",
        )  # fmt: skip
        found = TOKEN.search(created.stdout)
        assert found is not None, created.stdout
        token = found.group(1)
        lines = created.stdout.splitlines()
        assert lines[0].startswith("Created token 'ci' (id ")
        assert "role write, workspaces default, notes; expires 20" in lines[0]
        assert lines[1] == token and "cannot be shown again" in lines[2]
        grant = await core.access.verify(token)
        assert grant is not None and grant.name == "ci" and grant.role == "write"
        assert grant.workspaces == frozenset({"default", "notes"})

        # --json: the reply whole, for a script; a token for every workspace
        everything = ["--name", "ops", "--all", "--role", "admin"]
        made = await asyncio.to_thread(as_json, data_dir, "token", "create", *everything)
        ops = await core.access.verify(made["token"])
        assert ops is not None and ops.workspaces is None and made["info"]["workspaces"] is None

        # list: an 80-column table and JSON, neither with a secret or a hash
        table = (await asyncio.to_thread(ok, data_dir, "token", "list")).stdout
        assert_fits_80_columns(table, ["id", "name", "role", "workspaces", "state", "expires", "last used"])
        assert [line.split()[1:3] for line in table.splitlines()[2:]] == [["ci", "write"], ["ops", "admin"]]
        listed = await asyncio.to_thread(as_json, data_dir, "token", "list")
        assert [(t["name"], t["state"]) for t in listed["tokens"]] == [("ci", "active"), ("ops", "active")]
        assert set(listed["tokens"][0]) == {
            "token_id", "name", "role", "workspaces", "state", "created_at", "expires_at", "revoked_at", "last_used_at",
            "client_id",
        }  # fmt: skip
        assert listed["tokens"][0]["client_id"] is None  # made by a person, not granted to an OAuth client
        for secret in (token, made["token"]):
            assert secret not in table and secret.split("_", 2)[2] not in json.dumps(listed)

        # bad input: one line naming the flag, exit 2, before the store is opened; nothing changed
        for args, message in [
            (["--name", "x", "--role", "read"], "--workspace: name at least one workspace, or set --all to grant"),
            (["--name", "x", "--role", "root", "--all"], "--role: input should be 'read', 'write' or 'admin'"),
            (["--name", "my token", "--role", "read", "--all"], "--name: must be 1-64 letters, digits"),
            (["--name", "x", "--role", "read", "--all", "--expires", "tomorrow"], "--expires: must be a duration"),
            (["--name", "x", "--role", "read", "--all", "--expires", "2020-01-01"], "--expires: must be in the future"),
            (["--name", "x", "--role", "read", "--workspace", "Team"], "--workspace: must be 1-63 lowercase letters"),
            (["--name", "x", "--role", "read", "--workspace", "a", "--all"], "--workspace: not with --all"),
            (["--role", "read", "--all"], "--name: required"),
            (["--name", "x", "--role", "read", "--all", "--expires", "-5m"], "--expires: must be a duration"),
        ]:
            stderr = await asyncio.to_thread(refused, data_dir, "token", "create", *args)
            assert stderr.startswith(f"zapomni token create: {message}") and stderr.count("\n") == 1, (args, stderr)
        taken = await asyncio.to_thread(refused, data_dir, "token", "create", "--name", "ci", "--all", "--role", "read",
                                        code=1)  # fmt: skip
        assert taken.startswith("zapomni token create: --name: a token named 'ci' exists and still works"), taken
        assert [t.name for t in (await core.access.list()).tokens] == ["ci", "ops"]

        # what the command logs, even at INFO, holds no token
        logged = await asyncio.to_thread(
            zapomni, data_dir, "token", "create", "--name", "logged", "--all", "--role", "read", "--verbose"
        )
        assert logged.returncode == 0, logged.stderr
        third = TOKEN.search(logged.stdout)
        assert third is not None
        events = [json.loads(line)["event"] for line in logged.stderr.splitlines()]
        assert "access.token_created" in events
        assert third.group(1) not in logged.stderr and third.group(1).split("_", 2)[2] not in logged.stderr

        # revoke: by name; this process refuses the token at once
        revoked = (await asyncio.to_thread(ok, data_dir, "token", "revoke", "ci")).stdout
        assert revoked == (f"Revoked token 'ci' (id {grant.token_id}): it stops working at once, on every server.\n")
        assert await core.access.verify(token) is None
        assert await core.access.verify(made["token"]) is not None
        again = (await asyncio.to_thread(ok, data_dir, "token", "revoke", grant.token_id)).stdout
        assert again.startswith(f"Token 'ci' (id {grant.token_id}) was already revoked at 20")
        by_name = await asyncio.to_thread(zapomni, data_dir, "token", "revoke", "ci")  # a second time, by name
        assert by_name.returncode == 0 and by_name.stdout.startswith(f"Token 'ci' (id {grant.token_id}) was already")
        assert (await asyncio.to_thread(refused, data_dir, "token", "revoke", "nobody", code=1)) == (
            "zapomni token revoke: NAME_OR_ID: no token has the id or the name 'nobody'\n"
        )
        assert (await asyncio.to_thread(refused, data_dir, "token", "revoke", "my token")).startswith(
            "zapomni token revoke: NAME_OR_ID: must be a token's name"
        )


def test_a_token_of_minutes_is_listed_with_the_minute_it_expires(data_dir: Path) -> None:
    ok(data_dir, "token", "create", "--name", "brief", "--all", "--role", "read", "--expires", "5m")
    ok(data_dir, "token", "create", "--name", "month", "--all", "--role", "read", "--expires", "30d")
    rows = {line.split()[1]: line for line in ok(data_dir, "token", "list").stdout.splitlines()[2:]}
    assert re.search(r" 20\d\d-\d\d-\d\d \d\d:\d\d ", rows["brief"]), rows  # a day would hide it
    assert re.search(r" 20\d\d-\d\d-\d\d +never", rows["month"]), rows  # far off: the day is enough


def test_a_data_directory_other_users_can_open_is_named_with_the_fix(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    result = zapomni(shared, "migrate", "status")  # an operator command: it shows warnings
    assert result.returncode == 0, result.stderr
    (warning,) = [json.loads(line) for line in result.stderr.splitlines() if "data_dir_open_to_others" in line]
    assert warning["mode"] == "0o777" and warning["fix"].startswith(f"chmod 700 {shared}")
