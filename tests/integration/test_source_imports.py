"""Imports from other tools (`zapomni import --from FORMAT`), on files those tools wrote (tests/fixtures/imports,
made by its produce.py with the real tools) or that follow their published schemas: what each knows arrives
(speakers, dates, threads, entities and relations), a second run adds nothing, bad files change nothing."""

from __future__ import annotations

import hashlib
import json
import shutil
import zipfile
from pathlib import Path
from typing import Any

import pytest

from tests.cli_in_process import run_cli
from tests.helpers import local_session
from tests.processes import call
from zapomni_core import Settings

pytestmark = pytest.mark.anyio

FIXTURES = Path(__file__).parent.parent / "fixtures" / "imports"
REFERENCE = FIXTURES / "reference-memory"


def cli_env(settings: Settings) -> dict[str, str]:
    return {
        "ZAPOMNI_DATA_DIR": str(settings.data_dir),
        "GRAPH_NAME": settings.graph_name,
        "ZAPOMNI_GRAPH_AUTO": "false",
        "LOG_LEVEL": "WARNING",
    }


def imported(settings: Settings, *args: str) -> dict[str, Any]:
    """`zapomni import ARGS --json`, which must succeed: its report."""
    done = run_cli(["import", *args, "--json"], cli_env(settings))
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


def refused(settings: Settings, *args: str) -> str:
    """`zapomni import ARGS`, which must fail: its message."""
    done = run_cli(["import", *args], cli_env(settings))
    assert done.returncode == 1, done.stdout
    return str(done.stderr)


async def test_the_reference_memory_servers_graph_arrives_and_answers_as_the_server_did(settings: Settings) -> None:
    first = imported(settings, "--from", "mcp-memory", str(REFERENCE / "memory.jsonl"))
    original = json.loads((REFERENCE / "read_graph.json").read_text())
    observations = sum(len(e["observations"]) for e in original["entities"])
    # An observation or a relation is a memory; an entity with neither gets one of its own.
    bare = [e for e in original["entities"] if not e["observations"] and not _in_relations(e["name"], original)]
    assert first["report"]["imported"] == observations + len(original["relations"]) + len(bare)
    assert first["report"]["relations_imported"] == len(original["relations"])

    again = imported(settings, "--from", "mcp-memory", str(REFERENCE / "memory.jsonl"))
    assert again["report"]["imported"] == 0 and again["report"]["skipped"] == first["report"]["imported"]

    async with local_session(settings, background_jobs=False) as session:
        for entity in original["entities"]:
            related = await call(session, "get_related", {"entity": entity["name"], "depth": 1})
            found = {item["entity"]["name"] for item in related["related"]}
            expected = {r["to"] for r in original["relations"] if r["from"] == entity["name"]} | {
                r["from"] for r in original["relations"] if r["to"] == entity["name"]
            }
            assert found == expected, entity["name"]
        hits = await call(session, "search_memory", {"query": "Who moved to Lisbon?", "limit": 3})
        assert "Moved from Berlin to Lisbon" in hits["results"][0]["text"]
        listed = await call(session, "list_memories", {"filters": {"tags": ["imported:mcp-memory"]}, "limit": 100})
        assert len(listed["memories"]) == first["report"]["imported"]
        memory = await call(session, "get_memory", {"memory_id": hits["results"][0]["memory_id"]})
        assert memory["metadata"]["imported_from"] == "mcp-memory"
        assert memory["metadata"]["original_id"].startswith("entity:Maria Keller:observation:")


def _in_relations(name: str, graph: dict[str, Any]) -> bool:
    return any(name in (r["from"], r["to"]) for r in graph["relations"])


async def test_a_dry_run_counts_and_writes_nothing(settings: Settings) -> None:
    dry = imported(settings, "--from", "mcp-memory", "--dry-run", str(REFERENCE / "memory.jsonl"))
    assert dry["report"] is None and dry["preview"]["already_stored"] == 0
    assert dry["preview"]["memories_in_file"] == dry["conversion"]["items"] > 0
    assert len(dry["conversion"]["sample"]) == 3
    async with local_session(settings, background_jobs=False) as session:
        assert (await call(session, "get_stats", {}))["total_memories"] == 0


