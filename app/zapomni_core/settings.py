"""Configuration from the environment (pydantic-settings); every field has a working default."""

from __future__ import annotations

import ipaddress
import os
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

from pydantic import Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from zapomni_core.tuning import (
    DEFAULT_DAYS_WEIGHT,
    DEFAULT_FUSION,
    DEFAULT_LEG_DEPTH,
    DEFAULT_RELEVANCE_FLOOR,
    DEFAULT_RRF_K,
    DEFAULT_VECTOR_SHARE,
    DEFAULT_VECTOR_WEIGHT,
    DEFAULT_WHEN_WEIGHT,
    FusionMethod,
)
from zapomni_core.validation import DEFAULT_WORKSPACE, WORKSPACE_PATTERN


def default_data_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "zapomni"


class Settings(BaseSettings):
    """Names follow the design: FALKORDB_*, OLLAMA_HOST, EMBEDDING_MODEL, ...; ZAPOMNI_* for the rest."""

    model_config = SettingsConfigDict(env_prefix="", extra="ignore", populate_by_name=True)

    @classmethod
    def from_variables(cls, **variables: Any) -> Settings:
        """Settings with these values named as in the environment (`ZAPOMNI_DATA_DIR=...`, `LOG_LEVEL="WARNING"`), over
        what the environment itself says: what a process started with those variables would run with."""
        return cls(**variables)

    # Storage
    db_mode: Literal["embedded", "server"] = Field("embedded", alias="ZAPOMNI_DB_MODE")
    data_dir: Path = Field(default_factory=default_data_dir, alias="ZAPOMNI_DATA_DIR")
    falkordb_host: str = Field("localhost", alias="FALKORDB_HOST")
    falkordb_port: int = Field(6379, alias="FALKORDB_PORT", ge=1, le=65535)
    falkordb_password: SecretStr | None = Field(None, alias="FALKORDB_PASSWORD")
    graph_name: str = Field("zapomni", alias="GRAPH_NAME", pattern=r"^[A-Za-z0-9_\-]{1,64}$")
    # The workspace tools use when a call names none (rule: zapomni_core.validation.WORKSPACE_RULE).
    workspace: str = Field(DEFAULT_WORKSPACE, alias="ZAPOMNI_WORKSPACE", pattern=WORKSPACE_PATTERN)
    appendfsync: Literal["always", "everysec"] = Field("always", alias="ZAPOMNI_APPENDFSYNC")
    db_pool_size: int = Field(16, alias="ZAPOMNI_DB_POOL_SIZE", ge=1, le=256)
    # How long a call waits for a database it cannot reach to come back before it answers that the database is
    # unavailable: 15 s covers the embedded keeper's restarts (as zapomni_db.connection.RECOVERY_TIMEOUT_S says); a
    # server behind a proxy that gives up sooner answers sooner with a lower value.
    db_recovery_s: float = Field(15.0, alias="ZAPOMNI_DB_RECOVERY_S", ge=0, le=600)
    vector_ef_runtime: int = Field(100, alias="ZAPOMNI_VECTOR_EF_RUNTIME", ge=1, le=10_000)
    # Server mode: where this process can read the server's files (backups copy them from there).
    falkordb_data_dir: Path | None = Field(None, alias="FALKORDB_DATA_DIR")

    # Operations
    backup_dir: Path | None = Field(None, alias="ZAPOMNI_BACKUP_DIR")
    backup_keep: int = Field(7, alias="ZAPOMNI_BACKUP_KEEP", ge=1, le=1000)
    health_host: str = Field("127.0.0.1", alias="ZAPOMNI_HEALTH_HOST")
    health_port: int = Field(8090, alias="ZAPOMNI_HEALTH_PORT", ge=1, le=65535)

    # Embeddings
    embedder: Literal["onnx", "ollama"] = Field("onnx", alias="ZAPOMNI_EMBEDDER")
    embedding_model: str | None = Field(None, alias="EMBEDDING_MODEL")
    embedding_batch_size: int = Field(64, alias="ZAPOMNI_EMBEDDING_BATCH_SIZE", ge=1, le=1024)
    embedding_threads: int = Field(0, alias="ZAPOMNI_EMBEDDING_THREADS", ge=0, le=64)
    ollama_host: str = Field("http://localhost:11434", alias="OLLAMA_HOST")
    ollama_timeout_s: float = Field(60.0, alias="ZAPOMNI_OLLAMA_TIMEOUT_S", gt=0)
    ollama_retries: int = Field(3, alias="ZAPOMNI_OLLAMA_RETRIES", ge=0, le=10)
    llm_model: str = Field("llama3.1:8b", alias="LLM_MODEL")

    # Embedding cache: Redis when REDIS_URL is set, else (and whenever Redis fails) in-process LRU
    redis_url: SecretStr | None = Field(None, alias="REDIS_URL")
    cache_max_entries: int = Field(20_000, alias="ZAPOMNI_CACHE_MAX_ENTRIES", ge=0, le=10_000_000)
    redis_cache_max_entries: int = Field(500_000, alias="ZAPOMNI_REDIS_CACHE_MAX_ENTRIES", ge=1, le=100_000_000)
    redis_cache_ttl_s: int = Field(7 * 24 * 3600, alias="ZAPOMNI_REDIS_CACHE_TTL_S", ge=1)

    # Search
    # RRF constant and leg depth (docs/decisions/0027): k 60 and depth 50 before.
    rrf_k: int = Field(DEFAULT_RRF_K, alias="ZAPOMNI_RRF_K", ge=1, le=10_000)
    search_leg_depth: int = Field(DEFAULT_LEG_DEPTH, alias="ZAPOMNI_SEARCH_LEG_DEPTH", ge=10, le=1000)
    # While the vector index is built after a load, how long comparing the query with every stored vector may take
    # before a search answers without the vector leg, and says so (docs/decisions/0045).
    vector_exact_limit_ms: int = Field(500, alias="ZAPOMNI_VECTOR_EXACT_LIMIT_MS", ge=1, le=600_000)
    # A vector rank's worth in the fusion, a keyword rank's being 1 (docs/decisions/0015).
    vector_weight: float = Field(DEFAULT_VECTOR_WEIGHT, alias="ZAPOMNI_VECTOR_WEIGHT", ge=0.0, le=10.0)
    # Hybrid search fuses the legs' scores (the vector leg's share given) or their ranks (docs/decisions/0035).
    fusion: FusionMethod = Field(DEFAULT_FUSION, alias="ZAPOMNI_FUSION")
    vector_share: float = Field(DEFAULT_VECTOR_SHARE, alias="ZAPOMNI_VECTOR_SHARE", ge=0.0, le=1.0)
    # Results the keyword leg did not find need at least this cosine similarity (docs/decisions/0008).
    relevance_floor: float = Field(DEFAULT_RELEVANCE_FLOOR, alias="ZAPOMNI_RELEVANCE_FLOOR", ge=0.0, le=1.0)
    # Times in questions read against the times results speak of (docs/decisions/0027); 0 turns one off.
    time_days_weight: float = Field(DEFAULT_DAYS_WEIGHT, alias="ZAPOMNI_TIME_DAYS_WEIGHT", ge=0.0, le=10.0)
    time_when_weight: float = Field(DEFAULT_WHEN_WEIGHT, alias="ZAPOMNI_TIME_WHEN_WEIGHT", ge=0.0, le=10.0)

    # Chunking
    chunk_max_tokens: int = Field(0, alias="ZAPOMNI_CHUNK_MAX_TOKENS", ge=0, le=8192)
    chunk_overlap: float = Field(0.15, alias="ZAPOMNI_CHUNK_OVERLAP", ge=0.0, le=0.5)

    # Background jobs (docs/decisions/0011-jobs.md): texts this large are indexed by a job and answered at once
    background_add_bytes: int = Field(32 * 1024, alias="ZAPOMNI_BACKGROUND_ADD_BYTES", ge=1, le=10 * 1024 * 1024 + 1)
    job_lease_s: float = Field(30.0, alias="ZAPOMNI_JOB_LEASE_S", ge=1.0, le=3600.0)
    job_poll_s: float = Field(2.0, alias="ZAPOMNI_JOB_POLL_S", gt=0, le=600.0)
    job_slots: int = Field(2, alias="ZAPOMNI_JOB_SLOTS", ge=1, le=16)  # jobs one server runs at once
    # Writes are refused while the data directory's disk has less than this free (MB); reads go on.
    min_free_mb: int = Field(256, alias="ZAPOMNI_MIN_FREE_MB", ge=0, le=1_000_000)

    # A memory that states a new value of what an older one said is linked as replacing it, at write time
    # (docs/decisions/0043-knowing-which-fact-is-current.md); off: no new links, the stored ones still shown.
    update_detection: bool = Field(True, alias="ZAPOMNI_UPDATE_DETECTION")

    # Knowledge graph (docs/decisions/0012-knowledge-graph.md): spaCy NER + rules by default, a local LLM
    # through Ollama (OLLAMA_HOST, LLM_MODEL) when set to "ollama"
    graph_extractor: Literal["spacy", "ollama"] = Field("spacy", alias="ZAPOMNI_GRAPH_EXTRACTOR")
    # New memories are queued for extraction (a background job; never blocks add_memory)
    graph_auto: bool = Field(True, alias="ZAPOMNI_GRAPH_AUTO")
    llm_timeout_s: float = Field(120.0, alias="ZAPOMNI_LLM_TIMEOUT_S", gt=0, le=3600)
    llm_retries: int = Field(2, alias="ZAPOMNI_LLM_RETRIES", ge=0, le=10)
    # rapidfuzz similarity (0-100) at which two names of compatible types are one entity
    entity_match_threshold: float = Field(89.0, alias="ZAPOMNI_ENTITY_MATCH_THRESHOLD", ge=50.0, le=100.0)
    # Hybrid search adds memories linked to its top hits through shared entities (measured: off by default)
    graph_expansion: bool = Field(False, alias="ZAPOMNI_GRAPH_EXPANSION")

    # Files and codebases (ingest_path, index_codebase): only paths under these directories are read,
    # separated by the platform's path separator (':'); default: the user's home directory
    allowed_roots_value: str | None = Field(None, alias="ZAPOMNI_ALLOWED_ROOTS", min_length=1)
    max_file_mb: float = Field(25.0, alias="ZAPOMNI_MAX_FILE_MB", gt=0, le=1024)

    # Shutdown: how long in-flight writes may take to finish once a stop is requested
    shutdown_grace_s: float = Field(30.0, alias="ZAPOMNI_SHUTDOWN_GRACE_S", ge=0, le=3600)

    # HTTP: `zapomni serve --http` (docs/decisions/0018-http-transport.md). Lists are comma-separated.
    http_host: str = Field("127.0.0.1", alias="ZAPOMNI_HTTP_HOST", min_length=1)
    http_port: int = Field(8765, alias="ZAPOMNI_HTTP_PORT", ge=1, le=65535)
    # The URL clients use to reach /mcp, when it is not http(s)://HOST:PORT/mcp (behind a proxy or a balancer).
    http_public_url: str | None = Field(None, alias="ZAPOMNI_HTTP_PUBLIC_URL", pattern=r"^https?://[^/\s]+")
    tls_cert: Path | None = Field(None, alias="ZAPOMNI_TLS_CERT")
    tls_key: Path | None = Field(None, alias="ZAPOMNI_TLS_KEY")
    # Listen beyond the loopback without TLS (e.g. behind a proxy that terminates it).
    http_insecure: bool = Field(False, alias="ZAPOMNI_HTTP_INSECURE")
    # An OAuth 2.1 authorization server for clients that sign in (docs/decisions/0046-sign-in-for-oauth-clients.md).
    oauth: bool = Field(False, alias="ZAPOMNI_OAUTH")
    # Host headers and browser Origins accepted (DNS-rebinding protection); the loopback's are always in.
    http_allowed_hosts_value: str | None = Field(None, alias="ZAPOMNI_HTTP_ALLOWED_HOSTS")
    http_allowed_origins_value: str | None = Field(None, alias="ZAPOMNI_HTTP_ALLOWED_ORIGINS")
    # Browser clients allowed by CORS (none by default: CORS is off).
    http_cors_origins_value: str | None = Field(None, alias="ZAPOMNI_HTTP_CORS_ORIGINS")
    # Proxies (addresses or networks) whose X-Forwarded-For/-Proto name the client: the per-address limits then
    # count the client, not the proxy. None by default, so no client can pick its own address with a header.
    http_trusted_proxies_value: str | None = Field(None, alias="ZAPOMNI_HTTP_TRUSTED_PROXIES")
    # A request body larger than this is refused with 413 (the largest add_memory text is 10 MB).
    http_max_body_mb: float = Field(12.0, alias="ZAPOMNI_HTTP_MAX_BODY_MB", gt=0, le=1024)
    # Per token and per replica: a bucket of `burst` requests refilled at `rate` per second (0: no limit).
    http_rate: float = Field(20.0, alias="ZAPOMNI_HTTP_RATE", ge=0, le=1_000_000)
    http_burst: int = Field(60, alias="ZAPOMNI_HTTP_BURST", ge=1, le=1_000_000)
    # A request still running after this is answered with a timeout error and cancelled.
    http_request_timeout_s: float = Field(90.0, alias="ZAPOMNI_HTTP_REQUEST_TIMEOUT_S", gt=0, le=3600)
    # A connection that has not sent a whole request head this long after opening (or after its last response)
    # is closed: idle keep-alive connections, and ones that stop half way through their headers.
    http_idle_timeout_s: float = Field(15.0, alias="ZAPOMNI_HTTP_IDLE_TIMEOUT_S", gt=0, le=3600)
    # Open connections (and streams) at once; beyond it new ones get 503.
    http_max_connections: int = Field(256, alias="ZAPOMNI_HTTP_MAX_CONNECTIONS", ge=1, le=100_000)
    # Connections from one client address, above a client's connection pool (httpx: 100) and below the server's
    # limit, so one address cannot take every slot; a new one evicts that address's oldest one waiting for a
    # request (zapomni_http/connections.py). Behind a reverse proxy every client has the proxy's address.
    http_max_connections_per_client: int = Field(128, alias="ZAPOMNI_HTTP_MAX_CONNECTIONS_PER_CLIENT", ge=1, le=100_000)

    # Logging
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = Field("INFO", alias="LOG_LEVEL")

    @field_validator("data_dir", "falkordb_data_dir", mode="before")
    @classmethod
    def _not_blank(cls, value: Any) -> Any:
        # An empty variable (`ZAPOMNI_DATA_DIR=$UNSET`) would otherwise be ".": a database in whatever folder
        # the command ran in.
        if isinstance(value, str) and not value.strip():
            raise ValueError("is empty: give a folder, or leave the variable unset for the default")
        return value

    @field_validator("http_trusted_proxies_value")
    @classmethod
    def _networks(cls, value: str | None) -> str | None:
        for item in _items(value):
            try:
                ipaddress.ip_network(item)
            except ValueError:
                example = "10.0.0.5, or 10.89.0.0/24 with the host bits zero"
                raise ValueError(f"{item!r} is not an IP address or network (e.g. {example})") from None
        return value

    @field_validator("log_level", mode="before")
    @classmethod
    def _upper(cls, value: Any) -> Any:
        return value.upper() if isinstance(value, str) else value

    @property
    def effective_embedding_model(self) -> str:
        if self.embedding_model:
            return self.embedding_model
        return "nomic-embed-text" if self.embedder == "ollama" else "all-MiniLM-L6-v2"

    @property
    def allowed_roots(self) -> tuple[Path, ...]:
        if not self.allowed_roots_value:
            return (Path.home(),)
        return tuple(Path(part).expanduser() for part in self.allowed_roots_value.split(os.pathsep) if part.strip())

    @property
    def http_allowed_hosts(self) -> tuple[str, ...]:
        return _items(self.http_allowed_hosts_value)

    @property
    def http_allowed_origins(self) -> tuple[str, ...]:
        return _items(self.http_allowed_origins_value)

    @property
    def http_cors_origins(self) -> tuple[str, ...]:
        return _items(self.http_cors_origins_value)

    @property
    def http_trusted_proxies(self) -> tuple[str, ...]:
        return _items(self.http_trusted_proxies_value)

    @property
    def max_file_bytes(self) -> int:
        return int(self.max_file_mb * 1024 * 1024)

    @property
    def backups_dir(self) -> Path:
        return self.backup_dir or self.data_dir / "backups"

    def masked(self) -> dict[str, Any]:
        """The effective configuration with secrets hidden, for the start-up log line."""
        values = self.model_dump(mode="json")
        values["falkordb_password"] = "***" if self.falkordb_password else None
        values["redis_url"] = _mask_url(self.redis_url.get_secret_value()) if self.redis_url else None
        values["embedding_model"] = self.effective_embedding_model
        return values


def describe_settings_error(exc: ValidationError) -> str:
    """One line per bad setting: the environment variable, its value (never a secret's), what is allowed.

    e.g. `zapomni: ZAPOMNI_EMBEDDER='onx': Input should be 'onnx' or 'ollama'`
    """
    secrets = {field.alias for field in Settings.model_fields.values() if field.annotation == SecretStr | None}
    lines = []
    for error in exc.errors(include_url=False):
        name = ".".join(str(part) for part in error["loc"]) or "the environment"
        value = "" if name in secrets or error["type"] == "missing" else f"={error['input']!r}"
        lines.append(f"zapomni: {name}{value}: {error['msg']}")
    return "\n".join(lines)


def _items(value: str | None) -> tuple[str, ...]:
    return tuple(part.strip() for part in (value or "").split(",") if part.strip())


def _mask_url(url: str) -> str:
    """redis://user:secret@host:6379/0 -> redis://user:***@host:6379/0"""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))
