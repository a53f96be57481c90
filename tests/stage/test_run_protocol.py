"""Stage tier: the seeds stage finds how a research script is meant to be started, with no model.

Each repository below is written the way real research code is (see ../shared/realrepos): data read relative
to the script's own folder, results written next to it, argparse defaults, a file argument named only in the
README, a plot shown on screen, Python 2 leftovers. One build of discover -> snapshot -> seeds over all of them
(host interpreter) is shared by the tests; the library-era case needs its own build with installs (a local
package index speaking PyPI's JSON simple API, with upload times, so nothing needs the network).
"""
from __future__ import annotations

import base64
import hashlib
import http.server
import io
import json
import os
import platform
import subprocess
import threading
import zipfile
from pathlib import Path

import pytest

from conftest import make_repo, run_stage, write_params
from trailforge.config.schema import RepoEntry
from trailforge.envs.deps import era_date
from trailforge.envs.discover import repo_id_for
from trailforge.io import SeedRow, VerifiedTaskRow, read_rejects, read_rows

REPOS = {
    # Opens "data.csv", which sits beside the script, not at the root.
    "own-folder": {
        "README.md": "Growth rates from plate counts.\n",
        "analysis/run.py": "import csv\nrows = list(csv.DictReader(open('data.csv')))\n"
                           "print('mean count:', sum(float(r['count']) for r in rows) / len(rows))\n",
        "analysis/data.csv": "well,count\nA1,10\nA2,14\nA3,18\n",
    },
    # Writes a PNG and a CSV into its own folder (the tree it runs in must be writable).
    "writes-next": {
        "README.md": "Temperature anomalies.\n",
        "plots/make.py": "import csv\nimport matplotlib.pyplot as plt\n"
                         "rows = [float(r['t']) for r in csv.DictReader(open('obs.csv'))]\n"
                         "mean = sum(rows) / len(rows)\n"
                         "with open('summary.csv', 'w') as fh:\n    fh.write(f'mean\\n{mean}\\n')\n"
                         "plt.plot(rows)\nplt.savefig('figure.png')\n",
        "plots/obs.csv": "t\n1.5\n2.5\n4.0\n",
    },
    # argparse with defaults for every option: runs with no arguments.
    "argparse-defaults": {
        "README.md": "Scaling of field measurements.\n",
        "scale.py": "import argparse, csv\n"
                    "parser = argparse.ArgumentParser()\n"
                    "parser.add_argument('--input', default='data/values.csv')\n"
                    "parser.add_argument('--factor', type=float, default=2.0)\n"
                    "args = parser.parse_args()\n"
                    "values = [float(r['v']) for r in csv.DictReader(open(args.input))]\n"
                    "print('scaled total:', sum(values) * args.factor)\n",
        "data/values.csv": "v\n1\n2\n3\n",
    },
    # sys.argv[1] with the file to use named only in the README's usage line.
    "argv-readme": {
        "README.md": "Fit of the decay runs.\n\nUsage:\n\n    python fit.py measurements/run2.tsv\n",
        "fit.py": "import sys\nlines = open(sys.argv[1]).read().split()[1:]\n"
                  "print('points:', len(lines), 'last:', lines[-1])\n",
        "measurements/run1.tsv": "y\n5\n4\n",
        "measurements/run2.tsv": "y\n9\n7\n6\n",
    },
    # Shows its figure on screen: under a non-interactive backend plt.show() returns.
    "plt-show": {
        "README.md": "Pendulum periods.\n",
        "periods.py": "import csv\nimport matplotlib.pyplot as plt\n"
                      "periods = [float(r['T']) for r in csv.DictReader(open('periods.csv'))]\n"
                      "plt.hist(periods)\nplt.show()\nprint('mean period:', sum(periods) / len(periods))\n",
        "periods.csv": "T\n2.01\n1.99\n2.03\n",
    },
    # Summarises its plate, then needs a file the repository does not hold: the part before runs.
    "fails-late": {
        "README.md": "Plate reader summary.\n",
        "summary.py": "import csv\nrows = [float(r['od']) for r in csv.DictReader(open('plate.csv'))]\n"
                      "mean = sum(rows) / len(rows)\nprint('mean OD:', mean)\n"
                      "with open('blanks.csv') as fh:\n    blanks = fh.read()\nprint('blank-corrected')\n",
        "plate.csv": "od\n0.1\n0.3\n0.5\n",
    },
    # Python 2 only: a print statement.
    "python2": {
        "README.md": "Old lab code.\n",
        "old.py": "data = open('counts.txt').read().split()\nprint 'total', sum(int(x) for x in data)\n",
        "counts.txt": "1 2 3\n",
    },
}


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("protocol")
    repos = {name: make_repo(root / "repos" / name, files) for name, files in REPOS.items()}
    project = root / "project"
    project.mkdir()
    write_params(project, [str(p) for p in repos.values()], ["sandbox.environments=host"])
    run_stage(project, "discover", "--out", "out/discover")
    run_stage(project, "snapshot", "--repos", "out/discover", "--out", "out/snapshot")
    run_stage(project, "seeds", "--snapshots", "out/snapshot", "--out", "out/seeds")
    ids = {name: repo_id_for(RepoEntry(path=str(path))) for name, path in repos.items()}
    every = read_rows(project / "out/seeds/data", SeedRow)
    seeds = {s.repo_id: s for s in every if "@" not in s.seed_id}  # each script's first start
    rejects = [r for stage in ("snapshot", "seeds") for r in read_rejects(project / f"out/{stage}/rejects.parquet")]
    return {"ids": ids, "seeds": seeds, "rejects": rejects, "every": every, "project": project}


