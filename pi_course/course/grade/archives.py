"""Safe temporary copies: a learner's folder copied, or an archive extracted, never trusted."""

from __future__ import annotations

import contextlib
import functools
import os
import re
import shutil
import stat
import tarfile
import zipfile
from collections.abc import Callable, Iterable
from pathlib import Path, PurePosixPath
from typing import IO

from .discovery import SKIPPED, _not_a_copy, find_tree

MAX_ARCHIVE_BYTES = 200 * 1024 * 1024  # extracted size; a practice copy is well under 10 MB
MAX_ARCHIVE_MEMBERS = 20_000


class UnsafeArchive(Exception):
    """An archive that would write outside its folder (or is far too large): nothing is extracted."""


def _ignored(folder: str, names: list[str]) -> set[str]:
    """Leave out caches and environments, and every symbolic link (it could lead anywhere)."""
    return {name for name in names if name in SKIPPED or os.path.islink(os.path.join(folder, name))}


def copy_folder(source: Path, destination: Path) -> Path:
    """Copy the learner's copy (found at or below ``source``) to ``destination``; return it."""
    tree = find_tree(source)
    if tree is None:
        raise UnsafeArchive(_not_a_copy(source).why or "")
    shutil.copytree(tree, destination, ignore=_ignored)
    return destination


def _member_path(name: str) -> PurePosixPath | None:
    """The member's relative path, or ``None`` when it would land outside the extraction folder."""
    normal = name.replace("\\", "/")
    if normal.startswith("/") or re.match(r"^[A-Za-z]:", normal):
        return None
    parts = [part for part in normal.split("/") if part not in ("", ".")]
    if any(part == ".." for part in parts):
        return None
    return PurePosixPath(*parts) if parts else PurePosixPath(".")


class _Budget:
    """Counts what an extraction writes, so a small archive cannot fill the disk."""

    def __init__(self) -> None:
        self.bytes = 0
        self.members = 0

    def member(self) -> None:
        self.members += 1
        if self.members > MAX_ARCHIVE_MEMBERS:
            raise UnsafeArchive(f"压缩包里的文件超过 {MAX_ARCHIVE_MEMBERS} 个，没有解压")

    def write(self, stream: IO[bytes], target: Path) -> None:
        target.parent.mkdir(parents=True, exist_ok=True)
        with target.open("wb") as out:
            while block := stream.read(1 << 16):
                self.bytes += len(block)
                if self.bytes > MAX_ARCHIVE_BYTES:
                    raise UnsafeArchive(f"压缩包解压后超过 {MAX_ARCHIVE_BYTES // 2**20} MB，没有解压")
                out.write(block)


def _checked_names(names: Iterable[str]) -> None:
    for name in names:
        if _member_path(name) is None:
            raise UnsafeArchive(f"压缩包里有指向解压目录之外的路径 {name!r}，整个压缩包没有解压")


def extract(archive: Path, destination: Path) -> list[str]:
    """Extract a .zip or .tar.gz safely into ``destination``; return the members left out.

    Any member whose path is absolute or climbs out (``..``) refuses the whole archive. Only
    regular files and folders are written: symbolic and hard links, devices and pipes are left
    out (and named), so nothing can point outside. Sizes are counted as they are written.
    """
    destination.mkdir(parents=True, exist_ok=True)
    budget = _Budget()
    skipped: list[str] = []
    with contextlib.ExitStack() as stack:
        entries = _entries(archive, stack)
        _checked_names(name for name, _, _ in entries)
        for name, kind, open_member in entries:
            budget.member()
            relative = _member_path(name)
            assert relative is not None
            if kind == "dir":
                (destination / relative).mkdir(parents=True, exist_ok=True)
            elif kind == "file":
                with open_member() as stream:
                    budget.write(stream, destination / relative)
            else:
                skipped.append(name)
    return skipped


_Entry = tuple[str, str, Callable[[], IO[bytes]]]  # name, "dir" | "file" | "other", how to read it


def _entries(archive: Path, stack: contextlib.ExitStack) -> list[_Entry]:
    """The members of a .zip or a tar archive, each with its kind, read lazily."""
    if archive.name.lower().endswith(".zip"):
        zipped = stack.enter_context(zipfile.ZipFile(archive))

        def zip_kind(info: zipfile.ZipInfo) -> str:
            mode = info.external_attr >> 16  # a Unix zip stores a symbolic link's type here
            return "dir" if info.is_dir() else "file" if not mode or stat.S_ISREG(mode) else "other"

        members = zipped.infolist()
        return [(info.filename, zip_kind(info), functools.partial(zipped.open, info)) for info in members]
    tarred = stack.enter_context(tarfile.open(archive, "r:*"))  # noqa: SIM115 (the stack closes it)

    def tar_member(member: tarfile.TarInfo) -> IO[bytes]:
        stream = tarred.extractfile(member)
        assert stream is not None
        return stream

    return [
        (member.name, "dir" if member.isdir() else "file" if member.isreg() else "other",
         functools.partial(tar_member, member))
        for member in tarred.getmembers()
    ]  # fmt: skip
