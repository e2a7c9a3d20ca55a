"""Signing in with OAuth end to end: the official SDK's OAuth client against `zapomni serve --http --oauth` over
TLS on 127.0.0.1, the consent page answered in headless Chromium (Debian's, driven by playwright); then the
attacks the RFCs name, each refused with the RFC's error and nothing done.

One server (and a second replica on the same data directory) for the module. The attacks drive the flow with a
plain HTTP client: registration, the authorization request, the console's sign-in and consent form, the token
endpoint, as a client and a person would, without a browser.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import re
import secrets
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import httpx2
import pytest
from mcp import ClientSession
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider, TokenStorage
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

from tests.certificates import self_signed
from tests.cli_in_process import run_cli
from tests.helpers import free_port, graph_client
from tests.processes import HttpServer, call, create_token, http_server, server_env
from zapomni_core.access.tokens import digest
from zapomni_db.access import access_graph

pytestmark = pytest.mark.anyio
CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]
FACT = "The falcon project's launch review moved to Thursdays at 10:00."
# Every code, access and refresh token the module saw issued: none may appear in the server's log.
ISSUED: list[str] = []


@dataclass
class Store:
    data_dir: Path
    env: dict[str, str]
    admin: str
    reader: str
    alpha_writer: str  # write in workspace alpha only


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    data_dir = tmp_path_factory.mktemp("oauth-data")
    env = server_env(data_dir)
    made = run_cli(["token", "create", "--name", "alpha-writer", "--role", "write", "--workspace", "alpha"], env)
    assert made.returncode == 0, made.stderr
    alpha = next(line.strip() for line in (made.stdout + made.stderr).splitlines() if line.startswith("zap_"))
    return Store(data_dir, env, create_token(env, "oauth-admin", "admin"), create_token(env, "oauth-reader", "read"),
                 alpha)  # fmt: skip


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return self_signed(tmp_path_factory.mktemp("oauth-tls"))


@pytest.fixture(scope="module")
def server(store: Store, tls: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    log = tmp_path_factory.mktemp("oauth-logs") / "serve.err"
    with http_server(store.data_dir, log, tls=tls, args=("--oauth",)) as running:
        yield running
    written = log.read_text()
    assert not ISSUED or '"event": "oauth.granted"' in written  # the log was written, and names grants
    # A token's secret part (after `zap_<id>_`) as well as the whole: the id alone is logged, and may be.
    leaked = [s for s in ISSUED if s in written or (s.startswith(("zap_", "zapr_")) and s.split("_", 2)[2] in written)]
    assert leaked == [], "secrets in the server's log"


def challenge_of(verifier: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")


@dataclass
class Flow:
    """A client and a person, over plain HTTP: what the SDK client and a browser send, one step at a time."""

    server: HttpServer
    callback: str = field(default_factory=lambda: f"http://127.0.0.1:{free_port()}/callback")

    def __post_init__(self) -> None:
        self.http = httpx.Client(base_url=self.server.base, verify=self.server.verify, timeout=30)
        self.signed_in: str | None = None  # the token of the console session held (sign-ins are rate-limited)

    def sign_in(self, token: str, path: str) -> None:
        if token != self.signed_in:
            signed_in = self.http.post("/login", data={"token": token, "next": path})
            assert signed_in.status_code == 303, signed_in.text
            self.signed_in = token

    def register(self, name: str = "Attack Test", redirects: list[str] | None = None) -> dict[str, Any]:
        metadata = {
            "client_name": name, "redirect_uris": redirects or [self.callback], "token_endpoint_auth_method": "none",
            "grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"],
            "scope": "read write admin",
        }  # fmt: skip
        response = self.http.post("/register", json=metadata)
        assert response.status_code == 201, response.text
        return dict(response.json())

    def authorize(self, client_id: str, verifier: str, **overrides: str) -> httpx.Response:
        params = {
            "response_type": "code", "client_id": client_id, "redirect_uri": self.callback,
            "code_challenge": challenge_of(verifier), "code_challenge_method": "S256", "state": "st-1",
            "scope": "write", "resource": self.server.url, **overrides,
        }  # fmt: skip
        return self.http.get("/authorize", params=params)

    def consent(self, consent_url: str, token: str, **form: str | list[str]) -> httpx.Response:
        """Sign in to the console with `token`, then answer the consent page with `form` (allow, write, default)."""
        path = urlsplit(consent_url).path
        self.sign_in(token, path)
        page = self.http.get(path)
        assert page.status_code == 200, page.text
        csrf = re.search(r'name="csrf_token" value="([^"]+)"', page.text)
        assert csrf is not None
        answer = {
            "csrf_token": csrf.group(1),
            "decision": "allow",
            "role": "write",
            "grant_workspace": ["default"],
            **form,
        }
        return self.http.post(path, data=answer)

    def code(self, client_id: str, verifier: str, token: str, **form: str | list[str]) -> str:
        asked = self.authorize(client_id, verifier)
        assert asked.status_code == 302, asked.text
        answered = self.consent(asked.headers["location"], token, **form)
        assert answered.status_code == 303, answered.text
        query = parse_qs(urlsplit(answered.headers["location"]).query)
        assert query["state"] == ["st-1"]
        ISSUED.append(query["code"][0])
        return query["code"][0]

    def token(self, **form: str) -> httpx.Response:
        answer = self.http.post("/token", data=form)
        if answer.status_code == 200:
            ISSUED.extend([answer.json()["access_token"], answer.json()["refresh_token"]])
        return answer

    def tokens(self, client_id: str, token: str = "", **consent: str | list[str]) -> dict[str, Any]:
        verifier = secrets.token_urlsafe(48)
        code = self.code(client_id, verifier, token, **consent)
        issued = self.token(grant_type="authorization_code", code=code, code_verifier=verifier, client_id=client_id,
                            redirect_uri=self.callback)  # fmt: skip
        assert issued.status_code == 200, issued.text
        return dict(issued.json())


def rpc(server: HttpServer, token: str, tool: str, arguments: dict[str, Any]) -> httpx.Response:
    """One tool call over raw HTTP with a bearer token (what an agent's client sends)."""
    return server.post(
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}, token
    )