async def test_a_bad_file_is_named_with_its_line_and_changes_nothing(settings: Settings, tmp_path: Path) -> None:
    lines = (REFERENCE / "memory.jsonl").read_text().splitlines()
    broken = tmp_path / "memory.jsonl"
    broken.write_text("\n".join([*lines[:3], '{"type":"entity","name":"Half', *lines[3:]]))
    assert f"{broken}: line 4: not valid JSON" in refused(settings, "--from", "mcp-memory", str(broken))
    broken.write_text("\n".join([*lines[:2], '{"type":"entity","name":"X","entityType":"t","observations":"no"}']))
    assert "line 3: observations: must be a list of strings" in refused(settings, "--from", "mcp-memory", str(broken))
    assert "no such file" in refused(settings, "--from", "mcp-memory", str(tmp_path / "absent.jsonl"))
    assert "--workspace: String should match pattern" in refused(
        settings, "--from", "mcp-memory", "--workspace", "Not A Name", str(REFERENCE / "memory.jsonl")
    )
    async with local_session(settings, background_jobs=False) as session:
        assert (await call(session, "get_stats", {}))["total_memories"] == 0


async def test_a_chatgpt_export_arrives_as_its_conversations_on_the_branch_they_show(
    settings: Settings, tmp_path: Path
) -> None:
    export = tmp_path / "chatgpt-export.zip"  # as downloaded: the file inside a folder of the zip
    with zipfile.ZipFile(export, "w") as archive:
        archive.write(FIXTURES / "chatgpt" / "conversations.json", "export-2024-06/conversations.json")
    first = imported(settings, "--from", "chatgpt", "--user-name", "Maria", str(export))
    assert first["report"]["imported"] == 6
    assert first["conversion"]["skipped"] == {
        "messages on a branch the conversation left (edited or regenerated)": 2,
        "messages with no text (an image or a file alone, or empty)": 2,
        "hidden messages (instructions and context ChatGPT does not show)": 1,
        "the assistant's tool calls and their output (code, browsing)": 1,
        "tool messages": 1,
    }
    assert imported(settings, "--from", "chatgpt", "--user-name", "Maria", str(export))["report"]["imported"] == 0

    async with local_session(settings, background_jobs=False) as session:
        thread = await call(session, "list_memories", {"filters": {"thread": "chatgpt:c0ffee00-0001"}, "limit": 10})
        turns = sorted(thread["memories"], key=lambda m: m["date"])
        assert [t["speaker"] for t in turns] == ["Maria", "assistant", "Maria", "assistant"]
        assert turns[0]["date"] == "2024-06-03T07:33:20+00:00" and turns[0]["source"] == "ChatGPT: Moving to Lisbon"
        assert "1,400" not in " ".join(t["preview"] for t in turns)  # the answer to the edited-away question
        hits = await call(session, "search_memory", {"query": "What does a flat in Alfama cost?", "limit": 2})
        assert "1,650 euros" in hits["results"][0]["text"]
        japanese = await call(session, "search_memory", {"query": "Mochi", "mode": "keyword", "limit": 5})
        assert {h["speaker"] for h in japanese["results"]} == {"Maria", "assistant"}


