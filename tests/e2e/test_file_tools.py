"""ingest, index-codebase and the code commands on the command line (the tools through the MCP client:
tests/tools/test_files_and_code_tools.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.test_cli import zapomni
from tests.helpers import docs_and_code

pytestmark = pytest.mark.anyio


def test_ingest_and_the_code_commands_on_the_command_line(data_dir: Path, tmp_path: Path) -> None:
    docs, code = docs_and_code(tmp_path)
    roots = {"ZAPOMNI_ALLOWED_ROOTS": str(tmp_path)}
    done = zapomni(data_dir, "ingest", str(docs), str(code / "shop" / "base.py"), "--json", **roots)
    assert done.returncode == 0, done.stderr
    jobs = json.loads(done.stdout)["jobs"]
    assert [(j["kind"], j["state"], j["counts"]["added"]) for j in jobs] == [
        ("ingest_path", "completed", 1),
        ("ingest_path", "completed_with_errors", 0),  # a .py file is not a document: refused, with the reason
    ]
    assert "unsupported file type '.py'" in jobs[1]["failures"][0]

    done = zapomni(data_dir, "index-codebase", str(code), **roots)
    assert done.returncode == 0 and "completed" in done.stdout and "calls 11" in done.stdout, done.stderr
    callees = zapomni(data_dir, "callees", "shop.models.make_order", "--json", **roots)
    assert [s["qualified_name"] for s in json.loads(callees.stdout)["symbols"]] == ["shop.models.Order"]
    outside = zapomni(data_dir, "ingest", "/etc", **roots)
    assert outside.returncode == 1 and "outside the allowed roots" in outside.stderr
