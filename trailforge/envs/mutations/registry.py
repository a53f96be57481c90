"""The operator registry and ``find_mutations``, which runs the registered operators over one source."""
from __future__ import annotations

import ast
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

from ..parsing import parse_python
from .edits import Mutation, changes_tree, resolve


@dataclass(frozen=True)
class Operator:
    """A named family of defects and the function that proposes them for a parsed source."""

    name: str
    description: str
    scientific: bool
    find: Callable[[ast.Module, str], Iterable[Mutation]]


OPERATORS: dict[str, Operator] = {}


def register(op: Operator) -> Operator:
    """Add an operator to the registry; registration order is the priority order."""
    existing = OPERATORS.get(op.name)
    if existing is not None and existing != op:
        raise ValueError(f"a different mutation operator is already registered as {op.name!r}")
    OPERATORS[op.name] = op
    return op


def mutation_operator(name: str, description: str, *, scientific: bool):
    """``register`` as a decorator of an operator's finder: modules register their operators as they are
    imported, in the order they define them (``__init__`` imports the scientific ones first)."""
    def decorate(find: Callable[[ast.Module, str], Iterable[Mutation]]):
        register(Operator(name, description, scientific, find))
        return find

    return decorate


def find_mutations(source: str, path: str, operators: Iterable[str] | None = None,
                   lines: set[int] | None = None) -> list[Mutation]:
    """All valid single mutations of ``source``, in a deterministic order.

    ``operators`` selects registry names (None: all). ``lines`` keeps only mutations that
    start on one of those lines (typically the lines a coverage trace saw executed). A
    mutation is dropped when its result does not parse or parses to the same tree as the
    original (for example a change of spelling only). When two operators propose the same
    edit, the one registered first keeps it. A source that does not parse (or is too
    deep to analyse) raises UnparseableSource, a SyntaxError.
    """
    names = list(OPERATORS) if operators is None else list(operators)
    unknown = [name for name in names if name not in OPERATORS]
    if unknown:
        raise ValueError(f"unknown mutation operator(s) {', '.join(map(repr, unknown))}; "
                         f"known: {', '.join(OPERATORS)}")
    # ast refuses a leading byte-order mark in a str; analyse without it and shift line 1 back.
    bom = 1 if source.startswith("\ufeff") else 0
    text = source[bom:]
    tree = parse_python(text, path)
    baselines: dict[int, tuple[int, int, str, str]] = {}
    seen: set[tuple[int, int, int, int, str]] = set()
    kept: list[Mutation] = []
    for name in sorted(set(names), key=list(OPERATORS).index):
        for found in OPERATORS[name].find(tree, text):
            if lines is not None and found.line not in lines:
                continue
            key = (found.line, found.col, found.end_line, found.end_col, found.replacement)
            if key in seen or found.replacement == found.original:
                continue
            seen.add(key)
            start, end = resolve(text, found)
            if changes_tree(tree, text, start, end, found.replacement, baselines):
                kept.append(replace(found, operator=name, path=path,
                                    col=found.col + (bom if found.line == 1 else 0),
                                    end_col=found.end_col + (bom if found.end_line == 1 else 0)))
    kept.sort(key=lambda m: (m.line, m.col, m.operator, m.replacement, m.end_line, m.end_col))
    return kept
