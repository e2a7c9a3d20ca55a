"""The web console in a real headless Chromium (Debian's, driven by playwright), served at `/` of `zapomni serve
--http` (one test signs in to `zapomni console` too).

One server and one browser for the module; memories go in through the MCP server and come back out through
it, so the console is checked against the API, not against itself. Screenshots of every page land in the
test's output directory.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, ClassVar

import httpx
import pytest

from tests.cli_in_process import run_cli
from tests.processes import (
    ConsoleServer,
    HttpServer,
    call,
    create_token,
    http_server,
    http_session,
    mcp_session,
    server_env,
)

playwright_api = pytest.importorskip("playwright.sync_api")
CHROMIUM = Path("/usr/bin/chromium")
pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian's chromium is missing: run ops/setup-chromium")
ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip

NOTE = "Project Falcon kickoff: the Falcon team meets every Tuesday to review the launch checklist."
MARIA = "Maria Lopez moved to Lisbon in 2024."
TOM = "Tom Baker moved to Lisbon last spring."
HOSTILE = (
    '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2"> '
    '[click me](javascript:alert(1)) <b>bold?</b> <a href="https://example.com">a link</a>'
)
SCRATCH = ["scratch note one about parsley", "scratch note two about basil", "scratch note three about thyme"]
# A chat in a workspace of its own: a turn sent with its speaker and thread, one whose speaker (and thread) the
# server infers from `Name:`, another speaker's turn naming Caroline, a turn with a thread and no speaker; then
# two notes that name her (one behind a label, which is no speaker).
CHAT = "chat"
TURNS = [
    ("I adopted a puppy named Biscuit.", {"speaker": "Caroline", "thread": "park-chat"}),
    ("Caroline: We hiked up Mount Tam with Biscuit.", None),
    ("Melanie: Caroline, Biscuit sounds adorable!", None),
    ("The dog park was loud today.", {"thread": "park-chat"}),
    ("Lunch with Caroline on Friday at noon.", None),
    ("Note: Caroline prefers tea to coffee.", None),
]
# Added with the CLI, which is no MCP client: its speaker is inferred, and it gets no thread (decision 0023).
DANA = "Dana: The vet says Biscuit is perfectly healthy."


def mcp(data_dir: Path, *calls: tuple[str, dict[str, Any]]) -> list[Any]:
    """Call MCP tools in order through one `zapomni serve` and the official client; their structured results."""

    async def run() -> list[Any]:
        async with mcp_session(data_dir) as session:
            return [await call(session, tool, arguments) for tool, arguments in calls]

    # In a thread of its own: playwright's sync API keeps an event loop running in this one.
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, run()).result()


def tools(server: HttpServer, token: str, *calls: tuple[str, dict[str, Any]]) -> list[Any]:
    """Call MCP tools in order on the console's own server (its /mcp, with the official client): the API the
    console's pages must agree with, without a server of its own."""

    async def run() -> list[Any]:
        async with http_session(server, token) as session:
            return [await call(session, tool, arguments) for tool, arguments in calls]

    with ThreadPoolExecutor(1) as pool:  # playwright's sync API keeps an event loop running in this thread
        return pool.submit(asyncio.run, run()).result()


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    data_dir = tmp_path_factory.mktemp("console-data")
    added = mcp(
        data_dir,
        ("add_memory", {"text": NOTE, "metadata": {"tags": ["falcon"], "source": "notes/falcon.md"}}),
        ("add_memory", {"text": MARIA, "metadata": {"tags": ["people"]}}),
        ("add_memory", {"text": TOM, "metadata": {"tags": ["people"]}}),
        ("add_memory", {"text": HOSTILE, "metadata": {"tags": ["hostile"]}}),
        *[("add_memory", {"text": text, "metadata": {"tags": ["scratch"]}}) for text in SCRATCH],
        *[("add_memory", {"workspace": CHAT, "text": text, "metadata": meta}) for text, meta in TURNS],
    )
    env = server_env(data_dir)
    dana = run_cli(["add", "--workspace", CHAT, DANA, "--json"], env)
    assert dana.returncode == 0, dana.stderr
    return {
        "data_dir": data_dir,
        "ids": [reply["memory_id"] for reply in added[: -len(TURNS)]],
        "turns": [reply["memory_id"] for reply in added[-len(TURNS) :]],
        "dana": json.loads(dana.stdout)["memory_id"],
        "admin": create_token(env, "console-admin", "admin"),
        "reader": create_token(env, "console-reader", "read"),
    }


