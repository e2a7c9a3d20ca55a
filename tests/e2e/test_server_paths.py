"""Server paths and hosts in error replies: shown to a local client (stdio), left out for a remote one.

The stdio server is the local case, driven through the official client; the remote case goes through
the same mapping the server uses (`zapomni_mcp.errors.failure_message`) with `local=False`, as the
HTTP adapter will call it, on errors raised by the real code that raises them.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.helpers import free_port, text_of
from tests.processes import mcp_session
from zapomni_core.disk import DiskGuard
from zapomni_core.embedders.ollama import OllamaEmbedder
from zapomni_core.errors import REDACTED_HOST, REDACTED_PATH
from zapomni_core.files.walker import plan_walk
from zapomni_mcp.errors import failure_message

pytestmark = pytest.mark.anyio

HUGE_MB = 1_000_000  # ZAPOMNI_MIN_FREE_MB's largest value: writes are refused as if the disk were full


@pytest.fixture(autouse=True)
def _disk_below_the_largest_threshold(tmp_path: Path) -> None:
    if shutil.disk_usage(tmp_path).free >= HUGE_MB * 1024 * 1024:
        pytest.skip("this disk has more than 1 TB free: no threshold makes it look full")


def _roots_with_a_link(tmp_path: Path) -> tuple[Path, Path]:
    roots = tmp_path / "roots"
    roots.mkdir()
    link = roots / "me"
    link.symlink_to("/proc/self")  # resolves to /proc/<the server's pid>, outside the roots
    return roots, link


async def test_a_local_client_is_shown_the_paths(data_dir: Path, tmp_path: Path) -> None:
    roots, link = _roots_with_a_link(tmp_path)
    async with mcp_session(data_dir, ZAPOMNI_ALLOWED_ROOTS=str(roots)) as session:
        refused = await session.call_tool("ingest_path", {"path": str(link)})
        text = text_of(refused)
        assert refused.is_error and f"ZAPOMNI_ALLOWED_ROOTS={roots}" in text, text
        assert "it resolves to '/proc/" in text and REDACTED_PATH not in text
    async with mcp_session(data_dir, ZAPOMNI_MIN_FREE_MB=str(HUGE_MB)) as session:
        full = await session.call_tool("add_memory", {"text": "Refused for want of space."})
        text = text_of(full)
        assert full.is_error and str(data_dir) in text and "Nothing was stored" in text, text


async def test_a_remote_client_is_told_the_same_without_the_paths(data_dir: Path, tmp_path: Path) -> None:
    roots, link = _roots_with_a_link(tmp_path)
    with pytest.raises(Exception) as outside:
        plan_walk(str(link), [roots])
    local = failure_message("ingest_path", outside.value, "r1", local=True)
    remote = failure_message("ingest_path", outside.value, "r1", local=False)
    assert str(roots) in local and f"/proc/{os.getpid()}" in local
    assert "/proc/" not in remote and f"(ZAPOMNI_ALLOWED_ROOTS={REDACTED_PATH})" in remote, remote
    # The path the client sent is its own: shown whole (it named it), and nothing else of the server's.
    assert remote.startswith(f"'{link}' (it resolves to '{REDACTED_PATH}') is outside the allowed roots"), remote
    assert remote.count(str(tmp_path)) == 1, remote

    data_dir.mkdir(parents=True, exist_ok=True)
    with pytest.raises(Exception) as full:
        await DiskGuard(data_dir, HUGE_MB * 1024 * 1024).ensure_writable()
    remote = failure_message("add_memory", full.value, "r2", local=False)
    assert str(data_dir) not in remote and "The disk is too full to store this" in remote, remote

    # A relative path is made absolute against the server's working directory: that is a server path too.
    with pytest.raises(Exception) as missing:
        plan_walk("no-such-dir", [tmp_path])
    remote = failure_message("ingest_path", missing.value, "r3", local=False)
    assert os.getcwd() not in remote and "does not exist" in remote, remote


async def test_a_remote_client_is_not_told_where_ollama_runs() -> None:
    host = f"http://127.0.0.1:{free_port()}"  # nothing listens there: the embedder cannot reach it
    embedder = OllamaEmbedder(host=host, model="nomic-embed-text", retries=0)
    with pytest.raises(Exception) as unreachable:
        await embedder.start()
    await embedder.aclose()
    local = failure_message("add_memory", unreachable.value, "r4", local=True)
    remote = failure_message("add_memory", unreachable.value, "r4", local=False)
    assert f"cannot reach Ollama at OLLAMA_HOST={host}" in local, local
    assert host not in remote and f"cannot reach Ollama at OLLAMA_HOST={REDACTED_HOST}" in remote, remote
