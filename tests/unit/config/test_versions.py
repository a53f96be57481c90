"""Library versions as DVC params: recorded by compose, tracked per stage, refused when stale."""
from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

from conftest import PROJECT_ROOT, make_repo, run_stage, write_params
from trailforge.config.versions import (RESULT_LIBRARIES, check_recorded_versions, program_versions,
                                        recorded_versions, version_drift, write_versions)


def _dvc(cwd: Path, *args: str) -> str:
    env = {**os.environ, "PATH": f"{os.path.dirname(sys.executable)}:{os.environ['PATH']}"}
    done = subprocess.run([sys.executable, "-m", "dvc", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_changing_a_recorded_version_makes_exactly_the_stages_that_list_it_stale(tmp_path):
    versions = recorded_versions({})
    write_versions(versions, tmp_path / "versions.yaml")
    write = f"{sys.executable} -c \"open('{{0}}', 'w').write('x')\""
    (tmp_path / "dvc.yaml").write_text(yaml.safe_dump({"stages": {
        "uses_numpy": {"cmd": write.format("a.txt"), "outs": ["a.txt"],
                       "params": [{"versions.yaml": ["python", "libraries.numpy"]}]},
        "uses_datasets": {"cmd": write.format("b.txt"), "outs": ["b.txt"],
                          "params": [{"versions.yaml": ["python", "libraries.datasets"]}]},
    }}))
    _dvc(tmp_path, "init", "--no-scm", "-q")
    _dvc(tmp_path, "repro", "-q")
    assert json.loads(_dvc(tmp_path, "status", "--json")) == {}

    upgraded = {**versions, "libraries": {**versions["libraries"], "numpy": "99.0.0"}}
    write_versions(upgraded, tmp_path / "versions.yaml")
    status = json.loads(_dvc(tmp_path, "status", "--json"))
    assert set(status) == {"uses_numpy"}, status
    assert "libraries.numpy" in json.dumps(status["uses_numpy"])


def test_drift_names_each_changed_key_and_nothing_else():
    recorded = {"python": "3.11.7", "libraries": {"numpy": "2.4.6", "pyarrow": "26.0.1"},
                "programs": {"runs_on": "host", "scipy": None}}
    current = {"python": "3.11.7", "libraries": {"numpy": "2.5.0", "pyarrow": "26.0.1"},
               "programs": {"runs_on": "host", "scipy": "1.16.0"}}
    assert version_drift(recorded, recorded) == []
    drift = version_drift(recorded, current)
    assert len(drift) == 2
    assert drift[0].startswith("libraries.numpy: versions.yaml records '2.4.6'") and "'2.5.0'" in drift[0]
    assert drift[1].startswith("programs.scipy: versions.yaml records None")


def test_program_versions_follow_where_programs_run():
    host = program_versions({"backend": "local", "environments": "host"})
    assert host["runs_on"] == "host" and host["numpy"] and "pandas" in host and "scipy" in host
    venv = program_versions({"backend": "local", "environments": "venv", "installer": "uv"})
    assert venv["runs_on"] == "venv" and venv["installer"].startswith("uv ") and "numpy" not in venv
    assert program_versions({"backend": "docker"}) == {"runs_on": "docker"}


def test_no_record_beside_the_params_is_no_drift(tmp_path):
    assert check_recorded_versions(tmp_path / "params.yaml", {}) == []


def test_a_stage_refuses_a_record_the_environment_no_longer_matches(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    repo = make_repo(tmp_path / "repo", {"README.md": "# r\n", "data/a.csv": "x\n1\n", "run.py": "print(1)\n"})
    data = write_params(project, [str(repo)])
    stale = recorded_versions(data)
    stale["libraries"]["pyarrow"] = "0.1.0"
    write_versions(stale, project / "versions.yaml")
    done = run_stage(project, "discover", "--out", str(project / "out"), check=False)
    assert done.returncode != 0
    assert "libraries.pyarrow: versions.yaml records '0.1.0'" in done.stderr and "trailforge versions" in done.stderr
    assert "Traceback" not in done.stderr and not (project / "out").exists()

    write_versions(recorded_versions(data), project / "versions.yaml")
    assert run_stage(project, "discover", "--out", str(project / "out")).returncode == 0


def _third_party_closure(module: str) -> set[str]:
    """Top-level non-trailforge modules the stage module's import closure reaches (function-level imports too)."""
    seen, found, todo = set(), set(), [module]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        path = PROJECT_ROOT / (name.replace(".", "/") + ".py")
        if not path.is_file():
            path = PROJECT_ROOT / name.replace(".", "/") / "__init__.py"
        if not path.is_file():
            continue
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(parts + ([node.module] if node.module else []))
                targets = [base] + [f"{base}.{alias.name}" for alias in node.names]
            else:
                continue
            for target in targets:
                top = target.split(".")[0]
                if top in ("trailforge", "stages"):
                    parts = target.split(".")
                    todo.extend(".".join(parts[:k]) for k in range(1, len(parts) + 1))
                elif top not in sys.stdlib_module_names:
                    found.add(top)
    return found


def test_each_stage_lists_the_versions_its_code_and_programs_compute_with():
    """Every stage writes parquet with pyarrow under the interpreter; it lists a result library exactly when
    its module's import closure reaches it, and `programs` exactly when it runs programs in a sandbox."""
    stages = yaml.safe_load((PROJECT_ROOT / "dvc.yaml").read_text())["stages"]
    wrong = {}
    for name, spec in stages.items():
        listed = next((entry["versions.yaml"] for entry in spec.get("params", [])
                       if isinstance(entry, dict) and "versions.yaml" in entry), [])
        module = spec["cmd"].split("-m ", 1)[1].split()[0]
        source = (PROJECT_ROOT / (module.replace(".", "/") + ".py")).read_text(encoding="utf-8")
        closure = _third_party_closure(module)
        expected = {"python", "libraries.pyarrow"}
        expected |= {f"libraries.{lib}" for lib in RESULT_LIBRARIES if lib in closure}
        if "build_sandbox" in source:
            expected.add("programs")
        if set(listed) != expected:
            wrong[name] = {"missing": sorted(expected - set(listed)), "extra": sorted(set(listed) - expected)}
    assert not wrong, wrong
