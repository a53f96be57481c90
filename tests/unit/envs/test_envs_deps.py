"""Dependency inference: import scan, stdlib/local filtering, manifest parsers."""
from __future__ import annotations

import pytest

from trailforge.envs.deps import (
    distribution_for,
    parse_environment_yml,
    parse_manifest,
    parse_pyproject,
    parse_requirements,
    scan_imports,
    third_party,
)

SOURCE = """
from __future__ import annotations
import os, sys
import numpy as np
import scipy.stats
from pandas import DataFrame
from sklearn.linear_model import LinearRegression
from . import helpers
from .utils import load
from ..pkg.sub import thing

def f():
    import yaml
"""


def test_scan_imports_collects_absolute_top_level_names():
    absolute, _ = scan_imports(SOURCE)
    assert absolute == {"os", "sys", "numpy", "scipy", "pandas", "sklearn", "yaml", "__future__"}


def test_scan_imports_collects_relative_module_names():
    _, relative = scan_imports(SOURCE)
    assert relative == {"", "utils", "pkg.sub"}


def test_scan_imports_syntax_error_raises():
    with pytest.raises(SyntaxError):
        scan_imports("import numpy as\n")


def test_third_party_drops_stdlib_future_and_local_modules():
    imports = {"os", "json", "__future__", "numpy", "helpers", "pandas", "collections"}
    assert third_party(imports, local_modules={"helpers"}) == ["numpy", "pandas"]


def test_third_party_is_sorted():
    assert third_party({"zeta", "alpha", "mid"}, set()) == ["alpha", "mid", "zeta"]


@pytest.mark.parametrize(
    "import_name, dist",
    [
        ("sklearn", "scikit-learn"),
        ("PIL", "Pillow"),
        ("yaml", "PyYAML"),
        ("Bio", "biopython"),
        ("cv2", "opencv-python-headless"),
        ("skimage", "scikit-image"),
        ("numpy", "numpy"),
    ],
)
def test_distribution_for_maps_import_names(import_name, dist):
    assert distribution_for(import_name) == dist


def test_parse_requirements_ignores_comments_and_blank_lines_and_keeps_options_for_the_screen():
    text = """
# pinned for the paper
numpy==1.26.4  # inline comment
-r other.txt
--extra-index-url https://example.org/simple
-e .

pandas>=2
scipy
"""
    # Option lines are no longer dropped here: the requirement policy refuses (and counts) each one.
    assert parse_requirements(text) == ["numpy==1.26.4", "-r other.txt", "--extra-index-url https://example.org/simple",
                                        "-e .", "pandas>=2", "scipy"]


def test_parse_pyproject_reads_project_dependencies():
    text = '[project]\nname = "x"\ndependencies = ["numpy>=1.24", "pandas"]\n'
    assert parse_pyproject(text) == ["numpy>=1.24", "pandas"]


def test_parse_pyproject_without_project_table_is_empty():
    assert parse_pyproject('[tool.black]\nline-length = 100\n') == []


def test_parse_environment_yml_converts_conda_pins_and_reads_pip_section():
    text = """
name: analysis
channels: [conda-forge]
dependencies:
  - python=3.11
  - numpy=1.26
  - scipy>=1.10
  - pandas==2.1
  - matplotlib
  - pip
  - pip:
      - seaborn==0.13
      - requests
"""
    assert parse_environment_yml(text) == [
        "numpy==1.26", "scipy>=1.10", "pandas==2.1", "matplotlib", "pip", "seaborn==0.13", "requests",
    ]


def test_parse_environment_yml_keeps_packages_named_python_something():
    text = "dependencies:\n  - python=3.11\n  - python-dateutil=2.8\n"
    assert parse_environment_yml(text) == ["python-dateutil==2.8"]


def test_parse_environment_yml_empty_document():
    assert parse_environment_yml("") == []
    assert parse_environment_yml("name: x\n") == []


@pytest.mark.parametrize(
    "name, text, expected",
    [
        ("requirements.txt", "numpy\n", ["numpy"]),
        ("requirements-dev.txt", "pytest\n", ["pytest"]),
        ("environment.yaml", "dependencies: [numpy=1.2]\n", ["numpy==1.2"]),
        ("pyproject.toml", '[project]\ndependencies = ["a"]\n', ["a"]),
        ("setup.cfg", "[metadata]\n", []),
    ],
)
def test_parse_manifest_dispatches_on_file_name(name, text, expected):
    assert parse_manifest(name, text) == expected


# ---------------------------------------------------------------- requirements, optional imports, resolution

from trailforge.envs.deps import (  # noqa: E402
    normalise_requirement, requirement_name, resolve_distributions, scan_imports_detailed,
)

OPTIONAL = """
import numpy as np
try:
    import numba
except ImportError:
    numba = None
try:
    from tqdm import tqdm
except (ImportError, AttributeError):
    tqdm = list
try:
    import pandas  # not optional: the handler does not catch a missing module
except KeyError:
    pass
from . import helpers
from .io import read_table
import helpers_local
"""


def test_optional_imports_inside_try_except_import_error_are_not_required():
    absolute, optional, relative = scan_imports_detailed(OPTIONAL)
    assert absolute == {"numpy", "numba", "tqdm", "pandas", "helpers_local"}
    assert optional == {"numba", "tqdm"}
    assert relative == {"", "io"}


