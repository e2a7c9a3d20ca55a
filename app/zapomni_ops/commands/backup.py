"""`zapomni backup`: a verified snapshot of the database into the backups directory, then retention."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from zapomni_core import Settings
from zapomni_ops.arguments import positive_int
from zapomni_ops.backups import make_backup


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "backup",
        help="snapshot the database into a verified backup",
        description="Snapshot the database (BGSAVE), copy its files with a manifest and checksums, load the copy "
        "in a scratch server to verify it, then keep only the newest backups.",
    )
    parser.add_argument("--dir", type=Path, help="where backups go (default: ZAPOMNI_BACKUP_DIR or DATA_DIR/backups)")
    parser.add_argument("--keep", type=positive_int, help="keep the newest N backups (default: ZAPOMNI_BACKUP_KEEP)")
    parser.add_argument("--no-verify", action="store_true", help="skip loading the copy (no probe query recorded)")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    outcome = make_backup(settings, directory=args.dir, keep=args.keep, verify=not args.no_verify)
    manifest = outcome.result.manifest
    summary: dict[str, Any] = {
        "path": str(outcome.result.path),
        "created_at": manifest.created_at,
        "memories": manifest.state.counts.memories,
        "chunks": manifest.state.counts.chunks,
        "size_bytes": manifest.size_bytes,
        "verified": outcome.result.verified,
        "matched_server": manifest.matched_server,
        "pruned": [str(path) for path in outcome.pruned],
        "timings_s": {"snapshot": outcome.result.snapshot_s, "verify": outcome.result.verify_s},
    }
    if args.json:
        print(json.dumps(summary, indent=2))
        return 0
    table = Table("backup", "value")
    table.columns[1].overflow = "fold"  # the path is what `zapomni restore` takes: never cut it
    for key, value in summary.items():
        shown = ", ".join(value) or "—" if isinstance(value, list) else value
        table.add_row(key, json.dumps(shown) if isinstance(shown, dict) else str(shown))
    Console().print(table)
    return 0
