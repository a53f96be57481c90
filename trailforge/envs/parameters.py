"""Parameters as data: a simulation's numeric constants moved into a file the program reads.

Many research and teaching scripts read no data file: a compartment model, an Euler integration or an ODE
fit to numbers typed into the code. Their results still depend on inputs (``N = 1000``, ``beta = 0.3``,
``y0 = [0.99, 0.01]``); the inputs are written in the program. ``parameterize`` moves such inputs into a
generated JSON file beside the script and rewrites the script to read them from it, so the seed has a
data file, and data dependence, statements and verification treat it as they treat any other: its
numbers are perturbed, fields that do not move are dropped, and the statement describes the file.

What becomes a parameter (decided from the syntax tree alone; nothing of the repository is run here):

- an assignment to one plain name at module level, or in a top-level ``if __name__ == "__main__":``;
- of a number, an arithmetic expression of numbers (``1/25``, folded to its value), or a list or flat
  tuple of them (at most ``MAX_NUMBERS`` numbers), not zero or all zeros (an accumulator's start,
  which no scaling moves);
- to a name bound nowhere else in the file and read somewhere (a counter, a loop variable or a name a
  function rebinds is state, not an input);
- not a random seed. A seed is a parameter a statement must state, but one perturbed with the data would
  make every stochastic field "move" whatever the analysis does: seeds stay in the code, and the
  statement lists them as it lists any other number of the program (``statement.analysis_numbers``);
- not a value used only to shape a figure or a print (``figsize=figsize``, ``fontsize=fs``).

The rewrite is textual and minimal: each chosen value is replaced by ``_params["name"]`` (``tuple(...)``
for a tuple), and a three-line prelude after the docstring and ``__future__`` imports loads the file. The
file keeps each float's value exactly (a padded decimal, ``0.04000``, reads back as the same float) while
giving the perturbation significant digits to move. Whether the rewritten program reproduces the
original is not decided here: the seeds stage runs both and compares every output.
"""
from __future__ import annotations

import ast
import json
import math
import re
from dataclasses import dataclass
from pathlib import PurePosixPath

from .parsing import call_name

PARAMETERS_FILE = "parameters.json"
MAX_NUMBERS = 100  # a longer literal list is a data table written in the code, not a parameter
MIN_SIGNIFICANT = 4  # digits a float is written with, so a 10% perturbation moves it
_SEED_NAME = re.compile(r"(?i)(^|_)(seed|seeds|rng|random_state|randomstate)($|_)|seed$")
_SEED_CALLS = {"seed", "default_rng", "RandomState", "Generator", "PCG64", "MT19937", "SeedSequence", "manual_seed",
               "set_seed"}
_SEED_KEYWORDS = {"seed", "random_state", "rng"}
# Keywords that only ever shape a figure (``size``, ``alpha`` or ``width`` also name sample sizes and levels).
_FIGURE_KEYWORDS = {"figsize", "dpi", "fontsize", "linewidth", "lw", "markersize", "ms", "zorder", "rotation",
                    "labelsize", "labelpad", "capsize", "elinewidth", "bbox_to_anchor", "wspace", "hspace", "pad",
                    "markeredgewidth", "mew", "headwidth", "headlength", "framealpha"}


@dataclass(frozen=True)
class Parameterization:
    """The rewritten entry script and its parameters file (repository-relative path and text)."""

    program: str
    path: str
    text: str
    names: tuple[str, ...]


