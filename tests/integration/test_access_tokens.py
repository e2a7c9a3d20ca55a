"""Access tokens on a real embedded FalkorDB: create, verify, list, revoke and expire, across engines, and
what is stored (a hash, never the token) where no workspace listing, export or backup mistakes it for a workspace."""

from __future__ import annotations

import asyncio
import io
import json
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.helpers import graph_client, logged_events, open_core
from zapomni_core import (
    Conflict,
    CreatedToken,
    CreateTokenRequest,
    NotFound,
    RevokeTokenRequest,
    Settings,
    ZapomniCore,
)
from zapomni_core.access.tokens import digest
from zapomni_core.memories.requests import AddMemoryRequest
from zapomni_core.workspaces.requests import StatsRequest
from zapomni_db import access_graph
from zapomni_ops.backups import make_backup, restore_backup

pytestmark = pytest.mark.anyio


def request(name: str = "ci", **fields: object) -> CreateTokenRequest:
    return CreateTokenRequest.model_validate({"name": name, "role": "write", "workspaces": ["default"], **fields})


async def states(core: ZapomniCore) -> dict[str, str]:
    return {info.token_id: info.state for info in (await core.access.list()).tokens}


async def test_a_created_token_verifies_to_its_grant_and_nothing_else_does(core: ZapomniCore) -> None:
    created = await core.access.create(request(workspaces=["notes", "default"], expires="30d"))
    grant = await core.access.verify(created.token)
    assert grant is not None and grant.token_id == created.info.token_id and grant.name == "ci"
    assert grant.role == "write" and grant.workspaces == frozenset({"default", "notes"})
    assert grant.expires_at is not None and abs(grant.expires_at - (time.time() + 30 * 86400)) < 60
    assert grant.refusal("write", "notes") is None and grant.refusal("admin", "notes") is not None

    prefix, token_id, secret = created.token.split("_", 2)
    other_secret = ("A" if secret[0] != "A" else "B") + secret[1:]
    for presented in [
        f"{prefix}_{token_id}_{other_secret}",  # the right id with a wrong secret
        f"{prefix}_{'0' * 12}_{secret}",  # an id nobody has
        created.token[:-1],  # malformed
        created.token + " ",
        "",
    ]:
        assert await core.access.verify(presented) is None, presented

    every = await core.access.create(request("ops", role="admin", all_workspaces=True, workspaces=[]))
    assert every.info.workspaces is None
    ops = await core.access.verify(every.token)
    assert ops is not None and ops.workspaces is None and ops.refusal("admin", None) is None


async def test_list_shows_every_token_and_its_state_never_a_secret_or_hash(core: ZapomniCore) -> None:
    kept = await core.access.create(request("kept"))
    gone = await core.access.create(request("gone", role="read"))
    revoked = await core.access.revoke(RevokeTokenRequest(name_or_id="gone"))
    assert revoked.info.token_id == gone.info.token_id and not revoked.already_revoked
    listing = await core.access.list()
    shown = [(t.name, t.role, t.state) for t in listing.tokens]
    assert shown == [("kept", "write", "active"), ("gone", "read", "revoked")]
    assert listing.tokens[1].revoked_at is not None and listing.tokens[0].revoked_at is None
    dumped = listing.model_dump_json()
    for created in (kept, gone):
        assert created.token not in dumped and digest(created.token) not in dumped
        assert created.token.split("_", 2)[2] not in dumped


async def test_a_revoked_token_stops_at_once_and_revoking_again_changes_nothing(core: ZapomniCore) -> None:
    created = await core.access.create(request())
    assert await core.access.verify(created.token) is not None
    first = await core.access.revoke(RevokeTokenRequest(name_or_id=created.info.token_id))
    assert first.info.state == "revoked" and not first.already_revoked
    assert await core.access.verify(created.token) is None
    again = await core.access.revoke(RevokeTokenRequest(name_or_id=created.info.token_id))
    assert again.already_revoked and again.info.revoked_at == first.info.revoked_at
    # By name too: a name whose tokens are all revoked says so, as the id does (it was an error, exit 1).
    by_name = await core.access.revoke(RevokeTokenRequest(name_or_id="ci"))
    assert by_name.already_revoked and by_name.info.token_id == created.info.token_id
    reborn = await core.access.create(request())  # the name is free again; the token's own text names it too
    assert (await core.access.revoke(RevokeTokenRequest(name_or_id=reborn.token))).info.token_id == reborn.info.token_id
    newest = await core.access.revoke(RevokeTokenRequest(name_or_id="ci"))  # of two revoked, the newest
    assert newest.already_revoked and newest.info.token_id == reborn.info.token_id
    with pytest.raises(NotFound, match="no token has the id or the name 'nobody'"):
        await core.access.revoke(RevokeTokenRequest(name_or_id="nobody"))


