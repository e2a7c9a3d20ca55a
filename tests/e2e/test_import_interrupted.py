"""An import from another tool stopped half way (Ctrl-C while it writes) says how far it got, and the same
command run again writes the rest: every memory is written whole, and those already stored are skipped."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path

from bench.chat_export import write_chatgpt_export
from tests.cli_in_process import run_cli
from tests.processes import ZAPOMNI, server_env

MESSAGES = 1000  # long enough to be stopped while writing (progress is reported every 2 s)


def texts() -> list[str]:
    return [
        f"Message {i}: {i % 17} boats, wind {i % 9 + 2} knots {['north', 'east', 'south', 'west'][i % 4]}."
        for i in range(MESSAGES)
    ]


def _ctrl_c_as_at_a_terminal() -> None:
    # A shell starts background jobs with SIGINT ignored, and Python then never turns it into KeyboardInterrupt:
    # the command gets the default disposition a person's terminal gives it.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_an_import_stopped_while_writing_says_so_and_a_second_run_finishes_it(data_dir: Path, tmp_path: Path) -> None:
    export = write_chatgpt_export(tmp_path / "export", texts(), per_conversation=100)
    env = server_env(data_dir)
    command = [ZAPOMNI, "import", "--from", "chatgpt", str(export)]
    process = subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=_ctrl_c_as_at_a_terminal
    )
    try:
        assert process.stderr is not None
        said: list[str] = []
        for line in process.stderr:  # progress lines come every 2 s once the writing pass runs
            said.append(line)
            if "importing" in line:
                process.send_signal(signal.SIGINT)
                break
        rest = process.communicate(timeout=120)[1]
    finally:
        process.kill()
    assert process.returncode == 130, "".join(said) + rest
    stopped = next(line for line in rest.splitlines() if "stopped with" in line)
    written = int(stopped.split("stopped with ")[1].split(" of ")[0])
    assert 0 < written < MESSAGES and "run the same command again" in stopped

    again = run_cli([*command[1:], "--json"], env, timeout_s=600)  # in process: the suite's model, no start-up
    assert again.returncode == 0, again.stderr
    report = json.loads(again.stdout)["report"]
    assert report["skipped"] >= written and report["imported"] + report["skipped"] == MESSAGES