async def test_a_claude_export_keeps_the_accounts_name_and_the_text_of_attachments(settings: Settings) -> None:
    first = imported(settings, "--from", "claude", str(FIXTURES / "claude"))
    assert first["report"]["imported"] == 6 and first["conversion"]["skipped"] == {
        "messages with no text (a file alone, or empty)": 2,
        "message parts of type 'tool_use' (tool calls and results, thinking)": 1,
        "message parts of type 'tool_result' (tool calls and results, thinking)": 1,
    }
    async with local_session(settings, background_jobs=False) as session:
        mine = await call(session, "list_memories", {"filters": {"speaker": "Maria Keller"}, "limit": 10})
        assert len(mine["memories"]) == 4  # users.json names the account
        hits = await call(session, "search_memory", {"query": "Who does Jonas shadow on call in week 2?", "limit": 1})
        found = hits["results"][0]
        assert found["text"].startswith("Onboarding plan for Jonas Weber")
        assert found["source"] == "Claude: Co-working in Lisbon — onboarding-plan.txt"
        russian = await call(session, "list_memories", {"filters": {"date_to": "2023-12-31"}, "limit": 5})
        assert {m["preview"] for m in russian["memories"]} == {
            "Как будет по-английски «Моя сестра живёт в Казани»?",
            '"My sister lives in Kazan."',
        }


