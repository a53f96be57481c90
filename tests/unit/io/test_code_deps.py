"""Code deps of DVC stages from the import closure of each stage module, and the rewrite of dvc.yaml."""
from __future__ import annotations

import ast
import textwrap

import pytest
import yaml

from conftest import PROJECT_ROOT, make_repo
from trailforge.io.code_deps import DepsError, check_deps, generated_deps, import_closure, rewrite_deps

# A small project laid out like trailforge: a library package, a stages package, package data.
PROJECT = {
    "stages/__init__.py": "",
    "stages/build.py": "from pkg.alpha import run\nimport numpy\nimport os.path\n",
    "stages/other.py": "from pkg import gamma\n",
    "pkg/__init__.py": "",
    "pkg/alpha.py": textwrap.dedent("""\
        from pathlib import Path
        from typing import TYPE_CHECKING

        from . import beta
        from .sub.deep import VALUE

        if TYPE_CHECKING:
            from .typing_only import Hint

        TEMPLATES = Path(__file__).parent / "templates"


        def run(name):
            from .lazy import helper  # imported when run() is: still code the stage executes
            return (TEMPLATES / name).read_text(), helper()
        """),
    "pkg/beta.py": "import os\nHERE = os.path.dirname(os.path.abspath(__file__))\n"
                   "RUNNER = os.path.join(HERE, 'runner.py')\n",
    "pkg/runner.py": "from pkg import gamma  # a script read as data, and what it imports\n",
    "pkg/gamma.py": "from importlib import resources\n"
                    "SCHEMA = resources.files('pkg.sub').joinpath('schema.json')\n",
    "pkg/lazy.py": "def helper():\n    return 1\n",
    "pkg/typing_only.py": "class Hint: ...\n",
    "pkg/unused.py": "x = 1\n",
    "pkg/sub/__init__.py": "",
    "pkg/sub/deep.py": "from pathlib import Path\nVALUE = Path(__file__).with_name('schema.json')\n",
    "pkg/sub/schema.json": "{}\n",
    "pkg/sub/unread.json": "{}\n",
    "pkg/templates/card.j2": "hello\n",
    "pkg/templates/report.j2": "hello\n",
}
PACKAGES = ("pkg", "stages")

DVC_YAML = """\
# The pipeline. Run: dvc repro
stages:
  build:
    cmd: >-
      python -m stages.build --out outputs/build
      --verbose
    params:
      - pkg.threshold
    deps:
      - examples/data  # the bundled inputs
      - pkg/alpha.py  # why alpha matters
      - pkg/unused.py
      # upstream rows
      - outputs/prepare/data
    outs:
      - outputs/build/data
    metrics:
      - outputs/build/stats.json

  other:
    cmd: python -m stages.other
    outs:
      - outputs/other

  fetch:
    cmd: curl -o raw.txt https://example.org/raw.txt
    deps:
      - pkg/unused.py
    outs:
      - raw.txt
"""


@pytest.fixture
def project(tmp_path):
    return make_repo(tmp_path / "project", PROJECT)


def test_closure_follows_imports_package_inits_and_package_data(project):
    deps = import_closure("stages/build.py", project, PACKAGES)
    assert deps[0] == "stages/build.py"
    assert deps[1:] == sorted(deps[1:])
    assert set(deps) == {
        "stages/build.py", "stages/__init__.py", "pkg/__init__.py",
        "pkg/alpha.py", "pkg/beta.py", "pkg/lazy.py", "pkg/sub/__init__.py", "pkg/sub/deep.py",
        "pkg/templates",  # named as a folder: any template in it may be loaded
        "pkg/runner.py", "pkg/gamma.py",  # read as data by beta, and what that script imports
        "pkg/sub/schema.json",  # with_name() and resources.files().joinpath() name one file
    }


