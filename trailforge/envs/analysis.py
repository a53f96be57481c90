"""What a program computes with, read from its syntax tree (it is never run here).

The library calls it makes, in order; the named constants at module level; every number written in the
code that can change a result, with the smallest piece of code that says what it does. Statements list
these so an agent that sees no code knows every choice the answer depends on, and ``verify`` checks that a
statement states each one (``underspecified`` otherwise).
"""
from __future__ import annotations

import ast
import re

from .outline import COSMETIC_CALLS
from .parsing import call_name

_BORING_CALLS = {
    "print", "len", "range", "str", "int", "float", "list", "dict", "set", "tuple", "sorted", "enumerate", "zip",
    "round", "format", "isinstance", "min", "max", "abs", "sum", "append", "items", "keys", "values", "get", "join",
    "split", "strip", "startswith", "endswith", "replace", "lower", "upper", "makedirs", "dump", "write", "exists",
    "setdefault", "extend", "update", "add", "pop", "open", "iter", "next", "map", "filter", "any", "all", "rstrip",
    "lstrip", "to_csv", "to_json", "savetxt", "save",
}


def operations(source: str) -> list[str]:
    """Library calls in order of first appearance, with import aliases resolved."""
    module = ast.parse(source)
    aliases = import_aliases(module)
    # In a chain such as df.groupby(...).mean() both calls start at the same place; the inner one
    # (shorter) runs first.
    calls = sorted((n for n in ast.walk(module) if isinstance(n, ast.Call)),
                   key=lambda n: (n.lineno, n.col_offset, n.end_lineno, n.end_col_offset))
    seen: list[str] = []
    for call in calls:
        name = qualified_call_name(call.func, aliases)
        if name and name.split(".")[-1] not in _BORING_CALLS and name not in seen:
            seen.append(name)
    return seen[:30]


def import_aliases(module: ast.Module) -> dict[str, str]:
    """Local name -> what it was imported as (``np`` -> ``numpy``, ``lr`` -> ``scipy.stats.linregress``)."""
    aliases = {}
    for node in ast.walk(module):
        if isinstance(node, ast.Import):
            for alias in node.names:
                aliases[alias.asname or alias.name] = alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return aliases


def qualified_call_name(func, aliases) -> str | None:
    """The imported name a call reaches (``numpy.polyfit`` for ``np.polyfit`` given ``import numpy as np``),
    ``.method`` for a method of a value, None for a function the program defines itself."""
    parts = []
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if isinstance(func, ast.Name):
        root = aliases.get(func.id)
        if root:
            return ".".join([root, *reversed(parts)])
        if not parts:
            return None  # a function the program defines itself
    return "." + parts[0] if parts else None


def literal_values(source: str) -> set:
    """Every constant written in the program (numbers and strings)."""
    values = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, str)) and not isinstance(node.value, bool):
            values.add(node.value)
    return values