async def test_a_truncated_wrong_or_huge_chat_export_is_named_and_changes_nothing(
    settings: Settings, tmp_path: Path
) -> None:
    whole = (FIXTURES / "chatgpt" / "conversations.json").read_bytes()
    cut = tmp_path / "conversations.json"
    cut.write_bytes(whole[: len(whole) * 3 // 4])
    message = refused(settings, "--from", "chatgpt", str(cut))
    assert f"{cut}: the file ends inside conversation 2" in message and "truncated" in message
    huge = tmp_path / "huge" / "conversations.json"
    huge.parent.mkdir()
    with huge.open("wb") as sparse:  # 2 GB that take no disk: the importer reads until the first bad byte
        sparse.truncate(2 * 1024**3)
    assert f"{huge}: not valid JSON after conversation 0" in refused(settings, "--from", "claude", str(huge.parent))
    assert "conversation 1: id, mapping: missing" in refused(
        settings, "--from", "chatgpt", str(FIXTURES / "claude" / "conversations.json")
    )
    assert "no conversations.json in it" in refused(settings, "--from", "claude", str(REFERENCE))
    async with local_session(settings, background_jobs=False) as session:
        assert (await call(session, "get_stats", {}))["total_memories"] == 0


async def test_an_obsidian_vault_arrives_as_notes_linked_in_the_graph(settings: Settings) -> None:
    vault = FIXTURES / "obsidian-vault"
    first = imported(settings, "--from", "markdown", str(vault))
    notes = [p for p in vault.rglob("*.md") if ".obsidian" not in p.parts]
    assert first["report"]["imported"] == len(notes) == 5  # .obsidian/ is the app's, not notes
    links = {  # (from, to) of every [[link]] in the vault
        ("Maria Keller", "Falcon"), ("Maria Keller", "Lisbon"), ("Maria Keller", "Ana Costa"),
        ("Falcon", "FalkorDB"), ("Falcon", "Maria Keller"), ("2024-06-03", "Jonas Weber"), ("Einkauf", "Lisbon"),
    }  # fmt: skip
    assert first["report"]["relations_imported"] == len(links)
    assert imported(settings, "--from", "markdown", str(vault))["report"]["imported"] == 0

    async with local_session(settings, background_jobs=False) as session:
        for name in ("Maria Keller", "Falcon", "Lisbon"):
            related = await call(session, "get_related", {"entity": name, "depth": 1})
            expected = {b for a, b in links if a == name} | {a for a, b in links if b == name}
            assert {item["entity"]["name"] for item in related["related"]} == expected, name
        falcon = await call(session, "search_memory", {"query": "launch review moved to Thursdays", "limit": 1})
        hit = falcon["results"][0]
        assert hit["source"] == str(vault / "Projects" / "Falcon.md") and hit["date"] == "2024-01-15T00:00:00+00:00"
        assert sorted(hit["tags"]) == ["imported:markdown", "project"]
        daily = await call(session, "list_memories", {"filters": {"date_from": "2024-06-03", "date_to": "2024-06-03"}})
        assert [m["source"] for m in daily["memories"]] == [str(vault / "Daily" / "2024-06-03.md")]


async def test_a_note_with_broken_front_matter_is_named_with_its_line(settings: Settings, tmp_path: Path) -> None:
    vault = shutil.copytree(FIXTURES / "obsidian-vault", tmp_path / "vault")
    (vault / "Broken.md").write_text("---\ntitle: Broken\ntags: [a, b\n---\nText.\n")
    message = refused(settings, "--from", "markdown", str(vault))
    assert f"{vault / 'Broken.md'}: line 3: front matter is not valid YAML" in message, message
    async with local_session(settings, background_jobs=False) as session:
        assert (await call(session, "get_stats", {}))["total_memories"] == 0


async def test_basic_memorys_notes_arrive_with_their_typed_relations(settings: Settings) -> None:
    notes = FIXTURES / "basic-memory"  # written by Basic Memory's own CLI (produce.py)
    first = imported(settings, "--from", "markdown", str(notes))
    assert first["report"]["imported"] == 4 and first["report"]["relations_imported"] == 6
    async with local_session(settings, background_jobs=False) as session:
        maria = await call(session, "get_related", {"entity": "Maria Keller", "depth": 1})
        assert {(r["entity"]["name"], r["relation"]["type"]) for r in maria["related"]} == {
            ("Northwind Labs", "WORKS_FOR"),
            ("Lisbon", "LIVES_IN"),
        }
        brewing = await call(session, "get_related", {"entity": "Coffee Brewing Methods", "depth": 1})
        # Each pair is linked both ways (relates_to / part_of, requires / used_by): the strongest is shown.
        assert {r["entity"]["name"] for r in brewing["related"]} == {"Coffee Bean Origins", "Proper Grinding Technique"}
        assert {r["relation"]["type"] for r in brewing["related"]} <= {"OTHER", "PART_OF", "DEPENDS_ON"}
        hits = await call(session, "search_memory", {"query": "Which coffee tastes of jasmine?", "limit": 1})
        found = hits["results"][0]
        assert "Yirgacheffe" in found["text"] and found["source"].endswith("coffee/Coffee Bean Origins.md")
        memory = await call(session, "get_memory", {"memory_id": found["memory_id"]})
        assert memory["metadata"]["original_id"] == "main/coffee/coffee-bean-origins"  # Basic Memory's permalink


async def test_mcp_memory_services_database_is_read_without_a_change_and_its_deletions_stay_deleted(
    settings: Settings, tmp_path: Path
) -> None:
    database = FIXTURES / "memory-service" / "sqlite_vec.db"  # written by mcp-memory-service 12.4.0 (produce.py)
    before = hashlib.sha256(database.read_bytes()).hexdigest(), sorted(database.parent.iterdir())
    first = imported(settings, "--from", "mcp-memory-service", str(database))
    assert first["report"]["imported"] == 3
    assert first["conversion"]["skipped"] == {"memories deleted in mcp-memory-service (its tombstones)": 1}
    assert (hashlib.sha256(database.read_bytes()).hexdigest(), sorted(database.parent.iterdir())) == before
    assert imported(settings, "--from", "mcp-memory-service", str(database))["report"]["imported"] == 0

    async with local_session(settings, background_jobs=False) as session:
        hits = await call(session, "search_memory", {"query": "why does the importer keep source ids", "limit": 1})
        found = hits["results"][0]
        assert found["text"].startswith("Decision: the falcon importer") and "decision" in found["tags"]
        memory = await call(session, "get_memory", {"memory_id": found["memory_id"]})
        assert memory["metadata"]["memory_type"] == "decision" and memory["metadata"]["service_ticket"] == "FAL-42"
        gone = await call(session, "search_memory", {"query": "staging VPN password", "mode": "keyword"})
        assert gone["results"] == []

    not_sqlite = tmp_path / "sqlite_vec.db"
    not_sqlite.write_text("this is not a database\n" * 100)
    assert "not a SQLite database" in refused(settings, "--from", "mcp-memory-service", str(not_sqlite))
