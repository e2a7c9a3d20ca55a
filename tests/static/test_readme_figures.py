"""The README's measured figures are the ones in the results files it cites, and `make bench` regenerates them.

A paragraph, list item or table row that cites `bench/results/<name>.md` (a table also by its caption, the
paragraph just above it) quotes figures of that file: every number in it must be one of the file's (its .md
or .json), as written there or rounded to the README's precision (milliseconds may be quoted as seconds,
fractions as percentages). The files must say when they were measured, and the benchmark that writes
each must be one `make bench` (or `make bench-appliance`) runs. Numbers that are not measurements
(settings, sizes of inputs) are listed below with the reason.
"""

from __future__ import annotations

import json
import re
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
RESULTS = ROOT / "bench" / "results"
CITED = re.compile(r"bench/results/([\w.-]+)\.md")
# A number standing alone: not part of a word (p95, MiniLM-L6-v2, 10K), a path, a version or an id.
NUMBER = re.compile(r"(?<![\w.#/:@-])(\d[\d,]*(?:\.\d+)?)(?![\w/:@-]|\.\d)")
# Not measurements: what the sentence is about, not what was measured.
NOT_FIGURES = {
    "relevance": {"4.6", "11"},  # "+4.6 % over BM25, +11 % over exact vector search": ratios of the table above
    "conversations": {"10", "760", "1", "4"},  # recall@10, the 760 questions, categories 1-4
    "graph_extraction": {"127"},  # the labelled sentences measured on
    "memory_ops": {"1", "20", "100", "10"},  # delete 1 memory, a page of 20, a 100-memory workspace beside 10K
    "appliance": {"10,000", "4.3", "1.4", "55"},  # memories imported; podman/aardvark versions; the DNS delay (~)
    "scale_2026-11-22": {"80", "1,540", "8"},  # the rate 80.5 rounded in prose; 677 + 863 summed; 8 concurrent adds
    "scale": {"10", "100", "300", "1", "2", "20"},  # the sizes (10K, 100K, 300K, 1M), deletes of 1, depth 2, 2 cores
    "quality": {"4"},  # 4 concurrent adds
}
# A target the figure is compared with ("≥ 0.70", "≤ 5 ms"), not a measurement.
TARGET = re.compile(r"[≥≤] ?\d[\d,.]*")


def units() -> list[tuple[str, list[str]]]:
    """(text, results files it cites) for each paragraph, list item and table row citing one."""
    found: list[tuple[str, list[str]]] = []
    caption: list[str] = []
    for block in re.split(r"\n\s*\n", README):
        if block.lstrip().startswith("```"):
            continue
        lines = block.strip().splitlines()
        if lines and all(line.startswith("|") for line in lines):
            for row in lines[2:]:  # header and separator are labels
                found.append((row, CITED.findall(row) or caption))
            continue
        caption = CITED.findall(block)
        for item in re.split(r"\n(?=- )", block):
            if CITED.search(item):
                found.append((item, CITED.findall(item)))
    return [(text, files) for text, files in found if files]


def figures(text: str) -> list[str]:
    text = re.sub(r"`[^`]*`", "", text)  # code: arguments, commands, variable names
    text = re.sub(r"\]\([^)]*\)", "]", text)  # link targets
    text = re.sub(r"\b20\d\d-\d\d-\d\d\b", "", text)  # dates
    text = TARGET.sub("", text)
    return NUMBER.findall(text)


def numbers_of(name: str) -> list[Decimal]:
    text = (RESULTS / f"{name}.md").read_text()
    if (RESULTS / f"{name}.json").exists():
        text += (RESULTS / f"{name}.json").read_text()
    return [Decimal(n.replace(",", "")) for n in re.findall(r"\d[\d,]*(?:\.\d+)?", text)]


def matches(figure: str, candidates: list[Decimal]) -> bool:
    """Written as in the file, or rounded half up to the README's decimals, also from ms to s or to a percentage."""
    value = Decimal(figure.replace(",", ""))
    # a finite Decimal's exponent is an int:
    step = Decimal(1).scaleb(value.as_tuple().exponent)  # type: ignore[arg-type]
    for c in candidates:
        for scaled in (c, c / 1000, c * 100):
            if scaled.quantize(step, rounding=ROUND_HALF_UP) == value:
                return True
    return False


def producer(name: str) -> str:
    """The benchmark module that writes bench/results/<name>.md, as the file names it."""
    text = (RESULTS / f"{name}.md").read_text()
    named = re.search(r"python -m (bench\.\w+)|bench/(\w+)\.py", text)
    assert named, f"bench/results/{name}.md does not say which benchmark wrote it"
    return named[1] or f"bench.{named[2]}"


def test_the_readme_cites_results_files_for_its_figures() -> None:
    cited = {name for _, files in units() for name in files}
    assert {"quality", "scale", "cold_start", "install_size", "graph_large_memory"} <= cited, cited


@pytest.mark.parametrize("text,files", units(), ids=lambda v: v[:40] if isinstance(v, str) else ",".join(v))
def test_each_figure_is_the_results_files(text: str, files: list[str]) -> None:
    candidates = [n for name in files for n in numbers_of(name)]
    excused = set().union(*(NOT_FIGURES.get(name, set()) for name in files))
    wrong = [f for f in figures(text) if f not in excused and not matches(f, candidates)]
    assert not wrong, f"{wrong} not in bench/results/{', '.join(files)} (.md/.json): {text[:200]!r}"


def quoted() -> list[str]:
    """The results files whose figures the README quotes (a mere pointer to one quotes nothing)."""
    names = set()
    for text, files in units():
        excused = set().union(*(NOT_FIGURES.get(name, set()) for name in files))
        if any(f not in excused for f in figures(text)):
            names.update(files)
    return sorted(names)


@pytest.mark.parametrize("name", quoted())
def test_each_quoted_results_file_is_dated_and_regenerated_by_make(name: str) -> None:
    text = (RESULTS / f"{name}.md").read_text()
    assert re.search(r"20\d\d-\d\d-\d\d", text), f"bench/results/{name}.md does not say when it was measured"
    makefile = (ROOT / "Makefile").read_text()
    assert f"-m {producer(name)}\n" in makefile, f"no make target runs {producer(name)} (bench/results/{name}.md)"


def test_the_readme_and_make_help_give_the_same_bench_duration() -> None:
    readme = re.search(r"bench/results/`? \(~(\d+) min", README)
    make = re.search(r"^bench:.*## .*\(~(\d+) min", (ROOT / "Makefile").read_text(), re.MULTILINE)
    assert readme and make and readme[1] == make[1], (readme, make)


def test_results_json_files_parse() -> None:
    for path in RESULTS.glob("*.json"):
        json.loads(path.read_text())
