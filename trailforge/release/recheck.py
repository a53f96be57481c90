"""Re-check exported environments from their folders alone, with fresh runs and no cache.

For each environment: the reference program (``solution/``) runs on a fresh copy of the
workspace and its answer must pass ``eval/eval.py``; every positive control under
``eval/controls/positives/`` (an answer the statement allows, graded as the file is) must
pass it, and every negative control under ``eval/controls/`` must fail it: each perturbed
answer, and the output of each defective or incomplete program run the same way. Releases
made before positive controls existed have none listed, and re-check as before. This is
what a consumer of a release can run to trust it without trusting the pipeline that made it.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..envs.answers import answer_from_run
from ..io import AnswerField
from ..envs.protocol import RunProtocol, recorded_request
from ..sandbox import RunRequest, Sandbox
from ..sandbox.base import OK, TIMEOUT

# How much of the eval's report on a rejected reference a recheck failure quotes.
EVAL_REPORT_CHARS = 400


def _files_under(root: Path) -> dict[str, bytes]:
    if not root.is_dir():
        return {}
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _grade(folder: Path, answer: dict | bytes, sandbox: Sandbox, env) -> int:
    """The eval's exit code on ``answer`` (a file's bytes are graded as they are: key order included)."""
    return grade_answer(folder, answer, sandbox, env).exit_code


def grade_answer(folder: Path, answer: dict | bytes, sandbox: Sandbox, env):
    """Run the environment's own ``eval/eval.py`` on ``answer`` in ``sandbox``; the ``RunResult`` (exit 0:
    accepted, 1: rejected, and what the eval printed about each field)."""
    files = {
        "eval.py": (folder / "eval" / "eval.py").read_bytes(),
        "expected.json": (folder / "eval" / "expected.json").read_bytes(),
        "answer.json": answer if isinstance(answer, bytes) else json.dumps(answer, sort_keys=True).encode("utf-8"),
    }
    return sandbox.run(env, RunRequest(("python", "eval.py", "answer.json", "expected.json"), files,
                                       timeout_s=sandbox.timeout_s))


def reference_failure(run_result, graded) -> str:
    """Why a fresh reference run was not accepted, in words: how the run ended, then what the eval said."""
    run_end = "exit 0" if run_result.reason == OK else f"{run_result.reason} (exit {run_result.exit_code})"
    said = " ".join((graded.stdout + graded.stderr).split())
    if len(said) > EVAL_REPORT_CHARS:
        said = said[:EVAL_REPORT_CHARS] + " …"
    return f"eval exit {graded.exit_code} on a fresh reference run (the run ended {run_end}): {said or 'no eval output'}"


def recheck_environment(folder: Path, sandbox: Sandbox, max_fields: int, max_rows: int) -> dict[str, Any]:
    meta = json.loads((folder / "metadata.json").read_text(encoding="utf-8"))
    entry, answer_from = meta["entrypoint"], meta.get("answer_from", "outputs")
    schema = [AnswerField.model_validate(f) for f in meta.get("answer_schema", [])]  # its stdout line names
    env = sandbox.prepare(meta.get("distributions", []))
    report: dict[str, Any] = {"env_id": meta["env_id"], "task_type": meta["task_type"],
                              "repo_id": meta.get("repo_id"), "problems": []}
    if not env.ready:
        report["problems"].append(f"sandbox lacks {', '.join(env.missing)}")
        return report
    workspace = _files_under(folder / "workspace")

    def run(files: dict[str, bytes], entrypoint: str):
        protocol = RunProtocol(meta.get("cwd", "."), tuple(meta.get("args", [])),
                               folders=tuple(meta.get("output_folders", [])))
        result = sandbox.run(env, recorded_request(protocol, entrypoint, {**workspace, **files}, sandbox.timeout_s))
        return result, answer_from_run(result, answer_from, max_fields, max_rows, cwd=protocol.cwd, like=schema)[1]

    def run_program(files: dict[str, bytes], entrypoint: str) -> dict:
        return run(files, entrypoint)[1]

    reference = _files_under(folder / "solution")
    run_result, solution = run(reference, entry)
    if run_result.reason == TIMEOUT:
        # A reference that ran within the limit when it was verified and times out now met a busy machine,
        # not a wrong release: one more run says which (and the report keeps that it was needed).
        report["reference_retried"] = "timeout"
        run_result, solution = run(reference, entry)
    graded = grade_answer(folder, solution, sandbox, env)
    report["reference_accepted"] = graded.exit_code == 0
    if graded.exit_code != 0:
        report["problems"].append(reference_failure(run_result, graded))
    controls = json.loads((folder / "eval" / "controls" / "controls.json").read_text(encoding="utf-8"))
    rejected = {}
    for name in controls["answers"]:
        answer = json.loads((folder / "eval" / "controls" / "answers" / f"{name}.json").read_text(encoding="utf-8"))
        rejected[f"answer:{name}"] = _grade(folder, answer, sandbox, env) == 1
    for program in controls["programs"]:
        files = _files_under(folder / "eval" / "controls" / "programs" / program["name"])
        rejected[f"program:{program['name']}"] = _grade(folder, run_program(files, program["entrypoint"]),
                                                       sandbox, env) == 1
    accepted = {f"answer:{name}": _grade(folder, (folder / "eval" / "controls" / "positives" / f"{name}.json")
                                         .read_bytes(), sandbox, env) == 0
                for name in controls.get("positives", [])}
    report["negatives_rejected"] = rejected
    report["positives_accepted"] = accepted
    report["problems"] += [f"{name} was not rejected" for name, ok in rejected.items() if not ok]
    report["problems"] += [f"{name} (allowed) was not accepted" for name, ok in accepted.items() if not ok]
    report["ok"] = not report["problems"]
    return report


def recheck_release(root: Path, sandbox: Sandbox, executor, max_fields: int, max_rows: int) -> dict[str, Any]:
    folders = sorted(p for p in root.iterdir() if (p / "metadata.json").is_file())
    reports = executor.map(lambda f: recheck_environment(f, sandbox, max_fields, max_rows), folders,
                           label="recheck")
    by_type: dict[str, dict[str, int]] = {}
    for report in reports:
        counts = by_type.setdefault(report["task_type"], {"environments": 0, "passed": 0, "negatives_rejected": 0,
                                                          "positives_accepted": 0})
        counts["environments"] += 1
        counts["passed"] += bool(report.get("ok"))
        counts["negatives_rejected"] += sum(report.get("negatives_rejected", {}).values())
        counts["positives_accepted"] += sum(report.get("positives_accepted", {}).values())
    by_repo: dict[str, dict[str, int]] = {}
    for report in reports:
        counts = by_repo.setdefault(str(report.get("repo_id")), {"environments": 0, "passed": 0})
        counts["environments"] += 1
        counts["passed"] += bool(report.get("ok"))
    return {
        "environments": len(reports),
        "passed": sum(bool(r.get("ok")) for r in reports),
        "negative_controls_rejected": sum(sum(r.get("negatives_rejected", {}).values()) for r in reports),
        "positive_controls_accepted": sum(sum(r.get("positives_accepted", {}).values()) for r in reports),
        "references_rerun_after_timeout": sum("reference_retried" in r for r in reports),
        "by_task_type": dict(sorted(by_type.items())),
        "by_repository": dict(sorted(by_repo.items())),
        "failures": [{"env_id": r["env_id"], "problems": r["problems"]} for r in reports if not r.get("ok")],
    }
