"""The operator's make targets where no container engine can answer: `make help`'s layout, and the compose
command checked before anything runs (ops/compose).

Docker cannot run here, so its CLI is a STAND-IN: a script on PATH that answers as Docker's CLI without the
Compose v2 plugin does (`docker compose ...` is an unknown command; the first unknown flag fails). The real
compose paths (podman-compose, `make ps` showing health) are driven by tests/containers.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
MAKE = shutil.which("make") or "make"  # found before PATH is narrowed

# What Docker 24's CLI prints without the Compose plugin: `compose` is taken for an unknown command, and
# `docker compose exec -T ...` fails on the flag first.
DOCKER_WITHOUT_COMPOSE = """#!/bin/sh
echo "$*" >> "$(dirname "$0")/calls"
case "$*" in
  *-T*) echo "unknown shorthand flag: 'T' in -T" >&2; echo "See 'docker --help'." >&2; exit 125 ;;
  compose*) echo "docker: 'compose' is not a docker command." >&2; echo "See 'docker --help'" >&2; exit 1 ;;
  version*) echo "Docker version 24.0.5 (stand-in)"; exit 0 ;;
esac
exit 1
"""


def make(target: str, path: str, *variables: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": path}
    env.pop("COMPOSE", None)
    return subprocess.run(
        [MAKE, "--no-print-directory", target, *variables],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_make_help_puts_every_description_in_one_column() -> None:
    listing = make("help", os.environ["PATH"]).stdout
    lines = [line for line in listing.splitlines() if line.startswith("  make ")]
    assert len(lines) >= 20, listing
    # every line kept starts with "  make ":
    columns = {re.match(r"  make \S+\s+", line).end() for line in lines}  # type: ignore[union-attr]
    assert len(columns) == 1, listing
    assert "make test-appliance   build the image" in listing, listing


def test_a_docker_without_compose_v2_is_named_with_what_to_install(tmp_path: Path) -> None:
    docker = tmp_path / "docker"
    docker.write_text(DOCKER_WITHOUT_COMPOSE)
    docker.chmod(0o755)
    for target in ("health", "ps", "backup"):
        result = make(target, f"{tmp_path}:{os.environ['PATH']}")
        assert result.returncode != 0, result
        assert "no Compose v2" in result.stderr and "docker-compose-plugin" in result.stderr, result.stderr
        assert "unknown shorthand flag" not in result.stderr, result.stderr
    # Only the check ran: nothing was asked of the stack.
    assert set((tmp_path / "calls").read_text().splitlines()) == {"compose version"}


def test_a_missing_compose_command_is_named(tmp_path: Path) -> None:
    # A PATH with make's own tools and no docker at all.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("bash", "env", "dirname"):
        (bin_dir / tool).symlink_to(shutil.which(tool) or tool)
    result = make("health", str(bin_dir))
    assert result.returncode != 0
    assert 'docker is not installed (COMPOSE="docker compose")' in result.stderr, result.stderr


def test_make_test_properties_collects_the_property_tests_and_nothing_else() -> None:
    """The recipe's own pytest command, collecting only: it once collected tests/containers too and stopped on a
    module name both folders use."""
    lines = (REPO / "Makefile").read_text().splitlines()
    start = lines.index(next(line for line in lines if line.startswith("test-properties:")))
    (command,) = [line.strip() for line in lines[start + 1 : start + 2]]
    variable, _, pytest = command.partition(" ")
    assert variable == "ZAPOMNI_TEST_EXHAUSTIVE=1" and pytest.startswith("$(BIN)/python -m pytest "), command
    args = pytest.removeprefix("$(BIN)/python").split()
    collected = subprocess.run(
        [sys.executable, *args, "--collect-only", "-q"],
        cwd=REPO,
        env={**os.environ, "ZAPOMNI_TEST_EXHAUSTIVE": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert collected.returncode == 0, collected.stdout[-3000:] + collected.stderr[-2000:]
    selected = [line for line in collected.stdout.splitlines() if "::" in line]
    assert sorted(line.split("::")[0] for line in selected) == [
        "tests/integration/test_parameter_encoding.py",
        "tests/tools/test_hostile_strings.py",
    ], collected.stdout[-3000:]
