"""The consolidated-seed folder's index: written on every build, so the DVC out is never an empty folder."""
from __future__ import annotations

import json

from trailforge.envs.seed_model import TREE_INDEX, write_tree_index
from trailforge.io import SeedRow


def _seed(seed_id: str, tree) -> SeedRow:
    return SeedRow(seed_id=seed_id, repo_id=seed_id.split(":")[0], discipline="ecology", script="a.py",
                   tree=str(tree), program_files=["a.py"], data_files=[], stdout="", files_written=[],
                   distributions=[], sandbox_spec={})


def test_without_consolidated_seeds_the_folder_still_holds_an_index(tmp_path):
    trees = tmp_path / "seeds" / "trees"
    trees.mkdir(parents=True)
    snapshot = tmp_path / "snapshot" / "trees" / "meadow"
    path = write_tree_index([_seed("meadow:a.py", snapshot)], trees)
    assert path == trees / TREE_INDEX and list(trees.iterdir()) == [path]
    assert json.loads(path.read_text()) == {}, "a seed that still runs from its snapshot is not listed"


def test_consolidated_seeds_are_listed_by_relative_folder_in_a_fixed_order(tmp_path):
    trees = tmp_path / "trees"
    for name in ("zeta/abc123", "alpha/def456"):
        (trees / name).mkdir(parents=True)
    seeds = [_seed("zeta:a.py", trees / "zeta" / "abc123"), _seed("alpha:a.py", trees / "alpha" / "def456")]
    text = write_tree_index(seeds, trees).read_text()
    assert json.loads(text) == {"alpha:a.py": "alpha/def456", "zeta:a.py": "zeta/abc123"}
    assert list(json.loads(text)) == ["alpha:a.py", "zeta:a.py"]
    assert write_tree_index(list(reversed(seeds)), trees).read_text() == text, "same seeds, same bytes (DVC hash)"
