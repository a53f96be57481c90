"""Walking and classifying the files of an (untrusted) repository tree."""
from __future__ import annotations

import os
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


def iter_tree(root: Path) -> Iterator[tuple[str, Path]]:
    """Yield ``(relative posix path, full path)`` for regular files, sorted, skipping symlinks."""
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not os.path.islink(os.path.join(dirpath, d)))
        for name in sorted(filenames):
            full = Path(dirpath) / name
            if full.is_symlink() or not full.is_file():
                continue
            yield full.relative_to(root).as_posix(), full


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
