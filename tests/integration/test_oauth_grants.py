"""OAuth's state on a real embedded FalkorDB, through `core.oauth`: what the HTTP tests cannot wait for (a code or an
access token running out, a registration left unused) and what no client should be able to get (more than it
asked for or the person holds, more clients than the cap)."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Iterator

import pytest

from zapomni_core import CreateTokenRequest, Grant, OAuthRefused, ZapomniCore
from zapomni_core.access.oauth import OAuthPolicy

pytestmark = pytest.mark.anyio


@pytest.fixture
def policy(core: ZapomniCore) -> Iterator[OAuthPolicy]:
    """Short lifetimes and a small cap for one test; the engine's own policy back afterwards."""
    kept = core.oauth.policy
    core.oauth.policy = OAuthPolicy(access_ttl_s=1.0, code_ttl_s=0.5, max_clients=2, unused_client_ttl_s=1.0)
    yield core.oauth.policy
    core.oauth.policy = kept


async def signer(core: ZapomniCore, role: str = "admin") -> Grant:
    name = f"signer-{role}-{secrets.token_hex(3)}"
    request = CreateTokenRequest.model_validate({"name": name, "role": role, "all_workspaces": True})
    made = await core.access.create(request)
    grant = await core.access.verify(made.token)
    assert grant is not None
    return grant


async def asked(core: ZapomniCore, client_id: str, role: str | None = "write") -> str:
    return await core.oauth.await_consent(
        client_id, redirect_uri="http://127.0.0.1:9/cb", redirect_explicit=True, code_challenge="x" * 43,
        state="s", role=role, resource="https://memory.example/mcp",  # type: ignore[arg-type]  # a Role or None
    )  # fmt: skip


async def test_registrations_are_capped_and_unused_ones_expire(core: ZapomniCore, policy: OAuthPolicy) -> None:
    await core.oauth.register("a", "A", "{}")
    await core.oauth.register("b", "B", "{}")
    with pytest.raises(OAuthRefused, match="limit") as refused:
        await core.oauth.register("c", "C", "{}")
    assert refused.value.error == "invalid_client_metadata"
    await asyncio.sleep(policy.unused_client_ttl_s + 0.2)
    assert await core.oauth.client("a") is None  # never granted anything: gone
    await core.oauth.register("c", "C", "{}")
    assert (await core.oauth.client("c")) is not None


async def test_a_code_runs_out_and_an_access_token_before_its_grant(core: ZapomniCore, policy: OAuthPolicy) -> None:
    await core.oauth.register("app", "App", "{}")
    _, late = await core.oauth.allow(await asked(core, "app"), await signer(core), "write", None)
    await asyncio.sleep(policy.code_ttl_s + 0.2)
    with pytest.raises(OAuthRefused, match="expired"):
        await core.oauth.exchange(late)
    _, code = await core.oauth.allow(await asked(core, "app"), await signer(core, "write"), "read", None)
    issued = await core.oauth.exchange(code)
    assert (await core.access.verify(issued.access_token)) is not None
    await asyncio.sleep(policy.access_ttl_s + 0.2)
    assert (await core.access.verify(issued.access_token)) is None  # the access token ended, the grant did not
    holder = await core.oauth.holder(issued.refresh_token)
    assert holder is not None
    fresh = await core.oauth.refresh(issued.refresh_token, holder)
    grant = await core.access.verify(fresh.access_token)
    assert grant is not None and grant.role == "read" and grant.workspaces is None


async def test_consent_grants_no_more_than_asked_or_held(core: ZapomniCore) -> None:
    await core.oauth.register("app2", "App 2", "{}")
    pending = await asked(core, "app2", role="read")
    with pytest.raises(OAuthRefused, match="more than the client asked"):
        await core.oauth.allow(pending, await signer(core), "write", None)
    reader = await signer(core, "read")
    with pytest.raises(OAuthRefused, match="needs role write"):
        await core.oauth.allow(pending, reader, "read", None)
    taken, _ = await core.oauth.allow(pending, await signer(core, "write"), "read", frozenset({"default"}))
    with pytest.raises(OAuthRefused, match="unknown, answered or expired"):  # answered once only
        await core.oauth.allow(taken.id, await signer(core, "write"), "read", None)