@pytest.fixture(scope="module")
def server(store: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    logs = tmp_path_factory.mktemp("console-logs")
    # The server runs the job worker: the graph is extracted there, and build_graph jobs show progress.
    with http_server(store["data_dir"], logs / "serve.err", ZAPOMNI_GRAPH_AUTO="true") as running:
        yield running


@pytest.fixture(scope="module")
def graph(server: HttpServer, store: dict[str, Any]) -> None:
    """The knowledge graph of Maria's, Tom's and the hostile memory, built by the server's job worker: the graph
    pages show it whether or not the jobs test (which builds it again, to watch) ran first."""
    (queued,) = tools(server, store["admin"], ("build_graph", {"memory_ids": store["ids"][1:4]}))
    for _ in range(4):
        (job,) = tools(server, store["admin"], ("job_status", {"job_id": queued["job_id"], "wait_s": 30}))
        if job["state"] not in ("pending", "running"):
            break
    assert job["state"] == "completed", job


@pytest.fixture(scope="module")
def site(server: HttpServer) -> str:
    """The console's address: `/` of the HTTP server."""
    return server.base


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with playwright_api.sync_playwright() as driver:
        chromium = driver.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = Path(os.environ.get("ZAPOMNI_CONSOLE_SHOTS") or tmp_path_factory.mktemp("screenshots"))
    path.mkdir(parents=True, exist_ok=True)
    return path


def until(page: Any, expression: str, timeout_s: float = 30.0) -> None:
    """Poll a page expression until it is true (wait_for_function would need eval, which the CSP forbids)."""
    deadline = time.monotonic() + timeout_s
    while not page.evaluate(expression):
        assert time.monotonic() < deadline, f"never true: {expression}"
        page.wait_for_timeout(100)


class Tab:
    """One signed-in page, with every browser console error and page error it met.

    The first tab of a token on a site signs in through the form; later ones start from its cookies, as a
    person's new tab would: sign-ins are rate-limited per address and token (10, then one per 6 s)."""

    signed_in: ClassVar[dict[tuple[str, str], Any]] = {}  # (site, token) -> the browser's storage state

    def __init__(self, browser: Any, site: str, token: str, **context: Any) -> None:
        self.base = site.rstrip("/")
        state = Tab.signed_in.get((self.base, token))
        options = {"viewport": {"width": 1440, "height": 900}} | context
        self.context = browser.new_context(**options, **({"storage_state": state} if state else {}))
        self.page = self.context.new_page()
        self.errors: list[str] = []
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.goto(self.base + "/")
        if state is not None:
            assert "/login" not in self.page.url, "the session of an earlier tab was signed out"
            return
        assert "/login" in self.page.url
        self.page.fill("#token", token)
        self.page.click("button[type=submit]")
        self.page.wait_for_url(re.compile(r"/(\?.*)?$"))
        Tab.signed_in[(self.base, token)] = self.context.storage_state()

    def go(self, path: str) -> Any:
        self.page.goto(self.base + path)
        return self.page

    def close(self) -> None:
        self.context.close()
        assert self.errors == [], self.errors


@pytest.fixture
def admin(browser: Any, site: str, store: dict[str, Any]) -> Iterator[Tab]:
    tab = Tab(browser, site, store["admin"])
    yield tab
    tab.close()


def test_a_memory_added_through_mcp_is_listed_after_sign_in(admin: Tab, shots: Path) -> None:
    page = admin.go("/")
    assert page.locator(".memory .preview", has_text="Project Falcon kickoff").count() == 1
    assert page.locator(".memory").count() == 7
    page.screenshot(path=shots / "memories-1440.png", full_page=True)


def test_a_wrong_token_is_refused(browser: Any, site: str) -> None:
    context = browser.new_context()
    page = context.new_page()
    page.goto(site + "/login")
    page.fill("#token", "zap_000000000000_not-a-token")
    page.click("button[type=submit]")
    assert "not a working token" in page.locator(".error").inner_text()
    context.close()


def test_search_shows_the_three_modes_with_the_leg_that_found_each_hit(admin: Tab, shots: Path) -> None:
    page = admin.go("/search?q=Falcon+kickoff+checklist")
    for mode in ("hybrid", "vector", "keyword"):
        column = page.locator(f'.mode[data-mode="{mode}"]')
        first = column.locator(".hit").first
        assert "Falcon" in first.locator("pre.text").inner_text()
        legs = first.locator(".leg").all_inner_texts()
        assert legs and set(legs) <= {"vector", "keyword", "graph"}
        if mode != "hybrid":
            assert mode in legs
        assert re.search(r"sim \d\.\d{3}", first.inner_text())
    page.screenshot(path=shots / "search-1440.png", full_page=True)


def test_a_hostile_memory_renders_as_inert_text(admin: Tab, store: dict[str, Any], shots: Path) -> None:
    page = admin.go(f"/memories/{store['ids'][3]}")
    text = page.locator("#memory-text")
    assert text.inner_text() == HOSTILE
    assert text.locator("script, img, a, b").count() == 0
    assert page.evaluate("window.__pwned") is None
    assert page.locator('a[href^="javascript:"]').count() == 0
    page.screenshot(path=shots / "memory-hostile.png", full_page=True)
    listing = admin.go("/?tag=hostile")
    assert listing.locator(".memory img, .memory script").count() == 0
    assert listing.evaluate("window.__pwned") is None


def test_edit_and_delete_take_effect_and_the_api_agrees(admin: Tab, store: dict[str, Any], server: HttpServer) -> None:
    memory_id = store["ids"][0]
    page = admin.go(f"/memories/{memory_id}")
    page.fill("#edit-text", NOTE + " Corrected: the meeting moved to Wednesday.")
    page.fill("textarea[aria-label='New tag']", "corrected")
    page.click("form.edit button[type=submit]")
    page.wait_for_selector("p.note")
    assert "Corrected: the meeting moved to Wednesday." in page.locator("#memory-text").inner_text()
    (got,) = tools(server, store["admin"], ("get_memory", {"memory_id": memory_id}))
    assert got["text"].endswith("Corrected: the meeting moved to Wednesday.")
    assert got["tags"] == ["falcon", "corrected"]
    page.click("details.danger summary")
    page.click("details.danger button")
    assert page.locator("#deleted-count").inner_text().startswith("1 memory deleted")
    (listed,) = tools(server, store["admin"], ("list_memories", {"filters": {"tags": ["falcon"]}}))
    assert listed["memories"] == []


def test_an_update_link_is_shown_and_undone_and_the_api_agrees(
    admin: Tab, store: dict[str, Any], server: HttpServer, shots: Path
) -> None:
    older, newer = tools(
        server, store["admin"],
        ("add_memory", {"workspace": "moves", "text": "Our office is on Baker Street.",
                        "metadata": {"date": "2026-01-10"}}),
        ("add_memory", {"workspace": "moves", "text": "We moved the office to 14 Kings Road.",
                        "metadata": {"date": "2026-03-05"}}),
    )  # fmt: skip
    assert [o["memory_id"] for o in newer["supersedes"]] == [older["memory_id"]]
    listing = admin.go("/?workspace=moves")
    badge = listing.locator(f".memory[data-memory-id='{older['memory_id']}'] .replaced")
    assert badge.inner_text() == "replaced 2026-03-05"
    page = admin.go(f"/memories/{older['memory_id']}?workspace=moves")
    link = page.locator("#memory-links .replaced-by")
    assert "No longer current: replaced by" in link.inner_text() and "Kings Road" in link.inner_text()
    assert "office" in link.inner_text() and "moved" in link.inner_text()
    page.screenshot(path=shots / "memory-replaced.png", full_page=True)
    link.locator("form.unlink button").click()
    page.wait_for_selector("p.note")
    assert "unlinked: it is current again" in page.locator("p.note").inner_text()
    assert page.locator("#memory-links").count() == 0
    (got,) = tools(server, store["admin"], ("get_memory", {"workspace": "moves", "memory_id": older["memory_id"]}))
    assert got["superseded_by"] == []


def test_save_with_nothing_edited_changes_nothing(admin: Tab, store: dict[str, Any], server: HttpServer) -> None:
    """Every value the API takes comes back from the form as it was: commas and spaces in tags, a source's
    spaces, a text's leading newline."""
    text = "\nMinutes of the Smith meeting,   kept as written.  "
    metadata = {"tags": ["Smith, John", " padded ", "a,b,c"], "source": "  chat log  ", "room": "B, 2"}
    (added,) = tools(server, store["admin"], ("add_memory", {"text": text, "metadata": metadata}))
    page = admin.go(f"/memories/{added['memory_id']}")
    page.click("form.edit button[type=submit]")
    page.wait_for_selector("p.note")
    assert "text unchanged, metadata unchanged" in page.locator("p.note").inner_text()
    (got,) = tools(server, store["admin"], ("get_memory", {"memory_id": added["memory_id"]}))
    assert (got["text"], got["tags"], got["source"]) == (text, metadata["tags"], metadata["source"])
    assert got["metadata"] == {"room": "B, 2"}
    tools(server, store["admin"], ("delete_memory", {"memory_ids": [added["memory_id"]]}))


def test_the_search_box_shows_the_query_searched_for(admin: Tab) -> None:
    page = admin.go("/search?q=Falcon+kickoff&workspace=default")
    assert page.locator("input[name=q]").input_value() == "Falcon kickoff"
    assert page.locator("nav a", has_text="Memories").get_attribute("href") == "/?workspace=default"


def test_delete_by_filter_deletes_exactly_what_the_preview_showed(
    admin: Tab, store: dict[str, Any], server: HttpServer
) -> None:
    page = admin.go("/forget")
    page.fill("input[name=tag]", "scratch")
    page.click("form.filters button[type=submit]")
    assert page.locator("#preview-count").inner_text() == "3"
    previewed = sorted(page.locator(".preview input[name=memory_id]").evaluate_all("els => els.map(e => e.value)"))
    assert previewed == sorted(store["ids"][4:7])
    assert sorted(page.locator(".preview .line").all_inner_texts()) == sorted(SCRATCH)  # what goes, as text
    page.click(".preview button.destructive")
    page.wait_for_selector(".ids code")  # the click only starts the form's post; the result page comes after
    deleted = sorted(page.locator(".ids code").all_inner_texts())
    assert deleted == previewed
    (listed,) = tools(server, store["admin"], ("list_memories", {"filters": {"tags": ["scratch"]}}))
    assert listed["memories"] == []


def test_a_job_shows_live_progress_until_it_completes(
    admin: Tab, store: dict[str, Any], shots: Path, server: HttpServer
) -> None:
    page = admin.go("/jobs")
    page.wait_for_selector("#live:text('live')")
    (queued,) = tools(server, store["admin"], ("build_graph", {"memory_ids": store["ids"][1:4]}))
    row = page.locator(f'tr[data-job-id="{queued["job_id"]}"]')
    row.wait_for(timeout=60_000)  # the page learnt of the new job over its event stream, without a reload
    page.wait_for_selector(f'tr[data-job-id="{queued["job_id"]}"][data-state="completed"]', timeout=120_000)
    assert row.locator(".count").inner_text().startswith("3/3")
    page.screenshot(path=shots / "jobs-1440.png", full_page=True)


@pytest.mark.usefixtures("graph")
def test_the_graph_draws_the_neighbourhood_and_expands_on_click(admin: Tab, shots: Path) -> None:
    page = admin.go("/graph?entity=Maria+Lopez&depth=1")
    page.wait_for_selector("#cy[data-ready=true]")
    nodes = set(page.evaluate("window.zapomniGraph.nodes().map(n => n.id())"))
    assert {"Maria Lopez", "Lisbon"} <= nodes and "Tom Baker" not in nodes
    edge = page.evaluate("window.zapomniGraph.edges().filter(e => e.target().id() === 'Lisbon')[0].data()")
    assert edge["source"] == "Maria Lopez" and edge["predicate"] and edge["method"] and edge["evidence"]
    box = page.locator("#cy").bounding_box()
    where = page.evaluate("window.zapomniGraph.getElementById('Lisbon').renderedPosition()")
    page.mouse.click(box["x"] + where["x"], box["y"] + where["y"])
    until(page, "window.zapomniGraph.nodes().map(n => n.id()).includes('Tom Baker')")
    page.screenshot(path=shots / "graph-1440.png", full_page=True)
    overview = page.locator(".overview li").all_inner_texts()
    assert any("Lisbon" in line for line in overview)


def listed(page: Any) -> list[str]:
    return list(page.locator(".memory").evaluate_all("els => els.map(e => e.dataset.memoryId)"))


def test_the_speaker_filter_lists_exactly_that_speakers_turns_sent_or_inferred(
    admin: Tab, store: dict[str, Any], shots: Path, server: HttpServer
) -> None:
    turns = store["turns"]
    # Dana's turn came from the CLI, which is no MCP client: its speaker was inferred, and it has no thread.
    (dana,) = tools(server, store["admin"], ("list_memories", {"workspace": CHAT, "filters": {"speaker": "Dana"}}))
    assert [(m["memory_id"], m["thread"]) for m in dana["memories"]] == [(store["dana"], None)]
    page = admin.go(f"/?workspace={CHAT}")
    assert sorted(listed(page)) == sorted([*turns, store["dana"]])
    # The field suggests the workspace's speakers, sent or inferred (it matches exactly).
    suggested = page.locator("datalist#speakers option").evaluate_all("els => els.map(e => e.value)")
    assert suggested == ["Caroline", "Dana", "Melanie"]
    page.fill("form.filters input[name=speaker]", "Caroline")
    page.click("form.filters button[type=submit]")
    page.wait_for_url(re.compile(r"speaker=Caroline"))
    assert sorted(listed(page)) == sorted(turns[:2])
    assert page.locator(".memory .speaker").all_inner_texts() == ["Caroline", "Caroline"]
    assert set(page.locator(".memory .kind").all_inner_texts()) == {"conversation turn"}
    page.screenshot(path=shots / "memories-speaker.png", full_page=True)
    # The memory's page says what kind it is, who said it, and whether that was sent or read from the text.
    page.click(f'.memory[data-memory-id="{turns[1]}"] a.preview')
    page.wait_for_url(re.compile(turns[1]))
    assert page.locator("#memory-kind").inner_text() == "conversation turn"
    assert page.locator("#memory-speaker").inner_text() == "Caroline (inferred from the text)"
    assert "(inferred" in page.locator("#memory-thread").inner_text()
    page.screenshot(path=shots / "memory-turn.png", full_page=True)
    page = admin.go(f"/memories/{turns[0]}?workspace={CHAT}")
    assert page.locator("#memory-speaker").inner_text() == "Caroline"
    assert page.locator("#memory-thread").inner_text() == "park-chat"
    page.click("#memory-speaker a")  # the speaker links to their turns
    page.wait_for_url(re.compile(r"speaker=Caroline"))
    assert sorted(listed(page)) == sorted(turns[:2])
    # The delete-by-filter preview takes the same filter (previewed only: nothing is deleted here).
    page = admin.go(f"/forget?workspace={CHAT}")
    page.fill("form.filters input[name=speaker]", "Melanie")
    page.click("form.filters button[type=submit]")
    assert page.locator("#preview-count").inner_text() == "1"
    previewed = page.locator(".preview input[name=memory_id]").evaluate_all("els => els.map(e => e.value)")
    assert previewed == [turns[2]]


def test_the_kind_filter_tells_conversation_turns_from_notes(admin: Tab, store: dict[str, Any]) -> None:
    turns = store["turns"]
    page = admin.go(f"/?workspace={CHAT}")
    page.select_option("form.filters select[name=kind]", label="conversation turn")
    page.click("form.filters button[type=submit]")
    page.wait_for_url(re.compile(r"kind=turn"))
    assert sorted(listed(page)) == sorted([*turns[:4], store["dana"]])
    assert set(page.locator(".memory .kind").all_inner_texts()) == {"conversation turn"}
    assert page.locator("form.filters select[name=kind] option:checked").inner_text() == "conversation turn"
    page.select_option("form.filters select[name=kind]", label="note")
    page.click("form.filters button[type=submit]")
    page.wait_for_url(re.compile(r"kind=note"))
    assert sorted(listed(page)) == sorted(turns[4:])
    assert set(page.locator(".memory .kind").all_inner_texts()) == {"note"}
    page = admin.go(f"/memories/{turns[3]}?workspace={CHAT}")  # a thread and no speaker: a turn
    assert page.locator("#memory-kind").inner_text() == "conversation turn"
    assert page.locator("#memory-speaker").count() == 0
    page = admin.go(f"/memories/{store['dana']}?workspace={CHAT}")  # a speaker and no thread: a turn too
    assert page.locator("#memory-kind").inner_text() == "conversation turn"
    assert page.locator("#memory-thread").count() == 0
    page = admin.go(f"/memories/{turns[5]}?workspace={CHAT}")
    assert page.locator("#memory-kind").inner_text() == "note"


def test_a_read_token_sees_but_cannot_edit(browser: Any, site: str, store: dict[str, Any], server: HttpServer) -> None:
    tab = Tab(browser, site, store["reader"])
    page = tab.go(f"/memories/{store['ids'][1]}")
    assert MARIA in page.locator("#memory-text").inner_text()
    assert page.locator("form.edit, details.danger, textarea").count() == 0
    assert page.locator('nav a[href^="/forget"]').count() == 0
    csrf = re.search(r'"X-CSRF-Token": "([^"]+)"', page.locator("body").get_attribute("hx-headers") or "")
    assert csrf is not None
    status = page.evaluate(
        """([url, token]) => fetch(url, {method: "POST", headers: {"X-CSRF-Token": token,
             "Content-Type": "application/x-www-form-urlencoded"}, body: "tags=x"}).then(r => r.status)""",
        [f"/memories/{store['ids'][1]}/edit", csrf.group(1)],
    )
    assert status == 403
    tab.errors.remove("Failed to load resource: the server responded with a status of 403 (Forbidden)")
    (got,) = tools(server, store["admin"], ("get_memory", {"memory_id": store["ids"][1]}))
    assert got["tags"] == ["people"]
    tab.close()


def test_a_cookie_alone_cannot_change_anything(admin: Tab, store: dict[str, Any]) -> None:
    page = admin.go("/")
    status = page.evaluate(
        """(url) => fetch(url, {method: "POST", headers: {"Content-Type": "application/x-www-form-urlencoded"},
             body: "tags=x"}).then(r => r.status)""",
        f"/memories/{store['ids'][2]}/edit",
    )
    assert status == 400
    admin.errors.clear()  # the browser logs the refused fetch itself


@pytest.mark.usefixtures("graph")
@pytest.mark.parametrize(("width", "scheme"), [(390, "light"), (1440, "dark")])
def test_every_page_is_readable_at_phone_and_desktop_widths(
    browser: Any, site: str, store: dict[str, Any], shots: Path, width: int, scheme: str
) -> None:
    tab = Tab(browser, site, store["admin"], viewport={"width": width, "height": 900}, color_scheme=scheme)
    for name, path in [
        ("memories", "/"),
        ("search", "/search?q=Lisbon"),
        ("graph", "/graph?entity=Lisbon&depth=2"),
        ("jobs", "/jobs"),
        ("workspaces", "/workspaces"),
        ("forget", "/forget"),
    ]:
        page = tab.go(path)
        if name == "graph":
            page.wait_for_selector("#cy[data-ready=true]")
        overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 1, f"{name} scrolls sideways by {overflow} px at {width} px"
        page.screenshot(path=shots / f"{name}-{width}-{scheme}.png", full_page=True)
    tab.close()


@pytest.mark.parametrize("where", ["another origin", "an opaque origin"])
def test_a_form_posted_from_elsewhere_is_refused(
    browser: Any, site: str, store: dict[str, Any], where: str, server: HttpServer
) -> None:
    tab = Tab(browser, site, store["admin"])
    page = tab.page
    if where == "another origin":
        # The same server by another name: an allowed Host, but another origin (the check outside lets any
        # loopback origin through; the console's own check wants exactly its own).
        page.goto(site.replace("127.0.0.1", "localhost") + "/healthz")
    else:
        page.goto("about:blank")  # a page with no origin: the browser sends `Origin: null`
    target = f"{site}/memories/{store['ids'][1]}/edit"
    page.set_content(f'<form method="post" action="{target}"><input name="tags" value="x"><button>go</button></form>')
    with page.expect_response(target) as caught:
        page.click("button")
    assert caught.value.status == 403, caught.value.text()
    assert ("cross-origin" if where == "another origin" else "Origin 'null'") in caught.value.text()
    page.wait_for_load_state("load")
    tab.errors.clear()  # the refusal's own 403
    tab.close()
    (got,) = tools(server, store["admin"], ("get_memory", {"memory_id": store["ids"][1]}))
    assert got["tags"] == ["people"]


def test_zapomni_console_serves_the_same_pages_on_the_loopback(
    browser: Any, store: dict[str, Any], tmp_path: Path
) -> None:
    env = {name: value for name, value in server_env(store["data_dir"]).items() if name != "LOG_LEVEL"}
    server = ConsoleServer(env, tmp_path / "console.err")
    try:
        tab = Tab(browser, server.url, store["reader"])
        page = tab.go("/")
        assert page.locator(".memory .preview", has_text="Maria Lopez").count() == 1
        tab.close()
        # DNS rebinding: a page of another name that resolves to the loopback is refused, as under serve --http.
        rebound = httpx.get(server.url + "login", headers={"Host": "rebound.example"}, timeout=30)
        assert rebound.status_code == 421 and "Host 'rebound.example' is not allowed" in rebound.text
    finally:
        server.terminate()
    # A person's terminal: without -v or LOG_LEVEL only warnings and errors are logged.
    assert [event for event in server.log_events() if event.get("level") in ("debug", "info")] == []