def parameterize(source: str, script: str, cwd: str, taken: set[str]) -> Parameterization | None:
    """``source`` rewritten to read its numeric constants from a parameters file in ``cwd`` (the folder the
    script runs in), or None when it has none. ``taken``: the repository's paths (the file's name must be
    new). Raises SyntaxError for a source that does not parse."""
    module = ast.parse(source)
    found = parameter_assignments(module)
    if not found:
        return None
    folder = PurePosixPath(cwd) if cwd not in ("", ".") else PurePosixPath()
    name = PARAMETERS_FILE
    if (folder / name).as_posix() in taken:
        name = f"{PurePosixPath(script).stem}.{PARAMETERS_FILE}"
        if (folder / name).as_posix() in taken:
            return None
    path = (folder / name).as_posix()
    names = _unused_names(module, ("_json", "_file", "_params"))
    lines = _lines(source)
    edits = []  # (line, col, end_line, end_col, text), applied from the end
    for target, value_node, value in found:
        read = f'{names["_params"]}["{target}"]'
        edits.append((value_node, f"tuple({read})" if isinstance(value, tuple) else read))
    program = _replace(lines, edits)
    at = _prelude_line(module)
    prelude = (f"import json as {names['_json']}  # the analysis's numeric parameters, moved out of the code\n"
               f"with open({json.dumps(name)}, encoding=\"utf-8\") as {names['_file']}:\n"
               f"    {names['_params']} = {names['_json']}.load({names['_file']})\n")
    program_lines = _lines(program)
    if at and program_lines and not program_lines[at - 1].endswith("\n"):
        program_lines[at - 1] += "\n"
    program = "".join(program_lines[:at]) + prelude + "".join(program_lines[at:])
    return Parameterization(program=program, path=path, text=parameters_text({t: v for t, _, v in found}),
                            names=tuple(t for t, _, _ in found))


def parameter_assignments(module: ast.Module) -> list[tuple[str, ast.expr, object]]:
    """``(name, value node, value)`` of each assignment that becomes a parameter, in source order."""
    bound, loaded, presentation_only, seeds = _usage(module)
    found = []
    for node in _top_level(module):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            target, value_node = node.targets[0].id, node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            target, value_node = node.target.id, node.value
        else:
            continue
        value = literal_numbers(value_node)
        if value is None or not _nonzero(value):
            continue
        if bound.get(target, 0) != 1 or not loaded.get(target) or target in presentation_only or target in seeds:
            continue
        if _SEED_NAME.search(target):
            continue
        found.append((target, value_node, value))
    return found


def literal_numbers(node: ast.expr):
    """The number, list or flat tuple of numbers a node of literals stands for, or None."""
    count = [0]

    def number(n):
        if isinstance(n, ast.Constant):
            v = n.value
            return v if isinstance(v, (int, float)) and not isinstance(v, bool) else None
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, (ast.USub, ast.UAdd)):
            v = number(n.operand)
            return None if v is None else (-v if isinstance(n.op, ast.USub) else v)
        if isinstance(n, ast.BinOp) and isinstance(n.op, (ast.Add, ast.Sub, ast.Mult, ast.Div)):
            left, right = number(n.left), number(n.right)
            if left is None or right is None:
                return None
            try:
                return {ast.Add: lambda: left + right, ast.Sub: lambda: left - right,
                        ast.Mult: lambda: left * right, ast.Div: lambda: left / right}[type(n.op)]()
            except (ZeroDivisionError, OverflowError):
                return None
        if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Pow):
            left, right = number(n.left), number(n.right)
            if left is None or right is None or abs(right) > 64 or abs(left) > 1e6:
                return None
            try:
                out = left ** right
            except (ZeroDivisionError, OverflowError):
                return None
            return out if isinstance(out, (int, float)) else None  # (-8) ** 0.5 is complex
        return None

    def value(n, depth):
        if isinstance(n, ast.List) and depth < 3:
            items = [value(e, depth + 1) for e in n.elts]
            return items if n.elts and all(i is not None for i in items) else None
        if isinstance(n, ast.Tuple) and depth == 0:
            items = [number(e) for e in n.elts]
            count[0] += len(items)
            return tuple(items) if n.elts and all(i is not None for i in items) else None
        v = number(n)
        count[0] += 1
        if v is None or (isinstance(v, float) and not math.isfinite(v)) or (isinstance(v, int) and abs(v) > 10 ** 15):
            return None
        return v

    out = value(node, 0)
    return out if out is not None and count[0] <= MAX_NUMBERS and _flat_numbers(out) else None


def _flat_numbers(value) -> bool:
    if isinstance(value, (list, tuple)):
        return all(_flat_numbers(v) for v in value)
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _nonzero(value) -> bool:
    if isinstance(value, (list, tuple)):
        return any(_nonzero(v) for v in value)
    return value != 0


