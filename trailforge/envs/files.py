"""Walking and classifying the files of an (untrusted) repository tree.

A mined repository is hostile input: it can nest folders deeper than any recursive walk
survives, plant symbolic links out of the tree, FIFOs that block a reader, or folders we
cannot list. ``walk_tree`` is the one walker over such trees: iterative, never following
links, with a depth cap, and it reports every entry it does not yield as a file so that
callers can count it instead of skipping it silently.
"""
from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

DATA_SUFFIXES = {
    ".csv", ".tsv", ".json", ".txt", ".dat", ".fasta", ".fa", ".fna", ".faa", ".fastq", ".pdb", ".cif",
    ".xyz", ".mol", ".mol2", ".sdf", ".npy", ".npz", ".h5", ".hdf5", ".nc", ".xlsx", ".parquet", ".gff",
    ".gtf", ".vcf", ".bed", ".mzml", ".xml", ".yaml", ".yml",
}
DOC_SUFFIXES = {".md", ".rst"}
MANIFESTS = {"requirements.txt", "environment.yml", "environment.yaml", "pyproject.toml", "setup.cfg", "setup.py"}
SKIP_DIRS = {".git", "__pycache__", ".ipynb_checkpoints", ".venv", "venv", "node_modules", ".mypy_cache"}

# Folders nested deeper than this are not entered. Real repositories stay far below it (a
# package inside src/ inside a monorepo is rarely past 15); the cap keeps path lengths and
# every later per-level walk (ours, git's, rmtree's) bounded.
MAX_TREE_DEPTH = 64

# What ``walk_tree`` yields; everything but FILE is something it did not descend into or read.
FILE = "file"              # a regular file (by lstat; the copier re-checks on the open descriptor)
SYMLINK = "symlink"        # a symbolic link, to a file or a folder: never followed
SPECIAL = "special"        # a FIFO, socket or device
TOO_DEEP = "too_deep"      # a folder past MAX_TREE_DEPTH: its contents are not listed
UNREADABLE = "unreadable"  # a folder it could not list, or an entry it could not lstat (permissions, ...)
BAD_NAME = "bad_name"      # a name that is not UTF-8: no row or reject could carry it, so it is not entered


@dataclass(frozen=True)
class TreeEntry:
    rel: str                          # posix path relative to the root
    path: Path                        # full path
    kind: str                         # FILE, SYMLINK, SPECIAL, TOO_DEEP, UNREADABLE or BAD_NAME
    size: int = 0                     # lstat size of a FILE
    error: str = ""                   # why an UNREADABLE folder could not be listed


def walk_tree(root: Path, max_depth: int = MAX_TREE_DEPTH, skip_dirs: set[str] = SKIP_DIRS) -> Iterator[TreeEntry]:
    """Every entry under ``root``, top-down: a folder's files (sorted) before its sub-folders (sorted).

    The order is that of ``os.walk`` with sorted names, so content hashes built from it stay as they
    were. Folders named in ``skip_dirs`` (tool caches, virtualenvs, ``.git``) are left out without a
    report, as before; everything else that is not a regular file comes back with its kind.
    """
    root = Path(root)
    stack: list[tuple[Path, str, int]] = [(root, "", 0)]
    while stack:
        folder, rel, depth = stack.pop()
        if depth > max_depth:
            yield TreeEntry(rel, folder, TOO_DEEP)
            continue
        try:
            with os.scandir(folder) as listing:
                children = sorted(listing, key=lambda e: e.name)
        except OSError as exc:
            yield TreeEntry(rel or ".", folder, UNREADABLE, error=exc.strerror or type(exc).__name__)
            continue
        folders = []
        for child in children:
            child_rel = f"{rel}/{child.name}" if rel else child.name
            if not _is_utf8(child.name):
                yield TreeEntry(_printable(child_rel), Path(child.path), BAD_NAME)
                continue
            try:
                info = child.stat(follow_symlinks=False)
            except OSError as exc:  # vanished or unreadable between listing and lstat
                yield TreeEntry(child_rel, Path(child.path), UNREADABLE, error=exc.strerror or type(exc).__name__)
                continue
            if stat.S_ISLNK(info.st_mode):
                yield TreeEntry(child_rel, Path(child.path), SYMLINK)
            elif stat.S_ISDIR(info.st_mode):
                if child.name not in skip_dirs:
                    folders.append((Path(child.path), child_rel, depth + 1))
            elif stat.S_ISREG(info.st_mode):
                yield TreeEntry(child_rel, Path(child.path), FILE, size=info.st_size)
            else:
                yield TreeEntry(child_rel, Path(child.path), SPECIAL)
        stack.extend(reversed(folders))


