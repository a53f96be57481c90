"""All task types the recipe asks for, from one seed program."""
from __future__ import annotations

from pathlib import Path

from ...io import SeedRow, StageRecorder, TaskRow
from ..outline import MAX_STEPS
from .answer import data_dependent_answer, raw_statistic_fields, reproducible_answer, seed_answer
from .completion import build_completions
from .context import seed_context, task_id_for
from .correction import build_corrections
from .reproduction import attach_controls, build_reproduction, without_line_named_fields
from .subflow import build_subflows


def build_seed_tasks(seed: SeedRow, workflow, cfg, sandbox, cache, recorder: StageRecorder,
                     seeds_in_repository: int | None = None) -> list[TaskRow]:
    """All task types the recipe asks for, from one seed program (``cfg`` is the whole config). With
    ``seeds_in_repository``, the per-seed caps are the ones a repository of that many seeds gets
    (``TasksConfig.for_repository``)."""

    budget, types = cfg.budget, cfg.tasks.types
    schema, answer = seed_answer(seed, budget.max_answer_fields, budget.max_table_rows, recorder)
    noise: dict[str, float] = {}
    if schema:
        checked = reproducible_answer(seed, schema, answer, cfg, sandbox, cache, recorder)
        if checked is None:
            return []
        schema, answer, noise = checked
    if schema and cfg.tasks.data_dependence.enabled:
        narrowed = data_dependent_answer(seed, schema, answer, cfg, sandbox, cache, recorder, noise)
        if narrowed is None:
            return []
        schema, answer = narrowed
    if schema:
        tree = Path(seed.tree)
        raw = raw_statistic_fields(schema, answer, {f.path: (tree / f.path).read_bytes() for f in seed.data_files})
        recorder.count("answer_fields_raw_data_statistic", len(raw))
        if raw and len(raw) == len(schema):
            recorder.reject(task_id_for(seed.seed_id, "reproduction"), "answer_is_raw_data",
                            "every answer field is a plain statistic of one input column (its minimum, maximum, "
                            f"sum, mean or median, or a row count): {', '.join(raw[:5])}")
            return []
        schema = [f for f in schema if f.name not in raw]
        answer = {f.name: answer[f.name] for f in schema}
    reproduction = build_reproduction(seed, budget.max_answer_fields, budget.max_table_rows, recorder,
                                      answer=(schema, answer))
    if reproduction is None:
        return []
    derived: list[TaskRow] = []
    if workflow is None:
        if set(types) - {"reproduction"}:
            recorder.reject(seed.seed_id, "no_workflow", "the workflows stage has no graph for this seed; "
                            "only Reproduction is possible")
    elif set(types) - {"reproduction"}:
        tasks_cfg = cfg.tasks.for_repository(seeds_in_repository) if seeds_in_repository else cfg.tasks
        ctx = seed_context(seed, workflow, reproduction.answer_schema, reproduction.reference_answer, sandbox, cache,
                           recorder, tasks_cfg, cfg.seed, budget.max_answer_fields, budget.max_table_rows, noise)
        if ctx is not None:
            builders = {"subflow": build_subflows, "completion": build_completions, "correction": build_corrections}
            for kind in ("subflow", "completion", "correction"):
                if kind == "subflow" and kind in types and seed.parameters_file:
                    # A Subflow names the values a step combines, not how: for a model's own arithmetic (a
                    # simulation's update rule) that is a guess, as for its Reproduction below.
                    recorder.reject(seed.seed_id, "subflow_needs_the_model",
                                    f"the only data of {seed.script} are its own constants: its intermediate "
                                    "results follow from the model's equations, which a Subflow statement does not give")
                    continue
                if kind in types:
                    try:
                        derived += builders[kind](ctx)
                    except Exception as exc:  # one odd program must cost its own tasks, not the stage
                        recorder.reject(seed.seed_id, f"{kind}_error",
                                        f"deriving {kind} tasks failed: {type(exc).__name__}: {exc}"[:500])
    if "reproduction" in types and seed.parameters_file:
        # "Reproduce it from the data alone" with the program's own constants as the data would have to give
        # the model itself (the equations, the integration scheme), which only the code states; the statement
        # lists operations, so the task is not answerable. Its derived tasks carry the code and stay.
        recorder.reject(reproduction.task_id, "reproduction_needs_the_model",
                        f"the only data of {seed.script} are its own constants ({seed.parameters_file}): reproducing "
                        "it needs its model, which only the code states")
        return derived
    steps = reproduction.construction.get("outline_steps", 0)
    if "reproduction" in types and steps > MAX_STEPS:
        # Slicing the outline to what the graded results depend on would let long programs through; until then
        # a statement that cannot state every step is no task. The derived tasks carry the code and stay.
        recorder.reject(reproduction.task_id, "procedure_too_long",
                        f"{seed.script} has {steps} steps; a Reproduction statement states at most {MAX_STEPS}")
        return derived
    if "reproduction" in types:
        reproduction = without_line_named_fields(seed, reproduction, budget, recorder)
    out = [attach_controls(reproduction, derived)] if "reproduction" in types and reproduction else []
    return out + derived
