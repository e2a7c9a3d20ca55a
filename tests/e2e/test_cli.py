"""The `zapomni` command line as a new user meets it: every memory command, workspaces, the errors,
80-column tables, pure `--json`, quiet logs, `--version`, `doctor` on a stopped store, and the
terminal greeting of `serve`.

The commands run in the test's process (`tests.cli_in_process`: exit code, stdout and stderr as a process
reports them, at a tenth of a process's cost); what only a process shows runs one: stdout pure JSON beside
`--verbose` logs, a terminal's question, the greeting of `serve`. Each command opens the model and the store,
so the tests chain many checks on one store instead of starting fresh for each.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import pty
import re
import signal
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cli_in_process import run_cli
from tests.fakes.ollama_server import FakeOllama
from tests.helpers import open_core
from tests.processes import ZAPOMNI, child_env, mcp_session, server_env
from zapomni_core import Settings
from zapomni_core.jobs import JobInfo, JobStatusRequest
from zapomni_core.memories.replies import AddMemoryResult
from zapomni_core.memories.requests import AddMemoryRequest
from zapomni_db.embedded import EmbeddedDatabase
from zapomni_db.embedded_layout import EmbeddedPaths


@pytest.fixture
def database_up(data_dir: Path) -> Iterator[None]:
    """The test's database kept running throughout, as a server an MCP client started would keep it: each command
    attaches to it instead of starting and stopping it (about a second a command on two cores)."""
    database = EmbeddedDatabase(data_dir)
    database.open()
    try:
        yield
    finally:
        database.close()


def cli_env(data_dir: Path, **extra: str) -> dict[str, str]:
    # No LOG_LEVEL: what a person gets by default. COLUMNS=80: the narrowest terminal we design for.
    return child_env({"ZAPOMNI_DATA_DIR": str(data_dir), "COLUMNS": "80"}, **extra)


def zapomni(data_dir: Path, *args: str, stdin: str = "", **env: str) -> subprocess.CompletedProcess[str]:
    return run_cli(args, cli_env(data_dir, **env), input=stdin)


def zapomni_process(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([ZAPOMNI, *args], capture_output=True, text=True, env=cli_env(data_dir), timeout=120)


def ok(data_dir: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    """A command that must succeed quietly: exit 0 and nothing at all on stderr."""
    result = zapomni(data_dir, *args, stdin=stdin)
    assert result.returncode == 0, result.stderr
    assert result.stderr == "", result.stderr
    return result


def as_json(data_dir: Path, *args: str, stdin: str = "") -> Any:
    """`--json` output: stdout must be one JSON document and nothing else."""
    return json.loads(ok(data_dir, *args, "--json", stdin=stdin).stdout)


def refused(data_dir: Path, *args: str, code: int = 2) -> str:
    """A command that must fail with `code` and a short message, never a traceback; the message."""
    result = zapomni(data_dir, *args)
    assert result.returncode == code, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr and result.stdout == ""
    return result.stderr


def on_a_terminal(data_dir: Path, *args: str, answer: str) -> subprocess.CompletedProcess[str]:
    """Run with stdin on a pseudo-terminal, typing `answer` to the question it asks."""
    controller, terminal = pty.openpty()
    try:
        process = subprocess.Popen(
            [ZAPOMNI, *args], stdin=terminal, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env=cli_env(data_dir),
        )  # fmt: skip
        os.close(terminal)
        os.write(controller, f"{answer}\n".encode())
        stdout, stderr = process.communicate(timeout=120)
    finally:
        os.close(controller)
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


def assert_fits_80_columns(table: str, headers: list[str]) -> None:
    lines = [line for line in table.splitlines() if not line.startswith("next page: --cursor ")]
    assert lines and all(len(line) <= 80 for line in lines), table
    header = lines[0]
    # every header name is in the header line:
    starts = [re.search(rf"(?<!\S){name}(?!\S)", header).start() for name in headers]  # type: ignore[union-attr]
    widths = [b - a for a, b in zip(starts, [*starts[1:], 81], strict=True)]
    assert min(widths) >= 6, (widths, table)  # no column squeezed to a sliver


LONG_SOURCE = "https://wiki.example.com/spaces/TEAM/pages/123456789/Quarterly+planning+offsite"
WIFI = (
    "The office wifi password is written on the fridge, next to the [bold] lunch menu and the phone "
    "numbers of the building manager, the cleaners and the people who repair the coffee machine."
)


@pytest.mark.usefixtures("database_up")
def test_memory_commands_from_add_to_delete(data_dir: Path, tmp_path: Path) -> None:
    # add: as TEXT (JSON), on stdin (a table line), from a file
    added = as_json(data_dir, "add", WIFI, "--tag", "office", "--tag", "facilities", "--source", LONG_SOURCE)
    wifi = added["memory_id"]
    assert added["workspace"] == "default" and added["chunks_created"] == 1
    piped = ok(data_dir, "add_memory", "-", "--tag", "lunch", "--date", "2024-05-01", stdin="Lunch is at noon.")
    lunch = re.search(r"Stored memory ([0-9a-f-]{36}) in workspace 'default' \(1 chunk\)\.", piped.stdout)
    assert lunch is not None, piped.stdout
    notes = tmp_path / "notes.md"
    notes.write_text("Standup moved to 9:30 on Mondays.\n")
    standup = as_json(data_dir, "add", "--file", str(notes), "--tag", "files")["memory_id"]

    # list: an 80-column table with short ids and the next page's cursor; the cursor continues it
    page = ok(data_dir, "list", "--limit", "2", "--order", "oldest").stdout
    assert_fits_80_columns(page, ["id", "added", "text", "tags", "source"])
    assert wifi[:8] in page and lunch.group(1)[:8] in page and wifi not in page
    cursor = re.search(r"^next page: --cursor (\S+)$", page, re.MULTILINE)
    assert cursor is not None, page
    rest = as_json(data_dir, "list_memories", "--order", "oldest", "--limit", "2", "--cursor", cursor.group(1))
    assert [m["memory_id"] for m in rest["memories"]] == [standup] and rest["next_cursor"] is None

    # get by the 8-character prefix the tables show: every field and the whole text
    shown = ok(data_dir, "get", wifi[:8]).stdout
    assert wifi in shown and WIFI in shown and LONG_SOURCE in shown

    # update: new text and tags; the source it did not name is kept
    updated = as_json(data_dir, "update", wifi, "--text", "The wifi password is on the fridge.", "--tag", "wifi")
    assert updated["text_changed"] and updated["metadata_changed"]
    memory = as_json(data_dir, "get_memory", wifi)
    assert (memory["text"], memory["tags"], memory["source"]) == (
        "The wifi password is on the fridge.",
        ["wifi"],
        LONG_SOURCE,
    )

    # search: JSON and an 80-column table
    found = as_json(data_dir, "search", "where is the wifi password?", "--limit", "1")
    assert [hit["memory_id"] for hit in found["results"]] == [wifi]
    table = ok(data_dir, "search_memory", "wifi password", "--include-unrelated").stdout
    assert_fits_80_columns(table, ["score", "id", "text", "tags", "source"])
    assert table.splitlines()[2].split()[1] == wifi[:8] and "https://" in table and "…" in table

    # delete by id, then by filter: a dry run, a refusal without a terminal, a "no" on one, then --yes
    assert "Deleted 1 memory from workspace 'default':" in ok(data_dir, "delete", lunch.group(1)[:8]).stdout
    dry = as_json(data_dir, "delete", "--tag", "files", "--dry-run")
    assert (dry["dry_run"], dry["memory_ids"]) == (True, [standup])
    assert "pass --yes" in refused(data_dir, "delete", "--tag", "files", code=1)
    declined = on_a_terminal(data_dir, "delete_memory", "--tag", "files", answer="n")
    assert declined.returncode == 1, declined.stderr
    assert "Delete 1 memory from workspace 'default'? [y/N]" in declined.stderr
    assert "nothing was deleted" in declined.stderr
    assert as_json(data_dir, "delete", "--tag", "files", "--yes")["memory_ids"] == [standup]

    # stats: the table without per-process figures; --json is get_stats's result whole
    stats = ok(data_dir, "stats").stdout
    assert re.search(r"^total_memories\s+1\s*$", stats, re.MULTILINE), stats
    for per_process in ("avg_query_latency_ms", "cache_hit_rate", "uptime_s"):
        assert per_process not in stats
    whole = as_json(data_dir, "get_stats")
    assert whole["total_memories"] == 1 and "uptime_s" in whole

    # --verbose logs on stderr, and stdout stays pure JSON (in a process: nothing below Python writes to it either)
    # A search: the process loads the model itself, at its first embedding (the in-process commands share the suite's).
    verbose = zapomni_process(data_dir, "search", "wifi password", "--json", "--verbose")
    assert [hit["memory_id"] for hit in json.loads(verbose.stdout)["results"]] == [wifi]
    assert any(json.loads(line).get("event") for line in verbose.stderr.splitlines())


@pytest.mark.usefixtures("database_up")
def test_list_and_delete_by_speaker_thread_and_kind(data_dir: Path) -> None:
    said = as_json(data_dir, "add", "Caroline: I adopted a puppy named Biscuit.")["memory_id"]
    note = as_json(data_dir, "add", "Lunch with Caroline on Friday.")["memory_id"]

    def ids(*args: str) -> list[str]:
        return [m["memory_id"] for m in as_json(data_dir, "list", *args)["memories"]]

    assert ids("--speaker", "Caroline") == [said]
    assert ids("--kind", "turn") == [said] and ids("--kind", "note") == [note]
    assert ids("--thread", "no-such-thread") == []
    stderr = refused(data_dir, "list", "--speaker", "")
    assert stderr.startswith("zapomni list: --speaker: must not be empty"), stderr
    assert as_json(data_dir, "delete", "--speaker", "Caroline", "--yes")["memory_ids"] == [said]
    assert ids() == [note]


@pytest.mark.usefixtures("database_up")
def test_workspaces(data_dir: Path) -> None:
    assert as_json(data_dir, "add", "Only in w.", "--workspace", "w")["workspace"] == "w"
    listing = as_json(data_dir, "workspaces")
    counts = {w["name"]: (w["memories"], w["chunks"]) for w in listing["workspaces"]}
    assert counts["w"] == (1, 1) and counts.get("default", (0, 0)) == (0, 0) and listing["default"] == "default"

    assert "--confirm" in refused(data_dir, "delete_workspace", "w")
    assert "--confirm: must repeat the workspace name exactly ('w', got 'default')" in refused(
        data_dir, "delete_workspace", "w", "--confirm", "default"
    )
    deleted = ok(data_dir, "delete_workspace", "w", "--confirm", "w").stdout
    assert deleted.strip() == "Deleted workspace 'w': 1 memory, 1 chunk."
    assert "workspace 'w' does not exist" in refused(data_dir, "delete_workspace", "w", "--confirm", "w", code=1)


def test_what_a_new_user_gets_wrong_is_refused_in_one_line(data_dir: Path, tmp_path: Path) -> None:
    binary = tmp_path / "image.png"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    text = tmp_path / "notes.txt"
    text.write_text("notes")
    for args, message in [
        (["add", "--file", str(tmp_path / "missing.txt")], f"zapomni add: --file {tmp_path}/missing.txt: no such file"),
        (["add", "--file", str(tmp_path)], f"zapomni add: --file {tmp_path}: is a directory; give a text file"),
        (["add", "--file", str(binary)], f"zapomni add: --file {binary}: not a text file (it contains NUL bytes)"),
        (["add", "typed", "--file", str(text)], "zapomni add: give the text as TEXT or with --file, not both"),
        # errors name the flag, not the field path of the request (metadata.tags.0, filters.date_from)
        (["add", "x", "--tag", "ok", "--tag", ""], "zapomni add: --tag: must not be empty"),
        (["search", "x", "--limit", "0"], "zapomni search: --limit: must be at least 1 (got 0)"),
        (["list", "--date-from", "last week"], "zapomni list: --date-from: must be an ISO 8601 date or datetime"),
        (["get", "not-an-id"], "zapomni get: ID: not a memory id (got 'not-an-id')"),
        (["stats", "--workspace", "My Notes"], "zapomni stats: --workspace: must be 1-63 lowercase letters"),
    ]:
        stderr = refused(data_dir, *args)
        assert stderr.startswith(message) and stderr.count("\n") == 1, (args, stderr)
        assert "metadata." not in stderr and "filters." not in stderr

    version = zapomni(data_dir, "--version")
    assert version.returncode == 0 and re.fullmatch(r"zapomni \d+\.\d+\.\d+\S*\n", version.stdout), version.stdout


@pytest.mark.anyio
async def test_a_bad_data_directory_or_setting_is_one_line_naming_it_for_the_cli_and_an_mcp_client(
    tmp_path: Path,
) -> None:
    afile = tmp_path / "afile"
    afile.write_text("")
    unusable = "ZAPOMNI_DATA_DIR={} cannot be used: {}"
    for env, message in [
        ({"ZAPOMNI_DATA_DIR": str(afile)}, unusable.format(afile, f"{afile} exists and is not a directory")),
        ({"ZAPOMNI_DATA_DIR": str(afile / "db")}, f"a part of {afile}/db exists and is not a directory"),
        ({"ZAPOMNI_DATA_DIR": "/proc/zapomni"}, unusable.format("/proc/zapomni", "cannot create /proc/zapomni")),
        ({"ZAPOMNI_EMBEDDER": "onx"}, "zapomni: ZAPOMNI_EMBEDDER='onx': Input should be 'onnx' or 'ollama'"),
        ({"FALKORDB_PORT": "99999"}, "zapomni: FALKORDB_PORT='99999': Input should be less than or equal to 65535"),
    ]:  # fmt: skip
        stats = zapomni(tmp_path / "unused", "stats", **env)
        assert stats.returncode == 1 and message in stats.stderr, (env, stats.stderr)
        assert stats.stderr.count("\n") == 1 and "Traceback" not in stats.stderr and "pydantic" not in stats.stderr
        # `zapomni serve` started by an MCP client: the client gets the same line on stderr, and no session.
        errlog, started = tmp_path / "serve.log", False
        with errlog.open("w") as log, contextlib.suppress(Exception):  # the SDK's own way to say "closed"
            async with mcp_session(tmp_path / "unused", errlog=log, **env):
                started = True
        assert not started, env
        assert message in errlog.read_text() and "Traceback" not in errlog.read_text(), errlog.read_text()


def test_doctor_on_a_stopped_embedded_store(data_dir: Path) -> None:
    socket = EmbeddedPaths(data_dir.resolve()).socket
    looked = zapomni(data_dir, "doctor", "--no-start")
    assert looked.returncode == 1
    assert "is not running; it runs while `zapomni serve` does" in " ".join(looked.stdout.split())
    assert "without --no-start starts it briefly" in " ".join(looked.stdout.split())

    checked = zapomni(data_dir, "doctor")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.rstrip().endswith("ready") and "not ready" not in checked.stdout
    assert "the doctor started it for these checks and stopped it again" in " ".join(checked.stdout.split())
    assert checked.stderr == ""  # operator commands log warnings only, and there were none
    assert not socket.exists()  # stopped again


def test_serve_greets_a_person_at_a_terminal_on_stderr(data_dir: Path) -> None:
    controller, terminal = pty.openpty()
    process = subprocess.Popen(
        [ZAPOMNI, "serve"],
        stdin=terminal,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=server_env(data_dir),
        text=True,
    )
    os.close(terminal)
    try:
        assert process.stderr is not None
        greeting = []
        for line in process.stderr:
            greeting.append(line)
            if line.startswith("  stop:"):
                break
        text = "".join(greeting)
        assert "is ready and waiting for an MCP client on stdin" in text
        assert f"data:      {data_dir}" in text
        assert "onnx:all-MiniLM-L6-v2-int8 (384-d)" in text
        assert f"claude mcp add zapomni -- {ZAPOMNI} serve" in text
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=60) == 0
        assert process.stdout is not None and process.stdout.read() == ""  # stdout stays protocol-only
    finally:
        process.kill()
        os.close(controller)


# -- the job commands ----------------------------------------------------------------------------

UNKNOWN_JOB = "5e6f7a8b-9c0d-4e1f-8a2b-3c4d5e6f7a8b"


def survey(topic: str, paragraphs: int) -> str:
    return "\n\n".join(
        f"Note {i} on {topic}: the {topic} survey counted {i * 7} sightings near station {i % 13}, "
        f"and the field team logged weather, tide and the {topic} behaviour in detail for later review."
        for i in range(paragraphs)
    )


async def add_in_background(
    data_dir: Path, text: str, before: Callable[[], None] = lambda: None, **settings: Any
) -> tuple[AddMemoryResult, JobInfo]:
    """A large add as a server makes it (answered at once, indexed by a job), and its job once it ended."""
    configured = Settings.from_variables(
        ZAPOMNI_DATA_DIR=data_dir, ZAPOMNI_BACKGROUND_ADD_BYTES=4096, LOG_LEVEL="WARNING", **settings
    )
    async with open_core(configured) as (core, _info):
        before()
        added = await core.memories.add(AddMemoryRequest(text=text))
        assert added.status == "indexing" and added.job_id is not None
        info = await core.jobs.status(JobStatusRequest(job_id=added.job_id, wait_s=50))
    assert info.state not in ("pending", "running"), info
    return added, info


@pytest.mark.usefixtures("database_up")
def test_job_commands(data_dir: Path) -> None:
    # An empty store has no jobs; an id nobody made, or something that is no id, is refused naming it.
    assert ok(data_dir, "list_jobs").stdout == "No jobs in workspace 'default'.\n"
    assert as_json(data_dir, "jobs") == {"workspace": "default", "jobs": [], "count": 0}
    assert refused(data_dir, "job_status", UNKNOWN_JOB, code=1) == (
        f"zapomni job_status: no job {UNKNOWN_JOB} in any workspace (list_jobs shows a workspace's jobs)\n"
    )
    assert refused(data_dir, "job", "not-a-job").startswith("zapomni job: JOB_ID: not a job id (got 'not-a-job')")
    assert refused(data_dir, "job_status", UNKNOWN_JOB, "--wait", "-1") == (
        "zapomni job_status: --wait: must be at least 0 (got -1)\n"
    )
    assert "JOB_ID 5e6f7a8b: no job starts with it" in refused(data_dir, "cancel_job", UNKNOWN_JOB[:8], code=1)

    added, info = asyncio.run(add_in_background(data_dir, survey("otter", 60)))
    assert info.state == "completed"
    job_id, chunks = info.job_id, info.counts["chunks"]

    # job_status, by the id or the 8 characters list_jobs shows; --json is the tool's result.
    shown = ok(data_dir, "job_status", job_id[:8]).stdout
    fields = {line.split()[0]: line.split()[1:] for line in shown.splitlines()}
    assert fields["job"] == [job_id] and fields["state"] == ["completed"] and fields["memory"] == [added.memory_id]
    assert fields["progress"] == [f"{chunks}/{chunks}", "chunks"] and fields["kind"] == ["index_memory"]
    waited = as_json(data_dir, "job", job_id, "--wait", "30")  # an ended job is answered at once
    assert waited == info.model_dump(mode="json")

    # list_jobs: an 80-column table, filtered by state
    listed = ok(data_dir, "list_jobs", "--state", "completed").stdout
    assert_fits_80_columns(listed, ["id", "kind", "state", "progress", "created", "note"])
    row = [job_id[:8], "index", "completed", f"{chunks}/{chunks}", "chunks"]
    assert listed.splitlines()[2].split()[:5] == row
    assert f"memory {added.memory_id[:8]}" in listed
    assert ok(data_dir, "jobs", "--state", "failed").stdout == "No failed jobs in workspace 'default'.\n"
    assert as_json(data_dir, "list_jobs", "--workspace", "other")["count"] == 0

    # The memory it indexed is searchable, and shown without a status; cancelling the ended job changes nothing.
    assert "status" not in ok(data_dir, "get", added.memory_id).stdout
    assert ok(data_dir, "cancel", job_id[:8]).stdout == (
        f"Job {job_id} had already ended (completed): nothing was cancelled.\n"
    )
    cancelled = as_json(data_dir, "cancel_job", job_id)
    assert not cancelled["cancelled"] and not cancelled["memory_deleted"] and cancelled["job"]["state"] == "completed"
    found = as_json(data_dir, "search", "otter sightings near station 5", "--limit", "1")
    assert [hit["memory_id"] for hit in found["results"]] == [added.memory_id]


def test_a_job_no_server_runs_says_so_at_once_however_long_one_waits(data_dir: Path) -> None:
    """An add on the command line queues the graph's extraction; only a server runs it, and none is running."""
    env = {"ZAPOMNI_GRAPH_AUTO": "true"}
    added = json.loads(zapomni(data_dir, "add", "Maria Garcia works for Siemens.", "--json", **env).stdout)
    assert added["status"] == "indexed"
    (job,) = as_json(data_dir, "list_jobs")["jobs"]
    assert (job["kind"], job["state"], job["waiting_for"]) == ("build_graph", "pending", "server")
    assert ok(data_dir, "jobs").stdout.splitlines()[2].split()[1:3] == ["graph", "pending"]
    # --wait 600: past the command's own 120 s limit here, had it waited (it waited the whole time).
    shown = zapomni(data_dir, "job", job["job_id"], "--wait", "600")
    assert shown.returncode == 0, shown.stderr
    assert "waiting for a server: no `zapomni serve` runs jobs on this store" in shown.stdout