def tool_error(response: httpx.Response) -> str | None:
    """The refusal a tool call met (HTTP or in the tool's result), None when it succeeded."""
    if response.status_code != 200:
        return f"{response.status_code} {response.text}"
    body = response.text
    payload = json.loads(body[body.index("{") :] if not body.startswith("{") else body)
    result = payload.get("result", {})
    return json.dumps(result) if result.get("isError") or "error" in payload else None


# -- the official client, a person in a browser --------------------------------------------------------------


class MemoryTokens(TokenStorage):
    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


def consent_in_chromium(url: str, token: str, callback: str, shots: Path) -> str:
    """Open the authorization URL as the person would, sign in, allow; the URL the browser was sent back to."""
    playwright_api = pytest.importorskip("playwright.sync_api")
    with playwright_api.sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            page = browser.new_context(ignore_https_errors=True).new_page()
            page.route(f"{callback}**", lambda route: route.fulfill(status=200, body="signed in"))
            page.goto(url)
            page.fill("#token", token)
            page.click("form[action='/login'] button")
            page.wait_for_selector("#allow")
            page.screenshot(path=str(shots / "consent.png"), full_page=True)
            assert page.inner_text("#client-name") == "Test Assistant"
            page.click("#allow")
            page.wait_for_url(f"{callback}**")
            return str(page.url)
        finally:
            browser.close()


@pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian's chromium is missing: run ops/setup-chromium")
async def test_the_sdk_client_signs_in_through_the_console_and_works_with_its_grant(
    server: HttpServer, store: Store, tls: tuple[Path, Path], tmp_path: Path
) -> None:
    callback = f"http://127.0.0.1:{free_port()}/callback"
    opened: list[str] = []
    storage = MemoryTokens()

    async def redirect(url: str) -> None:
        opened.append(url)

    async def come_back() -> AuthorizationCodeResult:
        landed = await asyncio.to_thread(consent_in_chromium, opened[-1], store.admin, callback, tmp_path)
        query = parse_qs(urlsplit(landed).query)
        return AuthorizationCodeResult(code=query["code"][0], state=query["state"][0])

    metadata = OAuthClientMetadata.model_validate(
        {"client_name": "Test Assistant", "redirect_uris": [callback], "response_types": ["code"],
         "grant_types": ["authorization_code", "refresh_token"], "token_endpoint_auth_method": "none", "scope": "write"}
    )  # fmt: skip
    auth = OAuthClientProvider(server.url, metadata, storage, redirect, come_back)
    async with (
        httpx2.AsyncClient(auth=auth, verify=server.verify, timeout=httpx2.Timeout(30, read=120)) as client,
        streamable_http_client(server.url, http_client=client) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.discover()
        added = await call(session, "add_memory", {"text": FACT})
        found = await call(session, "search_memory", {"query": "when is the falcon launch review?"})
    assert found["results"][0]["memory_id"] == added["memory_id"]
    assert len(opened) == 1 and urlsplit(opened[0]).path == "/authorize"
    assert storage.tokens is not None and storage.tokens.refresh_token is not None and storage.client is not None
    client_id = storage.client.client_id
    ISSUED.extend([storage.tokens.access_token, storage.tokens.refresh_token])

    # The grant is a Zapomni token: listed with its client, refreshed, revoked like any other.
    listed = json.loads(run_cli(["token", "list", "--json"], store.env).stdout)["tokens"]
    (grant,) = [t for t in listed if t["client_id"] == client_id]
    assert grant["name"].startswith("oauth-Test-Assistant-") and grant["role"] == "write"
    assert grant["workspaces"] == ["default"] and grant["state"] == "active"

    flow = Flow(server)
    # Closed before the server stops: over TLS an idle kept-alive connection holds its stop for 30 s.
    with flow.http:
        old_access = storage.tokens.access_token
        refreshed = flow.token(grant_type="refresh_token", refresh_token=storage.tokens.refresh_token,
                               client_id=client_id)  # fmt: skip
        assert refreshed.status_code == 200, refreshed.text
        new_access = refreshed.json()["access_token"]
        assert tool_error(rpc(server, new_access, "search_memory", {"query": "falcon"})) is None
        assert rpc(server, old_access, "search_memory", {"query": "falcon"}).status_code == 401  # replaced

        with http_server(store.data_dir, tmp_path / "replica.err", tls=tls, args=("--oauth",)) as replica:
            assert tool_error(rpc(replica, new_access, "search_memory", {"query": "falcon"})) is None
            revoked = run_cli(["token", "revoke", grant["name"]], store.env)
            assert revoked.returncode == 0, revoked.stderr
            assert rpc(server, new_access, "search_memory", {"query": "falcon"}).status_code == 401
            assert rpc(replica, new_access, "search_memory", {"query": "falcon"}).status_code == 401
        again = flow.token(grant_type="refresh_token", refresh_token=refreshed.json()["refresh_token"],
                           client_id=client_id)  # fmt: skip
        assert again.status_code == 400 and again.json()["error"] == "invalid_grant"


# -- attacks ------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def flow(server: HttpServer) -> Iterator[Flow]:
    flow = Flow(server)
    with flow.http:  # its kept-alive connections closed before the server stops (it would wait for them)
        yield flow


@pytest.fixture(scope="module")
def client_id(flow: Flow) -> str:
    return str(flow.register()["client_id"])


def refused(response: httpx.Response, status: int, error: str) -> None:
    assert response.status_code == status, response.text
    assert response.json()["error"] == error, response.text


def test_a_wrong_or_missing_pkce_verifier_gets_no_token(flow: Flow, client_id: str, store: Store) -> None:
    verifier = secrets.token_urlsafe(48)
    code = flow.code(client_id, verifier, store.admin)
    exchange = {"grant_type": "authorization_code", "code": code, "client_id": client_id, "redirect_uri": flow.callback}
    refused(flow.token(**exchange, code_verifier=secrets.token_urlsafe(48)), 400, "invalid_grant")
    refused(flow.token(**exchange), 400, "invalid_request")
    assert flow.token(**exchange, code_verifier=verifier).status_code == 200  # the code was not spent by them


def test_a_code_works_once(flow: Flow, client_id: str, store: Store) -> None:
    verifier = secrets.token_urlsafe(48)
    code = flow.code(client_id, verifier, store.admin)
    exchange = {"grant_type": "authorization_code", "code": code, "client_id": client_id,
                "redirect_uri": flow.callback, "code_verifier": verifier}  # fmt: skip
    first = flow.token(**exchange)
    assert first.status_code == 200
    assert tool_error(rpc(flow.server, first.json()["access_token"], "search_memory", {"query": "x"})) is None
    refused(flow.token(**exchange), 400, "invalid_grant")
    # Presented again, the code ends the grant it gave (RFC 6749 4.1.2): its holder or a thief has a copy.
    assert rpc(flow.server, first.json()["access_token"], "search_memory", {"query": "x"}).status_code == 401


async def test_an_expired_code_gets_no_token(flow: Flow, client_id: str, store: Store) -> None:
    verifier = secrets.token_urlsafe(48)
    code = flow.code(client_id, verifier, store.admin)
    grants = "MATCH (t:Token {client_id: $c}) RETURN count(t)"
    async with graph_client(
        store.data_dir, access_graph("zapomni")
    ) as graph:  # the code's five minutes pass, in the store every replica reads
        before = (await graph.ro_query(grants, {"c": client_id}))[0][0]
        aged = "MATCH (k:OAuthCode {code_hash: $h}) SET k.expires_at = k.expires_at - 301 RETURN count(k)"
        assert (await graph.query(aged, {"h": digest(code)}))[0][0] == 1
    exchange = {"grant_type": "authorization_code", "code": code, "client_id": client_id,
                "redirect_uri": flow.callback, "code_verifier": verifier}  # fmt: skip
    refused(flow.token(**exchange), 400, "invalid_grant")
    async with graph_client(store.data_dir, access_graph("zapomni")) as graph:
        assert (await graph.ro_query(grants, {"c": client_id}))[0][0] == before


def test_a_redirect_uri_differing_by_a_path_or_a_port_is_never_redirected_to(flow: Flow, client_id: str) -> None:
    parts = urlsplit(flow.callback)
    for other in (f"http://127.0.0.1:{parts.port}/elsewhere", f"http://127.0.0.1:{free_port()}/callback"):
        asked = flow.authorize(client_id, secrets.token_urlsafe(48), redirect_uri=other)
        assert asked.status_code == 400 and "location" not in asked.headers, asked.text
        assert asked.json()["error"] == "invalid_request"


def test_no_state_or_another_resource_is_refused_before_consent(flow: Flow, client_id: str) -> None:
    other_resource = {"resource": "https://other.example/mcp"}
    for overrides, error in (({"state": ""}, "invalid_request"), (other_resource, "invalid_target")):
        asked = flow.authorize(client_id, secrets.token_urlsafe(48), **overrides)
        assert asked.status_code == 302, asked.text
        answer = parse_qs(urlsplit(asked.headers["location"]).query)
        assert answer["error"] == [error] and "code" not in answer


def test_a_refresh_token_replayed_after_rotation_ends_the_grant(flow: Flow, client_id: str, store: Store) -> None:
    first = flow.tokens(client_id, store.admin)
    rotated = flow.token(grant_type="refresh_token", refresh_token=first["refresh_token"], client_id=client_id)
    assert rotated.status_code == 200, rotated.text
    assert tool_error(rpc(flow.server, rotated.json()["access_token"], "search_memory", {"query": "x"})) is None
    replayed = flow.token(grant_type="refresh_token", refresh_token=first["refresh_token"], client_id=client_id)
    refused(replayed, 400, "invalid_grant")
    # The thief's replay ended the grant for the holder too: its new tokens no longer work.
    assert rpc(flow.server, rotated.json()["access_token"], "search_memory", {"query": "x"}).status_code == 401
    newest = flow.token(grant_type="refresh_token", refresh_token=rotated.json()["refresh_token"], client_id=client_id)
    refused(newest, 400, "invalid_grant")


def test_a_read_grant_cannot_write_and_a_grant_for_one_workspace_cannot_touch_another(
    flow: Flow, client_id: str, store: Store
) -> None:
    reader = flow.tokens(client_id, store.admin, role="read")["access_token"]
    assert tool_error(rpc(flow.server, reader, "search_memory", {"query": "falcon"})) is None
    assert "write" in str(tool_error(rpc(flow.server, reader, "add_memory", {"text": "sneaky"})))
    alpha = flow.tokens(client_id, store.admin, grant_workspace=["alpha"])["access_token"]
    assert tool_error(rpc(flow.server, alpha, "add_memory", {"text": "in alpha", "workspace": "alpha"})) is None
    assert "alpha" in str(tool_error(rpc(flow.server, alpha, "add_memory", {"text": "x", "workspace": "beta"})))


def test_a_signer_grants_no_more_than_it_holds(flow: Flow, client_id: str, store: Store) -> None:
    verifier = secrets.token_urlsafe(48)
    asked = flow.authorize(client_id, verifier)
    beyond = flow.consent(asked.headers["location"], store.alpha_writer, grant_workspace=["alpha", "default"])
    assert beyond.status_code == 403 and "only its workspaces" in beyond.text
    admin_role = flow.consent(asked.headers["location"], store.alpha_writer, role="admin", grant_workspace=["alpha"])
    assert admin_role.status_code == 403
    path = urlsplit(flow.authorize(client_id, verifier).headers["location"]).path
    flow.sign_in(store.reader, path)
    assert flow.http.get(path).status_code == 403  # a read token may not grant anything


def test_consent_posted_from_another_origin_is_refused(flow: Flow, client_id: str, store: Store) -> None:
    asked = flow.authorize(client_id, secrets.token_urlsafe(48))
    path = urlsplit(asked.headers["location"]).path
    flow.sign_in(store.admin, path)
    page = flow.http.get(path)
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', page.text)
    assert csrf is not None
    form = {"csrf_token": csrf.group(1), "decision": "allow", "role": "write", "grant_workspace": "default"}
    forged = flow.http.post(path, data=form, headers={"Origin": "https://evil.example"})
    assert forged.status_code == 403 and "location" not in forged.headers
    without_proof = flow.http.post(path, data={**form, "csrf_token": "guess"})
    assert without_proof.status_code == 400
    assert flow.http.post(path, data=form).status_code == 303  # still unanswered: the person's own answer works


def test_the_metadata_names_this_server_and_its_routes_check_the_host(flow: Flow) -> None:
    resource = flow.http.get("/.well-known/oauth-protected-resource/mcp").json()
    issuer = f"{flow.server.base}/"  # as the SDK writes it: clients compare the two exactly
    assert resource["authorization_servers"] == [issuer] and resource["resource"] == flow.server.url
    for path in ("/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"):
        metadata = flow.http.get(path).json()
        assert metadata["issuer"] == issuer and metadata["code_challenge_methods_supported"] == ["S256"]
    assert flow.http.post("/register", json={}, headers={"Host": "evil.example"}).status_code == 421


def test_a_registration_flood_is_slowed_and_bad_redirects_refused(flow: Flow) -> None:
    plain = flow.http.post("/register", json={"client_name": "x", "redirect_uris": ["http://evil.example/cb"]})
    assert plain.status_code == 400 and plain.json()["error"] == "invalid_redirect_uri"  # http beyond the loopback
    metadata = {"client_name": "flood", "redirect_uris": ["http://127.0.0.1:9/cb"]}
    # Each naming another client in X-Forwarded-For: no proxy is trusted, so the header counts for nothing.
    answers = [
        flow.http.post("/register", json=metadata, headers={"X-Forwarded-For": f"192.0.2.{n}"}) for n in range(12)
    ]
    limited = [a for a in answers if a.status_code == 429]
    assert limited and all(a.json()["error"] == "temporarily_unavailable" and a.headers["retry-after"] for a in limited)
    assert {a.status_code for a in answers} <= {201, 429}


def test_a_denial_goes_back_to_the_client_and_ends_the_request(flow: Flow, client_id: str, store: Store) -> None:
    asked = flow.authorize(client_id, secrets.token_urlsafe(48))
    denied = flow.consent(asked.headers["location"], store.admin, decision="deny")
    assert denied.status_code == 303
    answer = parse_qs(urlsplit(denied.headers["location"]).query)
    assert answer == {"error": ["access_denied"], "state": ["st-1"]}
    assert flow.http.get(urlsplit(asked.headers["location"]).path).status_code == 404  # answered: gone


@pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian's chromium is missing: run ops/setup-chromium")
def test_a_grant_is_revoked_from_the_console(flow: Flow, client_id: str, store: Store, tmp_path: Path) -> None:
    access = flow.tokens(client_id, store.admin)["access_token"]
    grant_id = access.split("_")[1]
    playwright_api = pytest.importorskip("playwright.sync_api")
    with playwright_api.sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            page = browser.new_context(ignore_https_errors=True).new_page()
            page.goto(f"{flow.server.base}/login?next=/tokens")
            page.fill("#token", store.admin)
            page.click("form[action='/login'] button")
            row = page.locator(f"tr[data-token-id='{grant_id}']")
            assert row.get_attribute("data-state") == "active" and client_id in row.inner_text()
            page.screenshot(path=str(tmp_path / "tokens.png"), full_page=True)
            page.click(f"#revoke-{grant_id}")
            page.wait_for_selector(f"tr[data-token-id='{grant_id}'][data-state='revoked']")
        finally:
            browser.close()
    assert rpc(flow.server, access, "search_memory", {"query": "falcon"}).status_code == 401
    # Only an admin of every workspace sees the page: the store's tokens are not a workspace's business.
    flow.sign_in(store.alpha_writer, "/tokens")
    assert flow.http.get("/tokens").status_code == 403
