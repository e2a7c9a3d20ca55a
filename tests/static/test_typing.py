"""The type checker is part of lint: mypy checks every package of app/, the tests and the benches, each package says
it is typed (PEP 561), and every `type: ignore` that is left names its error code and says why."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "app"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
PACKAGES = sorted(p.name for p in APP.iterdir() if (p / "__init__.py").is_file())
_IGNORE = re.compile(r"#\s*type:\s*ignore(?P<codes>\[[\w\-, ]+\])?(?P<rest>.*)$")


def _recipe(target: str) -> list[str]:
    lines = (ROOT / "Makefile").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"{target}:"))
    recipe = []
    for line in lines[start + 1 :]:
        if not line.startswith("\t"):
            break
        recipe.append(line.strip())
    return recipe


def test_make_lint_runs_mypy_on_every_package() -> None:
    mypy = PYPROJECT["tool"]["mypy"]
    assert PACKAGES == [
        "zapomni_cli",
        "zapomni_console",
        "zapomni_core",
        "zapomni_db",
        "zapomni_http",
        "zapomni_mcp",
        "zapomni_ops",
    ]
    assert sorted(mypy["packages"]) == sorted([*PACKAGES, "tests", "bench"]), "a package is not type-checked"
    assert mypy["strict"] is True and mypy["warn_unused_ignores"] is True
    assert "$(BIN)/mypy" in _recipe("lint"), _recipe("lint")


def test_every_package_ships_its_py_typed_marker() -> None:
    missing = [name for name in PACKAGES if not (APP / name / "py.typed").is_file()]
    assert not missing, f"no py.typed in {missing}"
    assert "py.typed" in PYPROJECT["tool"]["setuptools"]["package-data"]["*"], "the wheel would leave them out"


def test_every_type_ignore_names_its_code_and_says_why() -> None:
    # The reason is a comment after the ignore or on the line just above it.
    bare = []
    checked = [*APP.rglob("*.py"), *(ROOT / "tests").rglob("*.py"), *(ROOT / "bench").rglob("*.py")]
    for path in sorted(p for p in checked if "fixtures" not in p.parts):
        lines = path.read_text().splitlines()
        for number, line in enumerate(lines, 1):
            found = _IGNORE.search(line)
            if found is None:
                continue
            above = lines[number - 2].strip() if number > 1 else ""
            explained = found["rest"].strip().startswith("#") or above.startswith("#")
            if not found["codes"] or not explained:
                bare.append(f"{path.relative_to(ROOT)}:{number}")
    assert not bare, f"type: ignore without an error code or a reason: {bare}"
