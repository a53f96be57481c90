"""The one walker over repository trees: iterative, never following links, depth-capped, and
reporting everything it does not yield as a file; plus the non-recursive remover and the guarded read."""
from __future__ import annotations

import os

from trailforge.envs.files import (
    FILE, MAX_TREE_DEPTH, SPECIAL, SYMLINK, TOO_DEEP, UNREADABLE, read_regular, remove_tree, walk_tree,
)


def _nest(base, levels: int) -> str:
    rel = ""
    for _ in range(levels):
        rel = f"{rel}/d" if rel else "d"
        os.mkdir(base / rel)
    return rel


def _os_walk_files(root) -> list[str]:
    """What the old os.walk-based listing gave (sorted names, links and tool folders skipped)."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in {".git", "__pycache__"}
                             and not os.path.islink(os.path.join(dirpath, d)))
        for name in sorted(filenames):
            full = os.path.join(dirpath, name)
            if os.path.isfile(full) and not os.path.islink(full):
                out.append(os.path.relpath(full, root).replace(os.sep, "/"))
    return out


def test_files_come_in_the_same_order_as_the_old_os_walk_listing(tmp_path):
    for rel in ["b.py", "a.txt", "z/1.csv", "z/y/2.csv", "m/3.csv", "m/n/4.csv", ".git/config", "__pycache__/x.pyc",
                "Z.md", "m/_5.csv"]:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x")
    got = [e.rel for e in walk_tree(tmp_path) if e.kind == FILE]
    assert got == _os_walk_files(tmp_path)
    assert ".git/config" not in got and "__pycache__/x.pyc" not in got


def test_a_folder_1100_deep_is_cut_at_the_cap_without_recursion(tmp_path):
    chain = _nest(tmp_path, 1100)
    (tmp_path / chain / "bottom.txt").write_text("x")
    (tmp_path / "d" / "top.txt").write_text("x")
    try:
        entries = list(walk_tree(tmp_path))
        cut = "/".join(["d"] * (MAX_TREE_DEPTH + 1))
        assert [(e.rel, e.kind) for e in entries if e.kind != FILE] == [(cut, TOO_DEEP)]
        assert [e.rel for e in entries if e.kind == FILE] == ["d/top.txt"]
    finally:
        remove_tree(tmp_path / "d")
    assert not (tmp_path / "d").exists(), "the remover copes with the depth a recursive rmtree cannot"


def test_links_fifos_and_unlistable_folders_are_reported_not_followed(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("token")
    repo = tmp_path / "repo"
    repo.mkdir()
    os.symlink(outside, repo / "linked_dir")
    os.symlink(outside / "secret.txt", repo / "linked_file.txt")
    os.symlink(repo / "missing", repo / "dangling")
    os.mkfifo(repo / "pipe")
    (repo / "locked").mkdir()
    os.chmod(repo / "locked", 0)
    try:
        kinds = {e.rel: e.kind for e in walk_tree(repo)}
    finally:
        os.chmod(repo / "locked", 0o755)
    expected = {"linked_dir": SYMLINK, "linked_file.txt": SYMLINK, "dangling": SYMLINK, "pipe": SPECIAL}
    if os.geteuid() != 0:  # root lists a mode-0 folder all the same
        expected["locked"] = UNREADABLE
    assert kinds == expected


def test_read_regular_refuses_hardlinks_fifos_links_and_oversized_files(tmp_path):
    plain = tmp_path / "plain.txt"
    plain.write_bytes(b"abc")
    host = tmp_path / "host.txt"
    host.write_text("secret")
    os.link(host, tmp_path / "hardlink.txt")
    os.mkfifo(tmp_path / "pipe")
    os.symlink(plain, tmp_path / "link.txt")
    assert read_regular(plain, 10) == (b"abc", "", "", {})
    assert read_regular(tmp_path / "hardlink.txt", 10)[:2] == (None, "hardlinked_file")
    assert read_regular(tmp_path / "pipe", 10)[:2] == (None, "not_regular_file")  # and does not block
    assert read_regular(tmp_path / "link.txt", 10)[:2] == (None, "unreadable_path")  # O_NOFOLLOW
    assert read_regular(plain, 2)[:2] == (None, "file_too_large")