@pytest.mark.parametrize("import_name, dist", [
    ("sklearn", "scikit-learn"), ("Bio", "biopython"), ("skimage", "scikit-image"),
    ("cv2", "opencv-python-headless"), ("yaml", "PyYAML"), ("PIL", "Pillow"), ("bs4", "beautifulsoup4"),
    ("umap", "umap-learn"), ("osgeo", "GDAL"), ("numpy", "numpy"),
])
def test_aliased_imports_map_to_their_distributions(import_name, dist):
    assert distribution_for(import_name) == dist


PINNED = """
numpy==1.26.4 ; python_version < "3.12"
pandas>=2.0,<3   # the table library
scipy; python_version >= "3.13"
Scikit_Learn[plots]>=1.3
-r other-requirements.txt
--index-url https://example.invalid/simple
# a comment line
not a valid requirement (x)
"""


def test_requirements_file_with_pins_markers_and_extras():
    reqs = parse_requirements(PINNED)
    assert reqs[0] == 'numpy==1.26.4 ; python_version < "3.12"'
    assert normalise_requirement(reqs[0], "3.11.7") == "numpy==1.26.4"
    assert normalise_requirement(reqs[0], "3.12.1") is None, "a marker that excludes this Python drops it"
    assert normalise_requirement("Scikit_Learn[plots]>=1.3", "3.11.7") == "scikit-learn[plots]>=1.3"
    with pytest.raises(ValueError, match="not a valid requirement"):
        normalise_requirement("not a valid requirement (x)", "3.11.7")
    assert requirement_name("Scikit_Learn[plots]>=1.3") == "scikit-learn"


def test_resolution_merges_manifest_pins_with_imports_and_skips_optional_and_local():
    absolute, optional, _ = scan_imports_detailed(OPTIONAL)
    imports = third_party(absolute, {"helpers", "io", "helpers_local"})
    dists, bad = resolve_distributions(parse_requirements(PINNED), imports, optional, "3.11.7")
    assert "numpy==1.26.4" in dists and "numpy" not in dists, "the manifest pin wins over the bare import"
    assert "pandas<3,>=2.0" in dists or "pandas>=2.0,<3" in dists
    assert "scikit-learn[plots]>=1.3" in dists
    assert not any(d.startswith(("numba", "tqdm", "scipy", "helpers")) for d in dists)
    assert [(r.requirement, r.why) for r in bad] == [
        ("-r other-requirements.txt", "include"), ("--index-url https://example.invalid/simple", "index_option"),
        ("not a valid requirement (x)", "unparseable"),
    ]


def test_setup_cfg_and_setup_py_install_requires_are_read_without_running_anything():
    cfg = "[metadata]\nname = x\n[options]\ninstall_requires =\n    numpy>=1.24\n    # comment\n    scipy\n"
    assert parse_manifest("setup.cfg", cfg) == ["numpy>=1.24", "scipy"]
    setup_py = ("import os\nfrom setuptools import setup\nos.system('echo pwned')\n"
                "setup(name='x', install_requires=['pandas>=2', 'Bio' if False else 'biopython'])\n")
    assert parse_manifest("setup.py", setup_py) == []  # not a literal list: not guessed
    literal = "from setuptools import setup\nsetup(name='x', install_requires=['pandas>=2', 'biopython'])\n"
    assert parse_manifest("setup.py", literal) == ["pandas>=2", "biopython"]


# ---------------------------------------------------------------- a script's own dependencies and their era

from trailforge.envs.deps import distribution_for, era_date, script_imports  # noqa: E402


def test_a_script_needs_what_it_and_its_local_modules_import_not_the_whole_repository():
    sources = {
        "run.py": "import os\nfrom plotter.plotter import Plotter\n",
        "plotter/__init__.py": "",
        "plotter/plotter.py": "import matplotlib.pyplot as plt\nfrom constants import *\nfrom .helpers import smooth\n",
        "plotter/helpers.py": "import numpy as np\n",
        "constants.py": "import pandas\n",
        "driver.py": "import dakota.interfacing as di\n",  # another script's library, without a wheel
        "optional.py": "try:\n    import numba\nexcept ImportError:\n    numba = None\n",
    }
    required, optional = script_imports("run.py", sources)
    assert required == {"os", "matplotlib", "numpy", "pandas"}
    assert "dakota" not in required and optional == set()
    assert script_imports("driver.py", sources)[0] == {"dakota"}
    assert script_imports("optional.py", sources) == (set(), {"numba"})


def test_import_names_that_are_not_their_distribution_are_mapped():
    assert distribution_for("pylab") == "matplotlib"
    assert distribution_for("sklearn") == "scikit-learn"
    assert distribution_for("yaml") == "PyYAML"
    assert distribution_for("somethingunheardof") == "somethingunheardof"


def test_the_era_is_the_commit_date_but_never_before_the_interpreters_first_wheels():
    assert era_date("2024-05-02T10:00:00+02:00", "3.11.7") == "2024-05-02"
    assert era_date("2019-06-24T18:12:20+09:00", "3.11.7") == "2022-11-25"
    assert era_date(None, "3.11.7") == "2022-11-25", "unknown date: the oldest releases that install"
    assert era_date("not a date", "3.12.1") == "2024-03-01"
