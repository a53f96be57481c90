"""Stage tier: discover -> snapshot -> seeds on real research repositories from ../shared/realrepos.

The corpus (real public repositories at pinned commits, with a manifest of which scripts exit 0) is never part of
this repository: the test copies three small repositories into a temporary folder at run time, and skips when the
corpus is absent (``$TRAILFORGE_REALREPOS`` overrides where it is looked for). bench/real_repos.py measures the same
thing over the whole corpus.
"""
from __future__ import annotations

import json
import os
import shutil
import urllib.request
from pathlib import Path

import pytest

from conftest import PROJECT_ROOT, run_stage, write_params
from trailforge.config.schema import RepoEntry
from trailforge.envs.discover import repo_id_for
from trailforge.io import RepoRow, SeedRow, read_rejects, read_rows

CORPUS = Path(os.environ.get("TRAILFORGE_REALREPOS") or PROJECT_ROOT.parent / "shared" / "realrepos")
# Small and quick: one script each for the first two; the third has five and no word of the domain's vocabulary
# in its README or file names (it used to be dropped at discover as no_discipline).
FOLDERS = ["Kian158__pendulum-data-analysis", "telloaxelll__Ecological-Time-Series-ODEs",
           "ZoharBNH5__Behavioral-Testing-Laboratory"]


@pytest.fixture
def real_repos(tmp_path) -> dict[str, Path]:
    if not (CORPUS / "manifest.json").is_file():
        pytest.skip(f"no real-repository corpus at {CORPUS} (set TRAILFORGE_REALREPOS to where it is)")
    missing = [f for f in FOLDERS if not (CORPUS / f).is_dir()]
    if missing:
        pytest.skip(f"the corpus at {CORPUS} lacks {missing}")
    copies = {}
    for folder in FOLDERS:
        copies[folder] = tmp_path / "repos" / folder
        shutil.copytree(CORPUS / folder, copies[folder], symlinks=True)
    return copies


def _exit_zero_scripts(folder: str) -> set[str]:
    manifest = json.loads((CORPUS / "manifest.json").read_text(encoding="utf-8"))
    entry = next(e for e in manifest if e["folder"] == folder)
    return {s["path"] for s in entry["scripts"] if s["exit"] == 0}


def _index_or_skip() -> None:
    """The scripts need scipy, which the project does not install: their environments come from PyPI."""
    try:
        urllib.request.urlopen("https://pypi.org/simple/scipy/", timeout=15).close()
    except OSError as exc:
        pytest.skip(f"these repositories need their own environments from PyPI, which is unreachable: {exc}")


def test_real_repositories_are_kept_and_every_runnable_script_is_seeded(project, real_repos, tmp_path):
    _index_or_skip()
    write_params(project, [str(p) for p in real_repos.values()],
                 ["sandbox.environments=venv", f"sandbox.venv_root={tmp_path / 'venvs'}", "sandbox.timeout_s=120"])
    run_stage(project, "discover", "--out", "out/discover")
    run_stage(project, "snapshot", "--repos", "out/discover", "--out", "out/snapshot")
    run_stage(project, "seeds", "--snapshots", "out/snapshot", "--out", "out/seeds")

    ids = {folder: repo_id_for(RepoEntry(path=str(path))) for folder, path in real_repos.items()}
    kept = {r.repo_id: r for r in read_rows(project / "out/discover/data", RepoRow)}
    assert set(kept) == set(ids.values()), "a listed repository is never dropped at discover"
    assert read_rejects(project / "out/discover/rejects.parquet") == []
    assert all(r.discipline for r in kept.values())

    seeded = {(s.repo_id, s.script) for s in read_rows(project / "out/seeds/data", SeedRow)}
    rejects = {r.item_id: r for stage in ("snapshot", "seeds")
               for r in read_rejects(project / f"out/{stage}/rejects.parquet")}
    missed = {}
    for folder, repo_id in ids.items():
        for script in sorted(_exit_zero_scripts(folder)):  # every one of them reads repository data
            if (repo_id, script) not in seeded:
                reject = rejects.get(f"{repo_id}:{script}")
                missed[f"{folder}:{script}"] = (reject.reason, reject.message[:300]) if reject else "silent"
    assert missed == {}, "each exit-0 script of these repositories is a seed program"