def test_a_memory_whose_indexing_failed_shows_it(data_dir: Path) -> None:
    with FakeOllama(models=["nomic-embed-text"]) as fake:
        ollama = {"ZAPOMNI_EMBEDDER": "ollama", "OLLAMA_HOST": fake.url}
        text = survey("gannet", 40)

        def fail_from_now() -> None:  # once the core has started, which probes the model
            fake.fail_next(10_000)

        added, info = asyncio.run(add_in_background(data_dir, text, fail_from_now, ZAPOMNI_OLLAMA_RETRIES=0, **ollama))
        assert info.state == "failed" and info.error
        fake.fail_next(0)

        def run(*args: str) -> str:
            result = zapomni(data_dir, *args, **ollama)
            assert result.returncode == 0 and result.stderr == "", result.stderr
            return result.stdout

        page = run("list")
        assert_fits_80_columns(page, ["id", "added", "status", "text", "tags", "source"])
        assert page.splitlines()[2].split()[:3] == [added.memory_id[:8], info.created_at[:10], "failed"]
        detail = " ".join(run("get", added.memory_id[:8]).split())
        assert f"status failed: its indexing job failed (`zapomni job_status {info.job_id}` says why)" in detail

        shown = run("job_status", info.job_id)
        assert re.search(r"^state\s+failed$", shown, re.MULTILINE) and "HTTP 503" in shown
        assert re.search(r"^failed\s+1 item$", shown, re.MULTILINE), shown
        listed = run("list_jobs", "--state", "failed")
        assert listed.splitlines()[2].split()[:3] == [info.job_id[:8], "index", "failed"]
        assert "embedding chunks 0-" in listed


def test_restore_of_a_missing_backup_says_where_it_looked_once_per_place(data_dir: Path, tmp_path: Path) -> None:
    absent = tmp_path / "none"
    message = refused(data_dir, "restore", str(absent), code=1).strip()
    assert message.count(str(absent)) == 1, message  # an absolute path is one place, named once
    assert f"no backup at {absent};" in message and "zapomni restore --list" in message
    named = refused(data_dir, "restore", "nightly", code=1)
    # A bare name: as a path from here, and in the backup directory.
    assert "no backup at nightly nor at " in named and str(Path("backups") / "nightly") in named, named
