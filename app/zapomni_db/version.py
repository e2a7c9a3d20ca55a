"""The installed Zapomni version, as recorded in backups, exports and the MCP server's info."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version


def package_version() -> str:
    try:
        return version("zapomni")
    except PackageNotFoundError:  # running from a source tree that was never installed
        return "unknown"
