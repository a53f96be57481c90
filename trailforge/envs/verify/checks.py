"""The verification chain of one task (the order is the package docstring's): integrity, reference runs,
reproducibility, calibration, gradability, controls, isolation, construction, specification."""
from __future__ import annotations

import hashlib
from dataclasses import replace
from pathlib import Path
from typing import Any

from ...cache import ContentCache
from ...config.schema import VerifierConfig
from ...io import StageRecorder, TaskRow, VerifiedTaskRow
from ...sandbox import Sandbox, run_cached
from ..answers import answer_from_run
from ..protocol import RunProtocol, recorded_request
from ..spread import KERNEL_RUN_SALT, answer_spreads, reference_runs
from .controls import check_gradable, check_negative_program
from .leaks import check_construction, check_isolation
from .rejected import Rejected
from .specified import check_specified
from .tolerances import calibrate, element_spreads, expected_document, printed_tables


def verify_task(task: TaskRow, cfg: VerifierConfig, sandbox: Sandbox, cache: ContentCache, recorder: StageRecorder,
                max_fields: int, max_table_rows: int) -> VerifiedTaskRow | None:
    try:
        return _verify(task, cfg, sandbox, cache, recorder, max_fields, max_table_rows)
    except Rejected as rej:
        recorder.reject(task.task_id, rej.reason, rej.message, **rej.detail)
        return None


def _verify(task, cfg, sandbox, cache, recorder, max_fields, max_table_rows) -> VerifiedTaskRow:
    workspace = check_data_integrity(task)
    env = sandbox.prepare(task.distributions)
    if not env.ready:
        raise Rejected("missing_dependency", f"the sandbox lacks {', '.join(env.missing)}")
    program = {path: text.encode("utf-8") for path, text in task.reference_program.items()}
    # The first run's printed form of each list element and table cell: a written table's text, or the
    # resolutions read from stdout (answers.extract_answer's ``precision``).
    printed: dict[str, str | list] = {}

    def reference_run(salt: str, kernel_env: dict[str, str] | None = None) -> dict[str, Any]:
        request = recorded_request(RunProtocol.of(task), task.entrypoint, {**workspace, **program},
                                   sandbox.timeout_s)
        if kernel_env:
            request = replace(request, env={**request.env, **kernel_env})
        result, hit = run_cached(cache, sandbox, env, request, salt=salt)
        recorder.count("reference_runs_cached" if hit else "reference_runs_executed")
        if not result.ok:
            tail = (result.stderr.strip().splitlines() or [""])[-1]
            raise Rejected("not_executable", f"reference run {salt} ended with {result.reason}: {tail[:300]}")
        first = not printed_once
        precision: dict[str, list] | None = {} if first else None
        answer = answer_from_run(result, task.answer_from, max_fields, max_table_rows, precision, cwd=task.cwd,
                                 like=task.answer_schema)[1]
        if first:
            printed_once.append(True)
            printed.update(precision)
            printed.update(printed_tables(task, result.files))
        return answer

    printed_once: list[bool] = []
    # A stochastic program gets more runs, so the tolerance reflects its real spread, not one draw.
    runs = reference_runs(reference_run, task.reference_answer, cfg.repeats, cfg.stochastic_repeats)
    if len(runs) > cfg.repeats:
        recorder.count("stochastic_tasks")
    spreads = check_reproducible(task, runs, cfg.max_rel_spread)
    # The consumer's machine (or an agent's own program) may use other numerical kernels: one run with other
    # kernels shows which fields move with them, and by how much; the tolerance covers that too.
    kernel_runs = [reference_run(KERNEL_RUN_SALT, cfg.kernel_probe_env)] if cfg.kernel_probe_env else []
    if kernel_runs:
        with_kernels = check_reproducible(task, runs + kernel_runs, cfg.max_rel_spread, "kernel_sensitive")
        if with_kernels != spreads:
            recorder.count("kernel_sensitive_tasks")
        spreads = with_kernels
    tolerances = calibrate(task, spreads, cfg, element_spreads(task, runs + kernel_runs), printed)
    expected = expected_document(task, tolerances)
    positives, negatives, allowed = check_gradable(task, runs, expected, tolerances, cfg, sandbox, env, cache,
                                                   recorder)
    for control in task.negative_programs:
        negatives[f"program:{control['name']}"] = check_negative_program(
            task, control, workspace, expected, cfg, sandbox, env, cache, recorder, max_fields, max_table_rows)
    check_isolation(task, workspace)
    check_construction(task)
    check_specified(task, workspace)
    # The row records the environment it was verified in (backend, lock), which is what an export rebuilds.
    return VerifiedTaskRow(
        **{**task.model_dump(), "sandbox_spec": env.spec},
        tolerances=tolerances,
        checks={
            "data_files": len(workspace),
            "reference_runs": len(runs),
            "kernel_runs": len(kernel_runs),
            "max_rel_spread": spreads,
            "positive_controls": positives,
            "positive_answer_controls": allowed,
            "negative_controls": negatives,
            "isolation": "clean",
        },
    )


def check_data_integrity(task: TaskRow) -> dict[str, bytes]:
    tree = Path(task.tree)
    files = {}
    for entry in task.workspace_files:
        path = tree / entry.path
        if not path.is_file():
            raise Rejected("data_missing", f"workspace file {entry.path} is missing from the snapshot")
        data = path.read_bytes()
        if hashlib.sha256(data).hexdigest() != entry.sha256:
            raise Rejected("data_changed", f"workspace file {entry.path} no longer matches its snapshot hash")
        files[entry.path] = data
    if not files:
        raise Rejected("data_missing", "the task has no input data")
    return files


def check_reproducible(task: TaskRow, runs: list[dict[str, Any]], max_rel_spread: float,
                       reason: str = "not_reproducible") -> dict[str, float]:
    """Each field's spread over ``runs``; a field that does not reproduce rejects the task for ``reason``
    (``kernel_sensitive`` when the runs include one with other numerical kernels: the same program gives
    another answer on another machine)."""
    spreads, failing = answer_spreads(task.answer_schema, task.reference_answer, runs, max_rel_spread)
    for field in task.answer_schema:  # the first failing field in the schema's order names the reject
        if field.name in failing:
            why, spread = failing[field.name]
            if spread is None:
                raise Rejected(reason, f"field {field.name} {why}", field=field.name)
            raise Rejected(reason, f"field {field.name} {why}", field=field.name, spread=spread)
    return spreads
