"""The suite's hang watch (tests/hang_watch.py) ends a test process stuck where pytest-timeout cannot, with stacks."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

STUCK_AGAIN = """
import time

def test_cleanup_that_waits_again():
    try:
        time.sleep(60)  # failed here by pytest-timeout after 1 s...
    finally:
        waits_again()  # ...and stuck again in its cleanup


def waits_again():
    time.sleep(60)
"""

THREAD_LEFT_BEHIND = """
import threading
import time

def test_leaves_a_thread_that_exit_waits_for():
    threading.Thread(target=never_ends, daemon=False).start()


def never_ends():
    time.sleep(60)
"""


def run_pytest(tmp_path: Path, test: str) -> tuple[subprocess.CompletedProcess[str], float]:
    (tmp_path / "pytest.ini").write_text("[pytest]\ntimeout = 1\nhang_grace = 1\nhang_exit = 1\n")
    (tmp_path / "test_stuck.py").write_text(test)
    started = time.monotonic()
    options = ["-p", "tests.hang_watch", "-p", "no:cacheprovider", "-c", str(tmp_path / "pytest.ini")]
    run = subprocess.run(
        [sys.executable, "-m", "pytest", *options, "--rootdir", str(tmp_path), str(tmp_path / "test_stuck.py")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=50,
    )
    return run, time.monotonic() - started


def test_a_test_stuck_again_in_its_cleanup_is_ended_with_its_stack(tmp_path: Path) -> None:
    run, took = run_pytest(tmp_path, STUCK_AGAIN)

    assert run.returncode != 0
    assert took < 20, f"the stuck process ran {took:.1f} s"
    assert "Timeout (0:00:02)!" in run.stderr
    assert "in waits_again" in run.stderr
    assert "in test_cleanup_that_waits_again" in run.stderr


def test_a_process_that_does_not_exit_after_its_last_test_is_ended_with_the_stack_it_waits_in(tmp_path: Path) -> None:
    run, took = run_pytest(tmp_path, THREAD_LEFT_BEHIND)

    assert "1 passed" in run.stdout
    assert run.returncode != 0
    assert took < 20, f"the process ran {took:.1f} s"
    assert "in never_ends" in run.stderr
    assert "in _shutdown" in run.stderr  # the interpreter's exit, joining the thread
