"""The one file walker behind `ingest_path` (documents) and `index_codebase` (code).

Safety rules (a tool call must never make the server read outside what the operator allowed):

- Only paths inside the allowed roots (ZAPOMNI_ALLOWED_ROOTS) are read. "Inside" is decided on fully
  resolved paths (`Path.is_relative_to`), so a symlink cannot smuggle a path out.
- A target with a `..` component is refused outright, even when it would resolve inside a root: such
  a path is almost always a probe, and refusing it keeps the rule easy to state.
- Directory symlinks are never followed (they are reported as refused), so the walk cannot loop and
  cannot leave the tree; directories already visited (bind-mount loops) are not entered twice.
- A file symlink is followed only when its resolved target is inside the allowed roots.
- Only regular files are read: FIFOs, sockets and devices are refused without being opened by the
  walk, and `read_file` opens with O_NONBLOCK so a FIFO swapped in later cannot block the reader.
- Files above the size limit are refused, and `read_file` never reads more than the limit plus one byte.
- `read_file` checks everything again at read time (the tree may change between walk and read):
  O_NOFOLLOW on the final component, `fstat` on the open descriptor, and the descriptor's real path
  (from /proc when available) must still be inside the roots.

What is skipped silently (it is not the user's content, or the user filtered it out): version-control
and tool directories (ALWAYS_SKIPPED_DIRS), paths matched by `.gitignore` files and `.git/info/exclude`,
`exclude` globs, files not matched by `include` globs, files whose suffix is not wanted. Everything the
walk finds but will not read for a safety reason is yielded as `Refused`, so the job can report it.
Filters run before the safety checks: a FIFO the user excluded is not worth a line in the report.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pathspec

from zapomni_core.errors import InvalidRequest, ZapomniError

__all__ = [
    "ALWAYS_SKIPPED_DIRS",
    "FileRefused",
    "FoundFile",
    "OutsideRoots",
    "PathRefused",
    "Refused",
    "WalkPlan",
    "allowed_roots",
    "plan_walk",
    "read_file",
    "walk",
]

# Never the user's content; walking them would cost time (node_modules) or index machine state (.git).
# dist/build are left out on purpose: they are sometimes content, and .gitignore usually covers them.
ALWAYS_SKIPPED_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "node_modules",
        "__pycache__",
        ".venv",
        "venv",
        ".tox",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
    }
)

_OPEN_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
# A .gitignore bigger than this is not a real one; reading it whole would be a cheap way to use memory.
_GITIGNORE_MAX_BYTES = 1024 * 1024
_MB = 1024 * 1024
_KB = 1024


class PathRefused(InvalidRequest):
    """The path asked for cannot be read at all; nothing was queued."""


class OutsideRoots(PathRefused):
    """The path is outside this server's allowed roots (or it has none): another server's may hold it."""


class FileRefused(ZapomniError):
    """One file cannot be read; str is the reason (the job records it and goes on)."""


@dataclass(frozen=True)
class FoundFile:
    path: Path  # absolute, fully resolved (symlinks resolved)
    relative: str  # POSIX path relative to the walk's base directory (for a single-file target: its file name)
    size: int


@dataclass(frozen=True)
class Refused:
    path: str  # the path as found in the tree (absolute, not resolved), for the report
    reason: str  # one line for a user
    hidden: tuple[str, ...] = ()  # the server paths `reason` names beyond the tree (a symlink's target)


@dataclass(frozen=True)
class WalkPlan:
    target: Path  # the resolved target (file or directory)
    base: Path  # the directory `relative` paths are relative to (the target dir, or a file target's parent)


# --- roots -------------------------------------------------------------------------------------------


def allowed_roots(values: Sequence[Path]) -> tuple[Path, ...]:
    """Roots as the checks compare them: `~` expanded, resolved, duplicates dropped, order kept."""
    seen: dict[Path, None] = {}
    for value in values:
        seen.setdefault(Path(os.path.expanduser(str(value))).resolve(), None)
    return tuple(seen)


def _inside(path: Path, roots: Sequence[Path]) -> bool:
    return any(path.is_relative_to(root) for root in roots)


def _roots_setting(roots: Sequence[Path]) -> str:
    # Shown the way the variable is written (a path list), so the user can copy it and add a root.
    return os.pathsep.join(str(root) for root in roots)


# --- messages ----------------------------------------------------------------------------------------


def _size(n: int) -> str:
    if n >= _MB:
        return f"{n / _MB:.1f}".removesuffix(".0") + " MB"
    if n >= _KB:
        return f"{n / _KB:.1f}".removesuffix(".0") + " KB"
    return f"{n} bytes"


def _too_big(size: int, limit: int) -> str:
    return f"{_size(size)} is above the size limit of {_size(limit)} (ZAPOMNI_MAX_FILE_MB)"


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "FIFO"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode):
        return "character device"
    if stat.S_ISBLK(mode):
        return "block device"
    if stat.S_ISDIR(mode):
        return "directory"
    if stat.S_ISLNK(mode):
        return "symlink"
    return "unknown file type"


def _os_reason(exc: OSError) -> str:
    if exc.errno in (errno.EACCES, errno.EPERM):
        return "permission denied"
    if exc.errno == errno.ENOENT:
        return "it no longer exists"
    if exc.errno == errno.ELOOP:
        return "too many levels of symlinks"
    return exc.strerror or type(exc).__name__


def _unsupported(suffix: str, suffixes: frozenset[str]) -> str:
    supported = ", ".join(sorted(suffixes)) or "none"
    if not suffix:
        return f"unsupported file type (no extension; supported: {supported})"
    return f"unsupported file type '{suffix}' (supported: {supported})"


# --- planning ----------------------------------------------------------------------------------------


def plan_walk(target: str, roots: Sequence[Path]) -> WalkPlan:
    """Check the path a user asked for and decide what `walk` starts from; raise PathRefused if it cannot."""
    if not target or not target.strip():
        raise PathRefused("no path given; give a file or directory inside the allowed roots")
    if "\0" in target:
        raise PathRefused(f"{target!r} contains a NUL character; give a plain path")
    given = Path(os.path.expanduser(target))
    if ".." in given.parts:
        raise PathRefused(f"'{target}': '..' is not allowed in paths; give the path without it")
    absolute = given.absolute()
    roots = allowed_roots(roots)
    if not roots:
        raise OutsideRoots(
            f"'{absolute}' cannot be read: no allowed roots are configured (ZAPOMNI_ALLOWED_ROOTS is empty); "
            "set it to the directories Zapomni may read",
            **_server_side(target, absolute),
        )
    resolved = _resolve_target(target, absolute)
    if not _inside(resolved, roots):
        via = "" if resolved == absolute else f" (it resolves to '{resolved}')"
        raise OutsideRoots(
            f"'{absolute}'{via} is outside the allowed roots (ZAPOMNI_ALLOWED_ROOTS={_roots_setting(roots)}); "
            "add a root or move the files",
            **_server_side(target, absolute, resolved, *roots),
        )
    try:
        mode = os.stat(resolved).st_mode
    except OSError as exc:
        raise PathRefused(f"'{absolute}' cannot be read ({_os_reason(exc)})", **_server_side(target, absolute)) from exc
    if stat.S_ISDIR(mode):
        return WalkPlan(target=resolved, base=resolved)
    if stat.S_ISREG(mode):
        return WalkPlan(target=resolved, base=resolved.parent)
    raise PathRefused(
        f"'{absolute}' is not a regular file or directory (it is a {_kind(mode)})", **_server_side(target, absolute)
    )


def _resolve_target(target: str, absolute: Path) -> Path:
    if not os.path.lexists(absolute):
        raise PathRefused(f"'{absolute}' does not exist", **_server_side(target, absolute))
    try:
        return Path(os.path.realpath(absolute, strict=True))
    except FileNotFoundError as exc:
        raise PathRefused(
            f"'{absolute}' is a broken symlink (it leads to a path that does not exist)",
            **_server_side(target, absolute),
        ) from exc
    except OSError as exc:
        raise PathRefused(f"'{absolute}' cannot be read ({_os_reason(exc)})", **_server_side(target, absolute)) from exc


def _server_side(target: str, *paths: Path) -> dict[str, Any]:
    """A refusal's `paths` (what a remote client is not shown): those its message names that the client did not
    send itself; the client's own path is kept whole, even where a root it starts with is left out."""
    return {"paths": tuple(path for path in paths if str(path) != target), "theirs": (target,)}


