"""Synthesise tasks from seed programs (the `tasks` stage's library).

Reproduction is the whole workflow, end to end: the reference answer is the structured result of the seed
run; the reference program is the seed script plus the repository modules it imported; the agent's
workspace holds only the data files the program was observed to read. Subflow, Completion and Correction
are derived from the same seed and its workflow graph, and every one is checked by execution before it
leaves the stage:

- Subflow (``subflow.py``): the backward slice that computes an intermediate result is run, and the value it
  saves must equal the value observed in the traced run of the whole program.
- Completion (``completion.py``): a function body or a statement on the answer's dependency slice is replaced
  by a line that raises; the program with the hole is the task's incomplete control.
- Correction (``correction.py``): mutants are run; one is kept only if it exits cleanly, still reports every
  field, differs materially from the reference answer (``compare.py``), sits on a line that executed and
  feeds an output, and differs in output from every mutant kept before it.

What they all start from is the seed's answer (``answer.py``): its results without echoed constants, without
fields that do not reproduce between runs, narrowed to the fields that move with the data. ``seed_tasks.py``
puts one seed's tasks together. All choices are deterministic for a given ``seed``: candidates are ordered,
then shuffled with a generator seeded from the recipe's seed and the seed program's id.
"""
from .answer import data_dependent_answer, reproducible_answer, seed_answer, still_fields
from .compare import differences, field_difference, fingerprint, slightly_moved
from .context import SeedContext, eval_script, seed_context, task_id_for, without_stated_fields, workspace_text
from .reproduction import attach_controls, build_reproduction
from .seed_tasks import build_seed_tasks

__all__ = [
    "SeedContext", "attach_controls", "build_reproduction", "build_seed_tasks", "data_dependent_answer",
    "differences", "eval_script", "field_difference", "fingerprint", "reproducible_answer", "seed_answer",
    "seed_context", "slightly_moved", "still_fields", "task_id_for", "without_stated_fields", "workspace_text",
]
