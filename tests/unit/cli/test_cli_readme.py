"""The README's commands work as written.

Every command of a fenced ``bash`` block is either run here, as written, in a temporary copy of the project
(``RUN``), or left out with the reason (``LEFT_OUT``: it needs a model, a cluster or minutes of building).
A command added to the README must be put in one of the two, and one the README no longer has must leave
them, so the lists cannot drift from the text.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import PROJECT_ROOT

README = PROJECT_ROOT / "README.md"

# Commands run in README order, each with words its output must contain.
RUN: dict[str, list[str]] = {
    "trailforge compose recipe=curate && dvc repro sample": ["wrote", "Running stage 'sample'"],
    "trailforge report": ["lineage       accepted=400", "decontaminate accepted=", "sample        accepted=",
                          "vendi=", "release       not run"],
    "trailforge compose recipe=curate lineage.input.path=my_trajectories.jsonl lineage.input.fields.id=uid":
        ["from recipe 'curate'"],
    "trailforge ls": ["recipes: curate, demo, ideatrail, repos, tiny", "verifier:"],
    "trailforge validate recipe=tiny": ["recipe 'tiny' is valid"],
    "trailforge compose recipe=tiny": ["from recipe 'tiny'", "versions.yaml"],
    "trailforge versions": ["wrote", "versions.yaml"],
    "trailforge compose recipe=demo verifier=strict": ["from recipe 'demo'"],
    "trailforge compose recipe=demo verifier.repeats=3": ["from recipe 'demo'"],
    "dvc status": ["changed"],
    "trailforge compose recipe=ideatrail llm=openai llm.model=openai/gpt-4o-mini "
    "+llm.roles.validator.model=openai/gpt-4o harness.proposals=my_cases tools.corpus=[papers.jsonl] "
    "harness.cutoff=2025-06-30": ["from recipe 'ideatrail'"],
    "trailforge compose recipe=demo": ["from recipe 'demo'"],
}

BUILDS = "builds the whole demo corpus (minutes); tests/e2e runs `dvc repro` on recipe=tiny"
CLUSTER = "needs a Ray cluster (tests/stage/test_ray_pipeline.py runs executor=ray on a local one)"
LEFT_OUT: dict[str, str] = {
    "python3 -m venv .venv && . .venv/bin/activate && pip install -c constraints.txt -e '.[test]' && "
    "trailforge compose recipe=demo "
    "&& dvc repro": "installs the package from PyPI, then " + BUILDS,
    "python3 -m venv .venv && . .venv/bin/activate && pip install -c constraints.txt -e '.[test]' && "
    "LITELLM_LOCAL_MODEL_COST_MAP=True python -m pytest -q": "installs the package and runs the whole test suite",
    "dvc repro": BUILDS,
    "trailforge run recipe=tiny": "builds the tiny corpus (tests/e2e does, through compose and dvc repro)",
    "dvc exp run -S verifier.repeats=3": BUILDS,
    "OPENAI_API_KEY=... python -m stages.ideation --out outputs/ideation": "needs a model endpoint",
    "ray start --head --port=6379 --disable-usage-stats --include-dashboard=false": CLUSTER,
    "ray start --address=<head-ip>:6379": CLUSTER,
    "trailforge compose recipe=demo executor=ray executor.address=<head-ip>:6379 && dvc repro": CLUSTER,
    "export TRAILFORGE_CACHE_DIR=/shared/trailforge-cache": "sets a variable for the queued runs below it",
    "dvc exp run --queue -S executor=ray -S executor.address=<head-ip>:6379 -S verifier.rtol=2e-6,5e-6": CLUSTER,
    "dvc queue start --jobs 2": CLUSTER,
    "dvc exp show --only-changed": "shows the queued experiments of the sweep above it",
}


def readme_commands(text: str) -> list[str]:
    """The commands of the fenced bash blocks: continuation lines joined, trailing ``# comments`` dropped."""
    commands = []
    for block in re.findall(r"^```bash\n(.*?)^```", text, re.S | re.M):
        for line in block.replace("\\\n", " ").splitlines():
            line = re.sub(r"\s+", " ", re.sub(r"\s+#\s.*$", "", line)).strip()
            if line:
                commands.append(line)
    return commands