# --- filters -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _IgnoreLevel:
    """The patterns of one ignore file and the directory (relative to the base, "" or "a/b/") they apply to."""

    prefix: str
    spec: pathspec.GitIgnoreSpec


@dataclass(frozen=True)
class _Filters:
    include: pathspec.PathSpec[pathspec.Pattern] | None
    exclude: pathspec.PathSpec[pathspec.Pattern] | None
    suffixes: frozenset[str] | None

    def drops_dir(self, levels: tuple[_IgnoreLevel, ...], rel: str) -> bool:
        # The trailing slash is what lets "build/" patterns match the directory itself.
        as_dir = rel + "/"
        return _git_ignored(levels, as_dir) or (self.exclude is not None and self.exclude.match_file(as_dir))

    def drops_file(self, levels: tuple[_IgnoreLevel, ...], rel: str) -> bool:
        if _git_ignored(levels, rel):
            return True
        if self.exclude is not None and self.exclude.match_file(rel):
            return True
        if self.include is not None and not self.include.match_file(rel):
            return True
        return self.suffixes is not None and _suffix(rel) not in self.suffixes


def _glob_spec(patterns: Sequence[str]) -> pathspec.PathSpec[pathspec.Pattern] | None:
    # gitwildmatch rather than fnmatch: "*.md" must match at any depth and "docs/**" a whole subtree,
    # which is exactly how users already write .gitignore lines.
    cleaned = [p.strip() for p in patterns if p.strip()]
    return pathspec.PathSpec.from_lines("gitignore", cleaned) if cleaned else None


