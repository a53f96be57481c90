"""Synthesise tasks from seed programs.

Reproduction is the whole workflow, end to end: the reference answer is the structured
result of the seed run; the reference program is the seed script plus the repository
modules it imported; the agent's workspace holds only the data files the program was
observed to read. Subflow, Completion and Correction are derived from the same seed and
its workflow graph (``derived.py``); they share the Reproduction answer where they ask
for the whole workflow's results.
"""
from __future__ import annotations

import functools
import re
from collections import Counter
from importlib import resources
from pathlib import Path

from ..io import SeedRow, StageRecorder, TaskRow
from .answers import extract_answer
from .protocol import run_note
from .statement import describe_data_file, literal_values, reproduction_statement


@functools.cache
def eval_script() -> str:
    return resources.files("trailforge.envs").joinpath("templates/eval.py").read_text(encoding="utf-8")


def task_id_for(seed_id: str, task_type: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "__", f"{seed_id}:{task_type}")


def build_reproduction(seed: SeedRow, max_fields: int, max_table_rows: int, recorder: StageRecorder) -> TaskRow | None:
    task_id = task_id_for(seed.seed_id, "reproduction")
    files = {w.path: w.text for w in seed.files_written}
    refused: Counter = Counter()
    schema, answer, dropped = extract_answer(seed.stdout, files, max_fields, max_table_rows, skipped=refused,
                                             plots=seed.plots)
    if dropped:
        recorder.count("answer_fields_over_cap", dropped)
    for reason, n in sorted(refused.items()):  # results whose label may not reach a statement
        recorder.count(f"answer_fields_{reason}", n)
    tree = Path(seed.tree)
    program = {path: (tree / path).read_text(encoding="utf-8") for path in seed.program_files}
    schema, answer = drop_echoed_settings(schema, answer, program, recorder)
    if not schema:
        recorder.reject(task_id, "no_structured_answer",
                        "the program printed no 'label: value' result, wrote no readable JSON/CSV result "
                        "and drew no figure with data")
        return None
    data_lines = [describe_data_file(f, (tree / f.path).read_bytes()) for f in seed.data_files]
    statement = reproduction_statement(
        seed.repo_id, seed.discipline, seed.script, data_lines, [program[p] for p in seed.program_files], schema, answer
    )
    return TaskRow(
        task_id=task_id,
        task_type="reproduction",
        seed_id=seed.seed_id,
        repo_id=seed.repo_id,
        discipline=seed.discipline,
        statement=statement + run_note(seed.script, seed.cwd, seed.args),
        answer_schema=schema,
        reference_answer=answer,
        entrypoint=seed.script,
        cwd=seed.cwd,
        args=list(seed.args),
        reference_program=program,
        workspace_files=seed.data_files,
        tree=seed.tree,
        distributions=seed.distributions,
        sandbox_spec=seed.sandbox_spec,
    )


def drop_echoed_settings(schema, answer, program: dict[str, str], recorder: StageRecorder):
    """Remove fields that only echo a constant written in the program (a seed, a resample count).

    Such a value is an input of the analysis, not a result: asking for it tests nothing, and
    the statement's parameter list would give it away.
    """
    literals = set()
    for source in program.values():
        literals |= literal_values(source)
    kept = []
    for field in schema:
        value = answer[field.name]
        trivial_int = field.type == "integer" and -9 <= value <= 9
        if field.type in ("integer", "number", "string") and not trivial_int and value in literals:
            recorder.count("answer_fields_echoing_program_constants")
            continue
        kept.append(field)
    return kept, {f.name: answer[f.name] for f in kept}


def build_seed_tasks(seed: SeedRow, workflow, cfg, sandbox, cache, recorder: StageRecorder) -> list[TaskRow]:
    """All task types the recipe asks for, from one seed program (``cfg`` is the whole config)."""
    from .derived import attach_controls, build_completions, build_corrections, build_subflows, seed_context

    budget, types = cfg.budget, cfg.tasks.types
    reproduction = build_reproduction(seed, budget.max_answer_fields, budget.max_table_rows, recorder)
    if reproduction is None:
        return []
    derived: list[TaskRow] = []
    if workflow is None:
        if set(types) - {"reproduction"}:
            recorder.reject(seed.seed_id, "no_workflow", "the workflows stage has no graph for this seed; "
                            "only Reproduction is possible")
    elif set(types) - {"reproduction"}:
        ctx = seed_context(seed, workflow, reproduction.answer_schema, reproduction.reference_answer, sandbox, cache,
                           recorder, cfg.tasks, cfg.seed, budget.max_answer_fields, budget.max_table_rows)
        if ctx is not None:
            builders = {"subflow": build_subflows, "completion": build_completions, "correction": build_corrections}
            for kind in ("subflow", "completion", "correction"):
                if kind in types:
                    try:
                        derived += builders[kind](ctx)
                    except Exception as exc:  # one odd program must cost its own tasks, not the stage
                        recorder.reject(seed.seed_id, f"{kind}_error",
                                        f"deriving {kind} tasks failed: {type(exc).__name__}: {exc}"[:500])
    out = [attach_controls(reproduction, derived)] if "reproduction" in types else []
    return out + derived
