"""Stage tier: a seeds run killed with SIGKILL resumes to the same outputs, with no duplicates."""
from __future__ import annotations

import hashlib
import signal
import time

from conftest import make_repo, run_stage, stats, timings, write_params
from trailforge.io import SeedRow, read_rows

SCRIPT = (
    "import csv, time\n"
    "rows = list(csv.DictReader(open('data/obs.csv')))\n"
    "time.sleep(1.0)\n"
    "print('Total count ({k}):', sum(int(r['count']) for r in rows) * {k})\n"
)


def _digest(folder):
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.rglob("*.parquet"))}


def _prepare(project, repo):
    write_params(project, [str(repo)], ["executor.max_workers=1"])
    run_stage(project, "discover", "--out", "out/discover")
    run_stage(project, "snapshot", "--repos", "out/discover", "--out", "out/snapshot")


def test_killed_seeds_run_resumes_to_identical_outputs(project, tmp_path):
    files = {"README.md": "Species abundance survey of a meadow habitat.\n", "data/obs.csv": "site,count\nA,3\nB,4\n"}
    files.update({f"script_{k}.py": SCRIPT.format(k=k) for k in range(1, 6)})
    # a crash's traceback names the random scratch dir; the reject must still be byte-identical
    files["script_6_crash.py"] = "import csv\nrows = list(csv.DictReader(open('data/obs.csv')))\nrows[0]['nope']\n"
    repo = make_repo(tmp_path / "repos" / "slow-meadow", files)
    _prepare(project, repo)

    cache = tmp_path / "cache-interrupted"
    proc = run_stage(project, "seeds", "--snapshots", "out/snapshot", "--out", "out/seeds", cache=cache, popen=True)
    entries = cache / "entries" / "sandbox.run"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and len(list(entries.rglob("*.json"))) < 2:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    finished_before_kill = len(list(entries.rglob("*.json")))
    assert 2 <= finished_before_kill < 6, "the kill must land in the middle of the stage"

    run_stage(project, "seeds", "--snapshots", "out/snapshot", "--out", "out/seeds", cache=cache)
    resumed = timings(project / "out/seeds")["counters"]
    assert resumed["executions_cached"] == finished_before_kill
    # six scripts, and the crashing one cut before its failing line is run once more (it then prints nothing)
    assert resumed["executions_run"] == 7 - finished_before_kill
    assert stats(project / "out/seeds")["counters"]["cuts_not_a_seed"] == 1

    run_stage(project, "seeds", "--snapshots", "out/snapshot", "--out", "out/clean",
              cache=tmp_path / "cache-clean")
    assert _digest(project / "out/seeds") == _digest(project / "out/clean")
    assert stats(project / "out/seeds") == stats(project / "out/clean"), "counts do not depend on the cache"
    seeds = read_rows(project / "out/seeds/data", SeedRow)
    assert len(seeds) == len({s.seed_id for s in seeds}) == 5
