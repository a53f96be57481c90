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

import posixpath
import re
from dataclasses import dataclass, field

from .parsing import UnparseableSource, parse_python
from .workflow import MODULE_SCOPE, Program, Unit

REPORT_FUNCTION = "report_result"  # what REPORT_HELPER defines; not the analysis's own code
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
    files: dict[str, str] = field(default_factory=dict)  # every file the slice changes (the entry included)
    target_path: str = ""  # the file that reports the target
    spans: tuple[tuple[str, int, int], ...] = ()  # (path, first line, last line) of every kept statement


def backward(units: list[Unit], target: int, needed: set[str], uses_override: dict[int, frozenset[str]] | None = None,
             effects: frozenset[int] = frozenset()) -> tuple[set[int], set[str]]:
    """Indices of the statements ``units[target]`` depends on, and the names still free at the scope's start.
    ``effects``: indices kept whatever they define (they may change state the target reads)."""
    override = uses_override or {}
    keep = {target}
    needed = set(needed) | set(override.get(target, units[target].uses))
    for index in range(target - 1, -1, -1):
        unit = units[index]
        if unit.defs & needed or unit.effect or index in effects:
            keep.add(index)
            needed -= unit.kills
            needed |= override.get(index, unit.uses)
    return keep, needed


def call_chain(program: Program, path: str, scope_line: int) -> list[tuple[tuple[str, int], int]]:
    """From a function scope up to a module: the one statement that calls each function or method. The caller
    may be in another file of the program (the entry script calling a helper module's function)."""
    chain = []
    key = (path, scope_line)
    while key[1] != MODULE_SCOPE:
        name = program.scope_name(key)
        method = _method_name(program, key, name)
        if method is not None and len(program.methods[method]) != 1:
            raise SliceError("ambiguous_call_chain", f"{len(program.methods[method])} classes define {method}: "
                                                     f"which one `obj.{method}(...)` runs is not known")
        # A call of `name` in a file that defines its own `name` calls that one (a helper's own `main`).
        own = {other[0] for other in program.scopes if other[1] != MODULE_SCOPE and other[0] != key[0]
               and program.scope_name(other) == name}
        sites = [(other, unit.index) for other, units in sorted(program.scopes.items())
                 for unit in units if other != key and (method is not None or other[0] not in own)
                 and (method in unit.method_calls if method is not None else name in unit.local_calls)]
        if len(sites) != 1:
            raise SliceError("ambiguous_call_chain",
                             f"function {name} is called from {len(sites)} places; a slice needs exactly one")
        chain.append(sites[0])
        key = sites[0][0]
        if len(chain) > 5:
            raise SliceError("ambiguous_call_chain", "call chain deeper than 5")
    return chain


