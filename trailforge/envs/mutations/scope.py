"""What a mutation may touch, and the facts about a tree that operators look up.

Code that is not analysis is never mutated: docstrings, imports, decorators, annotations, f-strings, arguments of
``print``, assertions and the ``__name__ == "__main__"`` guard; nor are random seeds and indices."""
from __future__ import annotations

import ast
from collections.abc import Callable, Iterator

from .edits import Mutation, rename


_HIDDEN_FIELDS = {"decorator_list", "annotation", "returns"}


# (tree, entries) of the last walk, so the operators of one find_mutations call share it;
# replaced as one tuple so that concurrent callers never pair one tree with another's walk
_last_scan: list[tuple[ast.AST, list] | None] = [None]


def _is_main_guard(test: ast.AST) -> bool:
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return False
    sides = [test.left, test.comparators[0]]
    return (any(isinstance(s, ast.Name) and s.id == "__name__" for s in sides)
            and any(isinstance(s, ast.Constant) and s.value == "__main__" for s in sides))


def _hidden(node: ast.AST) -> bool:
    """Subtrees that are not analysis and must never be mutated."""
    if isinstance(node, (ast.Import, ast.ImportFrom, ast.JoinedStr)):
        return True
    if isinstance(node, ast.Assert):
        return True  # a weakened or broken check changes no result; it only crashes or not
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
        return True  # docstrings and other bare strings
    # what a program prints is its report, not its analysis
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print"


def visible_nodes(tree: ast.AST) -> list[tuple[ast.AST, ast.AST | None, str]]:
    """Every mutable node as (node, parent, field name in parent), in source-walk order."""
    cached = _last_scan[0]
    if cached is not None and cached[0] is tree:
        return cached[1]
    entries = []
    stack: list[tuple[ast.AST, ast.AST | None, str]] = [(tree, None, "")]
    while stack:  # iterative: deeply nested expressions must not hit the recursion limit
        node, parent, field = stack.pop()
        if _hidden(node):
            continue
        entries.append((node, parent, field))
        children = []
        for name, value in ast.iter_fields(node):
            if name in _HIDDEN_FIELDS or (name == "test" and isinstance(node, ast.If) and _is_main_guard(value)):
                continue
            for child in value if isinstance(value, list) else [value]:
                if isinstance(child, ast.AST):
                    children.append((child, node, name))
        stack.extend(reversed(children))
    _last_scan[0] = (tree, entries)
    return entries


def parent_links(tree: ast.AST) -> dict[int, tuple[ast.AST | None, str]]:
    return {id(node): (parent, field) for node, parent, field in visible_nodes(tree)}


def _climb(node: ast.AST, parents, through: tuple[type, ...]) -> tuple[ast.AST | None, str]:
    """The first ancestor that is not one of ``through``, and the field leading to it."""
    parent, field = parents[id(node)]
    while isinstance(parent, through) and id(parent) in parents:
        parent, field = parents[id(parent)]
    return parent, field


def literal_context(node: ast.AST, parents) -> tuple[ast.AST | None, str]:
    """Parent of a number literal, looking through a sign in front of it."""
    return _climb(node, parents, (ast.UnaryOp,))


def in_index(node: ast.AST, parents) -> bool:
    parent, field = _climb(node, parents, (ast.UnaryOp, ast.Tuple, ast.Slice))
    return isinstance(parent, ast.Subscript) and field == "slice"


_SEED_KEYWORDS = {"seed", "random_state", "rng", "random_seed"}


_SEED_CALLS = {"seed", "default_rng", "RandomState", "manual_seed", "Random", "PRNGKey", "Generator"}


