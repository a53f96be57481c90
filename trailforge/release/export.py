"""Export verified environments: a ``datasets.DatasetDict`` and one folder per environment.

Each environment folder is self-contained and keeps what the agent sees apart from what
grades it::

    <env_id>/
      task.md              the statement
      workspace/           input data, plus the program with a hole (Completion) or a defect
                           (Correction): the agent's starting directory
      solution/            the reference program (hidden from the agent)
      eval/eval.py         standalone grader (standard library only)
      eval/expected.json   expected answer with per-field tolerances (hidden from the agent)
      eval/controls/       negative controls: perturbed answers and defective/incomplete programs
                           whose output the grader must reject; positive controls: answers the
                           statement allows (rounded as stated, 3.0 for 3, keys reordered) that it
                           must accept (``trailforge recheck`` re-runs them all)
      sandbox.json         the execution environment as verified (backend, lock, limits)
      Dockerfile           rebuilds that environment with the workspace (requirements.lock.txt pins it)
      metadata.json        provenance, answer schema, how the task was made, verification report
"""
from __future__ import annotations

import json
import shlex
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

from ..envs.tasks import eval_script
from ..envs.verify import allowed_answers, answer_bytes, expected_document, wrong_answers
from ..io import VerifiedTaskRow
from ..io.progress import Progress

DATASET_COLUMNS = [
    "env_id", "task_type", "repo_id", "discipline", "statement", "answer_schema", "expected_answer",
    "reference_program", "entrypoint", "workspace_files", "workspace_program", "eval_script", "sandbox", "checks",
    "construction",
]


def dataset_record(task: VerifiedTaskRow) -> dict[str, Any]:
    dump = lambda value: json.dumps(value, sort_keys=True, ensure_ascii=False)  # noqa: E731
    return {
        "env_id": task.task_id,
        "task_type": task.task_type,
        "repo_id": task.repo_id,
        "discipline": task.discipline,
        "statement": task.statement,
        "answer_schema": dump([f.model_dump() for f in task.answer_schema]),
        "expected_answer": dump(expected_document(task, task.tolerances)),
        "reference_program": dump(task.reference_program),
        "entrypoint": task.entrypoint,
        "workspace_files": [f.path for f in task.workspace_files],
        "workspace_program": dump(task.workspace_program),
        "construction": dump(task.construction),
        "eval_script": eval_script(),
        "sandbox": dump({"spec": task.sandbox_spec, "distributions": task.distributions}),
        "checks": dump(task.checks),
    }


def build_dataset_dict(tasks: list[VerifiedTaskRow]):
    import datasets

    features = datasets.Features({
        **{c: datasets.Value("string") for c in DATASET_COLUMNS if c != "workspace_files"},
        "workspace_files": datasets.Sequence(datasets.Value("string")),
    })
    by_type: dict[str, list[dict[str, Any]]] = {}
    for task in sorted(tasks, key=lambda t: t.task_id):
        by_type.setdefault(task.task_type, []).append(dataset_record(task))
    return datasets.DatasetDict({
        split: datasets.Dataset.from_list(records, features=features) for split, records in sorted(by_type.items())
    })


def write_environment(task: VerifiedTaskRow, root: Path) -> Path:
    folder = root / task.task_id
    if folder.exists():
        shutil.rmtree(folder)
    tree = Path(task.tree)
    for entry in task.workspace_files:
        target = folder / "workspace" / entry.path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes((tree / entry.path).read_bytes())
    for path, text in task.workspace_program.items():
        target = folder / "workspace" / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    for path, text in task.reference_program.items():
        target = folder / "solution" / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    (folder / "eval").mkdir(parents=True)
    (folder / "eval" / "eval.py").write_text(eval_script(), encoding="utf-8")
    _json(folder / "eval" / "expected.json", expected_document(task, task.tolerances))
    write_controls(task, folder / "eval" / "controls")
    (folder / "task.md").write_text(task.statement, encoding="utf-8")
    requirements = locked_requirements(task)
    (folder / "requirements.lock.txt").write_text("".join(f"{r}\n" for r in requirements), encoding="utf-8")
    (folder / "Dockerfile").write_text(environment_dockerfile(task, requirements), encoding="utf-8")
    _json(folder / "sandbox.json", {
        "spec": task.sandbox_spec,
        "distributions": task.distributions,
        "run_reference": run_reference(task),
        "answer_from": task.answer_from,
        "grade": "python eval/eval.py workspace/answer.json eval/expected.json",
    })
    _json(folder / "metadata.json", {
        "env_id": task.task_id,
        "task_type": task.task_type,
        "seed_id": task.seed_id,
        "repo_id": task.repo_id,
        "discipline": task.discipline,
        "entrypoint": task.entrypoint,
        # Only where the program is not started from the workspace root without arguments, so the
        # metadata of every other environment stays as it was.
        **({"cwd": task.cwd, "args": list(task.args)} if task.cwd != "." or task.args else {}),
        **({"output_folders": list(task.output_folders)} if task.output_folders else {}),
        "answer_schema": [f.model_dump() for f in task.answer_schema],
        "answer_from": task.answer_from,
        "distributions": task.distributions,
        "construction": task.construction,
        "checks": task.checks,
    })
    return folder