def test_closure_leaves_out_what_never_runs_and_what_is_not_the_projects(project):
    deps = import_closure("stages/build.py", project, PACKAGES)
    assert "pkg/typing_only.py" not in deps  # only under `if TYPE_CHECKING:`
    assert "pkg/unused.py" not in deps  # nothing imports it
    assert "pkg/sub/unread.json" not in deps  # beside a file that is read, but never named
    assert "pkg" not in deps and "pkg/sub" not in deps  # dirname(__file__) names a package, not data
    assert not any("numpy" in d or d.startswith("os") for d in deps)


def test_an_import_of_a_missing_project_module_is_an_error_naming_file_and_line(project):
    (project / "pkg" / "alpha.py").write_text("import os\nfrom pkg.gone import x\n")
    with pytest.raises(DepsError, match=r"pkg/alpha.py:2: imports pkg.gone"):
        import_closure("stages/build.py", project, PACKAGES)


def test_a_stage_running_a_project_module_that_is_not_there_is_an_error(project, tmp_path):
    # Read against a folder without the project (dvc.yaml copied elsewhere), nothing would be checked at all.
    with pytest.raises(DepsError, match=r"runs stages.build, which is not a module under"):
        check_deps(DVC_YAML, tmp_path, packages=PACKAGES)


def test_check_names_missing_and_stale_entries_per_stage(project):
    drift = {d.stage: d for d in check_deps(DVC_YAML, project, packages=PACKAGES)}
    assert set(drift) == {"build", "other"}  # `fetch` runs no project module: not ours to judge
    assert drift["build"].stale == ["pkg/unused.py"]
    assert "pkg/beta.py" in drift["build"].missing and "pkg/alpha.py" not in drift["build"].missing
    assert drift["other"].missing == ["stages/other.py", "pkg/__init__.py", "pkg/gamma.py", "pkg/sub/__init__.py",
                                      "pkg/sub/schema.json", "stages/__init__.py"]


def test_rewrite_changes_only_code_entries_and_then_checks_clean(project):
    wanted = generated_deps(DVC_YAML, project, packages=PACKAGES)
    text = rewrite_deps(DVC_YAML, wanted, packages=PACKAGES)
    assert check_deps(text, project, packages=PACKAGES) == []
    assert rewrite_deps(text, wanted, packages=PACKAGES) == text  # a second write changes nothing

    before, after = yaml.safe_load(DVC_YAML)["stages"], yaml.safe_load(text)["stages"]
    assert after["build"]["deps"] == ["examples/data", *wanted["build"], "outputs/prepare/data"]
    assert after["other"]["deps"] == wanted["other"]  # a stage without deps: gets a list
    assert after["fetch"] == before["fetch"]  # not a project module: its deps stay as written
    for name in before:
        assert {k: v for k, v in after[name].items() if k != "deps"} == \
               {k: v for k, v in before[name].items() if k != "deps"}

    lines = text.splitlines()
    # Comments, the folded cmd and the order of data entries are kept byte for byte.
    assert lines[:8] == DVC_YAML.splitlines()[:8]
    assert "      - examples/data  # the bundled inputs" in lines
    assert "      - pkg/alpha.py  # why alpha matters" in lines  # a kept entry keeps its comment
    assert lines.index("      # upstream rows") + 1 == lines.index("      - outputs/prepare/data")
    assert "      - pkg/unused.py" in text.split("fetch:")[1]
    assert "pkg/unused.py" not in text.split("fetch:")[0]
    assert text.split("fetch:")[0].count("  other:\n    cmd: python -m stages.other\n    deps:\n") == 1


def test_a_deps_list_the_text_rewrite_cannot_read_is_refused(project):
    flow = DVC_YAML.replace("""    deps:
      - examples/data  # the bundled inputs
      - pkg/alpha.py  # why alpha matters
      - pkg/unused.py
      # upstream rows
      - outputs/prepare/data
""", "    deps: [examples/data, pkg/alpha.py]\n")
    with pytest.raises(DepsError, match="stage 'build'"):
        rewrite_deps(flow, generated_deps(flow, project, packages=PACKAGES), packages=PACKAGES)


