"""Backward slices: the part of a program that an intermediate result depends on.

A slice is taken statement by statement inside one scope. Walking back from the target
statement, a statement is kept when it defines a name still needed (or may change hidden
state, such as a random seed); a kept statement's reads become needed and the names it
fully rebinds stop being needed. A target inside a function is reached through its call
chain: the single statement that calls the function in the enclosing scope is sliced
the same way, up to the module. The program keeps the original text of every kept
statement (comments inside it included), so the slice reads like the original.

The sliced program ends by saving the target with ``report_result`` under ``result/``.
Whether the slice is right is not assumed: the tasks stage runs it and compares the saved
value with the value observed in the traced run of the whole program.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .parsing import UnparseableSource, parse_python
from .workflow import MODULE_SCOPE, Program, Unit

REPORT_HELPER = '''

def report_result(name, value):
    """Save one result under result/: JSON for numbers, lists and flat mappings, CSV for tables."""
    import json
    import os

    os.makedirs("result", exist_ok=True)
    if hasattr(value, "to_csv"):
        frame = value.to_frame(name=name if value.name is None else value.name) if hasattr(value, "to_frame") else value
        if type(frame.index).__name__ != "RangeIndex":
            frame = frame.reset_index()
        frame.to_csv(os.path.join("result", name + ".csv"), index=False)
        return
    if hasattr(value, "tolist"):
        value = value.tolist()
    elif isinstance(value, dict):
        value = {str(k): v.item() if hasattr(v, "item") else v for k, v in value.items()}
    elif isinstance(value, (list, tuple)):
        value = [v.item() if hasattr(v, "item") else v for v in value]
    with open(os.path.join("result", name + ".json"), "w") as fh:
        json.dump(value, fh)

'''


class SliceError(Exception):
    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason, self.message = reason, message


@dataclass(frozen=True)
class Slice:
    text: str                 # the sliced entry script
    statements: int           # statements kept, all scopes together
    operations: tuple[str, ...]
    steps: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...]  # (defined names, read names, operations)
    lines: frozenset[tuple[str, int]]  # (path, line) of every kept statement of the original


def backward(units: list[Unit], target: int, needed: set[str], uses_override: dict[int, frozenset[str]] | None = None,
             ) -> tuple[set[int], set[str]]:
    """Indices of the statements ``units[target]`` depends on, and the names still free at the scope's start."""
    override = uses_override or {}
    keep = {target}
    needed = set(needed) | set(override.get(target, units[target].uses))
    for index in range(target - 1, -1, -1):
        unit = units[index]
        if unit.defs & needed or unit.effect:
            keep.add(index)
            needed -= unit.kills
            needed |= override.get(index, unit.uses)
    return keep, needed


def call_chain(program: Program, path: str, scope_line: int) -> list[tuple[tuple[str, int], int]]:
    """From a function scope up to the module: the one statement that calls each function."""
    chain = []
    key = (path, scope_line)
    while key[1] != MODULE_SCOPE:
        name = program.scope_name(key)
        method = _method_name(program, key, name)
        if method is not None and len(program.methods[method]) != 1:
            raise SliceError("ambiguous_call_chain", f"{len(program.methods[method])} classes define {method}: "
                                                     f"which one `obj.{method}(...)` runs is not known")
        sites = [(other, unit.index) for other, units in sorted(program.scopes.items()) if other[0] == path
                 for unit in units if other != key and
                 (method in unit.method_calls if method is not None else name in unit.local_calls)]
        if len(sites) != 1:
            raise SliceError("ambiguous_call_chain",
                             f"function {name} is called from {len(sites)} places; a slice needs exactly one")
        chain.append(sites[0])
        key = sites[0][0]
        if len(chain) > 5:
            raise SliceError("ambiguous_call_chain", "call chain deeper than 5")
    return chain


def _method_name(program: Program, key: tuple[str, int], name: str) -> str | None:
    """The name a call uses for the method scope ``key`` (``obj.run()``; the class itself for ``__init__``),
    or None when ``key`` is a plain function."""
    if "." not in name:
        return None
    owner, short = name.rsplit(".", 1)
    called = owner if short == "__init__" else short
    return called if key in program.methods.get(called, ()) else None


def _params(program: Program, key: tuple[str, int], source: str) -> set[str]:
    import ast

    tree = parse_python(source, key[0])
    nodes = [*tree.body, *(n for c in tree.body if isinstance(c, ast.ClassDef) for n in c.body)]
    for node in nodes:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and min(
                [node.lineno, *[d.lineno for d in node.decorator_list]]) == key[1]:
            args = node.args
            names = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]}
            return names | {a.arg for a in (args.vararg, args.kwarg) if a is not None}
    return set()