def _suffix(name: str) -> str:
    return os.path.splitext(name.rsplit("/", 1)[-1])[1].lower()


def _git_ignored(levels: tuple[_IgnoreLevel, ...], rel: str) -> bool:
    # As git does: the deepest ignore file with a matching pattern decides (its last match, which is how
    # `!negation` re-includes), and patterns are relative to the directory holding the file.
    for level in reversed(levels):
        if not rel.startswith(level.prefix):
            continue
        result = level.spec.check_file(rel[len(level.prefix) :])
        if result.include is not None:
            return bool(result.include)
    return False


def _load_ignore(path: str, prefix: str) -> _IgnoreLevel | None:
    # Like git (2.32+), a symlinked ignore file is not followed; an unreadable one is simply not applied.
    try:
        info = os.stat(path, follow_symlinks=False)
        if not stat.S_ISREG(info.st_mode) or info.st_size > _GITIGNORE_MAX_BYTES:
            return None
        with open(path, encoding="utf-8", errors="replace") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return None
    spec = pathspec.GitIgnoreSpec.from_lines(lines)
    return _IgnoreLevel(prefix, spec) if spec.patterns else None


# --- walking -----------------------------------------------------------------------------------------


def walk(
    plan: WalkPlan,
    *,
    roots: Sequence[Path],
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    suffixes: frozenset[str] | None = None,
    max_file_bytes: int,
    gitignore: bool = True,
) -> Iterator[FoundFile | Refused]:
    """Yield the files to read and the ones refused, in a deterministic order (files of a directory by
    name, then its subdirectories by name)."""
    roots = allowed_roots(roots)
    if not _inside(plan.target, roots):
        raise OutsideRoots(
            f"'{plan.target}' is outside the allowed roots (ZAPOMNI_ALLOWED_ROOTS={_roots_setting(roots)}); "
            "add a root or move the files"
        )
    if not plan.target.is_dir():
        yield _single_file(plan, roots, suffixes, max_file_bytes)
        return
    filters = _Filters(_glob_spec(include), _glob_spec(exclude), suffixes)
    levels: tuple[_IgnoreLevel, ...] = ()
    if gitignore:
        info_exclude = _load_ignore(os.path.join(plan.target, ".git", "info", "exclude"), "")
        levels = (info_exclude,) if info_exclude else ()  # lowest precedence: below every .gitignore
    yield from _walk_tree(str(plan.target), filters, levels, gitignore, roots, max_file_bytes)


