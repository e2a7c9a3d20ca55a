"""The shared file walker: allowed roots, refusals, filters and safe reads, on real files in tmp_path."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from zapomni_core.errors import InvalidRequest, ZapomniError
from zapomni_core.files.walker import (
    FileRefused,
    FoundFile,
    PathRefused,
    Refused,
    WalkPlan,
    allowed_roots,
    plan_walk,
    read_file,
    walk,
)

MB = 1024 * 1024
LIMIT = 10 * MB


def write(path: Path, text: str = "x") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def run(target: Path | str, roots: list[Path], **options: object) -> list[FoundFile | Refused]:
    options.setdefault("max_file_bytes", LIMIT)
    plan = plan_walk(str(target), roots)
    return list(walk(plan, roots=roots, **options))  # type: ignore[arg-type]  # the options are the walk's own keywords


def found(items: list[FoundFile | Refused]) -> list[str]:
    return [item.relative for item in items if isinstance(item, FoundFile)]


def refused(items: list[FoundFile | Refused]) -> dict[str, str]:
    return {item.path: item.reason for item in items if isinstance(item, Refused)}


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    root.mkdir()
    return root


# --- allowed roots and planning ----------------------------------------------------------------------


def test_allowed_roots_resolves_and_deduplicates(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "alias").symlink_to(real)
    other = tmp_path / "other"
    other.mkdir()
    assert allowed_roots([real, tmp_path / "alias", other, real / "." / ""]) == (real.resolve(), other.resolve())


def test_path_refused_is_an_invalid_request() -> None:
    assert issubclass(PathRefused, InvalidRequest)
    assert issubclass(PathRefused, ZapomniError)
    # One file refused is recorded in its job and the walk goes on: part of the one tree, not a bad request.
    assert issubclass(FileRefused, ZapomniError)
    assert not issubclass(FileRefused, InvalidRequest)


def test_dotdot_is_refused_even_inside_the_roots(tree: Path) -> None:
    write(tree / "a" / "doc.md")
    (tree / "b").mkdir()
    with pytest.raises(PathRefused, match=r"'\.\.' is not allowed in paths; give the path without it") as info:
        plan_walk(f"{tree}/b/../a", [tree])
    assert f"{tree}/b/../a" in str(info.value)


def test_missing_target_is_named(tree: Path) -> None:
    with pytest.raises(PathRefused, match="does not exist") as info:
        plan_walk(str(tree / "nope"), [tree])
    assert str(tree / "nope") in str(info.value)


def test_target_outside_the_roots_names_path_and_roots(tmp_path: Path, tree: Path) -> None:
    outside = write(tmp_path / "elsewhere" / "secret.md")
    with pytest.raises(PathRefused) as info:
        plan_walk(str(outside), [tree])
    message = str(info.value)
    assert str(outside) in message
    assert f"is outside the allowed roots (ZAPOMNI_ALLOWED_ROOTS={tree})" in message
    assert "add a root or move the files" in message


def test_symlinked_target_is_judged_by_where_it_leads(tmp_path: Path, tree: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (tree / "door").symlink_to(outside)
    with pytest.raises(PathRefused, match=r"resolves to .*outside the allowed roots"):
        plan_walk(str(tree / "door"), [tree])


def test_no_roots_refuses_everything(tree: Path) -> None:
    with pytest.raises(PathRefused, match="no allowed roots are configured"):
        plan_walk(str(tree), [])


def test_fifo_target_is_refused_with_what_it_is(tree: Path) -> None:
    os.mkfifo(tree / "pipe")
    with pytest.raises(PathRefused, match=r"is not a regular file or directory \(it is a FIFO\)"):
        plan_walk(str(tree / "pipe"), [tree])


def test_relative_and_home_targets_are_expanded(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tree / "docs" / "a.md")
    monkeypatch.chdir(tree)
    assert plan_walk("docs", [tree]) == WalkPlan(target=tree / "docs", base=tree / "docs")
    monkeypatch.setenv("HOME", str(tree))
    assert plan_walk("~/docs/a.md", [tree]) == WalkPlan(target=tree / "docs" / "a.md", base=tree / "docs")


# --- walking: order, relative paths, skipped directories ---------------------------------------------


def test_walk_is_sorted_deterministic_and_relative(tree: Path) -> None:
    for rel in ["b.md", "a.md", "z/y.md", "z/a/deep.md", "m/x.md", "A.md"]:
        write(tree / rel, rel)
    items = run(tree, [tree])
    assert found(items) == ["A.md", "a.md", "b.md", "m/x.md", "z/y.md", "z/a/deep.md"]
    assert found(run(tree, [tree])) == found(items)
    first = next(item for item in items if isinstance(item, FoundFile) and item.relative == "z/a/deep.md")
    assert first.path == (tree / "z" / "a" / "deep.md").resolve()
    assert first.path.is_absolute()
    assert first.size == len("z/a/deep.md")


def test_tool_and_vcs_directories_are_skipped_silently(tree: Path) -> None:
    write(tree / "keep.md")
    for name in [".git", "node_modules", "__pycache__", ".venv", ".mypy_cache"]:
        write(tree / name / "inside.md")
    write(tree / "dist" / "built.md")  # not always skipped: .gitignore decides about dist/build
    items = run(tree, [tree])
    assert found(items) == ["keep.md", "dist/built.md"]
    assert refused(items) == {}


def test_single_file_target(tree: Path) -> None:
    write(tree / "docs" / "one.md", "hello")
    write(tree / "docs" / ".gitignore", "one.md\n")  # the user named it: ignore rules do not apply
    items = run(tree / "docs" / "one.md", [tree], suffixes=frozenset({".md"}), include=["*.txt"])
    assert items == [FoundFile(path=tree / "docs" / "one.md", relative="one.md", size=5)]


def test_single_file_with_unsupported_suffix_is_reported(tree: Path) -> None:
    write(tree / "picture.png")
    items = run(tree / "picture.png", [tree], suffixes=frozenset({".md", ".txt"}))
    assert items == [Refused(str(tree / "picture.png"), "unsupported file type '.png' (supported: .md, .txt)")]


# --- symlinks ----------------------------------------------------------------------------------------


def test_file_symlink_inside_roots_is_followed(tree: Path) -> None:
    target = write(tree / "real" / "doc.md", "content")
    (tree / "link.md").symlink_to(target)
    items = run(tree, [tree])
    link = next(item for item in items if isinstance(item, FoundFile) and item.relative == "link.md")
    assert link.path == target.resolve()
    assert found(items) == ["link.md", "real/doc.md"]


def test_file_symlink_escaping_the_roots_is_refused(tmp_path: Path, tree: Path) -> None:
    secret = write(tmp_path / "secret.md", "password")
    (tree / "innocent.md").symlink_to(secret)
    items = run(tree, [tree])
    assert found(items) == []
    assert refused(items) == {
        str(tree / "innocent.md"): f"symlink leading outside the allowed roots (to {secret.resolve()})"
    }


def test_directory_symlinks_are_not_followed(tmp_path: Path, tree: Path) -> None:
    outside = tmp_path / "outside"
    write(outside / "leak.md")
    write(tree / "inner" / "doc.md")
    (tree / "escape").symlink_to(outside)
    (tree / "loop").symlink_to(tree)
    items = run(tree, [tree])
    assert found(items) == ["inner/doc.md"]
    reasons = refused(items)
    assert reasons[str(tree / "escape")] == f"symlink leading outside the allowed roots (to {outside.resolve()})"
    assert reasons[str(tree / "loop")].startswith("directory symlink not followed")
    assert not any("leak" in item.relative for item in items if isinstance(item, FoundFile))


def test_broken_symlink_is_refused(tree: Path) -> None:
    (tree / "dangling.md").symlink_to(tree / "gone.md")
    items = run(tree, [tree])
    assert refused(items) == {
        str(tree / "dangling.md"): f"broken symlink (to {tree / 'gone.md'}, which does not exist)"
    }


# --- special files -----------------------------------------------------------------------------------


def test_fifo_in_tree_is_refused_and_never_blocks(tree: Path) -> None:
    os.mkfifo(tree / "pipe.md")
    items = run(tree, [tree])
    assert refused(items) == {str(tree / "pipe.md"): "not a regular file (FIFO)"}

    # read_file on a FIFO (e.g. a file swapped for one after the walk) must refuse, not wait for a writer.
    outcome: list[BaseException] = []

    def attempt() -> None:
        try:
            read_file(FoundFile(tree / "pipe.md", "pipe.md", 0), roots=[tree], max_file_bytes=LIMIT)
        except BaseException as exc:  # collected for the assertion below
            outcome.append(exc)

    reader = threading.Thread(target=attempt, daemon=True)
    reader.start()
    reader.join(timeout=5)
    assert not reader.is_alive(), "read_file blocked on a FIFO"
    assert len(outcome) == 1 and isinstance(outcome[0], FileRefused)
    assert str(outcome[0]) == "not a regular file (FIFO)"


def test_device_is_refused(tmp_path: Path, tree: Path) -> None:
    device = tree / "null.md"
    roots = [tree]
    try:
        os.mknod(device, stat.S_IFCHR | 0o600, os.makedev(1, 3))
    except (PermissionError, OSError):
        # Not allowed to make devices here: reach the real /dev/null through a link, with /dev allowed.
        device.symlink_to("/dev/null")
        roots = [tree, Path("/dev")]
    items = run(tree, roots)
    assert refused(items) == {str(device): "not a regular file (character device)"}
    with pytest.raises(FileRefused, match=r"not a regular file \(character device\)"):
        read_file(FoundFile(Path(os.path.realpath(device)), "null.md", 0), roots=roots, max_file_bytes=LIMIT)


def test_socket_is_refused(tree: Path) -> None:
    import socket

    path = tree / "sock.md"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(str(path))
        items = run(tree, [tree])
    assert refused(items) == {str(path): "not a regular file (socket)"}


# --- size --------------------------------------------------------------------------------------------


def test_oversize_file_is_refused_with_sizes(tree: Path) -> None:
    big = tree / "big.md"
    with open(big, "wb") as handle:
        handle.truncate(int(12.3 * MB))  # sparse: no real disk use
    write(tree / "small.md", "ok")
    items = run(tree, [tree], max_file_bytes=10 * MB)
    assert found(items) == ["small.md"]
    assert refused(items) == {str(big): "12.3 MB is above the size limit of 10 MB (ZAPOMNI_MAX_FILE_MB)"}


def test_read_file_refuses_a_file_that_grew(tree: Path) -> None:
    path = write(tree / "doc.md", "short")
    item = next(i for i in run(tree, [tree], max_file_bytes=100) if isinstance(i, FoundFile))
    assert read_file(item, roots=[tree], max_file_bytes=100) == b"short"
    path.write_text("x" * 150)
    with pytest.raises(FileRefused, match="150 bytes is above the size limit of 100 bytes"):
        read_file(item, roots=[tree], max_file_bytes=100)


# --- filters -----------------------------------------------------------------------------------------


def test_nested_gitignore_with_negation(tree: Path) -> None:
    write(tree / ".gitignore", "*.log\nbuild/\nsecret.md\n")
    write(tree / "a.md")
    write(tree / "a.log")
    write(tree / "secret.md")
    write(tree / "build" / "out.md")
    write(tree / "sub" / ".gitignore", "!keep.log\n/local.md\n")
    write(tree / "sub" / "keep.log")
    write(tree / "sub" / "drop.log")
    write(tree / "sub" / "local.md")
    write(tree / "sub" / "deeper" / "local.md")  # "/local.md" is anchored to sub/, not to every level
    write(tree / "sub" / "secret.md")  # the parent's rule still reaches into sub/
    write(tree / "other" / "keep.log")  # sub's negation does not apply outside sub/
    items = run(tree, [tree], exclude=[".gitignore", "**/.gitignore"])
    assert found(items) == ["a.md", "sub/keep.log", "sub/deeper/local.md"]


def test_git_info_exclude_and_gitignore_off(tree: Path) -> None:
    write(tree / ".git" / "info" / "exclude", "private.md\n")
    write(tree / ".gitignore", "ignored.md\n")
    write(tree / "private.md")
    write(tree / "ignored.md")
    write(tree / "public.md")
    assert found(run(tree, [tree], suffixes=frozenset({".md"}))) == ["public.md"]
    assert found(run(tree, [tree], suffixes=frozenset({".md"}), gitignore=False)) == [
        "ignored.md",
        "private.md",
        "public.md",
    ]


def test_include_and_exclude_globs(tree: Path) -> None:
    for rel in ["readme.md", "notes.txt", "docs/guide.md", "docs/img.png", "docs/api/ref.txt", "src/x/y.md"]:
        write(tree / rel)
    assert found(run(tree, [tree], include=["*.md"])) == ["readme.md", "docs/guide.md", "src/x/y.md"]
    assert found(run(tree, [tree], include=["docs/**"])) == ["docs/guide.md", "docs/img.png", "docs/api/ref.txt"]
    assert found(run(tree, [tree], exclude=["docs/"])) == ["notes.txt", "readme.md", "src/x/y.md"]
    assert found(run(tree, [tree], include=["docs/**"], exclude=["*.png", "api"])) == ["docs/guide.md"]


def test_excluded_and_filtered_specials_are_not_reported(tmp_path: Path, tree: Path) -> None:
    os.mkfifo(tree / "pipe.bin")
    (tree / "away.md").symlink_to(write(tmp_path / "outside.md"))
    write(tree / "doc.md")
    items = run(tree, [tree], suffixes=frozenset({".md"}), exclude=["away.md"])
    assert items == [FoundFile(tree / "doc.md", "doc.md", 1)]


def test_suffix_filter_skips_silently_and_ignores_case(tree: Path) -> None:
    for rel in ["a.md", "B.MD", "c.png", "Makefile", "d/e.Txt"]:
        write(tree / rel)
    items = run(tree, [tree], suffixes=frozenset({".md", ".txt"}))
    assert found(items) == ["B.MD", "a.md", "d/e.Txt"]
    assert refused(items) == {}


# --- reading -----------------------------------------------------------------------------------------


def test_read_file_returns_bytes(tree: Path) -> None:
    write(tree / "doc.md", "héllo")
    (item,) = run(tree, [tree])
    assert isinstance(item, FoundFile)
    assert read_file(item, roots=[tree], max_file_bytes=LIMIT) == "héllo".encode()


def test_read_file_refuses_a_file_swapped_for_a_symlink(tmp_path: Path, tree: Path) -> None:
    path = write(tree / "doc.md")
    (item,) = run(tree, [tree])
    assert isinstance(item, FoundFile)
    path.unlink()
    path.symlink_to(write(tmp_path / "secret.md", "password"))
    with pytest.raises(FileRefused, match="replaced by a symlink"):
        read_file(item, roots=[tree], max_file_bytes=LIMIT)


def test_read_file_refuses_a_parent_swapped_for_an_escaping_symlink(tmp_path: Path, tree: Path) -> None:
    write(tree / "sub" / "doc.md", "mine")
    item = next(i for i in run(tree, [tree]) if isinstance(i, FoundFile))
    write(tmp_path / "outside" / "doc.md", "secret")
    (tree / "sub" / "doc.md").unlink()
    (tree / "sub").rmdir()
    (tree / "sub").symlink_to(tmp_path / "outside")
    with pytest.raises(FileRefused, match="outside the allowed roots"):
        read_file(item, roots=[tree], max_file_bytes=LIMIT)


def test_read_file_refuses_a_vanished_file(tree: Path) -> None:
    path = write(tree / "doc.md")
    (item,) = run(tree, [tree])
    assert isinstance(item, FoundFile)
    path.unlink()
    with pytest.raises(FileRefused, match="no longer exists"):
        read_file(item, roots=[tree], max_file_bytes=LIMIT)


def test_read_file_refuses_when_roots_changed(tmp_path: Path, tree: Path) -> None:
    write(tree / "doc.md")
    (item,) = run(tree, [tree])
    assert isinstance(item, FoundFile)
    other = tmp_path / "other"
    other.mkdir()
    with pytest.raises(FileRefused, match="outside the allowed roots"):
        read_file(item, roots=[other], max_file_bytes=LIMIT)


def test_permission_denied_is_reported(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tree / "locked.md")
    if os.geteuid() != 0:
        path.chmod(0)
    else:  # root reads everything: make the access check answer as it would for a normal user
        real_access = os.access
        monkeypatch.setattr(os, "access", lambda p, mode: False if str(p) == str(path) else real_access(p, mode))
    items = run(tree, [tree])
    assert refused(items) == {str(path): "cannot be read (permission denied)"}


def test_read_file_maps_permission_errors(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tree / "doc.md")
    (item,) = run(tree, [tree])
    assert isinstance(item, FoundFile)

    def denied(*args: object, **kwargs: object) -> int:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(os, "open", denied)
    with pytest.raises(FileRefused, match=r"cannot be read \(permission denied\)"):
        read_file(item, roots=[tree], max_file_bytes=LIMIT)


def test_read_file_open_never_blocks_on_a_fifo_swapped_in_after_the_check(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Simulate the race: the pre-open check still sees a regular file, the open meets the FIFO.
    pipe = tree / "doc.md"
    os.mkfifo(pipe)
    real_stat = os.stat

    def stale_stat(path: object, *args: object, **kwargs: object) -> os.stat_result:
        if str(path) == str(pipe):
            return os.stat_result((stat.S_IFREG | 0o644, 0, 0, 1, 0, 0, 3, 0, 0, 0))
        return real_stat(path, *args, **kwargs)  # type: ignore[arg-type]  # os.stat's own arguments, passed on

    monkeypatch.setattr(os, "stat", stale_stat)
    outcome: list[BaseException] = []

    def attempt() -> None:
        try:
            read_file(FoundFile(pipe, "doc.md", 3), roots=[tree], max_file_bytes=LIMIT)
        except BaseException as exc:  # collected for the assertion below
            outcome.append(exc)

    reader = threading.Thread(target=attempt, daemon=True)
    reader.start()
    reader.join(timeout=5)
    assert not reader.is_alive(), "opening a FIFO blocked the reader"
    assert len(outcome) == 1 and str(outcome[0]) == "not a regular file (FIFO)"
