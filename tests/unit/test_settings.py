"""Configuration: defaults that work, the design's variable names, secrets masked, bad values refused."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from zapomni_core.settings import Settings

VARIABLES = [
    "ZAPOMNI_DATA_DIR", "ZAPOMNI_DB_MODE", "FALKORDB_HOST", "FALKORDB_PORT", "FALKORDB_PASSWORD",
    "GRAPH_NAME", "ZAPOMNI_EMBEDDER", "EMBEDDING_MODEL", "OLLAMA_HOST", "LOG_LEVEL", "XDG_DATA_HOME",
]  # fmt: skip


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)


def test_defaults_are_embedded_and_offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    settings = Settings()
    assert settings.db_mode == "embedded"
    assert settings.embedder == "onnx"
    assert settings.effective_embedding_model == "all-MiniLM-L6-v2"
    assert settings.data_dir == tmp_path / ".local" / "share" / "zapomni"
    assert settings.graph_name == "zapomni"
    assert settings.appendfsync == "always"


def test_xdg_data_home_moves_the_default_data_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert Settings().data_dir == tmp_path / "zapomni"


def test_design_variable_names_are_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FALKORDB_HOST", "db.internal")
    monkeypatch.setenv("FALKORDB_PORT", "6380")
    monkeypatch.setenv("GRAPH_NAME", "work")
    monkeypatch.setenv("ZAPOMNI_EMBEDDER", "ollama")
    monkeypatch.setenv("LOG_LEVEL", "debug")
    settings = Settings()
    assert (settings.falkordb_host, settings.falkordb_port, settings.graph_name) == (
        "db.internal",
        6380,
        "work",
    )
    assert settings.effective_embedding_model == "nomic-embed-text"
    assert settings.log_level == "DEBUG"


def test_the_password_never_appears_in_the_printed_configuration(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FALKORDB_PASSWORD", "hunter2")
    settings = Settings()
    assert settings.falkordb_password is not None
    assert settings.falkordb_password.get_secret_value() == "hunter2"
    assert "hunter2" not in str(settings.masked())
    assert settings.masked()["falkordb_password"] == "***"


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("FALKORDB_PORT", "0"),
        ("GRAPH_NAME", "bad name!"),
        ("ZAPOMNI_EMBEDDER", "openai"),
        ("ZAPOMNI_DB_MODE", "x"),
        ("ZAPOMNI_FUSION", "sum"),
        ("ZAPOMNI_VECTOR_SHARE", "1.5"),
        ("ZAPOMNI_DATA_DIR", ""),  # an unset shell variable: not the current folder
        ("ZAPOMNI_HTTP_TRUSTED_PROXIES", "127.0.0.1, caddy"),  # uvicorn would take a name as a literal, silently
        ("ZAPOMNI_HTTP_TRUSTED_PROXIES", "10.89.0.1/24"),  # and a network with host bits as a literal too
    ],
)
def test_impossible_values_are_refused_with_the_variable_named(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(ValidationError, match=name):
        Settings()
