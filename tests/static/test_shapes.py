"""One shape per concept: a class name means one thing in app/, and a record reads the columns it projects."""

from __future__ import annotations

import ast
import dataclasses
import inspect
from collections import defaultdict
from pathlib import Path

import zapomni_db

APP = Path(__file__).resolve().parents[2] / "app"


def test_every_public_class_is_declared_once() -> None:
    # A name declared twice is either one concept in two shapes (fields copied between them) or two
    # concepts a reader cannot tell apart at an import line.
    where: dict[str, list[str]] = defaultdict(list)
    for path in sorted(APP.rglob("*.py")):
        for node in ast.parse(path.read_text(), str(path)).body:
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                where[node.name].append(str(path.relative_to(APP)))
    twice = {name: paths for name, paths in where.items() if len(paths) > 1}
    assert not twice, f"classes declared in more than one module: {twice}"


def _columns(projection: str) -> int:
    """Top-level comma-separated expressions (a comma inside coalesce(a, b) does not count)."""
    depth, count = 0, 1
    for char in projection:
        depth += (char == "(") - (char == ")")
        count += char == "," and depth == 0
    return count


def test_each_record_reads_as_many_columns_as_it_projects() -> None:
    records = [
        value
        for value in (getattr(zapomni_db, name) for name in zapomni_db.__all__)  # imported when first asked for
        if inspect.isclass(value) and dataclasses.is_dataclass(value) and isinstance(vars(value).get("PROJECTION"), str)
    ]
    assert {r.__name__ for r in records} >= {"MemoryInfo", "JobRow", "EntityInfo", "RelationRow", "RelationEvidence"}
    for record in records:
        # Without a WIDTH, `from_row` reads a whole row: one column per field.
        width = getattr(record, "WIDTH", len(dataclasses.fields(record)))
        assert _columns(vars(record)["PROJECTION"]) == width, f"{record.__name__}: PROJECTION and WIDTH disagree"
