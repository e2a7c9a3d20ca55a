"""The job runner's pure pieces: who may take a job over, and how progress reads."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from zapomni_core.disk import MB, DiskStatus
from zapomni_core.kernel.runner import _HOST, _owner_gone
from zapomni_core.progress import Progress
from zapomni_db import WriteSuspension


def test_a_job_of_a_dead_process_on_this_machine_can_be_taken_over_at_once() -> None:
    child = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_pid = int(child.stdout)
    assert _owner_gone(f"{_HOST}:{dead_pid}:abcd1234")
    assert _owner_gone(None) and _owner_gone("")


def test_a_job_of_a_live_process_or_another_machine_waits_for_its_lease() -> None:
    assert not _owner_gone(f"{_HOST}:{os.getppid()}:abcd1234")  # alive: our parent
    assert not _owner_gone(f"{_HOST}:{os.getpid()}:other")  # this very process
    assert not _owner_gone(f"elsewhere-{_HOST}:1:abcd1234")  # another machine: only its lease can tell
    assert not _owner_gone(f"{_HOST}:not-a-pid:x")


def test_progress_reads_as_counted_units_with_what_is_happening() -> None:
    assert Progress(3, 10, "chunks", "embedding").describe() == "3/10 chunks: embedding"
    assert Progress(3, None, "memories").describe() == "3 memories"
    assert Progress(1, 2, "chunks").with_message("paused: disk full").message == "paused: disk full"


def test_a_suspension_the_disk_has_room_for_again_says_writes_resume_not_that_space_is_missing() -> None:
    suspension = WriteSuspension(since=0.0, free_bytes=MB, resume_free_bytes=8 * MB, crashed=False)
    full = DiskStatus(Path("/data"), free_bytes=2 * MB, min_free_bytes=0, low=False, suspension=suspension)
    assert full.full is not None and "suspended until 8.0 MB are free" in full.full
    freed = DiskStatus(Path("/data"), free_bytes=int(198.5 * MB), min_free_bytes=0, low=False, suspension=suspension)
    assert freed.full is not None and "198.5 MB free" in freed.full and "resume within seconds" in freed.full
    assert "until 8.0 MB are free" not in freed.full  # what read as a contradiction with 198.5 MB free
