"""How a memory's update links read in a tool's text reply (the structured reply carries them in full)."""

from __future__ import annotations

from zapomni_core import Linked


def link_lines(result: Linked, indent: str = "   ") -> list[str]:
    """A line per link: "replaced by memory X (date): preview" and "replaces memory Y (date): preview"."""
    lines = [
        f"{indent}↳ no longer current: replaced by memory {n.memory_id} ({n.date[:10]}, {n.attribute}): {n.preview}"
        for n in result.superseded_by
    ]
    lines += [
        f"{indent}↳ replaces memory {o.memory_id} ({o.date[:10]}, {o.attribute}): {o.preview}"
        for o in result.supersedes
    ]
    return lines