_TOOLING = {"pip", "setuptools", "wheel", "distribute"}


def run_reference(task: VerifiedTaskRow) -> str:
    """The shell line that runs the reference program on the workspace, from the folder it expects."""
    folders = shlex.join(["mkdir", "-p", *(f"workspace/{f}" for f in task.output_folders)]) + " && " \
        if task.output_folders else ""  # the folders the program writes into, which the data do not bring
    if task.cwd in ("", ".") and not task.args:
        return f"{folders}cd workspace && python ../solution/{task.entrypoint}"  # as every release before cwd/args
    depth = "/".join([".."] * (len(Path(task.cwd).parts) + 1))
    folder = f"workspace/{task.cwd}" if task.cwd not in ("", ".") else "workspace"
    return folders + shlex.join(["cd", folder]) + " && " + shlex.join(["python", f"{depth}/solution/{task.entrypoint}",
                                                              *task.args])


def locked_requirements(task: VerifiedTaskRow) -> list[str]:
    """Exact pins of what the environment was verified with (the sandbox's lock), tooling left out."""
    packages = task.sandbox_spec.get("packages", {})
    return [f"{name}=={version}" for name, version in sorted(packages.items(), key=lambda kv: kv[0].lower())
            if name.lower() not in _TOOLING and name.lower() != "trailforge"]


def environment_dockerfile(task: VerifiedTaskRow, requirements: list[str]) -> str:
    """A Dockerfile that rebuilds the sandbox the environment was verified in, with the agent's workspace.

    Behind a TLS-intercepting proxy, put the proxy's CA bundle next to it as ``ca-bundle.crt``:
    the build picks it up when present. The base is a build argument (``--build-arg BASE_IMAGE=...``).
    """
    python = ".".join(str(task.sandbox_spec.get("python", "3.11")).split(".")[:2])
    base = task.sandbox_spec.get("base_image") or f"python:{python}-slim"
    lines = [
        f"# Rebuilds the sandbox of {task.task_id}, verified with Python {task.sandbox_spec.get('python', '?')}.",
        "#   docker build -t env . && docker run --rm --network none env python YOUR_SCRIPT.py",
        "# Behind a TLS-intercepting proxy, put its CA bundle here as ca-bundle.crt first.",
        f"ARG BASE_IMAGE={base}",
        "FROM ${BASE_IMAGE}",
        "ARG PIP_INDEX_URL",
        "ARG PIP_EXTRA_INDEX_URL",
        "ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 PYTHONDONTWRITEBYTECODE=1",
        "COPY requirements.lock.txt ca-bundle.cr[t] /tmp/build/",
        "RUN python3 -m venv /opt/venv \\",
        "    && if [ -f /tmp/build/ca-bundle.crt ]; then export PIP_CERT=/tmp/build/ca-bundle.crt; fi \\",
        "    && /opt/venv/bin/pip install --no-input -r /tmp/build/requirements.lock.txt && rm -rf /tmp/build",
        "ENV PATH=/opt/venv/bin:$PATH",
        "WORKDIR /work",
        "COPY --chown=65534:65534 workspace/ /work/",
        "USER 65534:65534",
    ]
    return "\n".join(lines) + "\n"


def write_controls(task: VerifiedTaskRow, root: Path) -> None:
    """Controls next to the grader, so a fresh re-check needs nothing but the folder."""
    index = {"answers": [], "programs": [], "positives": []}
    for name, answer in sorted(wrong_answers(task, task.tolerances).items()):
        _json(root / "answers" / f"{name}.json", answer)
        index["answers"].append(name)
    for name, answer in sorted(allowed_answers(task, task.tolerances).items()):
        # byte for byte what verify graded: the order of the keys is part of some of these controls
        target = root / "positives" / f"{name}.json"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(answer_bytes(answer, keep_order=True))
        index["positives"].append(name)
    for control in task.negative_programs:
        for path, text in control["files"].items():
            target = root / "programs" / control["name"] / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        index["programs"].append({"name": control["name"], "entrypoint": control["entrypoint"]})
    _json(root / "controls.json", index)


def _json(path: Path, value: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")


def release(tasks: list[VerifiedTaskRow], out: Path) -> dict[str, Any]:
    """Write ``out/dataset`` and ``out/environments``; return summary figures."""
    env_root = out / "environments"
    if env_root.exists():
        shutil.rmtree(env_root)
    env_root.mkdir(parents=True)
    with Progress("release", len(tasks)) as progress:
        for task in tasks:
            write_environment(task, env_root)
            progress.advance()
    dataset_dir = out / "dataset"
    if dataset_dir.exists():
        shutil.rmtree(dataset_dir)
    build_dataset_dict(tasks).save_to_disk(str(dataset_dir))
    return {
        "environments": len(tasks),
        "by_task_type": dict(sorted(Counter(t.task_type for t in tasks).items())),
        "by_discipline": dict(sorted(Counter(t.discipline for t in tasks).items())),
        "by_repo": dict(sorted(Counter(t.repo_id for t in tasks).items())),
    }