def _single_file(
    plan: WalkPlan, roots: Sequence[Path], suffixes: frozenset[str] | None, max_file_bytes: int
) -> FoundFile | Refused:
    # The user named this file: no ignore/include filtering, but every safety check still applies, and a
    # suffix we cannot handle is reported rather than dropped silently.
    shown = str(plan.target)
    try:
        info = os.stat(plan.target)
    except OSError as exc:
        return Refused(shown, f"cannot be read ({_os_reason(exc)})")
    if not stat.S_ISREG(info.st_mode):
        return Refused(shown, f"not a regular file ({_kind(info.st_mode)})")
    suffix = _suffix(plan.target.name)
    if suffixes is not None and suffix not in suffixes:
        return Refused(shown, _unsupported(suffix, suffixes))
    return _checked_file(shown, str(plan.target), info, plan.target.name, max_file_bytes)


def _walk_tree(
    top: str,
    filters: _Filters,
    levels: tuple[_IgnoreLevel, ...],
    gitignore: bool,
    roots: Sequence[Path],
    max_file_bytes: int,
) -> Iterator[FoundFile | Refused]:
    # An explicit stack instead of recursion: a very deep tree must not hit the recursion limit.
    stack: list[tuple[str, str, tuple[_IgnoreLevel, ...]]] = [(top, "", levels)]
    visited: set[tuple[int, int]] = set()
    while stack:
        directory, prefix, levels = stack.pop()
        try:
            identity = os.stat(directory, follow_symlinks=False)
            with os.scandir(directory) as listing:
                entries = sorted(listing, key=lambda entry: entry.name)
        except OSError as exc:
            yield Refused(directory, f"directory cannot be read ({_os_reason(exc)})")
            continue
        if (identity.st_dev, identity.st_ino) in visited:
            continue  # a bind mount leading back up the tree
        visited.add((identity.st_dev, identity.st_ino))
        if gitignore:
            level = _load_ignore(os.path.join(directory, ".gitignore"), prefix)
            levels = (*levels, level) if level else levels
        subdirs: list[tuple[str, str, tuple[_IgnoreLevel, ...]]] = []
        for entry in entries:
            rel = prefix + entry.name
            if _is_real_dir(entry):
                if entry.name not in ALWAYS_SKIPPED_DIRS and not filters.drops_dir(levels, rel):
                    subdirs.append((entry.path, rel + "/", levels))
                continue
            outcome = _entry_outcome(entry, rel, filters, levels, roots, max_file_bytes)
            if outcome is not None:
                yield outcome
        stack.extend(reversed(subdirs))


def _is_real_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


def _entry_outcome(
    entry: os.DirEntry[str],
    rel: str,
    filters: _Filters,
    levels: tuple[_IgnoreLevel, ...],
    roots: Sequence[Path],
    max_file_bytes: int,
) -> FoundFile | Refused | None:
    """What one non-directory entry becomes: a file to read, a refusal, or nothing (filtered out)."""
    if entry.is_symlink():
        return _symlink_outcome(entry, rel, filters, levels, roots, max_file_bytes)
    if filters.drops_file(levels, rel):
        return None
    try:
        info = entry.stat(follow_symlinks=False)
    except OSError as exc:
        return Refused(entry.path, f"cannot be read ({_os_reason(exc)})")
    return _checked_file(entry.path, entry.path, info, rel, max_file_bytes)


