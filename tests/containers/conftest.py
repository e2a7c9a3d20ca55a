"""The compose stack for the whole session: `make up` once (it builds the image), `compose down -v` at the end.

Run by `make test-appliance`, which installs and configures podman and builds the stand-in images first.
The stack is compose.yaml's project `zapomni`, as the README's client entries expect; the session refuses
to start over an existing one (a stack of your own on this machine) unless ZAPOMNI_TEST_REPLACE_STACK=1.
While working on these tests, ZAPOMNI_TEST_KEEP_STACK=1 reuses a running test stack and leaves it up.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator

import pytest

from tests.containers.harness import PODMAN_COMPOSE, PROJECT, REPO, compose, make, podman


def _require_engine() -> None:
    missing = [tool for tool in ("podman", str(PODMAN_COMPOSE)) if not shutil.which(tool)]
    if missing:
        pytest.fail(f"{', '.join(missing)} not found: run the appliance test with `make test-appliance`")
    standins = podman("images", "--filter", "reference=localhost/zapomni-standin/*", "--format", "{{.Repository}}")
    if len(standins.stdout.split()) < 5:
        pytest.fail("the stand-in images are missing: `make test-appliance` builds them (tests/containers/standins)")


KEEP = os.environ.get("ZAPOMNI_TEST_KEEP_STACK") == "1"


def _refuse_a_foreign_stack() -> None:
    if KEEP:
        return
    existing = podman("volume", "ls", "--filter", f"label=com.docker.compose.project={PROJECT}", "--quiet").stdout
    existing += podman("ps", "-a", "--filter", f"label=com.docker.compose.project={PROJECT}", "--quiet").stdout
    if existing.strip() and os.environ.get("ZAPOMNI_TEST_REPLACE_STACK") != "1":
        pytest.fail(
            f"a compose project named {PROJECT!r} already exists here (containers or volumes); the appliance test "
            "would remove it. Remove it yourself, or set ZAPOMNI_TEST_REPLACE_STACK=1."
        )
    compose("down", "-v", check=False, timeout=300)


def _down() -> None:
    compose("down", "-v", check=False, timeout=300)
    for name in podman("volume", "ls", "--format", "{{.Name}}").stdout.split():
        if name.startswith("zapomni-test-"):
            podman("volume", "rm", "-f", name, check=False)


def _say(config: pytest.Config, line: str) -> None:
    """A line in the test log whatever the capture mode: CI's log shows the image built and the stack up."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    capture = config.pluginmanager.get_plugin("capturemanager")
    if reporter is not None and capture is not None:
        with capture.global_and_fixture_disabled():  # a session fixture's output is captured otherwise
            reporter.write_line(f"[appliance] {line}")


@pytest.fixture(scope="session")
def stack(pytestconfig: pytest.Config) -> Iterator[str]:
    """Every test here runs against the stack (`pytestmark = pytest.mark.usefixtures("stack")`); its value is what
    `make up` printed (stdout and stderr)."""
    _require_engine()
    _refuse_a_foreign_stack()
    (REPO / "backups").mkdir(exist_ok=True)
    before = set((REPO / "backups").iterdir())
    try:
        up = make("up")
        output = (up.stdout + up.stderr).splitlines()
        built = [line.split()[-1] for line in output if line.startswith("Successfully tagged")]
        ready = [line for line in output if line.startswith("wait-ready:")]
        _say(pytestconfig, f"make up: image {built[-1] if built else '(unchanged)'}; {' '.join(ready)}")
        containers = podman("ps", "--filter", f"label=com.docker.compose.project={PROJECT}", "--format", "{{.Names}}")
        _say(pytestconfig, f"running: {' '.join(containers.stdout.split())}")
        yield up.stdout + up.stderr
    finally:
        if not KEEP:
            _down()
        for path in set((REPO / "backups").iterdir()) - before:
            shutil.rmtree(path, ignore_errors=True) if path.is_dir() else path.unlink()