def _top_level(module: ast.Module):
    for node in module.body:
        yield node
        if isinstance(node, ast.If) and "__main__" in ast.dump(node.test):
            yield from node.body


def _usage(module: ast.Module):
    """Per name: how often it is bound, how often read; names read only as presentation keywords; names that
    feed a random generator."""
    bound: dict[str, int] = {}
    loaded: dict[str, int] = {}
    other_use: set[str] = set()
    presentation: set[str] = set()
    seeds: set[str] = set()
    parents = {id(c): p for p in ast.walk(module) for c in ast.iter_child_nodes(p)}
    for node in ast.walk(module):
        if isinstance(node, ast.Name):
            if isinstance(node.ctx, (ast.Store, ast.Del)):
                bound[node.id] = bound.get(node.id, 0) + 1
                continue
            loaded[node.id] = loaded.get(node.id, 0) + 1
            parent = parents.get(id(node))
            if isinstance(parent, ast.keyword) and parent.arg in _FIGURE_KEYWORDS:
                presentation.add(node.id)
            else:
                other_use.add(node.id)
            if isinstance(parent, ast.keyword) and parent.arg in _SEED_KEYWORDS:
                seeds.add(node.id)
            call = parent if isinstance(parent, ast.Call) else parents.get(id(parent))
            if isinstance(call, ast.Call) and call_name(call) in _SEED_CALLS:
                seeds.add(node.id)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            for name in node.names:
                bound[name] = bound.get(name, 0) + 2  # rebound elsewhere: never a parameter
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound[node.name] = bound.get(node.name, 0) + 1
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                name = (alias.asname or alias.name).split(".")[0]
                bound[name] = bound.get(name, 0) + 1
        elif isinstance(node, ast.arg):
            bound[node.arg] = bound.get(node.arg, 0) + 1
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound[node.name] = bound.get(node.name, 0) + 1
    return bound, loaded, presentation - other_use, seeds


def _unused_names(module: ast.Module, wanted: tuple[str, ...]) -> dict[str, str]:
    used = {n.id for n in ast.walk(module) if isinstance(n, ast.Name)}
    used |= {a.arg for a in ast.walk(module) if isinstance(a, ast.arg)}
    used |= {(a.asname or a.name).split(".")[0] for n in ast.walk(module) if isinstance(n, (ast.Import, ast.ImportFrom))
             for a in n.names}
    used |= {n.name for n in ast.walk(module) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    out = {}
    for name in wanted:
        chosen, n = name, 1
        while chosen in used:
            n += 1
            chosen = f"{name}{n}"
        out[name] = chosen
    return out


def _prelude_line(module: ast.Module) -> int:
    """The line after which the prelude goes: past the docstring and ``from __future__`` imports (0: the top)."""
    at = 0
    for index, node in enumerate(module.body):
        docstring = index == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) \
            and isinstance(node.value.value, str)
        if docstring or (isinstance(node, ast.ImportFrom) and node.module == "__future__"):
            at = node.end_lineno
            continue
        break
    return at


def _lines(source: str) -> list[str]:
    """The source's lines with their endings, split where the parser counts lines (not at a form feed)."""
    return re.findall(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$", source)


def _replace(lines: list[str], edits) -> str:
    """``lines`` with each node's source span replaced by its text (spans never overlap: one per statement)."""
    # ast columns are UTF-8 byte offsets
    encoded = [line.encode("utf-8") for line in lines]
    for node, text in sorted(edits, key=lambda e: (e[0].lineno, e[0].col_offset), reverse=True):
        first, last = node.lineno - 1, node.end_lineno - 1
        head = encoded[first][:node.col_offset]
        tail = encoded[last][node.end_col_offset:]
        encoded[first:last + 1] = [head + text.encode("utf-8") + tail]
    return b"".join(encoded).decode("utf-8")


def format_number(value) -> str:
    """JSON text for a number that reads back as exactly ``value``; floats with at least ``MIN_SIGNIFICANT``
    significant digits (``0.04`` as ``0.04000``), since the perturbation keeps a number's printed digits."""
    if isinstance(value, int):
        return str(value)
    text = repr(float(value))
    mantissa, e, exponent = text.partition("e")
    if "." not in mantissa:
        mantissa += "."
    digits = len(mantissa.replace("-", "").replace(".", "").lstrip("0"))
    mantissa += "0" * max(0, MIN_SIGNIFICANT - digits)
    padded = mantissa + (e + exponent if e else "")
    return padded if float(padded) == value else text


def _json_value(value) -> str:
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_json_value(v) for v in value) + "]"
    return format_number(value)