def _seed(built, name) -> SeedRow:
    repo_id = built["ids"][name]
    assert repo_id in built["seeds"], [(r.item_id, r.reason, r.message) for r in built["rejects"]
                                       if r.item_id.startswith(repo_id)]
    return built["seeds"][repo_id]


def test_a_script_reading_data_beside_itself_runs_from_its_own_folder(built):
    seed = _seed(built, "own-folder")
    assert (seed.script, seed.cwd, seed.args) == ("analysis/run.py", "analysis", [])
    assert [f.path for f in seed.data_files] == ["analysis/data.csv"]
    assert "mean count: 14.0" in seed.stdout


def test_a_script_writing_a_png_and_a_csv_next_to_itself_gets_both_back(built):
    seed = _seed(built, "writes-next")
    written = {f.path: f for f in seed.files_written}
    assert {"plots/summary.csv", "plots/figure.png"} <= set(written)
    assert written["plots/summary.csv"].text == "mean\n2.6666666666666665\n"
    assert written["plots/figure.png"].size > 1000
    assert seed.cwd == "plots"


def test_argparse_defaults_mean_no_arguments(built):
    seed = _seed(built, "argparse-defaults")
    assert (seed.cwd, seed.args) == (".", [])
    assert "scaled total: 12.0" in seed.stdout
    assert [f.path for f in seed.data_files] == ["data/values.csv"]


def test_sys_argv_is_filled_from_the_readme_usage_line(built):
    seed = _seed(built, "argv-readme")
    assert seed.args == ["measurements/run2.tsv"], "the README's file, not the first data file in the tree"
    assert "points: 3 last: 6" in seed.stdout
    assert [f.path for f in seed.data_files] == ["measurements/run2.tsv"]


def test_a_script_run_once_per_data_file_gives_a_seed_per_file(built):
    """fit.py takes its file from sys.argv: each measurement file is another analysis of the same kind."""
    repo_id = built["ids"]["argv-readme"]
    runs = sorted((s.seed_id, tuple(s.args), s.stdout.strip()) for s in built["every"] if s.repo_id == repo_id)
    assert runs == [(f"{repo_id}:fit.py", ("measurements/run2.tsv",), "points: 3 last: 6"),
                    (f"{repo_id}:fit.py@2", ("measurements/run1.tsv",), "points: 2 last: 4")]
    # A script whose starts differ only in flags (argparse defaults) stays one seed.
    assert [s.seed_id for s in built["every"] if s.repo_id == built["ids"]["argparse-defaults"]] == [
        f"{built['ids']['argparse-defaults']}:scale.py"]