def test_every_readme_command_is_run_or_left_out_with_a_reason():
    commands = readme_commands(README.read_text(encoding="utf-8"))
    assert len(commands) >= len(RUN), "the parser found the README's commands"
    assert not set(RUN) & set(LEFT_OUT)
    unclassified = sorted(set(commands) - set(RUN) - set(LEFT_OUT))
    assert not unclassified, f"README commands this test neither runs nor leaves out: {unclassified}"
    gone = sorted((set(RUN) | set(LEFT_OUT)) - set(commands))
    assert not gone, f"commands listed here that the README no longer has: {gone}"


def test_the_parser_joins_continuations_and_drops_comments():
    text = "x\n```bash\na b \\\n    c   # says why\n\nd # e\n```\n```\nnot bash\n```\n"
    assert readme_commands(text) == ["a b c", "d"]


def _copy_project(dest: Path) -> None:
    def left_behind(folder, names):  # bytecode and run caches; the trailforge.cache package is code and travels
        dropped = {"__pycache__", "outputs", ".trailforge"}
        if "cache" in names and not os.path.isfile(os.path.join(folder, "cache", "__init__.py")):
            dropped.add("cache")
        return [name for name in names if name in dropped]

    for name in ["recipe", "conf", "stages", "trailforge", ".dvc", "examples/lineage"]:
        shutil.copytree(PROJECT_ROOT / name, dest / name, ignore=left_behind)
    for name in ["dvc.yaml", ".dvcignore", ".gitignore", "params.yaml", "versions.yaml"]:
        shutil.copy(PROJECT_ROOT / name, dest / name)


def test_readme_commands_run_as_written(tmp_path):
    """The commands in ``RUN``, through bash, in README order, in one copy of the project (state carries on)."""
    project, shims = tmp_path / "project", tmp_path / "bin"
    _copy_project(project)
    shims.mkdir()
    (shims / "trailforge").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m trailforge.cli.main "$@"\n')
    (shims / "trailforge").chmod(0o755)
    env = {**os.environ, "PATH": f"{shims}:{Path(sys.executable).parent}:{os.environ['PATH']}",
           "PYTHONPATH": str(project), "TRAILFORGE_CACHE_DIR": str(tmp_path / "cache"),
           "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)  # DVC works inside a git repository
    commands = readme_commands(README.read_text(encoding="utf-8"))
    ran, outputs = [], []
    for command in commands:
        if command not in RUN or command in ran:
            continue
        done = subprocess.run(["bash", "-c", command], cwd=project, env=env, capture_output=True, text=True,
                              timeout=300)
        output = done.stdout + done.stderr
        assert done.returncode == 0, f"`{command}` failed ({done.returncode}):\n{output[-3000:]}"
        assert "Traceback" not in output, f"`{command}`:\n{output[-3000:]}"
        for words in RUN[command]:
            assert words in output, f"`{command}` did not print {words!r}:\n{output[-3000:]}"
        ran.append(command)
        outputs.append(output)
    assert sorted(ran) == sorted(RUN)
    empty = sorted({line for out in outputs for line in out.splitlines() if "is empty" in line})
    assert not empty, f"DVC warned about empty dependencies: {empty}"


def test_the_readme_error_example_is_the_error_the_cli_gives(tmp_path):
    """The ``$ trailforge validate ...`` example: the lines shown are the lines printed (``...`` elides)."""
    text = README.read_text(encoding="utf-8")
    match = re.search(r"^```\n\$ (trailforge validate [^\n]+)\n(.*?)^```", text, re.S | re.M)
    assert match, "the README shows a failing validate"
    command, shown = match.group(1), match.group(2).splitlines()
    done = subprocess.run([sys.executable, "-m", "trailforge.cli.main", *command.split()[1:]], cwd=PROJECT_ROOT,
                          env={**os.environ, "PYTHONPATH": str(PROJECT_ROOT)}, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2
    printed = done.stderr.splitlines()
    for line in shown:  # a line ending in "..." stands for the rest of it and the lines after (Hydra's hint)
        if line.endswith("..."):
            assert any(p.startswith(line.removesuffix("...").rstrip()) for p in printed), (line, printed)
        else:
            assert line in printed, (line, printed)
    assert printed[-1] == shown[-1], "the allowed keys, as the README lists them"