def slice_program(program: Program, sources: dict[str, str], target: Unit, name: str) -> Slice:
    """The entry script cut down to what computes ``name`` at ``target``, ending with ``report_result``."""
    path = target.path
    if path != program.entry:
        raise SliceError("not_in_entry", "targets live in the entry script")
    source = sources[path]
    levels = [((path, target.scope_line), target.index), *call_chain(program, path, target.scope_line)]
    kept: dict[tuple[str, int], set[int]] = {}
    free_globals: set[str] = set()
    chain_defs: dict[int, frozenset[str]] = {}  # module index of a chain function's def -> what its slice reads
    module_units = program.scopes[(path, MODULE_SCOPE)]
    for key, index in levels:
        units = program.scopes[key]
        if key[1] == MODULE_SCOPE:
            keep, _ = backward(units, index, free_globals, chain_defs)
        else:
            keep, free = backward(units, index, set())
            free -= _params(program, key, source)
            free_globals |= free
            # The module statement that defines the scope: its def, or the class a method belongs to, whose
            # other methods stay whole and keep what they read.
            owner = next(u for u in module_units if u.line <= key[1] <= u.end_line)
            extra = owner.uses if owner.kind == "ClassDef" else frozenset()
            chain_defs[owner.index] = frozenset(free) | chain_defs.get(owner.index, frozenset()) | extra
        kept[key] = keep
    all_units = [u for key, keep in kept.items() for u in program.scopes[key] if u.index in keep]
    _check_no_shared_lines(program, kept)
    lines = source.splitlines(keepends=True)

    def text_of(unit: Unit) -> str:
        return "".join(lines[unit.line - 1:unit.end_line])

    def scope_text(key: tuple[str, int]) -> str:
        out = []
        for unit in program.scopes[key]:
            if unit.index not in kept[key]:
                continue
            inner = (path, unit.line)
            methods = sorted(k for k in kept if k[0] == path and unit.line < k[1] <= unit.end_line) \
                if key[1] == MODULE_SCOPE and unit.kind == "ClassDef" else []
            if methods:  # the class as written, but each method on the chain cut down to its slice
                cursor = unit.line - 1
                for method in methods:
                    body = program.scopes[method]
                    out.append("".join(lines[cursor:body[0].line - 1]))
                    out.append(scope_text(method))
                    cursor = body[-1].end_line
                out.append("".join(lines[cursor:unit.end_line]))
                continue
            if key[1] == MODULE_SCOPE and inner in kept and unit.kind in ("FunctionDef", "AsyncFunctionDef"):
                if unit.body_line <= unit.line:
                    raise SliceError("unsliceable", f"function at line {unit.line} has its body on the def line")
                out.append("".join(lines[unit.line - 1:unit.body_line - 1]))
                out.append(scope_text(inner))
                continue
            out.append(text_of(unit))
            if unit is target or (unit.path, unit.line) == (target.path, target.line):
                first = lines[unit.line - 1]
                indent = first[:len(first) - len(first.lstrip())]
                out.append(f"{indent}report_result({name!r}, {name})\n")
                if key[1] != MODULE_SCOPE:
                    out.append(f"{indent}raise SystemExit(0)\n")
        return "".join(out)

    body = scope_text((path, MODULE_SCOPE))
    text = _insert_helper(body, program, kept[(path, MODULE_SCOPE)], lines)
    steps = tuple(
        (_in_written_order(u.defs, text_of(u)), tuple(sorted(u.uses & _defined(all_units))),
         tuple(c for c in u.calls if c != "arithmetic"))
        for u in sorted(all_units, key=lambda u: u.line)
        if u.kind not in ("Import", "ImportFrom", "FunctionDef", "AsyncFunctionDef") and u.defs
    )
    operations = tuple(dict.fromkeys(c for u in sorted(all_units, key=lambda u: u.line) for c in u.calls))
    try:  # the slice is text cut from the source: what cannot be parsed never runs, and is a counted reject
        parse_python(text, path)
    except UnparseableSource as exc:
        raise SliceError("slice_unparseable", f"the slice for {name} at line {target.line} does not parse: "
                                              f"{exc.detail}") from None
    return Slice(text=text, statements=len(all_units), operations=operations, steps=steps,
                 lines=frozenset((u.path, u.line) for u in all_units))


def _in_written_order(names, text: str) -> tuple[str, ...]:
    """``slope, intercept = np.polyfit(...)`` defines ``slope`` then ``intercept``: names as the code writes them."""
    def first(name: str) -> tuple[int, str]:
        found = re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", text)
        return (found.start() if found else len(text), name)
    return tuple(sorted(names, key=first))


def _defined(units: list[Unit]) -> set[str]:
    return {name for u in units for name in u.defs}


def _check_no_shared_lines(program: Program, kept: dict[tuple[str, int], set[int]]) -> None:
    for key in kept:
        units = program.scopes[key]
        for before, after in zip(units, units[1:]):
            if after.line <= before.end_line:
                raise SliceError("unsliceable", f"two statements share line {after.line}")


def _insert_helper(body: str, program: Program, module_kept: set[int], lines: list[str]) -> str:
    """Put ``report_result`` after the leading docstring and imports, where a reader expects helpers."""
    out = body.splitlines(keepends=True)
    position = 0
    for unit in program.scopes[(program.entry, MODULE_SCOPE)]:
        if unit.index not in module_kept:
            continue
        if unit.kind in ("Import", "ImportFrom") or (unit.kind == "Expr" and not unit.calls and not unit.uses):
            position += unit.end_line - unit.line + 1
            continue
        break
    helper = REPORT_HELPER.lstrip("\n")
    return "".join(out[:position]) + ("\n" if position else "") + helper + "\n" + "".join(out[position:])
