"""Find entry scripts that read data and produce results, run them, keep those that work.

A candidate is a Python file that parses, is meant to be run (a ``__main__`` guard or
top-level statements beyond definitions) and refers to data. Each candidate runs in the
sandbox on a copy of the whole snapshot under a tracer that records the files it read
and the repository modules it imported. A seed program is a candidate that exits
cleanly, reads at least one data file and prints or writes something.

A script that reads no data file but sets numeric constants at module level (a simulation,
a teaching example) gets its constants moved into a generated parameters file
(``parameters.py``); the rewritten program is run too and becomes the seed only when its
outputs are identical to the original's, and lives in a tree of its own under ``trees``.

The package: ``candidates`` (what is worth running), ``ladder`` (the environments tried), ``runs`` (running a
repository's candidates), ``seed_rows`` (a seed row from a clean run), ``cuts`` (the prefix of a script that fails
late) and ``parameter_seeds`` (constants moved to a parameters file).
"""
from .candidates import SeedCandidate, find_candidates, is_entry_point, promise, refers_to_data, unusable_files
from .cuts import MAX_CUTS, cut_before
from .ladder import ERA_ERRORS, Rung, dependency_ladder, failing_line, portable_stderr
from .parameter_seeds import reproduction_problem
from .runs import run_candidate, run_repository
from .seed_rows import MAX_TABLE_TEXT_OUTPUT, MAX_TEXT_OUTPUT, output_folders, write_seed_tree

__all__ = [
    "ERA_ERRORS", "MAX_CUTS", "MAX_TABLE_TEXT_OUTPUT", "MAX_TEXT_OUTPUT", "Rung", "SeedCandidate", "cut_before",
    "dependency_ladder", "failing_line", "find_candidates", "is_entry_point", "output_folders", "portable_stderr",
    "promise", "refers_to_data", "reproduction_problem", "run_candidate", "run_repository", "unusable_files",
    "write_seed_tree",
]
