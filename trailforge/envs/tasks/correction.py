"""Correction: mutants on executed lines that feed an output; one is kept only if it exits cleanly, reports
every field, changes the answer beyond the program's own noise, and gives an answer no kept mutant gave."""
from __future__ import annotations

import hashlib


from ...io import TaskRow
from ..mutations import OPERATORS, Mutation, apply_mutation, find_mutations, mutated_line
from .statement import correction_statement
from .compare import fingerprint, slightly_moved
from .context import (
    SeedContext, allowed_operators, feeds_output, innermost_unit, parameter_lines, round_robin, task_id_for,
    without_stated_fields,
)


def correction_candidates(ctx: SeedContext) -> list[Mutation]:
    """Mutations on executed lines that feed an output, scientific operators first, interleaved by operator."""
    lines = ctx.workflow.trace.get("lines", {})
    groups: dict[str, list[Mutation]] = {name: [] for name in OPERATORS}
    for path in ctx.seed.program_files:
        executed = set(lines.get(path, [])) - parameter_lines(ctx, path)
        for mutation in find_mutations(ctx.sources[path], path, allowed_operators(ctx), executed):
            unit = innermost_unit(ctx.program, path, mutation.line)
            if unit is None or not feeds_output(ctx.graph, unit.node_id):
                continue
            groups[mutation.operator].append(mutation)
    for name, group in groups.items():
        ctx.rng(f"correction:{name}").shuffle(group)
    scientific = {n: g for n, g in groups.items() if OPERATORS[n].scientific}
    generic = {n: g for n, g in groups.items() if not OPERATORS[n].scientific}
    return round_robin(scientific) + round_robin(generic)


def mutation_key(mutation: Mutation) -> str:
    """Unique per edit: two edits by one operator on one line (x10 and /10) are two tasks."""
    edit = f"{mutation.col}:{mutation.end_line}:{mutation.end_col}:{mutation.replacement}"
    return f"{mutation.path}:{mutation.line}:{mutation.operator}:{hashlib.sha256(edit.encode()).hexdigest()[:8]}"


def build_corrections(ctx: SeedContext) -> list[TaskRow]:
    if ctx.cfg.correction.max_per_seed == 0:
        return []
    candidates = correction_candidates(ctx)
    budget = ctx.cfg.correction.max_candidates_per_seed
    if len(candidates) > budget:
        ctx.recorder.count("correction_candidates_over_budget", len(candidates) - budget)
    seen = {fingerprint(ctx.schema, ctx.answer)}
    tasks = []
    for mutation in candidates[:budget]:
        if len(tasks) >= ctx.cfg.correction.max_per_seed:
            break
        key = mutation_key(mutation)
        item = task_id_for(ctx.seed.seed_id, f"correction:{key}")
        source = ctx.sources[mutation.path]
        mutant = {**ctx.sources, mutation.path: apply_mutation(source, mutation)}
        result = ctx.run(mutant)
        if not result.ok:
            ctx.recorder.reject(item, "mutant_fails", f"the mutant ended with {result.reason}")
            continue
        if result.duration_s > ctx.sandbox.timeout_s / 2:
            # A mutant this close to the timeout could end either way on another machine: not reproducible.
            ctx.recorder.reject(item, "mutant_slow", f"the mutant took {result.duration_s:.1f}s, over half the timeout")
            continue
        _, got = ctx.answer_of(result)
        changed = ctx.changes(got)
        if changed is None:
            ctx.recorder.reject(item, "mutant_drops_field", "the mutant no longer reports every field")
            continue
        if not changed:
            ctx.recorder.reject(item, "mutant_equivalent", "the mutant's answer matches the reference")
            continue
        print_key = fingerprint(ctx.schema, got)
        if print_key in seen:
            ctx.recorder.reject(item, "mutant_duplicate", "another kept mutant gives the same answer")
            continue
        seen.add(print_key)
        original, mutated = mutated_line(source, mutation)
        # A field the defect moved, but by less than the bar for "wrong", is neither wrong nor surely correct.
        unclaimed = frozenset(slightly_moved(ctx.schema, ctx.answer, got, changed))
        statement, schema, answer = without_stated_fields(
            lambda s, a: correction_statement(ctx.seed.repo_id, ctx.seed.discipline, ctx.seed.script, ctx.data_lines,
                                              {k: v for k, v in changed.items() if k in a}, ctx.seed.program_files,
                                              s, a, unclaimed),
            ctx.schema, ctx.answer, ctx.data_text, ctx.recorder)
        changed = {k: v for k, v in changed.items() if k in answer}
        if statement is None or not changed:
            ctx.recorder.reject(item, "answer_in_statement", "the statement gives every field the defect changes")
            continue
        tasks.append(ctx.base_task(
            "correction", key,
            statement=statement, answer_schema=schema, reference_answer=answer,
            reference_program=dict(ctx.sources), workspace_program=mutant,
            negative_programs=[{"name": "defective", "entrypoint": ctx.seed.script, "files": mutant}],
            construction={"operator": mutation.operator, "description": OPERATORS[mutation.operator].description,
                          "path": mutation.path, "line": mutation.line, "original": original, "mutated": mutated,
                          "changed_fields": sorted(changed), "mutant_answer_fingerprint": print_key,
                          "unclaimed_fields": sorted(unclaimed & set(answer))},
        ))
    return sorted(tasks, key=lambda t: t.task_id)
