"""Plant one deliberate, plausible defect in a working scientific program.

A correction task hands an agent a program that still runs but now answers wrongly, and
asks for the fix. This module proposes such defects without running anything: each
operator walks the syntax tree of the source, recognises a pattern that a scientist could
plausibly get wrong (a reduction over the wrong axis, a sample versus a population
variance, a logarithm in the wrong base, a boundary that includes what it should exclude,
a missing normalisation...) and describes the defect as a text edit: a span of the
original source plus the text that replaces it. Applying a mutation splices that text in,
so every other byte of the file (comments, layout, quoting) is untouched and the diff is
exactly the defect. Callers execute the mutants elsewhere and keep only those that still
run and change the answer, so operators may be slightly optimistic (a method that does
not exist on the receiver just produces a mutant that crashes and is discarded).

Positions: the ``ast`` module reports columns in UTF-8 bytes, but mutations carry
character columns, because callers index Python strings; every conversion goes through
``edits._offset``. Code that is not analysis is never mutated: docstrings, imports, decorators,
annotations, f-strings, arguments of ``print`` and the ``__name__ == "__main__"`` guard.

The package: ``edits`` (mutations as text edits, positions, precedence), ``scope`` (what may be mutated, tree
facts), ``registry`` (``register``, ``mutation_operator``, ``find_mutations``), and the operators, ``scientific``
then ``generic``: importing them registers them, and the registration order is the priority order.
"""
from .edits import Mutation, apply_mutation, mutated_line
from .registry import OPERATORS, Operator, find_mutations, mutation_operator, register
# Importing the operator modules registers their operators: the scientific ones first, at higher priority.
from . import scientific  # noqa: F401
from . import generic  # noqa: F401

__all__ = ["OPERATORS", "Mutation", "Operator", "apply_mutation", "find_mutations", "mutated_line", "mutation_operator",
           "register"]