def _touching_program_modules(program: Program, units: list[Unit]) -> frozenset[int]:
    """Indices of the statements that use a name an import binds to one of the program's own modules."""
    stems = {part for path, _ in program.scopes for part in
             [*path.split("/")[:-1], posixpath.splitext(posixpath.basename(path))[0]]}
    modules = {name for u in units if u.kind in ("Import", "ImportFrom") for name in u.defs if name in stems}
    return frozenset(u.index for u in units if u.kind not in ("Import", "ImportFrom") and u.uses & modules)


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
    """The entry script cut down to what computes ``name`` at ``target``, ending with ``report_result``.

    A target in another file of the program (a helper module's function, reached through the calls that lead
    there from the entry script) is reported from that file: its module level stays whole (it is imported),
    the functions and methods on the chain are cut to their slices, and ``report_result`` is defined at its end.
    ``Slice.files`` holds every file the slice changes."""
    entry = program.entry
    levels = [((target.path, target.scope_line), target.index),
              *call_chain(program, target.path, target.scope_line)]
    if levels[-1][0] != (entry, MODULE_SCOPE):
        raise SliceError("not_in_entry", f"{target.path} line {target.line} is not reached from the entry script "
                                         "through one call chain (it runs when its module is imported)")
    kept: dict[tuple[str, int], set[int]] = {}
    free_globals: set[str] = set()  # the entry's module-level names the chain needs
    chain_defs: dict[int, frozenset[str]] = {}  # entry module index of a chain scope's def/class -> what it reads
    module_units = program.scopes[(entry, MODULE_SCOPE)]
    for key, index in levels:
        units = program.scopes[key]
        if key[1] == MODULE_SCOPE:
            # A target in a helper module may read that module's state, which the entry can change
            # (`helper.SCALE = 3`): every statement that touches a program module's name stays.
            touches = _touching_program_modules(program, units) if target.path != entry else frozenset()
            keep, _ = backward(units, index, free_globals, chain_defs, touches)
        else:
            keep, free = backward(units, index, set())
            if key[0] == entry:  # a helper module's globals all stay: its module level is not sliced
                free -= _params(program, key, sources[key[0]])
                free_globals |= free
                # The module statement that defines the scope: its def, or the class a method belongs to, whose
                # other methods stay whole and keep what they read.
                owner = next(u for u in module_units if u.line <= key[1] <= u.end_line)
                extra = owner.uses if owner.kind == "ClassDef" else frozenset()
                chain_defs[owner.index] = frozenset(free) | chain_defs.get(owner.index, frozenset()) | extra
        kept[key] = keep
    all_units = [u for key, keep in kept.items() for u in program.scopes[key] if u.index in keep]
    _check_no_shared_lines(program, kept)
    lines = {path: sources[path].splitlines(keepends=True) for path in {k[0] for k in kept}}

    def text_of(unit: Unit) -> str:
        return "".join(lines[unit.path][unit.line - 1:unit.end_line])

    def cut_class(unit: Unit, methods: list[tuple[str, int]]) -> str:
        """The class as written, but each method on the chain cut down to its slice."""
        out, cursor, text = [], unit.line - 1, lines[unit.path]
        for method in methods:
            body = program.scopes[method]
            if text[body[0].line - 1].lstrip().startswith(("def ", "async def ")):
                raise SliceError("unsliceable", f"method at line {method[1]} has its body on the def line")
            out.append("".join(text[cursor:body[0].line - 1]))
            out.append(scope_text(method))
            cursor = body[-1].end_line
        out.append("".join(text[cursor:unit.end_line]))
        return "".join(out)

    def chain_inside(unit: Unit) -> list[tuple[str, int]]:
        return sorted(k for k in kept if k[0] == unit.path and k[1] != MODULE_SCOPE and unit.line < k[1] <= unit.end_line)

    def scope_text(key: tuple[str, int]) -> str:
        out = []
        for unit in program.scopes[key]:
            if unit.index not in kept[key]:
                continue
            inner = (unit.path, unit.line)
            methods = chain_inside(unit) if key[1] == MODULE_SCOPE and unit.kind == "ClassDef" else []
            if methods:
                out.append(cut_class(unit, methods))
                continue
            if key[1] == MODULE_SCOPE and inner in kept and unit.kind in ("FunctionDef", "AsyncFunctionDef"):
                out.append(function_text(unit))
                continue
            out.append(text_of(unit))
            if (unit.path, unit.line) == (target.path, target.line):
                first = lines[unit.path][unit.line - 1]
                indent = first[:len(first) - len(first.lstrip())]
                out.append(f"{indent}report_result({name!r}, {name})\n")
                if key[1] != MODULE_SCOPE:
                    out.append(f"{indent}raise SystemExit(0)\n")
        return "".join(out)

    def function_text(unit: Unit) -> str:
        if unit.body_line <= unit.line:
            raise SliceError("unsliceable", f"function at line {unit.line} has its body on the def line")
        return "".join(lines[unit.path][unit.line - 1:unit.body_line - 1]) + scope_text((unit.path, unit.line))

    def helper_module_text(path: str) -> str:
        """A helper module on the chain: every module-level statement as written but the chain's scopes."""
        out, cursor, text = [], 0, lines[path]
        for unit in program.scopes[(path, MODULE_SCOPE)]:
            inside = chain_inside(unit) if unit.kind == "ClassDef" else []
            if (path, unit.line) in kept and unit.kind in ("FunctionDef", "AsyncFunctionDef"):
                replaced = function_text(unit)
            elif inside:
                replaced = cut_class(unit, inside)
            else:
                continue
            out.append("".join(text[cursor:unit.line - 1]))
            out.append(replaced)
            cursor = unit.end_line
        out.append("".join(text[cursor:]))
        body = "".join(out)
        if path == target.path:  # looked up when the target's scope runs, after the module has loaded
            body = body.rstrip("\n") + "\n\n" + REPORT_HELPER
        return body

    body = scope_text((entry, MODULE_SCOPE))
    text = _insert_helper(body, program, kept[(entry, MODULE_SCOPE)], lines[entry]) if target.path == entry else body
    files = {entry: text, **{path: helper_module_text(path) for path in sorted(lines) if path != entry}}
    steps = tuple(
        (_in_written_order(u.defs, text_of(u)), tuple(sorted(u.uses & _defined(all_units))),
         tuple(c for c in u.calls if c != "arithmetic"))
        for u in sorted(all_units, key=lambda u: (u.path != target.path, u.path, u.line))
        if u.kind not in ("Import", "ImportFrom", "FunctionDef", "AsyncFunctionDef") and u.defs
    )
    operations = tuple(dict.fromkeys(c for u in sorted(all_units, key=lambda u: (u.path, u.line)) for c in u.calls))
    for path, changed in files.items():
        try:  # the slice is text cut from the source: what cannot be parsed never runs, and is a counted reject
            parse_python(changed, path)
        except UnparseableSource as exc:
            raise SliceError("slice_unparseable", f"the slice for {name} at line {target.line} does not parse: "
                                                  f"{exc.detail}") from None
    return Slice(text=text, statements=len(all_units), operations=operations, steps=steps,
                 lines=frozenset((u.path, u.line) for u in all_units), files=files, target_path=target.path,
                 spans=tuple(sorted((u.path, u.line, u.end_line) for u in all_units)))


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