def _is_utf8(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:  # os.fsdecode keeps undecodable bytes as lone surrogates
        return False
    return True


def _printable(name: str) -> str:
    """A file name with its undecodable bytes written as ``\\xNN`` escapes."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def remove_tree(root: Path, ignore_errors: bool = False) -> None:
    """``shutil.rmtree`` without recursion (Python 3.11's recurses once per folder level, so a
    checkout nested ~1000 deep raised RecursionError while it was cleaned up). Links are removed,
    never followed. With ``ignore_errors`` whatever cannot be removed is left and the rest goes."""
    def attempt(action, *args):
        try:
            action(*args)
        except OSError:
            if not ignore_errors:
                raise

    root = Path(root)
    if root.is_symlink() or (root.exists() and not root.is_dir()):
        attempt(os.unlink, root)
        return
    stack: list[tuple[str, bool]] = [(str(root), False)] if root.exists() else []
    while stack:
        folder, emptied = stack.pop()
        if emptied:
            attempt(os.rmdir, folder)
            continue
        stack.append((folder, True))
        try:
            with os.scandir(folder) as listing:
                children = list(listing)
        except OSError:
            if not ignore_errors:
                raise
            continue
        for child in children:
            if child.is_dir(follow_symlinks=False):
                stack.append((child.path, False))
            else:
                attempt(os.unlink, child.path)


def read_regular(path: Path, max_file_bytes: int) -> tuple[bytes | None, str, str, dict]:
    """A regular file's bytes, or ``(None, reject reason, message, detail)``.

    Refused: links (never followed), anything not a regular file, files with more than one hardlink
    (a hardlink in a local folder can be a host file its owner could not otherwise publish) and files
    over ``max_file_bytes``. Every check is made on the open descriptor, so a file swapped for a link,
    FIFO or hardlink after the walk looked at it is refused all the same.
    """
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        return None, "unreadable_path", f"cannot open: {exc.strerror or type(exc).__name__}", {}
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            return None, "not_regular_file", "only regular files are copied", {}
        if info.st_nlink > 1:
            return None, "hardlinked_file", (f"{info.st_nlink} links to this file: a hardlink can be a host file "
                                             "from outside the repository, so it is not copied"), {}
        if info.st_size > max_file_bytes:
            return (None, "file_too_large", f"{info.st_size} bytes > budget.max_file_bytes={max_file_bytes}",
                    {"size": info.st_size})
        data = handle.read(max_file_bytes + 1)
    if len(data) > max_file_bytes:  # grew after fstat
        return None, "file_too_large", f"more than budget.max_file_bytes={max_file_bytes} bytes", {}
    return data, "", "", {}


def looks_binary(data: bytes) -> bool:
    return b"\x00" in data[:8192]


def file_kind(rel: str, data: bytes) -> str:
    name = Path(rel).name
    suffix = Path(rel).suffix.lower()
    if name in MANIFESTS or name.startswith("requirements") and suffix == ".txt":
        return "manifest"
    if suffix == ".py":
        return "python"
    if suffix in DOC_SUFFIXES or name.lower().startswith(("readme", "license")):
        return "doc"
    if suffix in DATA_SUFFIXES:
        return "data"
    if looks_binary(data):
        return "binary"
    return "text"
