"""How a script is started: working folder and arguments inferred from its code and the README."""
from __future__ import annotations

import ast

from trailforge.envs.protocol import RunProtocol, argument_needs, infer_protocols, run_note, usage_lines


def _protocols(script: str, source: str, files: set[str], docs: dict[str, str] | None = None):
    return infer_protocols(script, ast.parse(source), files | {script}, docs or {})


def test_the_folder_where_the_code_s_data_paths_resolve_comes_first():
    found = _protocols("Code/analyse.py", "import pandas as pd\nd = pd.read_csv('TRGB_mag_DATA.csv')\n",
                       {"Data Files/TRGB_mag_DATA.csv", "README.md"})
    assert found[0] == RunProtocol("Data Files", (), found[0].why)
    assert {p.cwd for p in found} >= {"Code", "."}


def test_os_path_join_pieces_and_parent_paths_place_the_folder():
    found = _protocols("sample_program/gc.py", "import os\nopen(os.path.join('..', 'sample_genome', 'a.gbk'))\n",
                       {"sample_genome/a.gbk"})
    assert found[0].cwd == "sample_program"


def test_options_with_defaults_need_no_arguments_but_a_readme_example_is_tried_next():
    source = ("import argparse\np = argparse.ArgumentParser()\np.add_argument('-c')\np.add_argument('-o')\n"
              "a = p.parse_args()\nopen(a.c)\n")
    readme = {"README.md": "Usage\n``` pySeqDiff -c <counts.txt> -o <out.txt> ```\n"
                           "Example\n``` pySeqDiff -c pySeqDiff/counts_raw.txt -o results.txt -s ```\n"
                           "pySeqDiff is a Python package for differential expression.\n"}
    found = _protocols("pySeqDiff/pySeqDiff.py", source, {"pySeqDiff/counts_raw.txt"}, readme)
    assert found[0].args == ()
    assert found[1] == RunProtocol(".", ("-c", "pySeqDiff/counts_raw.txt", "-o", "results.txt", "-s"), found[1].why)
    assert all("<" not in " ".join(p.args) and "is" not in p.args for p in found), "templates and prose are skipped"


def test_a_usage_line_naming_a_file_to_be_made_runs_with_a_file_of_that_kind_from_the_tree():
    source = "import argparse\np = argparse.ArgumentParser()\np.add_argument('-y')\np.parse_args()\n"
    found = _protocols("tool/tool.py", source, {"examples/forward/cannon_cfg.yml", ".github/workflows/ci.yml"},
                       {"README.md": "Run it:\n\n    tool -y config.yml\n"})
    assert RunProtocol("examples/forward", ("-y", "cannon_cfg.yml"), "") in \
        [RunProtocol(p.cwd, p.args, "") for p in found]


def test_sys_argv_takes_the_readme_file_before_guessing_one():
    found = _protocols("fit.py", "import sys\nopen(sys.argv[1])\n", {"m/run1.tsv", "m/run2.tsv"},
                       {"README.md": "python fit.py m/run2.tsv\n"})
    assert found[0].args == ("m/run2.tsv",)
    assert ("m/run1.tsv",) in [p.args for p in found], "data files of the tree are the fallback"


def test_a_file_argument_is_guessed_from_a_series_of_runs_before_a_lone_text_file():
    """Ryn-Oliphant's plot.py: one tensile test per run, the runs in raw_data/, a contributors.txt at the root."""
    runs = {f"raw_data/test-{name}.raw" for name in ("pekk", "pps", "pps_comp", "abs", "pla")}
    found = _protocols("plot.py", "import sys\nimport numpy as np\nd = np.loadtxt(sys.argv[1])\n",
                       runs | {"contributors.txt", "README.md"})
    assert [p.args for p in found] == [("raw_data/test-abs.raw",), ("raw_data/test-pekk.raw",),
                                       ("raw_data/test-pla.raw",), ("raw_data/test-pps.raw",)]


def test_required_arguments_nothing_supplies_make_no_protocol():
    source = "import argparse\np = argparse.ArgumentParser()\np.add_argument('PROTOCOL')\np.parse_args()\n"
    assert argument_needs(ast.parse(source)).positional == ["PROTOCOL"]
    assert _protocols("run.py", source, {"README.md"}) == []


def test_a_guarded_argv_read_needs_no_argument():
    source = "import sys\nname = sys.argv[1] if len(sys.argv) > 1 else 'data.csv'\nopen(name)\n"
    assert not argument_needs(ast.parse(source)).required
    assert _protocols("run.py", source, {"data.csv"})[0].args == ()


def test_usage_lines_skip_help_only_lines():
    module = ast.parse('"""Run as: python tool.py --help"""\n')
    assert usage_lines("tool.py", module, {}) == []


def test_the_statement_note_says_where_and_how_the_program_starts():
    assert run_note("a/b.py", ".", []) == ""
    assert "`python b.py x.csv`" in run_note("a/b.py", "a", ["x.csv"])
    assert "the workspace folder `a`" in run_note("a/b.py", "a", ["x.csv"])


def test_the_note_names_the_output_folders_the_workspace_lacks():
    """A reviewer's workspace had no `exported_data/`: the program's first write failed. A folder that holds a
    data file arrives with the data and is not named."""
    note = run_note("b.py", ".", [], ["data", "exported_data"], ["data/x.csv"])
    assert note == ("\n\nThe program writes files into `exported_data` under the workspace, which the data do not "
                    "include: create this folder before running it.\n")
    both = run_note("a/b.py", "a", ["x.csv"], ["out", "fig`s"], [])
    assert both.startswith("\n\nThe program is run from the workspace folder `a` as `python b.py x.csv`. It writes")
    assert "`out`, `` fig`s ``" in both and "these folders" in both  # a backtick in a name cannot end its code span