def parameters_text(values: dict[str, object]) -> str:
    """The parameters file: one JSON object, one parameter per line (the first line is ``{``, never a header)."""
    body = ",\n".join(f'  "{name}": {_json_value(value)}' for name, value in values.items())
    return "{\n" + body + "\n}\n"


def parameter_values(text: str) -> set:
    """Every number in a parameters file (a field that only echoes one is an input, not a result)."""
    found: set = set()

    def walk(value):
        if isinstance(value, dict):
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            found.add(value)

    try:
        walk(json.loads(text))
    except ValueError:
        pass
    return found


def seed_literals(seed, sources) -> set:
    """The constants of a seed's program: every literal of its sources (``statement.literal_values``) and, for a
    seed whose constants were moved into a parameters file, the numbers of that file. A result equal to one only
    echoes an input."""
    from pathlib import Path

    from .analysis import literal_values

    found: set = set()
    for text in sources:
        found |= literal_values(text)
    if seed.parameters_file:
        found |= parameter_values((Path(seed.tree) / seed.parameters_file).read_text(encoding="utf-8"))
    return found


def generated_lines(source: str, parameters_path: str) -> set[int]:
    """The lines of ``source`` that ``parameterize`` wrote: the prelude that loads ``parameters_path`` and each
    ``name = _params["name"]``. A defect or a hole there is in trailforge's plumbing, not in the analysis (a key
    swapped to ``_params["m"]`` is spotted by reading one line), so Correction and Completion leave them alone.
    Empty when the source has no such prelude."""
    try:
        module = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return set()
    loaded, _, lines = _prelude(module, PurePosixPath(parameters_path).name)
    if loaded is None:
        return set()

    def reads_parameter(value) -> bool:
        if isinstance(value, ast.Call) and getattr(value.func, "id", None) == "tuple" and len(value.args) == 1:
            value = value.args[0]
        return (isinstance(value, ast.Subscript) and isinstance(value.value, ast.Name) and value.value.id == loaded
                and isinstance(value.slice, ast.Constant) and isinstance(value.slice.value, str))

    for node in _top_level(module):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None and reads_parameter(node.value):
            lines |= set(range(node.lineno, node.end_lineno + 1))
    return lines


def _prelude(module: ast.Module, name: str) -> tuple[str | None, set[str], set[int]]:
    """``(loaded mapping's name, every name the prelude binds, its lines)`` of the prelude that loads the
    parameters file ``name`` (``(None, set(), set())`` when there is none)."""
    for index, node in enumerate(module.body):
        if isinstance(node, ast.With) and len(node.items) == 1 and len(node.body) == 1:
            item, body = node.items[0], node.body[0]
            opened = item.context_expr
            if (isinstance(opened, ast.Call) and getattr(opened.func, "id", None) == "open" and opened.args
                    and isinstance(opened.args[0], ast.Constant) and opened.args[0].value == name
                    and isinstance(body, ast.Assign) and isinstance(body.targets[0], ast.Name)):
                loaded = body.targets[0].id
                names = {loaded} | ({item.optional_vars.id} if isinstance(item.optional_vars, ast.Name) else set())
                lines = set(range(node.lineno, node.end_lineno + 1))
                before = module.body[index - 1] if index else None
                if isinstance(before, ast.Import) and [a.name for a in before.names] == ["json"]:
                    lines.add(before.lineno)
                    names |= {a.asname or a.name for a in before.names}
                return loaded, names, lines
    return None, set(), set()
