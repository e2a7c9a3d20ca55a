"""index_codebase: indexing speed on two real codebases, and the call graph's precision/recall on a hand-checked sample.

Projects, each indexed in-process (`open_core`, the embedded defaults) in a fresh data directory:
- this repository (the walker honours .gitignore, so .venv, build/ and bench/.cache are skipped), as a
  snapshot: the files the walker reads, copied to a temporary directory first (the working tree may be
  edited while the bench runs, and the re-index must see the tree unchanged);
- click 8.1.7 from its PyPI source distribution (`pip download --no-deps --no-binary :all:`, kept in
  bench/.cache). Click is well known, pure Python and mid-sized (71 files, 17.5K lines with its tests,
  examples and docs/conf.py), with real class hierarchies (BaseCommand > Command > MultiCommand > Group,
  Parameter > Option/Argument, a dozen ParamType subclasses) and calls across its modules; 8.1.7 is the
  release most projects pinned for the 8.1 line.

For each project: the wall time of the first `index_codebase` job (queued to finished, from the job's
own timestamps), files/s, symbols (functions + methods + classes)/s, chunks/s, and a second job on the
unchanged tree (every file should be `unchanged`: read and hashed, not parsed nor embedded). Beside
the job: tree-sitter parsing of every file and the call/inheritance/import resolution, timed alone
in this process on the same files, so a reader sees how much of the job is parsing and linking and
how much is embedding and writing. Memory: the peak RSS of this process during the project (VmHWM,
reset before each project through /proc/self/clear_refs; it holds the ONNX embedder and the database
client, not the database) and of the embedded database server process (its VmHWM, by its pid); the
embedding model is loaded (one warm-up memory) before the clock starts.

Call graph: a fixed sample of click's functions and methods, whose in-project callees were written
down by reading their source (bench/data/callgraph_click.json: rules, ambiguous cases, each callee
with the call expression and the form of the call). Zapomni's CALLS edges for those callers
(`get_callees`) are scored against it: precision, recall, F1, per form of call; the misses and
wrong edges are listed with what the resolver made of the call expression (re-run here on the same
parsed files through its private `_Resolver`, for the report only).

Run: `.venv/bin/python -m bench.code_index` (about 5 minutes on 2 cores). For a quick look:
`--project DIR --truth FILE --skip-repo` indexes DIR instead of downloading click.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tarfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.common import in_scratch_dir, write_results
from bench.scale import database_pid, peak_rss_mb
from zapomni_core import Settings, ZapomniCore, open_core
from zapomni_core.code import LANGUAGES, ParsedFile, language_for, parse_source, resolve
from zapomni_core.code._resolve import AMBIGUOUS, _Resolver
from zapomni_core.code.requests import SymbolRequest
from zapomni_core.errors import NotFound
from zapomni_core.files.requests import IndexCodebaseRequest
from zapomni_core.files.walker import FoundFile, plan_walk, read_file, walk
from zapomni_core.jobs import JobInfo, JobStatusRequest
from zapomni_core.logs import configure_logging
from zapomni_core.memories.requests import AddMemoryRequest

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
CACHE = ROOT / "bench" / ".cache"
PROJECT = ("click", "8.1.7")
TRUTH = ROOT / "bench" / "data" / "callgraph_click.json"
WARM_UP = "Warm-up memory: loads the embedding model before the clock starts."
SUFFIXES = frozenset(suffix for suffixes in LANGUAGES.values() for suffix in suffixes)
MAX_FILE_BYTES = Settings().max_file_bytes
LINK_COUNTS = ("calls", "inherits", "imports", "unresolved_calls", "ambiguous_calls")


# ---- the third-party project -------------------------------------------------------------------


def fetch_sdist(name: str, version: str) -> Path:
    """The unpacked source distribution of name==version under bench/.cache (downloaded once)."""
    sdists = CACHE / "sdists"
    archive = next(iter(sorted(sdists.glob(f"{name}-{version}.tar.gz"))), None) if sdists.is_dir() else None
    if archive is None:
        pip = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", "--quiet"]
        subprocess.run([*pip, f"{name}=={version}", "-d", str(sdists)], check=True)
        archive = sdists / f"{name}-{version}.tar.gz"
    unpacked = CACHE / "src" / f"{name}-{version}"
    if not unpacked.is_dir():
        with tarfile.open(archive) as tar:
            tar.extractall(CACHE / "src", filter="data")
    return unpacked


# ---- parsing alone ---------------------------------------------------------------------------


@dataclass
class Source:
    """The files index_codebase reads in a tree, parsed here alone (what the job's readers do before embedding)."""

    parsed: list[ParsedFile] = field(default_factory=list)
    lines: int = 0
    bytes: int = 0
    languages: Counter[str] = field(default_factory=Counter)
    parse_s: float = 0.0
    resolve_s: float = 0.0


def snapshot(root: Path, dest: Path) -> Path:
    """A copy of the files index_codebase reads in `root` (nothing else), so that edits made to a
    live working tree while the bench runs cannot turn the "unchanged" re-index into a partial one."""
    plan = plan_walk(str(root), [root])
    for item in walk(plan, roots=[root], suffixes=SUFFIXES, max_file_bytes=MAX_FILE_BYTES):
        if isinstance(item, FoundFile):
            target = dest / item.relative
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(item.path, target)
    return dest


def parse_tree(root: Path) -> Source:
    plan = plan_walk(str(root), [root])
    found = [e for e in walk(plan, roots=[root], suffixes=SUFFIXES, max_file_bytes=MAX_FILE_BYTES)]
    source = Source()
    for item in (e for e in found if isinstance(e, FoundFile)):
        data = read_file(item, roots=[root], max_file_bytes=MAX_FILE_BYTES)
        language = language_for(item.relative)
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            continue
        assert language is not None
        started = time.perf_counter()
        source.parsed.append(parse_source(item.relative, data, language))
        source.parse_s += time.perf_counter() - started
        source.lines += data.count(b"\n")
        source.bytes += len(data)
        source.languages[language] += 1
    started = time.perf_counter()
    resolve(source.parsed)
    source.resolve_s = time.perf_counter() - started
    return source


# ---- indexing through the product ----------------------------------------------------------------


def job_seconds(info: JobInfo) -> float:
    """Queued to finished, from the job's own timestamps (finer than polling it)."""
    assert info.finished_at is not None
    return (datetime.fromisoformat(info.finished_at) - datetime.fromisoformat(info.created_at)).total_seconds()


async def finished(core: ZapomniCore, job_id: str) -> JobInfo:
    """The job once it has ended, however long it takes."""
    while True:
        info = await core.jobs.status(JobStatusRequest(job_id=job_id, wait_s=50))
        if info.state not in ("pending", "running"):
            return info


async def index(core: ZapomniCore, root: Path) -> JobInfo:
    queued = await core.files.index_codebase(IndexCodebaseRequest(path=str(root)))
    info = await finished(core, queued.job_id)
    if info.state not in ("completed", "completed_with_errors"):
        raise RuntimeError(f"index_codebase of {root} ended {info.state}: {info.error}")
    return info


def cpu_seconds(pid: int | None = None) -> float:
    """User + system CPU seconds of this process (every thread: the job runs here) or of process `pid`."""
    if pid is None:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return usage.ru_utime + usage.ru_stime
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def cpu_of(data_dir: Path) -> tuple[float, float]:
    """(this process, the embedded database server) CPU seconds so far."""
    return cpu_seconds(), cpu_seconds(await database_pid(data_dir))


def reset_peak_rss() -> bool:
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


async def callees_of(core: ZapomniCore, caller: str) -> set[str] | None:
    """Zapomni's CALLS targets of exactly `caller`; None when no symbol has that qualified name."""
    try:
        graph = await core.code.callees(SymbolRequest(symbol=caller, limit=100))
    except NotFound:
        return None
    if not any(s.qualified_name == caller for s in graph.matched):
        return None
    return {s.qualified_name for s in graph.symbols}


async def is_symbol(core: ZapomniCore, name: str) -> bool:
    try:
        graph = await core.code.callers(SymbolRequest(symbol=name, limit=5))
    except NotFound:
        return False
    return any(s.qualified_name == name for s in graph.matched)


async def measure(label: str, root: Path, workdir: Path, truth: dict[str, Any] | None) -> dict[str, Any]:
    print(f"{label}: parsing {root} alone", file=sys.stderr)
    source = parse_tree(root)
    data_dir = workdir / f"data-{len(list(workdir.iterdir()))}"
    settings = Settings.from_variables(ZAPOMNI_DATA_DIR=data_dir, ZAPOMNI_ALLOWED_ROOTS=str(root), LOG_LEVEL="WARNING")
    reset = reset_peak_rss()
    async with open_core(settings) as (core, _info):
        await core.memories.add(AddMemoryRequest(text=WARM_UP))
        chunks_before = (await core.workspaces.stats()).total_chunks
        print(f"{label}: first index", file=sys.stderr)
        cpu_before = await cpu_of(data_dir)
        first = await index(core, root)
        cpu_after = await cpu_of(data_dir)
        chunks = (await core.workspaces.stats()).total_chunks - chunks_before
        print(f"{label}: re-index of the unchanged tree", file=sys.stderr)
        again = await index(core, root)
        callgraph = await score(core, source, truth) if truth is not None else None
        rss = {"process_mb": peak_rss_mb(), "database_mb": peak_rss_mb(await database_pid(data_dir))}
    first_s, again_s = job_seconds(first), job_seconds(again)
    counts = first.counts
    kinds = Counter(s.kind for p in source.parsed for s in p.symbols)
    return {
        "label": label,
        "path": str(root),
        "source": {
            "files": len(source.parsed),
            "lines": source.lines,
            "mb": round(source.bytes / 1e6, 2),
            "languages": dict(source.languages.most_common()),
            "symbols_by_kind": dict(kinds),
        },
        "first": {
            "seconds": round(first_s, 2),
            "state": first.state,
            "counts": counts,
            "chunks": chunks,
            "files_per_s": round(counts["files"] / first_s, 2),
            "symbols_per_s": round(counts.get("symbols", 0) / first_s, 1),
            "chunks_per_s": round(chunks / first_s, 2),
            "cpu_s": {
                "process": round(cpu_after[0] - cpu_before[0], 1),
                "database": round(cpu_after[1] - cpu_before[1], 1),
            },
        },
        "reindex": {
            "seconds": round(again_s, 2),
            "counts": again.counts,
            "files_per_s": round(again.counts["files"] / again_s, 1),
            "all_unchanged": again.counts["unchanged"] == again.counts["files"],
        },
        "alone": {
            "parse_s": round(source.parse_s, 2),
            "resolve_s": round(source.resolve_s, 3),
            "share_of_first_index": round((source.parse_s + source.resolve_s) / first_s, 3),
        },
        "rss": {**rss, "process_reset_before": reset},
        "callgraph": callgraph,
    }


# ---- call graph scoring --------------------------------------------------------------------------


def expressions(source: Source, callers: set[str]) -> dict[str, dict[str, Any]]:
    """For each sampled caller: each callee expression its body holds -> what the resolver makes of it."""
    resolver = _Resolver(source.parsed)
    found: dict[str, dict[str, Any]] = {}
    for f in resolver.files:
        for symbol in f.parsed.symbols:
            if symbol.qualified_name in callers and symbol.qualified_name not in found:
                found[symbol.qualified_name] = {callee: resolver._call(f, symbol, callee) for callee in symbol.calls}
    return found


def outcome_text(outcome: object) -> str:
    if outcome is None:
        return "unresolved"
    if outcome is AMBIGUOUS:
        return "ambiguous"
    return f"→ {outcome}"


def wrong_reason(caller: str, expression: str, target: str) -> str:
    """A short category for a CALLS edge the truth does not hold, from the shape of the call."""
    head = expression.split(".")[0]
    if head in ("self", "cls", "super()"):
        return "self/super method resolved to a definition the truth does not count"
    if "." not in expression:
        caller_module = caller.rpartition(".")[0]
        if not target.startswith(caller_module.split(".")[0] + "."):
            return "bare name matched a name defined once elsewhere in the codebase (not imported)"
        return "bare name resolved to a project symbol the call does not reach"
    return "dotted path resolved through a module or class"


async def score(core: ZapomniCore, source: Source, truth: dict[str, Any]) -> dict[str, Any]:
    callers = {c["caller"]: c for c in truth["callers"]}
    seen = expressions(source, set(callers))
    tp = fp = fn = 0
    by_form: dict[str, Counter[str]] = {}
    misses: list[dict[str, Any]] = []
    wrong: list[dict[str, Any]] = []
    missing_callers: list[str] = []
    missing_callees: list[str] = []
    per_caller: dict[str, dict[str, int]] = {}
    for caller, entry in callers.items():
        expected = {c["name"]: c for c in entry["callees"]}
        for name in expected:
            if not await is_symbol(core, name):
                missing_callees.append(name)
        predicted = await callees_of(core, caller)
        if predicted is None:
            missing_callers.append(caller)
            predicted = set()
        hits, extra, lost = predicted & set(expected), predicted - set(expected), set(expected) - predicted
        tp, fp, fn = tp + len(hits), fp + len(extra), fn + len(lost)
        per_caller[caller] = {"truth": len(expected), "found": len(predicted), "correct": len(hits)}
        calls = seen.get(caller, {})
        for name, callee in expected.items():
            form = callee.get("form", "unspecified")
            by_form.setdefault(form, Counter())["truth"] += 1
            by_form[form]["found" if name in hits else "missed"] += 1
            if name in lost:
                last = name.rpartition(".")[2]
                written = callee.get("calls") or [w for w in calls if w.rpartition(".")[2] == last]
                outcomes = {w: outcome_text(calls[w]) if w in calls else "not among the parsed calls" for w in written}
                misses.append({"caller": caller, "callee": name, "form": form, "calls": outcomes})
        for name in sorted(extra):
            producers = [w for w, target in calls.items() if target == name]
            reasons = sorted({wrong_reason(caller, w, name) for w in producers}) or ["(no expression found)"]
            wrong.append({"caller": caller, "callee": name, "calls": producers, "reason": "; ".join(reasons)})
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {
        "callers": len(callers),
        "truth_edges": tp + fn,
        "found_edges": tp + fp,
        "correct": tp,
        "precision": round(precision, 3),
        "recall": round(recall, 3),
        "f1": round(f1, 3),
        "by_form": {form: dict(counts) for form, counts in sorted(by_form.items(), key=lambda kv: -kv[1]["truth"])},
        "misses": misses,
        "wrong": wrong,
        "per_caller": per_caller,
        "callers_not_indexed": missing_callers,
        "truth_callees_not_indexed": sorted(set(missing_callees)),
        "truth_how": truth.get("how", ""),
    }


# ---- report ------------------------------------------------------------------------------------------


def render(results: dict[str, Any]) -> str:
    lines = [
        "# index_codebase: indexing speed and call-graph quality",
        "",
        f"- date: {results['date']}; CPUs: {results['cpus']} (shared with other work: load average "
        f"{results['load_before']} before, {results['load_after']} after); embedded defaults "
        "(ONNX all-MiniLM-L6-v2, embedded database), in-process through `open_core`.",
        "- Produced by `python -m bench.code_index`; each project in a fresh data directory, the embedding model "
        "loaded before the clock starts. Times are the job's own (queued to finished).",
        "- Peak RSS: this process (embedder + database client, VmHWM reset before each project) and the embedded "
        "database server process, separately. CPU: user + system seconds the first index cost this process (all its "
        "threads: the job, the embedder) and the database server; on a shared machine this is the steadier figure "
        "(with 2 idle cores the wall time would approach CPU / 2).",
        "",
        "## Indexing",
        "",
        "| project | files | lines | symbols (fn/method/class) | chunks | first index | files/s | symbols/s "
        "| chunks/s | re-index (unchanged) | re-index files/s | peak RSS process / DB |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for p in results["projects"]:
        kinds, first, again = p["source"]["symbols_by_kind"], p["first"], p["reindex"]
        symbols = first["counts"].get("symbols", 0)
        unchanged = "" if again["all_unchanged"] else f" ({again['counts']['unchanged']} unchanged)"
        lines.append(
            f"| {p['label']} | {first['counts']['files']} | {p['source']['lines']:,} | {symbols:,} "
            f"({kinds.get('function', 0)}/{kinds.get('method', 0)}/{kinds.get('class', 0)}) | {first['chunks']:,} "
            f"| {first['seconds']} s | {first['files_per_s']} | {first['symbols_per_s']} | {first['chunks_per_s']} "
            f"| {again['seconds']} s{unchanged} | {again['files_per_s']} "
            f"| {p['rss']['process_mb']:.0f} / {p['rss']['database_mb']:.0f} MB |"
        )
    lines += [
        "",
        "| project | languages | job counts (first index) | tree-sitter parse alone | resolve alone "
        "| parse + resolve, share of the first index |",
        "|---|---|---|---:|---:|---:|",
    ]
    for p in results["projects"]:
        c = p["first"]["counts"]
        counts = ", ".join(f"{k} {c[k]}" for k in ("added", "failed", "refused", *LINK_COUNTS) if k in c)
        languages = ", ".join(f"{k} {v}" for k, v in p["source"]["languages"].items())
        lines.append(
            f"| {p['label']} | {languages} | {counts} | {p['alone']['parse_s']} s | {p['alone']['resolve_s']} s "
            f"| {p['alone']['share_of_first_index'] * 100:.1f} % |"
        )
    lines += [
        "",
        "| project | CPU s of the first index (process + database) | chunks per CPU second |",
        "|---|---:|---:|",
    ]
    for p in results["projects"]:
        cpu = p["first"]["cpu_s"]
        total = cpu["process"] + cpu["database"]
        rate = p["first"]["chunks"] / total if total else 0.0
        lines.append(f"| {p['label']} | {total:.1f} ({cpu['process']} + {cpu['database']}) | {rate:.1f} |")
    lines += [
        "",
        "Re-index: a second `index_codebase` of the same tree, nothing changed: "
        + "; ".join(
            f"{p['label']}: {p['reindex']['seconds']} s, {p['reindex']['files_per_s']} files/s, "
            f"{p['reindex']['counts']['unchanged']}/{p['reindex']['counts']['files']} unchanged"
            for p in results["projects"]
        )
        + ".",
    ]
    for p in results["projects"]:
        if p["callgraph"] is not None:
            lines += render_callgraph(p)
    return "\n".join(lines) + "\n"


def render_callgraph(p: dict[str, Any]) -> list[str]:
    g = p["callgraph"]
    lines = [
        "",
        f"## Call graph: {p['label']}, hand-checked sample",
        "",
        f"Truth: {g['truth_how']} ({g['callers']} callers, {g['truth_edges']} in-project callee edges; "
        f"`{p['truth_file']}`).",
        "",
        f"- precision **{g['precision']:.3f}** ({g['correct']} of {g['found_edges']} CALLS edges are right)",
        f"- recall **{g['recall']:.3f}** ({g['correct']} of {g['truth_edges']} true callees found)",
        f"- F1 **{g['f1']:.3f}**",
    ]
    if g["callers_not_indexed"] or g["truth_callees_not_indexed"]:
        lines.append(
            f"- not found as symbols: callers {g['callers_not_indexed'] or 'none'}; "
            f"truth callees {g['truth_callees_not_indexed'] or 'none'}"
        )
    lines += ["", "Recall by the form of the call (from the truth file):", "", "| form | true | found | missed |"]
    lines.append("|---|---:|---:|---:|")
    for form, c in g["by_form"].items():
        lines.append(f"| {form} | {c.get('truth', 0)} | {c.get('found', 0)} | {c.get('missed', 0)} |")
    lines += ["", "### Misses", "", "| caller | true callee | form | call as written → what the resolver made of it |"]
    lines.append("|---|---|---|---|")
    for m in g["misses"]:
        calls = "; ".join(f"`{w}` {o}" for w, o in m["calls"].items())
        lines.append(f"| {m['caller']} | {m['callee']} | {m['form']} | {calls} |")
    lines += ["", "### Wrong edges", "", "| caller | CALLS target | from | reason |", "|---|---|---|---|"]
    for w in g["wrong"]:
        lines.append(f"| {w['caller']} | {w['callee']} | {', '.join(f'`{c}`' for c in w['calls'])} | {w['reason']} |")
    if not g["wrong"]:
        lines.append("| (none) | | | |")
    return lines


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


async def run(projects: list[tuple[str, Path]], truth_file: Path | None, workdir: Path) -> dict[str, Any]:
    projects = [(label, snapshot(root, workdir / "snapshot") if root == ROOT else root) for label, root in projects]
    truth = json.loads(truth_file.read_text()) if truth_file is not None else None
    results: dict[str, Any] = {
        "date": f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
        "cpus": os.cpu_count(),
        "load_before": load_average(),
        "projects": [],
    }
    for number, (label, root) in enumerate(projects):
        scored = truth if number == 0 else None  # the truth is about the first (third-party) project
        entry = await measure(label, root, workdir, scored)
        if scored is not None and truth_file is not None:
            inside = truth_file.resolve().is_relative_to(ROOT)
            entry["truth_file"] = str(truth_file.resolve().relative_to(ROOT)) if inside else truth_file.name
        results["projects"].append(entry)
    results["load_after"] = load_average()
    results["process_peak_rss_whole_run_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    return results


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--project",
        type=Path,
        action="append",
        help="index this directory instead of downloading click (repeatable; the truth applies to the first)",
    )
    parser.add_argument("--truth", type=Path, help=f"call-graph truth (default: {TRUTH.relative_to(ROOT)} for click)")
    parser.add_argument("--skip-repo", action="store_true", help="do not index this repository")
    parser.add_argument("--output", type=Path, default=RESULTS / "code_index.md")
    parser.add_argument("--json", type=Path, default=RESULTS / "code_index.json")
    args = parser.parse_args(argv)
    configure_logging("WARNING")
    if args.project:
        projects = [(p.resolve().name, p.resolve()) for p in args.project]
        truth = args.truth
    else:
        name, version = PROJECT
        projects = [(f"{name} {version} (PyPI sdist)", fetch_sdist(name, version))]
        truth = args.truth or TRUTH
    if not args.skip_repo:
        projects.append(("zapomni (this repository, a snapshot)", ROOT))
    results = in_scratch_dir("zci-", lambda workdir: run(projects, truth, workdir))
    write_results(render(results), results, args.output, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