def test_a_script_that_fails_late_is_a_seed_up_to_the_statement_that_failed(built):
    seed = _seed(built, "fails-late")
    assert seed.cut_before_line == 5
    assert seed.stdout == "mean OD: 0.3\n"
    assert (built["project"] / seed.tree / "summary.py").read_text().endswith("print('mean OD:', mean)\n")
    assert [f.path for f in seed.data_files] == ["plate.csv"]
    assert seed.environment_attempts[-1]["outcome"] == "ran up to line 5"


def test_plt_show_returns_and_the_script_goes_on(built):
    seed = _seed(built, "plt-show")
    assert "mean period: 2.01" in seed.stdout


def test_a_python2_script_is_a_named_reject(built):
    repo_id = built["ids"]["python2"]
    assert repo_id not in built["seeds"]
    mine = [r for r in built["rejects"] if r.item_id == f"{repo_id}:old.py"]
    assert [r.reason for r in mine][:1] == ["python2_only"], [(r.stage, r.reason, r.message) for r in mine]
    assert "print" in mine[0].message


# ---------------------------------------------------------------- library era: releases as of the commit date


def _wheel(name: str, version: str, files: dict[str, str]) -> bytes:
    info = f"{name}-{version}.dist-info"
    files = {**files, f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
             f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    buffer, record = io.BytesIO(), []
    with zipfile.ZipFile(buffer, "w") as wheel:
        for path, text in files.items():
            data = text.encode()
            wheel.writestr(path, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.append(f"{path},sha256={digest},{len(data)}")
        record.append(f"{info}/RECORD,,")
        wheel.writestr(f"{info}/RECORD", "\n".join(record) + "\n")
    return buffer.getvalue()


# Two releases of a stand-in for numpy: the old one still has the alias ``np.float`` that numpy 1.24 removed.
RELEASES = {
    "numpy-1.23.5-py3-none-any.whl": ("2022-11-20T09:00:00Z", {"numpy/__init__.py": "float = float\n"}),
    "numpy-2.0.0-py3-none-any.whl": ("2024-06-16T09:00:00Z", {"numpy/__init__.py": "__version__ = '2.0.0'\n"}),
}


@pytest.fixture
def package_index():
    """A local package index speaking the JSON simple API (PEP 691) with upload times (PEP 700)."""
    blobs = {name: _wheel("numpy", name.split("-")[1], files) for name, (_, files) in RELEASES.items()}

    class Index(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_HEAD(self):  # uv asks first whether a wheel supports range requests
            self.do_GET(body_too=False)

        def do_GET(self, body_too=True):
            host = f"http://127.0.0.1:{self.server.server_port}"
            if self.path.rstrip("/") == "/simple/numpy":
                body = json.dumps({"meta": {"api-version": "1.1"}, "name": "numpy", "versions": ["1.23.5", "2.0.0"],
                                   "files": [{"filename": name, "url": f"{host}/files/{name}",
                                              "hashes": {"sha256": hashlib.sha256(blobs[name]).hexdigest()},
                                              "upload-time": RELEASES[name][0], "size": len(blobs[name])}
                                             for name in blobs]}).encode()
                kind = "application/vnd.pypi.simple.v1+json"
            elif self.path.startswith("/files/") and self.path[7:] in blobs:
                body, kind = blobs[self.path[7:]], "application/octet-stream"
            else:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if body_too:
                self.wfile.write(body)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Index)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}/simple"
    server.shutdown()


def test_a_script_needing_numpy_before_1_24_runs_with_the_releases_of_its_commit_date(tmp_path, package_index):
    from trailforge.sandbox import LocalSandbox

    if LocalSandbox(environments="venv").isolation != "bwrap":
        pytest.skip("venv installs run in a bubblewrap sandbox only where bwrap works")
    repo = make_repo(tmp_path / "repos" / "old-numpy", {
        "README.md": "Total of the counts.\n",
        "total.py": "import numpy as np\nvalues = open('counts.txt').read().split()\n"
                    "print('total:', np.float(sum(int(v) for v in values)))\n",
        "counts.txt": "4 5 6\n",
    })
    dated = {**os.environ, "GIT_AUTHOR_DATE": "2022-06-01T12:00:00+00:00",
             "GIT_COMMITTER_DATE": "2022-06-01T12:00:00+00:00"}
    for command in (["git", "init", "-q"], ["git", "add", "-A"],
                    ["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "counts"]):
        subprocess.run(command, cwd=repo, env=dated, check=True, capture_output=True)
    project = tmp_path / "project"
    project.mkdir()
    write_params(project, [str(repo)], ["sandbox.environments=venv", f"sandbox.index_url={package_index}",
                                        f"sandbox.venv_root={tmp_path / 'venvs'}"])
    run_stage(project, "discover", "--out", "out/discover")
    run_stage(project, "snapshot", "--repos", "out/discover", "--out", "out/snapshot")
    run_stage(project, "seeds", "--snapshots", "out/snapshot", "--out", "out/seeds")
    seeds = read_rows(project / "out/seeds/data", SeedRow)
    rejects = read_rejects(project / "out/seeds/rejects.parquet")
    assert len(seeds) == 1, [(r.item_id, r.reason, r.message) for r in rejects]
    seed = seeds[0]
    assert "total: 15.0" in seed.stdout
    # The current release failed (np.float is gone), the releases of the commit's era ran, and the seed says so.
    assert [a["rung"] for a in seed.environment_attempts] == ["declared", "era"]
    assert seed.environment_attempts[0]["outcome"] == "nonzero_exit"
    # The commit's day, raised to the first day with wheels for this interpreter (2022-11-25 for Python 3.11).
    assert seed.environment_attempts[1]["as_of"] == era_date("2022-06-01", platform.python_version())
    assert seed.distributions == ["numpy==1.23.5"], "what ran is pinned, so later stages rebuild exactly it"
    assert seed.sandbox_spec["packages"] == {"numpy": "1.23.5"}


WRITES_INTO_FOLDERS = '''import csv
import os

rows = list(csv.DictReader(open("../data/levels.csv")))
levels = [float(r["level"]) for r in rows]
with open("../exported_data/summary.csv", "w") as fh:
    fh.write("stat,value\\n")
    fh.write(f"mean,{sum(levels) / len(levels):.4f}\\n")
    fh.write(f"max,{max(levels):.4f}\\n")
with open("../figs/notes.txt", "w") as fh:
    fh.write("done\\n")
print(f"Mean level: {sum(levels) / len(levels):.4f}")
print(f"Level range: {max(levels) - min(levels):.4f}")
'''


def test_folders_the_program_writes_into_exist_in_every_later_run(tmp_path):
    """The repository's exported_data/ and figs/ hold no data, so a task's workspace would lack them and the
    traced run failed (trace_failed) on real code; the seed records them and every run recreates them."""
    project = tmp_path / "project"
    project.mkdir()
    levels = "day,level\n" + "".join(f"{d},{3.2 + (d * 7 % 5) * 0.31:.2f}\n" for d in range(1, 16))
    repo = make_repo(tmp_path / "repos" / "lake-levels", {
        "README.md": "Lake water level time series; hydrology.\n",
        "scripts/levels.py": WRITES_INTO_FOLDERS, "data/levels.csv": levels,
        "exported_data/README.md": "Outputs land here.\n", "figs/README.md": "Figures land here.\n",
    })
    write_params(project, [str(repo)], ["tasks.types=[reproduction,subflow]"])
    for stage, args in [("discover", ()), ("snapshot", ("--repos", "out/discover")),
                        ("seeds", ("--snapshots", "out/snapshot")), ("workflows", ("--seeds", "out/seeds")),
                        ("tasks", ("--seeds", "out/seeds", "--workflows", "out/workflows")),
                        ("verify", ("--tasks", "out/tasks"))]:
        run_stage(project, stage, *args, "--out", f"out/{stage}")
    seed = read_rows(project / "out/seeds/data", SeedRow)[0]
    assert seed.output_folders == ["exported_data", "figs"]
    assert not [r for r in read_rejects(project / "out/workflows/rejects.parquet")], "the traced run has its folders"
    verified = read_rows(project / "out/verify/data", VerifiedTaskRow)
    reproduction = next(t for t in verified if t.task_type == "reproduction")
    assert reproduction.output_folders == ["exported_data", "figs"]
    assert "summary" in {f.name for f in reproduction.answer_schema}
