"""The `zapomni` command line: add, search, stats, errors, and the terminal greeting of `serve`."""

from __future__ import annotations

import json
import os
import pty
import signal
import subprocess
from pathlib import Path

from tests.e2e.conftest import ZAPOMNI, server_env


def zapomni(data_dir: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [ZAPOMNI, *args], input=stdin, capture_output=True, text=True, env=server_env(data_dir), timeout=120
    )


def test_add_search_and_stats(data_dir: Path) -> None:
    added = zapomni(data_dir, "add", "The office wifi password is on the fridge.", "--tag", "office", "--json")
    assert added.returncode == 0, added.stderr
    memory_id = json.loads(added.stdout)["memory_id"]
    piped = zapomni(data_dir, "add", "-", "--source", "notes", "--json", stdin="Lunch is at noon on Fridays.")
    assert piped.returncode == 0, piped.stderr

    found = zapomni(data_dir, "search", "where is the wifi password?", "--limit", "1", "--json")
    assert json.loads(found.stdout)["results"][0]["memory_id"] == memory_id
    filtered = zapomni(data_dir, "search", "wifi", "--source", "notes", "--json")
    assert [r["text"] for r in json.loads(filtered.stdout)["results"]] == ["Lunch is at noon on Fridays."]

    table = zapomni(data_dir, "search", "wifi password", "--limit", "1")
    assert "office" in table.stdout and memory_id[:8] in table.stdout
    stats = zapomni(data_dir, "stats")
    assert "total_memories" in stats.stdout and "│ 2 " in stats.stdout
    assert json.loads(zapomni(data_dir, "stats", "--json").stdout)["total_chunks"] == 2


def test_invalid_input_exits_non_zero_with_the_field_named(data_dir: Path) -> None:
    blank = zapomni(data_dir, "add", "   ")
    assert blank.returncode != 0
    assert "text: must contain something other than whitespace" in blank.stderr
    limit = zapomni(data_dir, "search", "x", "--limit", "0")
    assert limit.returncode != 0 and "limit: input should be greater than or equal to 1" in limit.stderr
    assert json.loads(zapomni(data_dir, "stats", "--json").stdout)["total_memories"] == 0


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