def _symlink_outcome(
    entry: os.DirEntry[str],
    rel: str,
    filters: _Filters,
    levels: tuple[_IgnoreLevel, ...],
    roots: Sequence[Path],
    max_file_bytes: int,
) -> FoundFile | Refused | None:
    try:
        resolved = os.path.realpath(entry.path, strict=True)
        info = os.stat(resolved)
    except OSError as exc:
        if filters.drops_file(levels, rel):
            return None
        return Refused(entry.path, *_broken_link_reason(entry.path, exc))
    if stat.S_ISDIR(info.st_mode):
        if entry.name in ALWAYS_SKIPPED_DIRS or filters.drops_dir(levels, rel):
            return None
        if not _inside(Path(resolved), roots):
            return Refused(entry.path, f"symlink leading outside the allowed roots (to {resolved})", (resolved,))
        # Not followed even inside the roots: the same files would be indexed twice, and loops become possible.
        return Refused(entry.path, f"directory symlink not followed (to {resolved}); index that directory directly")
    if filters.drops_file(levels, rel):
        return None
    if not _inside(Path(resolved), roots):
        return Refused(entry.path, f"symlink leading outside the allowed roots (to {resolved})", (resolved,))
    return _checked_file(entry.path, resolved, info, rel, max_file_bytes)


def _broken_link_reason(path: str, exc: OSError) -> tuple[str, tuple[str, ...]]:
    """The reason, and the server path it names (an absolute destination)."""
    try:
        destination = os.readlink(path)
    except OSError:
        destination = "?"
    hidden = (destination,) if destination.startswith("/") else ()
    if exc.errno == errno.ENOENT:
        return f"broken symlink (to {destination}, which does not exist)", hidden
    return f"symlink cannot be followed (to {destination}: {_os_reason(exc)})", hidden


def _checked_file(
    shown: str, resolved: str, info: os.stat_result, rel: str, max_file_bytes: int
) -> FoundFile | Refused:
    if not stat.S_ISREG(info.st_mode):
        return Refused(shown, f"not a regular file ({_kind(info.st_mode)})")
    if info.st_size > max_file_bytes:
        return Refused(shown, _too_big(info.st_size, max_file_bytes))
    if not os.access(resolved, os.R_OK):
        return Refused(shown, "cannot be read (permission denied)")
    return FoundFile(path=Path(resolved), relative=rel, size=info.st_size)


# --- reading -----------------------------------------------------------------------------------------


def read_file(found: FoundFile, *, roots: Sequence[Path], max_file_bytes: int) -> bytes:
    """Read one file the walk found, re-checking what may have changed since; raise FileRefused if unsafe."""
    roots = allowed_roots(roots)
    try:
        before = os.stat(found.path, follow_symlinks=False)
    except OSError as exc:
        raise FileRefused(f"cannot be read ({_os_reason(exc)})") from exc
    # Refuse without opening: opening some devices has side effects even with O_NONBLOCK.
    if stat.S_ISLNK(before.st_mode):
        raise FileRefused("was replaced by a symlink since it was listed")
    if not stat.S_ISREG(before.st_mode):
        raise FileRefused(f"not a regular file ({_kind(before.st_mode)})")
    try:
        fd = os.open(found.path, _OPEN_FLAGS)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise FileRefused("was replaced by a symlink since it was listed") from exc
        raise FileRefused(f"cannot be read ({_os_reason(exc)})") from exc
    try:
        return _read_open(fd, found.path, roots, max_file_bytes)
    finally:
        os.close(fd)


def _read_open(fd: int, path: Path, roots: Sequence[Path], max_file_bytes: int) -> bytes:
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        raise FileRefused(f"not a regular file ({_kind(info.st_mode)})")
    where = _descriptor_path(fd, path)
    if not _inside(where, roots):
        raise FileRefused(f"now outside the allowed roots (at {where})", paths=(where,))
    if info.st_size > max_file_bytes:
        raise FileRefused(_too_big(info.st_size, max_file_bytes))
    data = _read_at_most(fd, max_file_bytes + 1)
    if len(data) > max_file_bytes:
        raise FileRefused(f"grew while being read; {_too_big(len(data), max_file_bytes)}")
    return data


def _descriptor_path(fd: int, path: Path) -> Path:
    # /proc names the file actually opened, so a directory swapped for a symlink between the checks
    # and the open is still caught; elsewhere the resolved name is the best there is.
    try:
        return Path(os.readlink(f"/proc/self/fd/{fd}"))
    except OSError:
        return Path(os.path.realpath(path))


def _read_at_most(fd: int, limit: int) -> bytes:
    chunks: list[bytes] = []
    remaining = limit
    while remaining > 0:
        chunk = os.read(fd, min(remaining, _MB))
        if not chunk:
            break
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)