async def test_a_name_belongs_to_one_working_token(core: ZapomniCore) -> None:
    await core.access.create(request())
    with pytest.raises(Conflict, match="name: a token named 'ci' exists and still works"):
        await core.access.create(request(role="admin"))
    assert [t.name for t in (await core.access.list()).tokens] == ["ci"]  # the refused one stored nothing


async def test_an_expired_token_stops_and_its_name_is_free_again(core: ZapomniCore) -> None:
    soon = (datetime.now(UTC) + timedelta(seconds=3)).isoformat()
    created = await core.access.create(request(expires=soon))
    assert await core.access.verify(created.token) is not None
    deadline = time.monotonic() + 15
    while await core.access.verify(created.token) is not None:
        assert time.monotonic() < deadline, "the token outlived its expiry"
        await asyncio.sleep(0.2)
    assert await states(core) == {created.info.token_id: "expired"}
    successor = await core.access.create(request())
    assert await core.access.verify(successor.token) is not None
    # Revoking by name finds the one that works, not the expired one.
    revoked = await core.access.revoke(RevokeTokenRequest(name_or_id="ci"))
    assert revoked.info.token_id == successor.info.token_id


async def test_a_token_records_its_last_use_once_not_on_every_request(core: ZapomniCore) -> None:
    created = await core.access.create(request())
    assert created.info.last_used_at is None
    await core.access.verify(created.token)
    first = (await core.access.list()).tokens[0].last_used_at
    assert first is not None
    await core.access.verify(created.token)
    assert (await core.access.list()).tokens[0].last_used_at == first


async def test_two_engines_on_one_store_see_a_revocation_at_once(settings: Settings) -> None:
    async with open_core(settings) as (first, _info), open_core(settings) as (second, _other):
        created = await first.access.create(request())
        assert await second.access.verify(created.token) is not None
        await first.access.revoke(RevokeTokenRequest(name_or_id="ci"))
        assert await second.access.verify(created.token) is None

        # Two engines creating one name at once: FalkorDB runs one write at a time, so exactly one wins.
        outcomes = await asyncio.gather(
            first.access.create(request("twin")), second.access.create(request("twin")), return_exceptions=True
        )
        assert sorted(type(outcome).__name__ for outcome in outcomes) == ["Conflict", "CreatedToken"], outcomes


@pytest.mark.own_database
async def test_the_store_and_the_logs_hold_no_token(settings: Settings, data_dir: Path) -> None:
    with logged_events() as events:
        async with open_core(settings) as (core, _info):
            created: list[CreatedToken] = [await core.access.create(request(name)) for name in ("a", "b")]
            for made in created:
                assert await core.access.verify(made.token) is not None
            await core.access.revoke(RevokeTokenRequest(name_or_id=created[0].token))
            async with graph_client(data_dir, access_graph(settings.graph_name)) as client:
                rows = await client.ro_query("MATCH (n) RETURN labels(n), properties(n)")
    assert [labels for labels, _properties in rows] == [["Token"], ["Token"]]
    stored = json.dumps([properties for _labels, properties in rows])
    logged = json.dumps(events, default=str)
    assert any(event["event"] == "access.token_created" for event in events)
    # What the database wrote to disk (its append-only file and snapshot) holds each token's hash, never its text.
    on_disk = b"".join(path.read_bytes() for path in data_dir.rglob("*") if path.is_file() and "db" in path.parts)
    for made in created:
        secret = made.token.split("_", 2)[2]
        assert digest(made.token) in stored and digest(made.token).encode() in on_disk
        for text in (made.token, secret):
            assert text not in stored and text not in logged and text.encode() not in on_disk


@pytest.mark.own_database
async def test_no_listing_export_or_backup_takes_the_tokens_for_a_workspace(settings: Settings) -> None:
    async with open_core(settings) as (core, _info):
        created = await core.access.create(request(workspaces=["notes"]))
        await core.memories.add(AddMemoryRequest(text="The notes workspace exists.", workspace="notes"))
        assert [w.name for w in (await core.workspaces.list()).workspaces] == ["default", "notes"]
        assert (await core.workspaces.stats(StatsRequest())).workspaces == 2
        exported = io.StringIO()
        await core.transfer.export_to(exported)
        lines = [json.loads(line) for line in exported.getvalue().splitlines()]
        assert {line["workspace"] for line in lines if "workspace" in line} == {"notes"}
        assert "#access" not in exported.getvalue() and "Token" not in exported.getvalue()
    backup = make_backup(settings).result
    assert backup.verified and backup.manifest.state.counts.memories == 0  # the default workspace's counts

    # A restore brings back the tokens as they were at the backup: one revoked since works again.
    async with open_core(settings) as (core, _info):
        await core.access.revoke(RevokeTokenRequest(name_or_id="ci"))
        assert await core.access.verify(created.token) is None
    restore_backup(settings, backup.path.name)
    async with open_core(settings) as (core, _info):
        assert [w.name for w in (await core.workspaces.list()).workspaces] == ["default", "notes"]
        assert await core.access.verify(created.token) is not None
        assert [t.state for t in (await core.access.list()).tokens] == ["active"]
