"""Stage tier: hostile and broken repositories end as counted rejects, never crashes or silent drops."""
from __future__ import annotations

import os

from conftest import make_repo, run_stage, stats, write_params
from trailforge.io import read_rejects, read_rows, SeedRow

README = "# Demo meadow survey\nSpecies abundance per quadrat; Shannon diversity of the habitat.\n"
READS = "import csv\nrows = list(csv.DictReader(open('data/obs.csv')))\n"


def _hostile_repo(root):
    root.parent.mkdir(parents=True, exist_ok=True)
    outside = root.parent / "host_secret.txt"
    outside.write_text("token=abc\n")
    repo = make_repo(root, {
        "README.md": README,
        "data/obs.csv": "site,count\nA,3\nB,4\nC,5\n",
        "data/notes.txt": "Relev\xe9 de terrain\n".encode("latin-1"),
        "data/blob.bin": bytes(range(256)) * 8,
        "data/huge.csv": "x\n" + "1\n" * 20_000,
        "good.py": READS + "print('Mean count:', sum(int(r['count']) for r in rows) / len(rows))\n",
        "broken_syntax.py": "def f(:\n    pass\n",
        "hang.py": READS + "import time\ntime.sleep(60)\n",
        "silent.py": READS + "total = sum(int(r['count']) for r in rows)\n",
        "crash.py": READS + "print(rows[0]['missing_column'])\n",
        "helpers.py": "def mean(xs):\n    return sum(xs) / len(xs)\n",
    })
    os.symlink(outside, repo / "data" / "link_to_host.txt")
    return repo


def test_bad_inputs_become_counted_rejects(project):
    repo = _hostile_repo(project / "repos" / "hostile-meadow")
    write_params(project, [str(repo), str(project / "repos" / "does-not-exist")],
                 ["sandbox.timeout_s=3", "budget.max_file_bytes=20000"])
    run_stage(project, "discover", "--out", "out/discover")
    assert stats(project / "out/discover")["reject_reasons"] == {"missing_source_path": 1}

    run_stage(project, "snapshot", "--repos", "out/discover", "--out", "out/snapshot")
    snap_reasons = stats(project / "out/snapshot")["reject_reasons"]
    assert snap_reasons == {"binary_file": 1, "file_too_large": 1, "not_utf8": 1, "symlink_skipped": 1,
                            "syntax_error": 1}
    assert not (project / "out/snapshot/trees/hostile-meadow/data/link_to_host.txt").exists()

    run_stage(project, "seeds", "--snapshots", "out/snapshot", "--out", "out/seeds")
    seed_stats = stats(project / "out/seeds")
    by_item = {r.item_id: r.reason for r in read_rejects(project / "out/seeds/rejects.parquet")}
    assert by_item == {
        "hostile-meadow:hang.py": "timeout",
        "hostile-meadow:silent.py": "no_output",
        "hostile-meadow:crash.py": "nonzero_exit",
        "hostile-meadow:helpers.py": "not_entry_point",
    }
    seeds = read_rows(project / "out/seeds/data", SeedRow)
    assert [s.seed_id for s in seeds] == ["hostile-meadow:good.py"]
    assert [f.path for f in seeds[0].data_files] == ["data/obs.csv"]
    # every candidate is accounted for: accepted + rejected at execution == candidates
    assert seed_stats["counters"]["candidates"] == 4


def test_missing_params_file_is_a_clear_error(project):
    done = run_stage(project, "discover", "--out", "out/discover", check=False)
    assert done.returncode != 0
    assert "params.yaml not found" in done.stderr and "trailforge compose" in done.stderr


def test_hand_edited_params_with_unknown_key_fail_before_work(project):
    write_params(project, ["x"])
    text = (project / "params.yaml").read_text().replace("repeats: 2", "repeatz: 2")
    (project / "params.yaml").write_text(text)
    done = run_stage(project, "discover", "--out", "out/discover", check=False)
    assert done.returncode != 0
    assert "verifier.repeatz: unknown key" in done.stderr
    assert not (project / "out/discover").exists()
