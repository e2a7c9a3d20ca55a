"""The image the Dockerfile builds, as built by `make up` with podman: it loads everything offline, keeps
its health check (Docker format), runs as a non-root user, and carries no secret and no certificate of
the machine that built it."""

from __future__ import annotations

import hashlib
import re
import subprocess
import tarfile
from pathlib import Path

import pytest

from tests.containers.harness import IMAGE, SECRETS_VOLUME, container, engine_env, inspect, podman

pytestmark = pytest.mark.usefixtures("stack")

HOST_CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")
PEM = re.compile(rb"-----BEGIN CERTIFICATE-----\n(.*?)-----END CERTIFICATE-----", re.S)


def test_everything_the_appliance_loads_is_baked_in_and_loads_with_no_network() -> None:
    result = podman(
        "run", "--rm", "--network=none", "--no-healthcheck", "--entrypoint", "python", IMAGE, "/app/ops/image-smoke.py"
    )  # fmt: skip
    for part in ("onnx embedder: ok", "spacy", "falkordb module: ok"):
        assert part in result.stdout, result.stdout


def test_the_image_keeps_its_health_check_and_runs_as_a_fixed_non_root_user() -> None:
    image = inspect(IMAGE)
    assert image["ManifestType"] == "application/vnd.docker.distribution.manifest.v2+json"
    assert image["Healthcheck"]["Test"] == ["CMD", "/app/healthchecks/probe"]  # podman: beside Config
    assert image["Config"]["User"] == "10001:10001"
    uid = podman("run", "--rm", "--no-healthcheck", "--entrypoint", "id", IMAGE, "-u").stdout.strip()
    assert uid == "10001"


def _stack_password() -> bytes:
    result = podman(
        "run", "--rm", "--no-healthcheck", "-v", f"{SECRETS_VOLUME}:/secrets:ro", "--entrypoint", "cat", IMAGE,
        "/secrets/falkordb.password",
    )  # fmt: skip
    password = result.stdout.strip().encode()
    assert len(password) == 64, "init-volumes generates 32 random bytes as hex"
    return password


def _build_machine_certificates() -> list[bytes]:
    """Certificates this machine trusts that the image's own CA bundle does not: the build machine's own
    (here, the TLS-intercepting proxy's CA that pip was handed as a build secret). One base64 line of each,
    from the middle, as it would appear in any PEM file."""
    image_bundle = podman(
        "run", "--rm", "--no-healthcheck", "--entrypoint", "cat", IMAGE, "/etc/ssl/certs/ca-certificates.crt"
    ).stdout.encode()  # fmt: skip
    image_bodies = set(PEM.findall(image_bundle))
    lines = []
    for body in PEM.findall(HOST_CA_BUNDLE.read_bytes()):
        if body not in image_bodies:
            base64_lines = body.split(b"\n")
            lines.append(base64_lines[len(base64_lines) // 2])
    return lines


def test_the_image_carries_no_secret_and_no_build_machine_certificate(tmp_path: Path) -> None:
    image = inspect(IMAGE)
    environment = "\n".join(image["Config"]["Env"])
    assert "PASSWORD" not in environment and "PIP_CERT" not in environment and "pip_ca" not in environment

    needles = {"the stack's password": _stack_password()}
    token = podman("exec", container("zapomni"), "cat", "/data/secrets/http.token").stdout.strip().encode()
    needles["the HTTP server's first token"] = token
    needles |= {f"build-machine CA #{i}": line for i, line in enumerate(_build_machine_certificates())}
    bundle_digest = hashlib.sha256(HOST_CA_BUNDLE.read_bytes()).hexdigest()

    archive = tmp_path / "image.tar"
    name = f"zapomni-test-export-{tmp_path.name}"
    podman("create", "--name", name, IMAGE)
    try:
        subprocess.run(["podman", "export", "-o", str(archive), name], check=True, env=engine_env())
    finally:
        podman("rm", "-f", "--volumes", name, check=False)  # and the anonymous /data volume

    found: list[str] = []
    files = 0
    with tarfile.open(archive) as tar:
        for member in tar:
            if not member.isfile():
                continue
            files += 1
            if member.name.lstrip("./").startswith("run/secrets"):
                found.append(f"{member.name}: a build secret left behind")
            # a regular file's member always has a reader:
            data = tar.extractfile(member).read()  # type: ignore[union-attr]
            if hashlib.sha256(data).hexdigest() == bundle_digest:
                found.append(f"{member.name}: the build machine's CA bundle")
            found += [f"{member.name}: {what}" for what, needle in needles.items() if needle in data]
    assert files > 10_000, "the export holds the image's files"
    assert found == []
