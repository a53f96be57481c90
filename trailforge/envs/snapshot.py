"""Pin and copy each repository, and infer what its code needs to run.

A snapshot is a faithful copy of the repository at a pinned state (the git commit, or
the content hash of a plain folder), minus what it must not carry: files over the size
budget, symbolic links, FIFOs and other special files, hardlinked files (a hardlink in a
local folder can be a host file its owner could not otherwise publish) and folders
nested past the walk's depth cap. The copy is written with plain permissions (0644 files,
0755 folders) whatever the source had. Files that cannot be analysed (not UTF-8, binary,
syntax errors, too deep to parse) stay in the copy but are recorded as rejects of the
analysis, and a manifest's requirements that are not named releases from the package
index are refused one by one, so nothing is skipped silently.
"""
from __future__ import annotations

import hashlib
import os
import platform
import subprocess
import tempfile
from pathlib import Path

from ..io import FileEntry, RepoRow, SnapshotRow, StageRecorder
from .deps import (
    RefusedRequirement, parse_manifest, resolve_distributions, scan_imports_detailed, screen_requirements, third_party,
)
from .files import (
    BAD_NAME, FILE, MAX_TREE_DEPTH, SPECIAL, SYMLINK, TOO_DEEP, file_kind, read_regular, remove_tree, walk_tree,
)
from .parsing import UnparseableSource

FILE_MODE, DIR_MODE = 0o644, 0o755


def snapshot_repo(repo: RepoRow, project_root: Path, trees_dir: Path, max_file_bytes: int,
                  recorder: StageRecorder) -> SnapshotRow | None:
    dest = trees_dir / repo.repo_id
    remove_tree(dest)
    commit = commit_date = None
    # Not TemporaryDirectory: its cleanup is a recursive rmtree, which a deeply nested checkout breaks.
    tmp = Path(tempfile.mkdtemp(prefix="tf-snap-"))
    try:
        if repo.origin_kind == "git":
            source, commit, commit_date, error = _checkout(repo, project_root, tmp)
            if error:
                recorder.reject(repo.repo_id, "checkout_failed", error)
                return None
        else:
            source = (project_root / repo.origin).resolve()
            if not source.is_dir():
                recorder.reject(repo.repo_id, "missing_source_path", f"{repo.origin} vanished after discovery")
                return None
        files = _copy_tree(repo.repo_id, source, dest, max_file_bytes, recorder)
    finally:
        remove_tree(tmp, ignore_errors=True)
    if not files:
        recorder.reject(repo.repo_id, "empty_repo", "no files left to snapshot")
        return None
    content_hash = hashlib.sha256("".join(f"{f.path}\0{f.sha256}\n" for f in files).encode()).hexdigest()
    requirements, imports, optional, local_modules = _analyse(repo.repo_id, dest, files, recorder)
    distributions, refused = resolve_distributions(requirements, imports, optional, platform.python_version())
    for refusal in refused:  # what the per-manifest screen let through but resolution could not use
        _refuse(recorder, repo.repo_id, None, refusal)
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
        commit_date=commit_date,
    )


def _checkout(repo: RepoRow, project_root: Path, tmp: Path) -> tuple[Path, str | None, str | None, str | None]:
    """Clone and check out ``repo`` under ``tmp``: (work tree, commit, commit date, error)."""
    origin = repo.origin
    if "://" not in origin and not origin.startswith("git@"):
        origin = str((project_root / origin).resolve())
    work = tmp / "checkout"
    steps = [["git", "clone", "--quiet", "--no-hardlinks", origin, str(work)]]
    if repo.ref:
        steps.append(["git", "-C", str(work), "checkout", "--quiet", repo.ref])
    for cmd in steps:
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        except subprocess.TimeoutExpired:
            return work, None, None, f"{' '.join(cmd[:3])} took longer than 600 s"
        if done.returncode != 0:
            return work, None, None, f"{' '.join(cmd[:3])} failed: {done.stderr.strip()[:500]}"
    head = subprocess.run(["git", "-C", str(work), "log", "-1", "--format=%H %cI", "HEAD"], capture_output=True,
                          text=True)
    commit, _, date = head.stdout.strip().partition(" ")
    return work, commit or None, date or None, None