def protected_literal(node: ast.AST, parents) -> bool:
    """Literals whose change is not an analysis defect: axes, ddof, random seeds."""
    parent, _ = _climb(node, parents, (ast.UnaryOp, ast.Tuple, ast.List))
    if isinstance(parent, ast.keyword):
        return parent.arg in {"axis", "ddof"} | _SEED_KEYWORDS
    if isinstance(parent, ast.Call):
        return callee(parent)[0] in _SEED_CALLS
    if isinstance(parent, (ast.Assign, ast.AnnAssign)):
        targets = parent.targets if isinstance(parent, ast.Assign) else [parent.target]
        return any(isinstance(t, ast.Name) and "seed" in t.id.lower() for t in targets)
    return False


def int_value(node: ast.AST) -> int | None:
    """The value of an integer literal, including a signed one like ``-1``; None otherwise."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)) \
            and isinstance(node.operand, ast.Constant) and type(node.operand.value) is int:
        return -node.operand.value if isinstance(node.op, ast.USub) else node.operand.value
    return None


def is_number(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) in (int, float)


def callee(call: ast.Call) -> tuple[str | None, ast.expr | None]:
    """(function name, receiver) for ``name(...)`` (receiver None) and ``obj.name(...)``."""
    if isinstance(call.func, ast.Name):
        return call.func.id, None
    if isinstance(call.func, ast.Attribute):
        return call.func.attr, call.func.value
    return None, None


_DEFAULT_MODULES = {"np": "numpy", "numpy": "numpy", "math": "math", "cmath": "cmath", "statistics": "statistics",
                    "pd": "pandas", "pandas": "pandas", "scipy": "scipy"}


def imports(tree: ast.AST) -> tuple[dict[str, str], dict[str, str]]:
    """(local module names -> module, local names from ``from m import n`` -> 'm.n')."""
    modules = dict(_DEFAULT_MODULES)
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    modules[alias.asname] = alias.name
                else:
                    root = alias.name.split(".")[0]
                    modules[root] = root
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
                modules[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return modules, names


def module_of(expr: ast.AST | None, modules: dict[str, str]) -> str | None:
    """The module an expression like ``np`` or ``scipy.stats`` names, if it names one."""
    parts = []
    while isinstance(expr, ast.Attribute):
        parts.append(expr.attr)
        expr = expr.value
    if not isinstance(expr, ast.Name) or expr.id not in modules:
        return None
    return ".".join([modules[expr.id], *reversed(parts)])


def calls(tree: ast.AST) -> Iterator[ast.Call]:
    return (node for node, _, _ in visible_nodes(tree) if isinstance(node, ast.Call))


def renames(operator: str, tree: ast.AST, source: str, swaps: dict[str, list[str]], allow_method: bool,
             modules_ok: Callable[[str, str], bool],
             call_ok: Callable[[ast.Call], bool] = lambda call: True) -> Iterator[Mutation]:
    """Rename called functions according to ``swaps``.

    ``obj.f(...)`` is renamed when ``obj`` names a module accepted by ``modules_ok`` or,
    if ``allow_method``, when it is any other object (a method call). A bare ``f(...)`` is
    renamed only when the new name was imported the same way (``from m import f, g``),
    so the mutant does not fail on an undefined name.
    """
    modules, names = imports(tree)
    for call in calls(tree):
        name, receiver = callee(call)
        if name not in swaps or not call_ok(call):
            continue
        module = module_of(receiver, modules) if receiver is not None else None
        for new in swaps[name]:
            if receiver is None:
                origin = names.get(name, "")
                if not origin or names.get(new) != origin.rsplit(".", 1)[0] + "." + new:
                    continue
            elif module is not None:
                if not modules_ok(module, new):
                    continue
            elif not allow_method:
                continue
            mutation = rename(operator, source, call, new)
            if mutation is not None:
                yield mutation


def is_zero(node: ast.AST) -> bool:
    return is_number(node) and node.value == 0


def is_sequence_literal(node: ast.AST) -> bool:
    """Operands for which + and * mean concatenation or repetition, not arithmetic."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (str, bytes))
    return isinstance(node, (ast.JoinedStr, ast.List, ast.Tuple, ast.ListComp, ast.Dict, ast.Set))
