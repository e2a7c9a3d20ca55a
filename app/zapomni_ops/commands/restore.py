"""`zapomni restore`: replace the database with a backup (the previous files are kept), or list backups."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from rich.console import Console
from rich.table import Table

from zapomni_core import Settings
from zapomni_ops.backups import check_live, entry_summary, known_backups, restore_backup, undo_restore


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "restore",
        help="restore a backup over the database (stop the database first), or --list backups",
        description="Check the backup's checksums, rebuild the database files from it beside the current ones and "
        "verify them in a private FalkorDB, then swap them in; the current files are kept as a safety copy. "
        "Any failure leaves the current files in place.",
    )
    parser.add_argument("backup", nargs="?", help="a backup directory, a backup's name, or 'latest'")
    parser.add_argument("--list", action="store_true", help="list the backups instead")
    parser.add_argument(
        "--check",
        action="store_true",
        help="compare the running database with BACKUP's manifest (exit 1 if it differs)",
    )
    parser.add_argument("--undo", type=Path, metavar="SAFETY_COPY", help="put a restore's safety copy back")
    parser.add_argument("--dir", type=Path, help="the backups directory (default: ZAPOMNI_BACKUP_DIR)")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(run=run, parser=parser)


def run(args: argparse.Namespace, settings: Settings) -> int:
    if args.list:
        return _list(args, settings)
    if args.undo:
        aside = undo_restore(settings, args.undo)
        print(f"Put {args.undo} back in place; the files it replaced are in {aside}.")
        return 0
    if not args.backup:
        args.parser.error("name a backup to restore (or --list the backups)")
    if args.check:
        return _check(args, settings)
    result = restore_backup(settings, args.backup, directory=args.dir)
    counts = result.manifest.state.counts
    summary = {
        "restored_from": str(result.backup),
        "created_at": result.manifest.created_at,
        "db_files_dir": str(result.db_files_dir),
        "safety_copy": str(result.safety_copy) if result.safety_copy else None,
        "memories": counts.memories,
        "chunks": counts.chunks,
        "timings_s": {"build": result.build_s, "check": result.check_s, "swap": result.swap_s},
    }
    if args.json:
        print(json.dumps(summary, indent=2))
        return 0
    print(
        f"Restored {result.backup} ({counts.memories} memories, {counts.chunks} chunks, taken {summary['created_at']})"
    )
    print(f"into {result.db_files_dir}.")
    if result.safety_copy:
        print(f"The previous files are kept in {result.safety_copy}; delete them once you are satisfied.")
    return 0


def _list(args: argparse.Namespace, settings: Settings) -> int:
    rows = [entry_summary(entry) for entry in reversed(known_backups(settings, directory=args.dir))]
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    if not rows:
        print("No backups.")
        return 0
    # The name holds the time it was taken, and is what `zapomni restore NAME` takes: never cut it.
    table = Table("name", "memories", "chunks", "size MB", "status")
    table.columns[0].no_wrap = True
    for row in rows:
        size = f"{row['size_bytes'] / 1e6:.1f}" if row["size_bytes"] is not None else "—"
        status = "ok" if row["complete"] else f"unusable: {row['problem']}"
        counts = ["—" if row[key] is None else str(row[key]) for key in ("memories", "chunks")]
        table.add_row(row["name"], *counts, size, status)
    Console().print(table)
    return 0


def _check(args: argparse.Namespace, settings: Settings) -> int:
    differences = check_live(settings, args.backup, directory=args.dir)
    if args.json:
        print(json.dumps({"matches": not differences, "differences": differences}, indent=2))
    elif differences:
        print("The running database differs from the backup: " + "; ".join(differences))
    else:
        print("The running database holds what the backup's manifest says.")
    return 1 if differences else 0
