"""Reproduction: the whole workflow, end to end, from the data alone; its defective and incomplete controls
are taken from the seed's derived tasks."""
from __future__ import annotations

from pathlib import Path

from ...io import SeedRow, StageRecorder, TaskRow
from ..printed import LINE_SOURCE
from ..protocol import run_note
from ..outline import FIGURE_CALLS, MAX_STEPS, program_outline
from .statement import reproduction_statement
from .answer import seed_answer
from .context import seed_data, task_id_for, without_stated_fields, workspace_text


def build_reproduction(seed: SeedRow, max_fields: int, max_table_rows: int, recorder: StageRecorder,
                       answer: tuple | None = None) -> TaskRow | None:
    """The Reproduction task of a seed; ``answer`` is ``(schema, values)`` when the caller already
    narrowed the seed's answer (to its data-dependent fields)."""
    task_id = task_id_for(seed.seed_id, "reproduction")
    tree = Path(seed.tree)
    program = {path: (tree / path).read_text(encoding="utf-8") for path in seed.program_files}
    schema, answer = answer if answer is not None else seed_answer(seed, max_fields, max_table_rows, recorder)
    if not schema:
        recorder.reject(task_id, "no_structured_answer",
                        "the program printed no 'label: value' result, wrote no readable JSON/CSV result "
                        "and drew no figure with data")
        return None
    data, data_lines = seed_data(seed, program)
    sources = [program[p] for p in seed.program_files]
    figures = any(f.source.startswith("plot:") for f in schema)
    outline = program_outline(program, seed.script, keep=FIGURE_CALLS if figures else frozenset())
    # An outline past MAX_STEPS is no statement anyone reads: ``build_seed_tasks`` drops such a Reproduction
    # (``procedure_too_long``) once the seed's other tasks, which show the code, are built on its answer.
    shown = outline.lines if outline.steps <= MAX_STEPS else None
    statement, schema, answer = without_stated_fields(
        lambda s, a: reproduction_statement(seed.repo_id, seed.discipline, seed.script, data_lines, sources, s, a,
                                            shown),
        schema, answer, workspace_text(data), recorder)
    if statement is None:
        recorder.reject(task_id, "answer_in_statement", "every answer field is given by the statement itself "
                        "(a count equal to a data file's stated line count)")
        return None
    return TaskRow(
        task_id=task_id,
        task_type="reproduction",
        seed_id=seed.seed_id,
        repo_id=seed.repo_id,
        discipline=seed.discipline,
        statement=statement + run_note(seed.script, seed.cwd, seed.args, seed.output_folders, data),
        answer_schema=schema,
        reference_answer=answer,
        entrypoint=seed.script,
        cwd=seed.cwd,
        output_folders=list(seed.output_folders),
        args=list(seed.args),
        reference_program=program,
        workspace_files=seed.data_files,
        tree=seed.tree,
        distributions=seed.distributions,
        sandbox_spec=seed.sandbox_spec,
        construction={"outline_steps": outline.steps},
    )


def attach_controls(reproduction: TaskRow, derived: list[TaskRow]) -> TaskRow:
    """Give the Reproduction task the seed's first defective and incomplete programs as negative controls: a
    defect that moves one of the Reproduction's own fields (it may grade fewer fields than the Correction)."""
    controls = []
    graded = {f.name for f in reproduction.answer_schema}
    for kind, name in (("correction", "defective"), ("completion", "incomplete")):
        for task in derived:
            if task.task_type == kind and (kind != "correction" or graded & set(task.construction.get(
                    "changed_fields", graded))):
                controls.append({"name": name, "entrypoint": task.entrypoint, "files": task.workspace_program})
                break
    return reproduction.model_copy(update={"negative_programs": controls})


def without_line_named_fields(seed: SeedRow, reproduction: TaskRow, budget, recorder: StageRecorder) -> TaskRow | None:
    """The Reproduction without the fields named by the print call that printed them (``calc_gc(seq)``):
    a name taken from code is clear to whoever has the code (Completion, Correction), and a guess from the
    data alone (fraction or percent?). None, a counted reject, when no other field is left."""
    line_named = [f for f in reproduction.answer_schema if f.source.startswith(LINE_SOURCE)]
    if not line_named:
        return reproduction
    kept = [f for f in reproduction.answer_schema if not f.source.startswith(LINE_SOURCE)]
    recorder.count("answer_fields_named_by_code", len(line_named))
    if not kept:
        recorder.reject(reproduction.task_id, "reproduction_needs_the_code",
                        f"every result of {seed.script} is a bare printed number named only by the code that "
                        f"prints it ({', '.join(f.label for f in line_named[:3])}); its derived tasks carry the code")
        return None
    answer = {f.name: reproduction.reference_answer[f.name] for f in kept}
    return build_reproduction(seed, budget.max_answer_fields, budget.max_table_rows, recorder, answer=(kept, answer))