def stable_repr(value) -> str:
    """repr() with sets sorted, so a statement never depends on hash randomisation."""
    if isinstance(value, (set, frozenset)):
        return "{" + ", ".join(sorted(stable_repr(v) for v in value)) + "}" if value else "set()"
    if isinstance(value, tuple):
        inner = ", ".join(stable_repr(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, list):
        return "[" + ", ".join(stable_repr(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{stable_repr(k)}: {stable_repr(v)}" for k, v in value.items()) + "}"
    return repr(value)


def _only_safe_strings(value) -> bool:
    """Strings from a repository are untrusted: only short identifier-like ones reach a statement."""
    if isinstance(value, str):
        return re.fullmatch(r"[\w.+/-]{1,30}", value) is not None
    if isinstance(value, (set, frozenset, tuple, list)):
        return all(_only_safe_strings(v) for v in value)
    if isinstance(value, dict):
        return all(_only_safe_strings(k) and _only_safe_strings(v) for k, v in value.items())
    return True


def constants(source: str) -> list[str]:
    """Module-level UPPER_CASE constants with literal values (parameters of the analysis)."""
    found = []
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            if name.isupper():
                try:
                    value = ast.literal_eval(node.value)
                except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                    continue
                shown = stable_repr(value)
                if len(shown) <= 80 and _only_safe_strings(value):
                    found.append(f"{name} = {shown}")
    return found


# Numbers that parameterise nothing: an index, a sign, a unit step, a halving.
_TRIVIAL_NUMBERS = {0, 1, -1, 2, 0.5}

# Keywords whose values shape a figure or a print, never a result.
_PRESENTATION_KEYWORDS = {
    "figsize", "dpi", "fontsize", "size", "s", "linewidth", "lw", "markersize", "ms", "alpha", "zorder", "rotation",
    "labelsize", "pad", "width", "height", "ncol", "loc", "precision", "indent", "decimals", "axis", "ndmin",
    "nrows", "ncols", "capsize", "elinewidth", "bbox_to_anchor", "x", "y", "labelpad", "wspace", "hspace",
}

MAX_PARAMETERS = 40  # a statement that would need more cannot state them all (``underspecified``)

_RENDER_LIMIT = 90


def _parents(module: ast.AST) -> dict[int, ast.AST]:
    parents = {}
    for node in ast.walk(module):
        for child in ast.iter_child_nodes(node):
            parents[id(child)] = node
    return parents


def _numeric_value(node: ast.AST, parents: dict[int, ast.AST]):
    """The number a literal node stands for (a leading minus included), or None."""
    if not isinstance(node, ast.Constant) or isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
        return None
    parent = parents.get(id(node))
    if isinstance(parent, ast.UnaryOp) and isinstance(parent.op, ast.USub):
        return -node.value
    return node.value


def _matters(node: ast.AST, value, parents: dict[int, ast.AST]) -> bool:
    """Whether a number in the program can change a result: not trivial, not an index, not presentation."""
    if value in _TRIVIAL_NUMBERS:
        return False
    child, parent = node, parents.get(id(node))
    bound = False  # a slice bound picks which rows enter the computation: rows[10:] drops a burn-in
    while parent is not None and not isinstance(parent, ast.stmt):
        bound = bound or isinstance(parent, ast.Slice)
        if not bound and isinstance(parent, ast.Subscript) and child is parent.slice \
                and isinstance(child, (ast.Constant, ast.Tuple, ast.UnaryOp)):
            return False  # x[:, 3]: where to look, not how to compute (a mask x[x > 2.5] is; so is a window 0:200)
        if isinstance(parent, ast.keyword) and parent.arg in _PRESENTATION_KEYWORDS:
            return False
        if isinstance(parent, ast.Call) and call_name(parent) in COSMETIC_CALLS:
            return False  # plt.subplots_adjust(top=0.85), plt.title(name[39:-4]): the figure's dress, not its data
        if isinstance(parent, ast.JoinedStr):
            return False  # a format width inside an f-string
        child, parent = parent, parents.get(id(parent))
    return True


def _render(node: ast.AST) -> str | None:
    """Short code for a piece of the program, or None when it is long or carries untrusted text."""
    strings = [n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    if not all(_only_safe_strings(v) for v in strings):
        return None
    try:
        text = ast.unparse(node)
    except (ValueError, RecursionError):
        return None
    return text if len(text) <= _RENDER_LIMIT and "\n" not in text and "`" not in text else None


def analysis_numbers(source: str) -> list[tuple[float, int, str]]:
    """``(value, line, context)`` of each number written in the program that can change a result.

    ``context`` is the smallest piece of code that says what the number does: the call it is an
    argument of, the assignment it is the value of, or the comparison it is a bound of; failing
    that, the bare number. These are what a statement must give when the agent sees no code.
    """
    module = ast.parse(source)
    parents = _parents(module)
    found = []
    for node in ast.walk(module):
        value = _numeric_value(node, parents)
        if value is None or not _matters(node, value, parents):
            continue
        context, fallback, parent = None, None, parents.get(id(node))
        while parent is not None and context is None:
            if isinstance(parent, (ast.Call, ast.Compare, ast.Assign, ast.AnnAssign, ast.AugAssign)):
                context = _render(parent)
            elif isinstance(parent, (ast.keyword, ast.Subscript)) and fallback is None:
                fallback = _render(parent)  # ``bins=20``, ``name[39:-4]`` when the whole call cannot be shown
            if isinstance(parent, ast.stmt):
                break
            parent = parents.get(id(parent))
        found.append((value, node.lineno, context or fallback or repr(value)))
    return sorted(found, key=lambda item: (item[1], item[2]))


def parameters(source: str) -> list[str]:
    """What the statement lists as the analysis's parameters: its named constants, then every other number
    that can change a result, in the code that uses it (random seeds included), each once."""
    lines = constants(source)
    for _, _, context in analysis_numbers(source):
        if context not in lines and not any(context == c.split(" = ", 1)[0] for c in lines):
            lines.append(context)
    return lines
