"""plot_recorder.py run on its own (as the sandbox runs it): what it records and what it leaves alone."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from trailforge.sandbox import PLOT_RECORDER, PLOT_SCRIPT, PLOTS_FILE

pytest.importorskip("matplotlib")


def _run(tmp_path, source: str) -> tuple[subprocess.CompletedProcess, dict | None]:
    shutil.copy(PLOT_RECORDER, tmp_path / PLOT_SCRIPT)
    (tmp_path / "prog.py").write_text(source)
    done = subprocess.run([sys.executable, PLOT_SCRIPT, "prog.py", "--flag"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, env={**os.environ, "MPLBACKEND": "Agg"})
    path = tmp_path / PLOTS_FILE
    return done, json.loads(path.read_text()) if path.exists() else None


def test_a_figure_changed_after_saving_keeps_its_latest_state_and_errorbars_are_not_lines(tmp_path):
    done, plots = _run(tmp_path, """\
import sys
import matplotlib.pyplot as plt
print(sys.argv)
fig, ax = plt.subplots()
ax.errorbar([1, 2], [3.0, 4.0], yerr=[0.5, 0.25], label='obs')
fig.savefig('a.png')
ax.set_title('Later')
fig.savefig('b.png')
""")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['prog.py', '--flag']"  # the script sees its own command line
    [figure] = plots["figures"]
    [axes] = figure["axes"]
    assert axes["title"] == "Later"
    assert [a["kind"] for a in axes["artists"]] == ["errorbar"]
    assert axes["artists"][0]["yerr"]["values"] == [0.5, 0.25]


def test_a_failing_script_still_leaves_its_figures_and_its_exit_status(tmp_path):
    done, plots = _run(tmp_path, "import matplotlib.pyplot as plt\nplt.plot([1, 2], [5, 6])\n"
                                 "raise SystemExit(3)\n")
    assert done.returncode == 3
    assert plots["figures"][0]["axes"][0]["artists"][0]["y"]["values"] == [5.0, 6.0]


def test_long_series_are_bounded_but_summarised_over_every_point(tmp_path):
    done, plots = _run(tmp_path, "import matplotlib.pyplot as plt\nplt.plot(list(range(5000)))\nplt.show()\n")
    assert done.returncode == 0, done.stderr
    y = plots["figures"][0]["axes"][0]["artists"][0]["y"]
    assert (y["n"], y["max"], y["mean"], len(y["values"])) == (5000, 4999.0, 2499.5, 100)


def test_no_figure_no_file(tmp_path):
    done, plots = _run(tmp_path, "import matplotlib\nprint('ok')\n")
    assert done.returncode == 0 and plots is None


@pytest.mark.parametrize("options", ["", ", vert=False", ", patch_artist=True"])
def test_a_boxplot_is_its_medians_and_quartiles_not_eight_plain_lines(tmp_path, options):
    """A real release graded a boxplot's whisker, cap and empty flier lines as "line 8"; a box plot is its
    statistics, whichever way its boxes stand and however they are drawn."""
    done, plots = _run(tmp_path, f"""\
import matplotlib.pyplot as plt
import numpy as np
fig, ax = plt.subplots()
ax.boxplot([[1.0, 2.0, 3.0, 4.0, 5.0], [10.0, 20.0, 30.0, 40.0, 50.0]]{options})
fig.savefig('box.png')
""")
    assert done.returncode == 0, done.stderr
    [artist] = plots["figures"][0]["axes"][0]["artists"]
    assert artist["kind"] == "boxplot"
    assert artist["medians"]["values"] == [3.0, 30.0]
    assert artist["q1"]["values"] == [2.0, 20.0] and artist["q3"]["values"] == [4.0, 40.0]