def _copy_tree(repo_id: str, source: Path, dest: Path, max_file_bytes: int, recorder: StageRecorder) -> list[FileEntry]:
    entries = []
    made: set[Path] = set()
    for found in walk_tree(source):
        item = f"{repo_id}:{found.rel}"
        if found.kind == SYMLINK:
            recorder.reject(item, "symlink_skipped",
                            "symbolic links are not copied: they can point outside the repository")
        elif found.kind == SPECIAL:
            recorder.reject(item, "not_regular_file",
                            "only regular files are copied (this is a FIFO, socket or device)")
        elif found.kind == TOO_DEEP:
            recorder.reject(item, "tree_too_deep", f"folder nested more than {MAX_TREE_DEPTH} levels deep; "
                            "nothing under it is copied")
        elif found.kind == BAD_NAME:
            recorder.reject(item, "undecodable_name", "the name is not valid UTF-8 (shown with \\x escapes); "
                            "neither it nor anything under it is copied")
        elif found.kind != FILE:
            recorder.reject(item, "unreadable_path", f"cannot read {found.rel}: {found.error}")
        else:
            data, reason, message, detail = read_regular(found.path, max_file_bytes)
            if data is None:
                recorder.reject(item, reason, message, **detail)
                continue
            _write_copy(dest, found.rel, data, made)
            entries.append(FileEntry(path=found.rel, sha256=hashlib.sha256(data).hexdigest(), size=len(data),
                                     kind=file_kind(found.rel, data)))
    return entries


def _write_copy(dest: Path, rel: str, data: bytes, made: set[Path]) -> None:
    """Write one file of the copy with plain permissions: the source's mode bits (setuid, group- or
    world-writable) are never carried over, whatever the umask."""
    folders = [dest]
    for part in Path(rel).parts[:-1]:
        folders.append(folders[-1] / part)
    for folder in folders:
        if folder not in made:
            folder.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
            os.chmod(folder, DIR_MODE)  # exactly 0755, whatever the umask
            made.add(folder)
    fd = os.open(dest / rel, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, FILE_MODE)
    with os.fdopen(fd, "wb") as handle:
        os.fchmod(handle.fileno(), FILE_MODE)
        handle.write(data)


def _refuse(recorder: StageRecorder, repo_id: str, manifest: str | None, refusal: RefusedRequirement) -> None:
    """One counted reject per refused requirement; the repository goes on with the rest."""
    if manifest is None:
        recorder.reject(f"{repo_id}:{refusal.requirement}", "refused_requirement", refusal.message,
                        requirement=refusal.requirement, why=refusal.why)
    else:
        recorder.reject(f"{repo_id}:{manifest}:{refusal.requirement}", "refused_requirement",
                        f"{manifest}: {refusal.message}", requirement=refusal.requirement, why=refusal.why,
                        manifest=manifest)


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
                declared = parse_manifest(Path(entry.path).name, text)
            except Exception as exc:  # malformed (or hostile: deeply nested) manifests; name the file, move on
                recorder.reject(item, "bad_manifest", f"cannot parse {entry.path}: {type(exc).__name__}: {exc}")
                continue
            named, refused = screen_requirements(declared)
            requirements.extend(named)
            for refusal in refused:
                _refuse(recorder, repo_id, entry.path, refusal)
        elif entry.kind == "python":
            try:
                found, maybe, _ = scan_imports_detailed(text, entry.path)
            except UnparseableSource as exc:
                recorder.reject(item, exc.reason, f"{exc}; kept in the snapshot but its imports are not scanned")
                continue
            imports.update(found)
            optional.update(maybe)
            required.update(found - maybe)
    return sorted(set(requirements)), third_party(imports, local), optional - required, local
