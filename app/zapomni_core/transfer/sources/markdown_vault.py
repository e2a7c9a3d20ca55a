"""A folder of Markdown notes: Basic Memory's knowledge base or an Obsidian vault (or one note).

Each note is a memory (chunked like any text), its source the note's path, its date the front matter's `date`
(or `created`) else the file's modification time, its tags the front matter's. Each note is also an entity (its
title: front matter `title`, else its first heading, else its file name) whose relations are its links:

- Basic Memory's relation lines, `- relation_type [[Target]]`, become relations of that type (read as Zapomni's
  types, "implements" kept as OTHER with its words);
- any other `[[Target]]` or `[[Target|shown text]]` becomes a "links to" relation.

A link to a note of the vault joins that note's entity; a link to a note that does not exist makes an entity of
its own (Obsidian's unresolved links). A daily note named by its day (2024-06-03.md) is dated that day. Basic
Memory's observations (`- [category] text #tag`) stay in the note's text, where search finds them. Folders
starting with a dot (.obsidian, .git, .trash) are passed over.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import yaml

from zapomni_core.graph.vocabulary import entity_type_of, relation_type_of
from zapomni_core.transfer.format import TransferError
from zapomni_core.transfer.sources.conversations_file import timestamp
from zapomni_core.transfer.sources.lines import LineWriter, Placed, ReadOptions

NAME = "markdown"
SUFFIXES = (".md", ".markdown")
_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.S)
_HEADING = re.compile(r"^#\s+(.+?)\s*#*\s*$", re.M)
_LINK = re.compile(r"\[\[([^\]\[|#^]+)(?:[#^][^\]|]*)?(?:\|[^\]]*)?\]\]")
# A Basic Memory relation: a list item whose words before the link are the relation's type.
_RELATION_LINE = re.compile(
    r"^\s*[-*+]\s+(?!\[)([^\[\]\n]{1,60}?)\s+\[\[([^\]\[|#^]+)(?:[#^][^\]|]*)?(?:\|[^\]]*)?\]\]\s*$"
)
LINKS_TO = "links to"
_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")


@dataclass
class _Note:
    path: Path
    title: str
    text: str
    when: datetime | None
    tags: list[str]
    note_type: str
    original_id: str
    relations: list[tuple[str, str, str]] = field(default_factory=list)  # (type words, target title, line)


def read(path: Path, out: LineWriter, _options: ReadOptions) -> None:
    files = _markdown_files(path)
    if not files:
        raise TransferError(f"{path}: no Markdown notes (.md) in it")
    root = path if path.is_dir() else path.parent
    notes = [_note(file, root) for file in files]
    by_name = {key: note for note in notes for key in {note.title.casefold(), note.path.stem.casefold()}}
    placed: dict[str, Placed] = {}
    for note in notes:
        memory = out.memory(note.original_id, note.text, when=note.when, source=str(note.path), tags=note.tags)
        if memory is not None:
            placed[note.title] = memory
    keys: dict[str, str | None] = {}
    for note in notes:
        if note.title in placed:
            entity_type, reading = entity_type_of(note.note_type)
            if reading and note.note_type:
                out.note(f"note {reading}")
            description = note.note_type if entity_type == "OTHER" and note.note_type else None
            keys[note.title] = out.entity(
                note.title, entity_type, placed[note.title].chunk_ids, description=description
            )
    for note in notes:
        subject = keys.get(note.title)
        if subject is None:
            continue
        for words, target, line in note.relations:
            where = placed[note.title].chunk_with(f"[[{target}")
            linked = by_name.get(target.casefold())
            target_key = keys.get(linked.title) if linked is not None else None
            if target_key is not None:
                out.mention(target_key, where)  # the linking chunk names the note it links to
            else:  # a link to no note of the vault: an entity of its own, mentioned where the link is
                out.note("links to notes that do not exist, imported as entities of their own")
                target_key = out.entity(target, "OTHER", [where])
            if target_key is None or target_key == subject:
                continue
            relation_type, predicate, reading = relation_type_of(words.replace(" ", "_"), words)
            if reading and words != LINKS_TO:
                out.note(f"relation {reading}")
            out.relation(subject, relation_type, predicate, target_key, placed[note.title], line, chunk_id=where)


def _markdown_files(path: Path) -> list[Path]:
    if path.is_file():
        return [path] if path.suffix.lower() in SUFFIXES else []
    found: list[Path] = []
    for folder, dirs, names in os.walk(path):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        found += [Path(folder) / n for n in sorted(names) if Path(n).suffix.lower() in SUFFIXES]
    return found


def _note(file: Path, root: Path) -> _Note:
    try:
        raw = file.read_bytes().decode("utf-8")
    except OSError as exc:
        raise TransferError(f"cannot read {file}: {exc.strerror}; nothing was imported") from None
    except UnicodeDecodeError as exc:
        raise TransferError(f"{file}: not UTF-8 text (byte {exc.start}); nothing was imported") from None
    front, body = _front_matter(file, raw)
    heading = _HEADING.search(body)
    title = _text(front.get("title")) or (heading.group(1).strip() if heading else "") or file.stem
    # A daily note (Obsidian names them by their day) is about that day; other notes date from their last edit.
    when = _when(front) or timestamp(file.stem if _DAY.fullmatch(file.stem) else None)
    when = when or datetime.fromtimestamp(file.stat().st_mtime, UTC)
    relative = file.relative_to(root).as_posix()
    note = _Note(
        path=file,
        title=title,
        text=body.strip() or title,
        when=when,
        tags=_tags(front.get("tags")),
        note_type=_text(front.get("type")),
        original_id=_text(front.get("permalink")) or relative,
    )
    typed: set[str] = set()
    for line in body.splitlines():
        match = _RELATION_LINE.match(line)
        if match:
            note.relations.append((" ".join(match.group(1).split()), match.group(2).strip(), line.strip()))
            typed.add(match.group(2).strip())
            continue
        for link in _LINK.finditer(line):
            target = link.group(1).strip()
            if target and target not in typed:
                note.relations.append((LINKS_TO, target, line.strip()))
    return note


def _front_matter(file: Path, raw: str) -> tuple[dict[str, Any], str]:
    match = _FRONT_MATTER.match(raw)
    if match is None:
        return {}, raw
    try:
        value = yaml.safe_load(match.group(1))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 2}" if mark is not None else "front matter"  # +1 for the opening ---
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise TransferError(
            f"{file}: {where}: front matter is not valid YAML ({problem}); nothing was imported"
        ) from None
    if value is None:
        value = {}
    if not isinstance(value, dict):
        raise TransferError(f"{file}: front matter: not a mapping of keys to values; nothing was imported")
    return value, raw[match.end() :]


def _when(front: dict[str, Any]) -> datetime | None:
    for key in ("date", "created", "created_at"):
        value = front.get(key)
        if isinstance(value, datetime):
            return value if value.tzinfo else value.replace(tzinfo=UTC)
        if isinstance(value, date):
            return datetime(value.year, value.month, value.day, tzinfo=UTC)
        found = timestamp(value)
        if found is not None:
            return found
    return None


def _tags(value: Any) -> list[str]:
    items = value if isinstance(value, list) else re.split(r"[,\s]+", value) if isinstance(value, str) else []
    return [str(item).strip().lstrip("#") for item in items if str(item).strip().lstrip("#")]


def _text(value: Any) -> str:
    return " ".join(str(value).split()) if isinstance(value, str | int | float) and not isinstance(value, bool) else ""
