"""Pin and copy each repository, and infer what its code needs to run.

A snapshot is a faithful copy of the repository at a pinned state (the git commit, or
the content hash of a plain folder), minus files over the size budget and symlinks.
Files that cannot be analysed (not UTF-8, binary, syntax errors) stay in the copy but
are recorded as rejects of the analysis, so nothing is skipped silently.
"""
from __future__ import annotations

import hashlib
import os
import platform
import shutil
import subprocess
import tempfile
from pathlib import Path

from ..io import FileEntry, RepoRow, SnapshotRow, StageRecorder
from .deps import parse_manifest, resolve_distributions, scan_imports_detailed, third_party
from .files import SKIP_DIRS, file_kind


def snapshot_repo(repo: RepoRow, project_root: Path, trees_dir: Path, max_file_bytes: int,
                  recorder: StageRecorder) -> SnapshotRow | None:
    dest = trees_dir / repo.repo_id
    if dest.exists():
        shutil.rmtree(dest)
    commit = None
    with tempfile.TemporaryDirectory(prefix="tf-snap-") as tmp:
        if repo.origin_kind == "git":
            source, commit, error = _checkout(repo, project_root, Path(tmp))
            if error:
                recorder.reject(repo.repo_id, "checkout_failed", error)
                return None
        else:
            source = (project_root / repo.origin).resolve()
            if not source.is_dir():
                recorder.reject(repo.repo_id, "missing_source_path", f"{repo.origin} vanished after discovery")
                return None
        files = _copy_tree(repo.repo_id, source, dest, max_file_bytes, recorder)
    if not files:
        recorder.reject(repo.repo_id, "empty_repo", "no files left to snapshot")
        return None
    content_hash = hashlib.sha256("".join(f"{f.path}\0{f.sha256}\n" for f in files).encode()).hexdigest()
    requirements, imports, optional, local_modules = _analyse(repo.repo_id, dest, files, recorder)
    distributions, bad = resolve_distributions(requirements, imports, optional, platform.python_version())
    for spec in bad:
        recorder.reject(f"{repo.repo_id}:{spec}", "bad_requirement", f"cannot parse requirement {spec!r}; ignored")
    return SnapshotRow(
        repo_id=repo.repo_id,
        origin=repo.origin,
        discipline=repo.discipline,
        commit=commit,
        content_hash=content_hash,
        tree=dest.as_posix(),
        files=files,
        requirements=requirements,
        imports=imports,
        distributions=distributions,
        local_modules=sorted(local_modules),
    )


def _checkout(repo: RepoRow, project_root: Path, tmp: Path) -> tuple[Path, str | None, str | None]:
    origin = repo.origin
    if "://" not in origin and not origin.startswith("git@"):
        origin = str((project_root / origin).resolve())
    work = tmp / "checkout"
    steps = [["git", "clone", "--quiet", "--no-hardlinks", origin, str(work)]]
    if repo.ref:
        steps.append(["git", "-C", str(work), "checkout", "--quiet", repo.ref])
    for cmd in steps:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            return work, None, f"{' '.join(cmd[:3])} failed: {done.stderr.strip()[:500]}"
    head = subprocess.run(["git", "-C", str(work), "rev-parse", "HEAD"], capture_output=True, text=True)
    return work, head.stdout.strip() or None, None


def _copy_tree(repo_id: str, source: Path, dest: Path, max_file_bytes: int, recorder: StageRecorder) -> list[FileEntry]:
    entries = []
    for dirpath, dirnames, filenames in os.walk(source, followlinks=False):
        kept = []
        for d in sorted(dirnames):
            full = Path(dirpath) / d
            if full.is_symlink():
                recorder.reject(f"{repo_id}:{full.relative_to(source).as_posix()}", "symlink_skipped",
                                "symbolic links are not copied: they can point outside the repository")
            elif d not in SKIP_DIRS:
                kept.append(d)
        dirnames[:] = kept
        for name in sorted(filenames):
            full = Path(dirpath) / name
            rel = full.relative_to(source).as_posix()
            item = f"{repo_id}:{rel}"
            if full.is_symlink():
                recorder.reject(item, "symlink_skipped", "symbolic links are not copied: they can point outside the repository")
                continue
            if not full.is_file():
                recorder.reject(item, "not_regular_file", "only regular files are copied")
                continue
            size = full.stat().st_size
            if size > max_file_bytes:
                recorder.reject(item, "file_too_large", f"{size} bytes > budget.max_file_bytes={max_file_bytes}", size=size)
                continue
            data = full.read_bytes()
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            entries.append(FileEntry(path=rel, sha256=hashlib.sha256(data).hexdigest(), size=size,
                                     kind=file_kind(rel, data)))
    return entries


def _analyse(repo_id: str, tree: Path, files: list[FileEntry], recorder: StageRecorder):
    local = set()
    for entry in files:
        path = Path(entry.path)
        if entry.kind == "python":
            local.add(path.stem)
            local.update(part for part in path.parts[:-1])
    requirements: list[str] = []
    imports: set[str] = set()
    optional: set[str] = set()
    required: set[str] = set()  # imported outside any ImportError guard in at least one file
    for entry in files:
        item = f"{repo_id}:{entry.path}"
        data = (tree / entry.path).read_bytes()
        if entry.kind == "binary":
            recorder.reject(item, "binary_file", "binary file kept in the snapshot but not analysed as text")
            continue
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            recorder.reject(item, "not_utf8", f"not valid UTF-8 ({exc.reason} at byte {exc.start}); kept in the "
                            "snapshot but not analysed as text")
            continue
        if entry.kind == "manifest":
            try:
                requirements.extend(parse_manifest(Path(entry.path).name, text))
            except Exception as exc:  # malformed manifests are common; name the file and move on
                recorder.reject(item, "bad_manifest", f"cannot parse {entry.path}: {exc}")
        elif entry.kind == "python":
            try:
                found, maybe, _ = scan_imports_detailed(text)
            except (SyntaxError, ValueError) as exc:
                line = getattr(exc, "lineno", None)
                recorder.reject(item, "syntax_error", f"{entry.path} does not parse (line {line}): {exc}")
                continue
            imports.update(found)
            optional.update(maybe)
            required.update(found - maybe)
    return sorted(set(requirements)), third_party(imports, local), optional - required, local