def test_a_namespace_package_has_no_file_of_its_own_but_its_modules_are_deps(tmp_path):
    project = make_repo(tmp_path / "ns", {
        "stages/__init__.py": "", "stages/run.py": "from pkg.space import leaf\nimport pkg.space.other\n",
        "pkg/__init__.py": "", "pkg/space/leaf.py": "", "pkg/space/other.py": "", "pkg/space/unused.py": "",
    })
    assert import_closure("stages/run.py", project, PACKAGES) == [
        "stages/run.py", "pkg/__init__.py", "pkg/space/leaf.py", "pkg/space/other.py", "stages/__init__.py"]


def test_entries_at_the_keys_own_indent_as_dvc_writes_them_are_rewritten(project):
    dvc = "stages:\n  build:\n    cmd: python -m stages.build\n    deps:\n    - pkg/unused.py\n    - data\n" \
          "    outs:\n    - out\n  loop:\n    cmd: python -m stages.${item} # templated: no module to follow\n"
    text = rewrite_deps(dvc, generated_deps(dvc, project, packages=PACKAGES), packages=PACKAGES)
    assert text.startswith("stages:\n  build:\n    cmd: python -m stages.build\n    deps:\n    - stages/build.py\n")
    assert text.endswith("    - stages/__init__.py\n    - data\n    outs:\n    - out\n"
                         "  loop:\n    cmd: python -m stages.${item} # templated: no module to follow\n")
    assert check_deps(text, project, packages=PACKAGES) == []


# ---------------------------------------------------------------------------------------------------------------
# The project's own dvc.yaml


def _committed():
    return (PROJECT_ROOT / "dvc.yaml").read_text(encoding="utf-8")


def test_committed_dvc_yaml_code_deps_match_the_imports():
    """The drift test: a stage module that gains an import fails here until `trailforge deps --write` is run."""
    drift = check_deps(_committed(), PROJECT_ROOT)
    assert drift == [], "\n".join(f"{d.stage}: missing {d.missing}, stale {d.stale}" for d in drift)


def test_a_dropped_dep_fails_the_check_and_the_rewrite_restores_it():
    text = _committed()
    statements = text.index("  statements:")
    dropped = text[:statements] + text[statements:].replace("      - trailforge/envs/verify/checks.py\n", "", 1)
    assert dropped != text
    drift = check_deps(dropped, PROJECT_ROOT)
    assert [(d.stage, d.missing, d.stale) for d in drift] == [("statements", ["trailforge/envs/verify/checks.py"], [])]
    assert rewrite_deps(dropped, generated_deps(dropped, PROJECT_ROOT)) == text


def _defining_module(function: str) -> str:
    for path in sorted((PROJECT_ROOT / "trailforge").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if any(isinstance(node, ast.FunctionDef) and node.name == function for node in tree.body):
            return path.relative_to(PROJECT_ROOT).as_posix()
    raise AssertionError(f"no module defines {function}")


def test_release_depends_on_the_code_that_writes_every_exported_eval():
    release = yaml.safe_load(_committed())["stages"]["release"]["deps"]
    for function in ("expected_document", "wrong_answers"):
        assert _defining_module(function) in release, function
    assert "trailforge/release/templates" in release  # the card and report templates, loaded by name


def test_statements_and_release_rerun_on_verify_but_no_stage_on_an_unimported_module():
    stages = yaml.safe_load(_committed())["stages"]
    with_verify = {name for name, stage in stages.items() if "trailforge/envs/verify/checks.py" in stage.get("deps", [])}
    assert {"statements", "verify", "release"} <= with_verify
    assert "discover" not in with_verify
    every_dep = {dep for stage in stages.values() for dep in stage.get("deps", [])}
    assert "trailforge/io/code_deps.py" not in every_dep  # maintenance code no stage runs
    assert "trailforge/lineage/synthetic.py" not in every_dep
