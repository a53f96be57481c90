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
``_offset``. Code that is not analysis is never mutated: docstrings, imports, decorators,
annotations, f-strings, arguments of ``print`` and the ``__name__ == "__main__"`` guard.
"""
from __future__ import annotations

import ast
import bisect
import functools
import math
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace

from .parsing import parse_python

__all__ = ["OPERATORS", "Mutation", "Operator", "apply_mutation", "find_mutations", "mutated_line", "register"]


@dataclass(frozen=True)
class Mutation:
    """One text edit: replace ``original`` (at the given span) with ``replacement``."""

    operator: str
    path: str
    line: int
    col: int
    end_line: int
    end_col: int
    original: str
    replacement: str


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


# --------------------------------------------------------------------------- public API


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
            start, end = _resolve(text, found)
            if _changes_tree(tree, text, start, end, found.replacement, baselines):
                kept.append(replace(found, operator=name, path=path,
                                    col=found.col + (bom if found.line == 1 else 0),
                                    end_col=found.end_col + (bom if found.end_line == 1 else 0)))
    kept.sort(key=lambda m: (m.line, m.col, m.operator, m.replacement, m.end_line, m.end_col))
    return kept


def apply_mutation(source: str, mutation: Mutation) -> str:
    """Splice the replacement into ``source``; refuse if the span no longer holds ``original``."""
    start, end = _resolve(source, mutation)
    return source[:start] + mutation.replacement + source[end:]


def mutated_line(source: str, mutation: Mutation) -> tuple[str, str]:
    """The whole line(s) the mutation touches, before and after, without line terminators."""
    start, end = _resolve(source, mutation)
    starts = _line_starts(source)
    first = starts[mutation.line - 1]
    last = _line_end(source, starts, mutation.end_line - 1)
    return source[first:last], source[first:start] + mutation.replacement + source[end:last]


# --------------------------------------------------------------------------- positions

_NEWLINE = re.compile(r"\r\n|\r|\n")  # the same terminators the Python tokenizer accepts


@functools.lru_cache(maxsize=32)
def _line_starts(source: str) -> tuple[int, ...]:
    return (0, *(m.end() for m in _NEWLINE.finditer(source)))


def _line_end(source: str, starts: tuple[int, ...], index: int) -> int:
    """Offset just past the last character of line ``index`` (0-based), terminator excluded."""
    if index + 1 >= len(starts):
        return len(source)
    nxt = starts[index + 1]
    return nxt - 2 if source[nxt - 2:nxt] == "\r\n" else nxt - 1


def _offset(source: str, lineno: int, byte_col: int) -> int:
    """Character offset in ``source`` of an ast position (1-based line, UTF-8 byte column)."""
    starts = _line_starts(source)
    begin = starts[lineno - 1]
    line = source[begin:_line_end(source, starts, lineno - 1)]
    if line.isascii():
        return begin + byte_col
    head = line.encode("utf-8", "surrogatepass")[:byte_col]
    return begin + len(head.decode("utf-8", "surrogatepass"))


def _span(source: str, node: ast.AST) -> tuple[int, int]:
    return (_offset(source, node.lineno, node.col_offset),
            _offset(source, node.end_lineno, node.end_col_offset))


def _line_col(source: str, offset: int) -> tuple[int, int]:
    starts = _line_starts(source)
    index = bisect.bisect_right(starts, offset) - 1
    return index + 1, offset - starts[index]


def _resolve(source: str, mutation: Mutation) -> tuple[int, int]:
    starts = _line_starts(source)
    offsets = []
    for line, col in ((mutation.line, mutation.col), (mutation.end_line, mutation.end_col)):
        if not 1 <= line <= len(starts):
            raise ValueError(f"mutation line {line} is outside the source ({len(starts)} lines)")
        if not 0 <= col <= _line_end(source, starts, line - 1) - starts[line - 1]:
            raise ValueError(f"mutation column {col} is outside line {line}")
        offsets.append(starts[line - 1] + col)
    start, end = offsets
    if start > end or source[start:end] != mutation.original:
        raise ValueError(f"stale mutation: the source at {mutation.line}:{mutation.col} does not hold "
                         f"{mutation.original!r}")
    return start, end


def _mutation(operator: str, source: str, start: int, end: int, replacement: str) -> Mutation:
    line, col = _line_col(source, start)
    end_line, end_col = _line_col(source, end)
    return Mutation(operator, "", line, col, end_line, end_col, source[start:end], replacement)


def _changes_tree(tree: ast.Module, text: str, start: int, end: int, replacement: str,
                  baselines: dict[int, tuple[int, int, str, str]]) -> bool:
    """Whether splicing ``replacement`` over [start, end) still parses and changes the tree.

    Re-parsing a whole long file for every candidate is slow, so only the innermost
    statement that contains the edit and has its lines to itself is re-parsed (an
    indented one under a dummy ``if 1:``). The rest of the file is byte-identical, so
    the statement parses, and differs from the original, exactly when the file does.
    """
    statement = _owning_statement(tree, text, start, end)
    if id(statement) not in baselines:
        baselines[id(statement)] = _baseline(tree, text, statement)
    chunk_start, chunk_end, prefix, baseline = baselines[id(statement)]
    try:
        mutated = parse_python(prefix + text[chunk_start:start] + replacement + text[end:chunk_end], "<mutated>")
    except (SyntaxError, ValueError):
        return False
    return ast.dump(mutated) != baseline


def _baseline(tree: ast.Module, text: str, statement: ast.AST) -> tuple[int, int, str, str]:
    """(chunk start, chunk end, prefix, dump of the parsed chunk) for a statement's lines."""
    if statement is not tree:
        starts = _line_starts(text)
        chunk_start = starts[statement.lineno - 1]
        chunk_end = _line_end(text, starts, statement.end_lineno - 1)
        prefix = "if 1:\n" if text[chunk_start:chunk_start + 1] in (" ", "\t", "\f") else ""
        try:
            chunk = parse_python(prefix + text[chunk_start:chunk_end], "<chunk>")
            return chunk_start, chunk_end, prefix, ast.dump(chunk)
        except (SyntaxError, ValueError):
            pass  # a layout this shortcut does not anticipate: fall back to the whole file
    return 0, len(text), "", ast.dump(tree)


def _owning_statement(tree: ast.Module, text: str, start: int, end: int) -> ast.AST:
    """The innermost statement around [start, end) that no other statement shares a line with."""
    best: ast.AST = tree
    node: ast.AST = tree
    while True:
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, (ast.stmt, ast.excepthandler)):
                continue
            child_start, child_end = _span(text, child)
            if child_start <= start and end <= child_end:
                # an `elif` is an If nested in the previous branch and cannot stand alone
                if isinstance(child, ast.stmt) and not text.startswith("elif", child_start) \
                        and _owns_lines(text, child_start, child_end):
                    best = child
                node = child
                break
        else:
            return best


def _owns_lines(text: str, start: int, end: int) -> bool:
    starts = _line_starts(text)
    line, _ = _line_col(text, start)
    end_line, _ = _line_col(text, end)
    before = text[starts[line - 1]:start]
    after = _code_chars(text[end:_line_end(text, starts, end_line - 1)])
    return not before.strip() and not after.strip()


# --------------------------------------------------------------------------- source text helpers


def _code_chars(gap: str) -> str:
    """Blank out comments in the text between two tokens, keeping its length.

    Only used on gaps between the pieces of one expression, which hold nothing but
    blanks, brackets, comments, line continuations and the operator itself (never a
    string), so a plain '#'-to-end-of-line rule is exact there.
    """
    return re.sub(r"#[^\r\n]*", lambda m: " " * len(m.group()), gap)


def _token_between(source: str, start: int, end: int) -> tuple[int, int] | None:
    """Span of the operator token that sits between two operands."""
    found = re.search(r"[^\s()\\]+", _code_chars(source[start:end]))
    return (start + found.start(), start + found.end()) if found else None


def _operands(source: str, node: ast.AST, left: ast.AST, right: ast.AST):
    """Split a binary expression into (left text, operator span, right text).

    The operand texts carry the brackets the author put around them, which ast leaves
    outside the operand nodes, so they can be moved around without changing meaning.
    Returns None if the operator cannot be located.
    """
    start, end = _span(source, node)
    left_end = _span(source, left)[1]
    right_start = _span(source, right)[0]
    op = _token_between(source, left_end, right_start)
    if op is None:
        return None
    closers = _code_chars(source[left_end:op[0]]).count(")")
    openers = _code_chars(source[op[1]:right_start]).count("(")
    left_text = source[start:left_end] + ")" * closers
    right_text = "(" * openers + source[right_start:end]
    return left_text, op, right_text, closers > 0, openers > 0


def _name_token(source: str, func: ast.expr) -> tuple[int, int] | None:
    """Span of the bare function name in ``f`` or ``obj.f`` (the part an edit renames)."""
    if isinstance(func, ast.Name):
        return _span(source, func)
    if isinstance(func, ast.Attribute):
        end = _span(source, func)[1]
        start = end - len(func.attr)
        # identifiers are NFKC-normalised by the parser; give up if the spelling differs
        return (start, end) if source[start:end] == func.attr else None
    return None


def _receiver_text(source: str, func: ast.Attribute) -> str | None:
    """Text of ``obj`` in ``obj.method``, with the author's brackets around it."""
    start = _span(source, func)[0]
    value_end = _span(source, func.value)[1]
    token = _name_token(source, func)
    if token is None:
        return None
    gap = _code_chars(source[value_end:token[0]])
    if gap.count(".") != 1:
        return None
    return source[start:value_end] + ")" * gap[:gap.index(".")].count(")")


def _enclosed(source: str, start: int, end: int) -> bool:
    """Whether brackets sit immediately around the span (so it is already grouped)."""
    before = source[:start].rstrip()
    after = _code_chars(source[end:end + 200]).lstrip()
    return before.endswith("(") and after.startswith(")")


def _string_text(original: str, old: str, new: str) -> str:
    """Literal text for ``new`` in the quoting style of ``original`` when that is trivially safe."""
    quote = original[:1]
    if quote in ("'", '"') and original == quote + old + quote and quote not in new and "\\" not in new:
        return quote + new + quote
    return repr(new)


def _add_keyword(source: str, call: ast.Call, keyword: str) -> tuple[int, int, str] | None:
    """An edit appending ``keyword`` (e.g. ``ddof=1``) as the last argument of ``call``."""
    if any(k.arg is None for k in call.keywords):
        return None  # a **mapping may already pass the keyword; adding it could duplicate it
    call_end = _span(source, call)[1]
    if source[call_end - 1:call_end] != ")":
        return None
    items = [*call.args, *call.keywords]
    if not items:
        func_end = _span(source, call.func)[1]
        return func_end, call_end, source[func_end:call_end - 1] + keyword + ")"
    if len(items) == 1 and isinstance(items[0], ast.GeneratorExp) and _span(source, items[0])[1] == call_end:
        # f(x for x in y): the generator shares the call's brackets and needs its own once
        # another argument follows it.
        gen_start = _span(source, items[0])[0]
        return gen_start, call_end, "(" + source[gen_start:call_end] + ", " + keyword + ")"
    last = max(items, key=lambda n: (n.end_lineno, n.end_col_offset))
    start, end = _span(source, last)
    tail = _code_chars(source[end:call_end - 1])
    if ")" in tail:  # brackets around the last argument belong to it
        end += tail.rindex(")") + 1
    return start, end, source[start:end] + ", " + keyword


# --------------------------------------------------------------------------- precedence

_BINOP_PRECEDENCE = {
    ast.BitOr: 6, ast.BitXor: 7, ast.BitAnd: 8, ast.LShift: 9, ast.RShift: 9, ast.Add: 10, ast.Sub: 10,
    ast.Mult: 11, ast.Div: 11, ast.FloorDiv: 11, ast.Mod: 11, ast.MatMult: 11, ast.Pow: 13,
}


def _precedence(node: ast.AST) -> int:
    """How tightly an expression binds (higher binds tighter), following the Python grammar."""
    if isinstance(node, (ast.Lambda, ast.NamedExpr, ast.Starred, ast.Yield, ast.YieldFrom, ast.Tuple)):
        return 0  # a tuple is treated as needing brackets: wrapping a bracketed one is harmless
    if isinstance(node, ast.IfExp):
        return 1
    if isinstance(node, ast.BoolOp):
        return 2 if isinstance(node.op, ast.Or) else 3
    if isinstance(node, ast.UnaryOp):
        return 4 if isinstance(node.op, ast.Not) else 12
    if isinstance(node, ast.Compare):
        return 5
    if isinstance(node, ast.BinOp):
        return _BINOP_PRECEDENCE[type(node.op)]
    if isinstance(node, ast.Await):
        return 14
    return 15


def _needs_brackets(precedence: int, parent: ast.AST | None, field: str) -> bool:
    """Whether an expression of ``precedence`` placed at (parent, field) must be bracketed."""
    if isinstance(parent, ast.BinOp):
        outer = _BINOP_PRECEDENCE[type(parent.op)]
        right_assoc = isinstance(parent.op, ast.Pow)
        if field == "left":
            return precedence < outer or (precedence == outer and right_assoc)
        return precedence < outer or (precedence == outer and not right_assoc)
    if isinstance(parent, (ast.UnaryOp, ast.Await)):
        return precedence < _precedence(parent)
    return False


def _bracket(text: str, node: ast.AST, minimum: int) -> str:
    return text if _precedence(node) >= minimum else f"({text})"


# --------------------------------------------------------------------------- tree helpers

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


def _visible(tree: ast.AST) -> list[tuple[ast.AST, ast.AST | None, str]]:
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


def _parents(tree: ast.AST) -> dict[int, tuple[ast.AST | None, str]]:
    return {id(node): (parent, field) for node, parent, field in _visible(tree)}


def _climb(node: ast.AST, parents, through: tuple[type, ...]) -> tuple[ast.AST | None, str]:
    """The first ancestor that is not one of ``through``, and the field leading to it."""
    parent, field = parents[id(node)]
    while isinstance(parent, through) and id(parent) in parents:
        parent, field = parents[id(parent)]
    return parent, field


def _literal_context(node: ast.AST, parents) -> tuple[ast.AST | None, str]:
    """Parent of a number literal, looking through a sign in front of it."""
    return _climb(node, parents, (ast.UnaryOp,))


def _in_index(node: ast.AST, parents) -> bool:
    parent, field = _climb(node, parents, (ast.UnaryOp, ast.Tuple, ast.Slice))
    return isinstance(parent, ast.Subscript) and field == "slice"


_SEED_KEYWORDS = {"seed", "random_state", "rng", "random_seed"}
_SEED_CALLS = {"seed", "default_rng", "RandomState", "manual_seed", "Random", "PRNGKey", "Generator"}


def _protected_literal(node: ast.AST, parents) -> bool:
    """Literals whose change is not an analysis defect: axes, ddof, random seeds."""
    parent, _ = _climb(node, parents, (ast.UnaryOp, ast.Tuple, ast.List))
    if isinstance(parent, ast.keyword):
        return parent.arg in {"axis", "ddof"} | _SEED_KEYWORDS
    if isinstance(parent, ast.Call):
        return _callee(parent)[0] in _SEED_CALLS
    if isinstance(parent, (ast.Assign, ast.AnnAssign)):
        targets = parent.targets if isinstance(parent, ast.Assign) else [parent.target]
        return any(isinstance(t, ast.Name) and "seed" in t.id.lower() for t in targets)
    return False


def _int_value(node: ast.AST) -> int | None:
    """The value of an integer literal, including a signed one like ``-1``; None otherwise."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)) \
            and isinstance(node.operand, ast.Constant) and type(node.operand.value) is int:
        return -node.operand.value if isinstance(node.op, ast.USub) else node.operand.value
    return None


def _is_number(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) in (int, float)


def _callee(call: ast.Call) -> tuple[str | None, ast.expr | None]:
    """(function name, receiver) for ``name(...)`` (receiver None) and ``obj.name(...)``."""
    if isinstance(call.func, ast.Name):
        return call.func.id, None
    if isinstance(call.func, ast.Attribute):
        return call.func.attr, call.func.value
    return None, None


_DEFAULT_MODULES = {"np": "numpy", "numpy": "numpy", "math": "math", "cmath": "cmath", "statistics": "statistics",
                    "pd": "pandas", "pandas": "pandas", "scipy": "scipy"}


def _imports(tree: ast.AST) -> tuple[dict[str, str], dict[str, str]]:
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


def _module_of(expr: ast.AST | None, modules: dict[str, str]) -> str | None:
    """The module an expression like ``np`` or ``scipy.stats`` names, if it names one."""
    parts = []
    while isinstance(expr, ast.Attribute):
        parts.append(expr.attr)
        expr = expr.value
    if not isinstance(expr, ast.Name) or expr.id not in modules:
        return None
    return ".".join([modules[expr.id], *reversed(parts)])


def _rename(operator: str, source: str, call: ast.Call, new: str) -> Mutation | None:
    token = _name_token(source, call.func)
    return None if token is None else _mutation(operator, source, *token, new)


def _calls(tree: ast.AST) -> Iterator[ast.Call]:
    return (node for node, _, _ in _visible(tree) if isinstance(node, ast.Call))


def _renames(operator: str, tree: ast.AST, source: str, swaps: dict[str, list[str]], allow_method: bool,
             modules_ok: Callable[[str, str], bool],
             call_ok: Callable[[ast.Call], bool] = lambda call: True) -> Iterator[Mutation]:
    """Rename called functions according to ``swaps``.

    ``obj.f(...)`` is renamed when ``obj`` names a module accepted by ``modules_ok`` or,
    if ``allow_method``, when it is any other object (a method call). A bare ``f(...)`` is
    renamed only when the new name was imported the same way (``from m import f, g``),
    so the mutant does not fail on an undefined name.
    """
    modules, names = _imports(tree)
    for call in _calls(tree):
        name, receiver = _callee(call)
        if name not in swaps or not call_ok(call):
            continue
        module = _module_of(receiver, modules) if receiver is not None else None
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
            mutation = _rename(operator, source, call, new)
            if mutation is not None:
                yield mutation


def _bool_flip(operator: str, source: str, node: ast.AST) -> Mutation | None:
    if isinstance(node, ast.Constant) and type(node.value) is bool:
        return _mutation(operator, source, *_span(source, node), str(not node.value))
    return None


# --------------------------------------------------------------------------- scientific operators


def _find_reduction_axis(tree: ast.Module, source: str) -> Iterator[Mutation]:
    # -1 means "the last axis"; for the usual 2-D case that is axis 1, so 0 is its mistake.
    int_swaps = {0: ["1"], 1: ["0"], -1: ["0"]}
    name_swaps = {"index": "columns", "rows": "columns", "columns": "index"}  # pandas spellings
    for node, _, _ in _visible(tree):
        if not (isinstance(node, ast.keyword) and node.arg == "axis"):
            continue
        value = _int_value(node.value)
        if value in int_swaps:
            for new in int_swaps[value]:
                yield _mutation("reduction_axis", source, *_span(source, node.value), new)
        elif isinstance(node.value, ast.Constant) and node.value.value in name_swaps:
            start, end = _span(source, node.value)
            new = _string_text(source[start:end], node.value.value, name_swaps[node.value.value])
            yield _mutation("reduction_axis", source, start, end, new)


def _numpy_receiver(expr: ast.AST, modules: dict[str, str]) -> bool:
    """Best guess that a method receiver is a numpy array (``.values``, ``.to_numpy()``, ``np.f(...)``)."""
    if isinstance(expr, ast.Attribute) and expr.attr == "values":
        return True
    if isinstance(expr, ast.Call):
        name, receiver = _callee(expr)
        return name == "to_numpy" or _module_of(receiver, modules) == "numpy"
    return False


def _find_degrees_of_freedom(tree: ast.Module, source: str) -> Iterator[Mutation]:
    modules, names = _imports(tree)
    for node, _, _ in _visible(tree):
        if isinstance(node, ast.keyword) and node.arg == "ddof":
            if _int_value(node.value) in (0, 1):
                yield _mutation("degrees_of_freedom", source, *_span(source, node.value),
                                str(1 - _int_value(node.value)))
            continue
        if not isinstance(node, ast.Call):
            continue
        name, receiver = _callee(node)
        if name not in {"std", "var", "nanstd", "nanvar"} or any(k.arg == "ddof" for k in node.keywords):
            continue
        # numpy defaults to the population formula (ddof=0) and pandas to the sample one
        # (ddof=1); the defect is to pass the other library's default.
        if receiver is None:
            if not names.get(name, "").startswith("numpy."):
                continue
            ddof, max_positional = 1, 4
        elif _module_of(receiver, modules) is not None:
            if _module_of(receiver, modules) != "numpy":
                continue  # other libraries' std/var take no ddof keyword
            ddof, max_positional = 1, 4
        else:
            ddof, max_positional = (1 if _numpy_receiver(receiver, modules) else 0), 2
        if len(node.args) > max_positional:
            continue  # ddof may already be given positionally
        edit = _add_keyword(source, node, f"ddof={ddof}")
        if edit:
            yield _mutation("degrees_of_freedom", source, *edit)


def _find_log_base(tree: ast.Module, source: str) -> Iterator[Mutation]:
    swaps = {"log": ["log10"], "log10": ["log"], "log2": ["log"]}
    # one-argument logs only: math.log(x, base) already states its base
    yield from _renames("log_base", tree, source, swaps, allow_method=False,
                        modules_ok=lambda module, new: module in {"numpy", "math", "cmath"},
                        call_ok=lambda call: len(call.args) == 1)


_AGGREGATION_SWAPS = {"mean": ["median", "sum"], "median": ["mean"], "sum": ["mean"]}
_AGGREGATION_CALLS = {"agg", "aggregate", "transform", "pivot_table", "apply", "crosstab"}
_AGGREGATION_KEYWORDS = {"aggfunc", "func", "statistic"}


def _aggregation_names(node: ast.AST) -> Iterator[ast.AST]:
    """Reductions named inside an aggregation argument: ``"mean"`` or ``np.mean``, also in lists,
    tuples and dict values."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str) or isinstance(node, ast.Attribute):
        yield node
    elif isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        for element in node.elts:
            yield from _aggregation_names(element)
    elif isinstance(node, ast.Dict):
        for value in node.values:  # keys are column names
            yield from _aggregation_names(value)


def _find_mean_median_sum(tree: ast.Module, source: str) -> Iterator[Mutation]:
    swaps = {**_AGGREGATION_SWAPS, "nanmean": ["nanmedian"], "nanmedian": ["nanmean"]}
    # statistics has mean and median but no sum; math and pandas have neither as functions
    yield from _renames("mean_median_sum", tree, source, swaps, allow_method=True,
                        modules_ok=lambda module, new: module not in {"math", "pandas"}
                        and not (module == "statistics" and new == "sum"))
    modules, _ = _imports(tree)
    visible = {id(node) for node, _, _ in _visible(tree)}
    for call in _calls(tree):
        name, _ = _callee(call)
        values = [k.value for k in call.keywords if k.arg in _AGGREGATION_KEYWORDS]
        if name in _AGGREGATION_CALLS:
            values += [*call.args, *(k.value for k in call.keywords if k.arg not in _AGGREGATION_KEYWORDS)]
        for value in values:
            for ref in _aggregation_names(value):
                if id(ref) not in visible:
                    continue
                if isinstance(ref, ast.Attribute):  # agg(np.mean): rename the function passed
                    if ref.attr in _AGGREGATION_SWAPS and _module_of(ref.value, modules) == "numpy":
                        token = _name_token(source, ref)
                        for new in _AGGREGATION_SWAPS[ref.attr] if token else []:
                            yield _mutation("mean_median_sum", source, *token, new)
                elif ref.value in _AGGREGATION_SWAPS:
                    start, end = _span(source, ref)
                    for new in _AGGREGATION_SWAPS[ref.value]:
                        yield _mutation("mean_median_sum", source, start, end,
                                        _string_text(source[start:end], ref.value, new))


_BOUNDARY_SWAPS = {ast.Gt: ">=", ast.GtE: ">", ast.Lt: "<=", ast.LtE: "<"}
_BOUNDARY_TOKENS = {ast.Gt: ">", ast.GtE: ">=", ast.Lt: "<", ast.LtE: "<="}


def _find_comparison_boundary(tree: ast.Module, source: str) -> Iterator[Mutation]:
    for node, _, _ in _visible(tree):
        if not isinstance(node, ast.Compare):
            continue
        operands = [node.left, *node.comparators]
        for index, op in enumerate(node.ops):
            if type(op) not in _BOUNDARY_SWAPS:
                continue
            token = _token_between(source, _span(source, operands[index])[1], _span(source, operands[index + 1])[0])
            if token and source[token[0]:token[1]] == _BOUNDARY_TOKENS[type(op)]:
                yield _mutation("comparison_boundary", source, *token, _BOUNDARY_SWAPS[type(op)])


def _shifted(value: int) -> list[int]:
    """Neighbouring integers that stay on the same side of zero (counting from the start or the end)."""
    if value >= 0:
        return [value + 1] + ([value - 1] if value >= 1 else [])
    return [value - 1] + ([value + 1] if value <= -2 else [])


# Literal positions where a shift by one is a recognisable slip: the first or last element, a header row
# skipped (x[1:]), the last one dropped (x[:-1]). Any other literal (data[0:201], x[-50:], gps[6]) is a
# window or field the author chose: a shifted one is no scientific error, and no statement can say which
# bound is right, so only the exact original would pass. So is a column of a 2-D index (d[:, 1], d[0:200, 0]).
_IDIOMATIC_POSITIONS = {0, 1, -1}


def _find_slice_off_by_one(tree: ast.Module, source: str) -> Iterator[Mutation]:
    # The same window cut from several arrays on one line (np.polyfit(d[0:200, 5], d[0:200, 1], 1)): shifting
    # one bound alone only breaks the call (lengths differ); the defect a person makes moves the window itself.
    windows: dict[tuple[int, str, int], list[tuple[int, int]]] = {}
    for node, _, _ in _visible(tree):
        if not isinstance(node, ast.Subscript):
            continue
        parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        for axis, part in enumerate(parts):
            if isinstance(part, ast.Slice):
                for role, bound in (("lower", part.lower), ("upper", part.upper)):
                    if bound is None:
                        continue
                    start, end = _span(source, bound)
                    value = _int_value(bound)
                    if value is not None:
                        if value not in _IDIOMATIC_POSITIONS:
                            continue
                        windows.setdefault((bound.lineno, role, value), []).append((start, end))
                        for new in _shifted(value):
                            yield _mutation("slice_off_by_one", source, start, end, str(new))
                    elif not isinstance(bound, (ast.Constant, ast.JoinedStr)):  # labels are not positions
                        text = _bracket(source[start:end], bound, 10)
                        for delta in (" - 1", " + 1"):
                            yield _mutation("slice_off_by_one", source, start, end, text + delta)
            else:
                value = _int_value(part)
                if value in _IDIOMATIC_POSITIONS and axis == 0:
                    for new in _shifted(value):
                        yield _mutation("slice_off_by_one", source, *_span(source, part), str(new))
    for (_, _, value), spans in windows.items():
        spans = sorted(set(spans))
        if len(spans) < 2:
            continue
        first, last = spans[0][0], spans[-1][1]
        for new in _shifted(value):
            text, done = [], first
            for start, end in spans:
                text += [source[done:start], str(new)]
                done = end
            yield _mutation("slice_off_by_one", source, first, last, "".join(text) + source[done:last])


def _find_sort_order(tree: ast.Module, source: str) -> Iterator[Mutation]:
    for node, _, _ in _visible(tree):
        if isinstance(node, ast.keyword) and node.arg in {"ascending", "reverse"}:
            values = node.value.elts if isinstance(node.value, (ast.List, ast.Tuple)) else [node.value]
            for value in values:
                mutation = _bool_flip("sort_order", source, value)
                if mutation:
                    yield mutation
        elif isinstance(node, ast.Call):
            name, receiver = _callee(node)
            if name == "sorted" and receiver is None and not any(k.arg == "reverse" for k in node.keywords):
                edit = _add_keyword(source, node, "reverse=True")
            elif name in {"sort_values", "sort_index"} and receiver is not None and len(node.args) < 3 \
                    and not any(k.arg == "ascending" for k in node.keywords):
                edit = _add_keyword(source, node, "ascending=False")
            else:
                continue
            if edit:
                yield _mutation("sort_order", source, *edit)


_EXTREMA_PAIRS = [("argmax", "argmin"), ("nanargmax", "nanargmin"), ("idxmax", "idxmin"),
                  ("nlargest", "nsmallest"), ("max", "min"), ("nanmax", "nanmin"), ("amax", "amin"),
                  ("cummax", "cummin"), ("maximum", "minimum")]


def _find_argmax_argmin(tree: ast.Module, source: str) -> Iterator[Mutation]:
    swaps = {a: [b] for a, b in _EXTREMA_PAIRS} | {b: [a] for a, b in _EXTREMA_PAIRS}
    yield from _renames("argmax_argmin", tree, source, swaps, allow_method=True,
                        modules_ok=lambda module, new: module not in {"math", "statistics", "pandas"})
    # builtins need no import
    for call in _calls(tree):
        name, receiver = _callee(call)
        if receiver is None and name in {"max", "min"}:
            mutation = _rename("argmax_argmin", source, call, "min" if name == "max" else "max")
            if mutation:
                yield mutation


_TIME_SWAPS = {60: [3600], 3600: [60], 86400: [3600]}


def _power_of_ten(value: object) -> int | None:
    if type(value) not in (int, float) or not value > 0 or not math.isfinite(value):
        return None
    exponent = round(math.log10(value))
    if type(value) is int:
        return exponent if exponent >= 0 and value == 10 ** exponent else None
    return exponent if value == float(f"1e{exponent}") else None


def _ten_to(exponent: int, like: ast.Constant, text: str) -> str | None:
    """Literal text of 10**exponent, written the way the original literal was (int, 1e3, 1000.0)."""
    if type(like.value) is int:
        return str(10 ** exponent) if exponent >= 0 else None
    if "e" in text.lower():
        return f"1e{exponent}"
    return repr(float(f"1e{exponent}"))


def _unit_candidates(node: ast.Constant, text: str, multiplicative: bool, named: bool) -> list[str]:
    """Replacement texts modelling a unit slip for a literal in the given kind of context."""
    out: list[str] = []
    value = node.value
    if multiplicative or named:
        exponent = _power_of_ten(value)
        if exponent is not None and (exponent >= 1 or exponent <= -2):
            # a decade slip either way (percent vs fraction, cm vs mm), and for SI steps a
            # whole prefix down (k -> none, M -> k, m -> micro)
            steps = [exponent + 1, exponent - 1] + ([exponent - 3] if exponent % 3 == 0 else [])
            out += [t for t in (_ten_to(e, node, text) for e in steps) if t is not None]
        for new in _TIME_SWAPS.get(value, []):  # seconds / minutes / hours / days
            out.append(str(new) if type(value) is int else repr(float(new)))
    if value == 273.15 and type(value) is float:  # Kelvin offset rounded
        out.append("273.0")
    return out


def _find_unit_scale(tree: ast.Module, source: str) -> Iterator[Mutation]:
    parents = _parents(tree)
    scaling = (ast.Mult, ast.Div, ast.FloorDiv)
    shifting = (ast.Add, ast.Sub)
    for node, _, _ in _visible(tree):
        if not _is_number(node) or _in_index(node, parents) or _protected_literal(node, parents):
            continue
        parent, field = _literal_context(node, parents)
        op = getattr(parent, "op", None) if isinstance(parent, (ast.BinOp, ast.AugAssign)) else None
        # Unit conversions are scale factors (x * 1000, t / 3600), offsets (T - 273.15) or
        # named constants; a bare 100 in range(100) is a count, not a unit.
        # ... and [0] * 10 is a repetition
        multiplicative = isinstance(op, scaling) and not (
            isinstance(parent, ast.BinOp) and (_is_sequence_literal(parent.left) or _is_sequence_literal(parent.right)))
        named = (isinstance(parent, (ast.Assign, ast.AnnAssign)) and field == "value") \
            or isinstance(parent, ast.arguments)
        if not (multiplicative or named or isinstance(op, shifting)):
            continue
        start, end = _span(source, node)
        for new in _unit_candidates(node, source[start:end], multiplicative, named):
            yield _mutation("unit_scale", source, start, end, new)


def _is_zero(node: ast.AST) -> bool:
    return _is_number(node) and node.value == 0


def _swap(operator: str, source: str, node: ast.BinOp) -> Mutation | None:
    """Exchange the operands of a binary expression, bracketing them where precedence needs it."""
    parts = _operands(source, node, node.left, node.right)
    if parts is None:
        return None
    left_text, (op_start, op_end), right_text, left_grouped, right_grouped = parts
    outer = _BINOP_PRECEDENCE[type(node.op)]
    right_assoc = isinstance(node.op, ast.Pow)
    new_left, new_right = right_text, left_text
    if not right_grouped and (_precedence(node.right) < outer or (_precedence(node.right) == outer and right_assoc)):
        new_left = f"({new_left})"
    if not left_grouped and (_precedence(node.left) < outer or (_precedence(node.left) == outer and not right_assoc)):
        new_right = f"({new_right})"
    before = " " if source[op_start - 1:op_start].isspace() else ""
    after = " " if source[op_end:op_end + 1].isspace() else ""
    start, end = _span(source, node)
    return _mutation(operator, source, start, end, f"{new_left}{before}{source[op_start:op_end]}{after}{new_right}")


def _find_sign(tree: ast.Module, source: str) -> Iterator[Mutation]:
    for node, _, _ in _visible(tree):
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            start, end = _span(source, node)
            # the operand of a unary minus binds at least as tightly as the minus did, and
            # its own brackets are in the text after the '-', so it can stand in its place
            operand = source[start + 1:end].lstrip(" \t")
            if source[start] == "-" and operand and operand[0] not in "\\\r\n#":
                yield _mutation("sign", source, start, end, operand)
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Sub) \
                and not _is_zero(node.left) and not _is_zero(node.right):
            mutation = _swap("sign", source, node)
            if mutation:
                yield mutation


def _find_key_swap(tree: ast.Module, source: str) -> Iterator[Mutation]:
    # the pool is every string key subscripted anywhere (reads and writes): real column names
    pool = sorted({node.slice.value for node in ast.walk(tree) if isinstance(node, ast.Subscript)
                   and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str)})
    for node, _, _ in _visible(tree):
        if not (isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load)
                and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str)):
            continue
        key = node.slice.value
        index = pool.index(key)
        # the next keys in sorted order, wrapping around, at most two per site
        others = [pool[(index + step) % len(pool)] for step in range(1, len(pool))][:2]
        start, end = _span(source, node.slice)
        for other in others:
            yield _mutation("key_swap", source, start, end, _string_text(source[start:end], key, other))


_MISSING_REMOVALS = {"dropna", "fillna", "ffill", "bfill", "interpolate"}
_NAN_REDUCTIONS = {"nanmean", "nansum", "nanstd", "nanvar", "nanmax", "nanmin", "nanmedian", "nanpercentile",
                   "nanquantile", "nanargmax", "nanargmin", "nanprod", "nancumsum", "nancumprod"}


def _find_drop_missing_handling(tree: ast.Module, source: str) -> Iterator[Mutation]:
    modules, _ = _imports(tree)
    for node, _, _ in _visible(tree):
        if isinstance(node, ast.keyword) and node.arg in {"skipna", "dropna"}:
            mutation = _bool_flip("drop_missing_handling", source, node.value)
            if mutation:
                yield mutation
            continue
        if not isinstance(node, ast.Call):
            continue
        name, receiver = _callee(node)
        # pandas interpolate() takes keywords; with a positional argument it is most
        # likely some other interpolate (string templates, configuration values)
        if name in _MISSING_REMOVALS and receiver is not None and _module_of(receiver, modules) is None \
                and not (name == "interpolate" and node.args):
            text = _receiver_text(source, node.func)
            if text:  # x.dropna().mean() -> x.mean(): the receiver stands in for the whole call
                yield _mutation("drop_missing_handling", source, *_span(source, node), text)
        elif name == "nan_to_num" and len(node.args) == 1 and not node.keywords \
                and (receiver is None or _module_of(receiver, modules) == "numpy"):
            start, end = _span(source, node.args[0])
            yield _mutation("drop_missing_handling", source, *_span(source, node),
                            _bracket(source[start:end], node.args[0], 15))
    swaps = {name: [name[3:]] for name in _NAN_REDUCTIONS}
    yield from _renames("drop_missing_handling", tree, source, swaps, allow_method=False,
                        modules_ok=lambda module, new: module == "numpy")


_NORMALISER_CALLS = {"sum", "nansum", "max", "nanmax", "amax", "norm", "std", "nanstd", "mean", "nanmean", "len",
                     "count", "total", "size", "ptp", "sqrt"}
_NORMALISER_WORDS = {"total", "totals", "sum", "sums", "norm", "norms", "normaliser", "normalizer", "std", "sd",
                     "sigma", "scale", "denom", "denominator", "count", "counts", "n", "max", "size", "shape"}


def _looks_like_normaliser(node: ast.AST, depth: int = 0) -> bool:
    """Whether a divisor looks like a normalising quantity (a sum, count, norm, spread...)."""
    if depth > 3:
        return False
    if isinstance(node, ast.Call):
        name, _ = _callee(node)
        if name == "sqrt":  # standard errors: x / sqrt(n)
            return any(_looks_like_normaliser(arg, depth + 1) for arg in node.args)
        return name in _NORMALISER_CALLS
    if isinstance(node, (ast.Name, ast.Attribute)):
        word = node.id if isinstance(node, ast.Name) else node.attr
        parts = [p for p in re.split(r"[_\d]+", word.lower()) if p]
        return any(p in _NORMALISER_WORDS or p.startswith(("total", "norm")) for p in parts)
    if isinstance(node, ast.Subscript):
        return _looks_like_normaliser(node.value, depth + 1)
    if isinstance(node, ast.BinOp):  # x.max() - x.min(), n - 1
        return _looks_like_normaliser(node.left, depth + 1) or _looks_like_normaliser(node.right, depth + 1)
    return False


def _find_drop_normalisation(tree: ast.Module, source: str) -> Iterator[Mutation]:
    for node, _, _ in _visible(tree):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div) and _looks_like_normaliser(node.right):
            parts = _operands(source, node, node.left, node.right)
            if parts:
                # the dividend binds at least as tightly as the division did, so it can
                # stand in for it without brackets (its own brackets come along)
                yield _mutation("drop_normalisation", source, *_span(source, node), parts[0])
        elif isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Div) and _looks_like_normaliser(node.value):
            yield _mutation("drop_normalisation", source, *_span(source, node), "pass")


# --------------------------------------------------------------------------- generic operators

_OPERATOR_SWAPS = {ast.Add: "-", ast.Sub: "+", ast.Mult: "/", ast.Div: "*", ast.Pow: "*"}
_OPERATOR_TOKENS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Pow: "**"}


def _is_sequence_literal(node: ast.AST) -> bool:
    """Operands for which + and * mean concatenation or repetition, not arithmetic."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (str, bytes))
    return isinstance(node, (ast.JoinedStr, ast.List, ast.Tuple, ast.ListComp, ast.Dict, ast.Set))


def _find_binary_operator(tree: ast.Module, source: str) -> Iterator[Mutation]:
    for node, parent, field in _visible(tree):
        if isinstance(node, ast.BinOp) and type(node.op) in _OPERATOR_SWAPS:
            if _is_sequence_literal(node.left) or _is_sequence_literal(node.right):
                continue
            parts = _operands(source, node, node.left, node.right)
            if parts is None or source[parts[1][0]:parts[1][1]] != _OPERATOR_TOKENS[type(node.op)]:
                continue
            op_start, op_end = parts[1]
            new = _OPERATOR_SWAPS[type(node.op)]
            if not isinstance(node.op, ast.Pow):
                yield _mutation("binary_operator", source, op_start, op_end, new)
                continue
            # x ** 2 -> x * 2 lowers precedence; keep the product grouped where it sits
            start, end = _span(source, node)
            text = source[start:op_start] + new + source[op_end:end]
            if _needs_brackets(11, parent, field) and not _enclosed(source, start, end):
                text = f"({text})"
            yield _mutation("binary_operator", source, start, end, text)
        elif isinstance(node, ast.AugAssign) and type(node.op) in _OPERATOR_SWAPS \
                and not _is_sequence_literal(node.value):
            token = _token_between(source, _span(source, node.target)[1], _span(source, node.value)[0])
            if token and source[token[0]:token[1]] == _OPERATOR_TOKENS[type(node.op)] + "=":
                yield _mutation("binary_operator", source, *token, _OPERATOR_SWAPS[type(node.op)] + "=")


def _find_swap_operands(tree: ast.Module, source: str) -> Iterator[Mutation]:
    for node, _, _ in _visible(tree):
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Sub, ast.Div, ast.Pow)):
            mutation = _swap("swap_operands", source, node)
            if mutation:
                yield mutation


def _find_constant(tree: ast.Module, source: str) -> Iterator[Mutation]:
    parents = _parents(tree)
    for node, _, _ in _visible(tree):
        if not _is_number(node) or _in_index(node, parents) or _protected_literal(node, parents):
            continue
        if type(node.value) is int and node.value not in (0, 1):
            new = str(node.value + 1)  # the magnitude: -3 becomes -4
        elif type(node.value) is float and node.value != 0:
            new = repr(node.value * 2)
        else:
            continue
        yield _mutation("constant", source, *_span(source, node), new)


def _find_negate_condition(tree: ast.Module, source: str) -> Iterator[Mutation]:
    for node, parent, field in _visible(tree):
        is_test = (isinstance(parent, (ast.If, ast.While, ast.IfExp)) and field == "test") \
            or (isinstance(parent, ast.comprehension) and field == "ifs")
        if not is_test or isinstance(node, ast.Constant):  # `while True` is a loop form, not a condition
            continue
        start, end = _span(source, node)
        text = source[start:end]
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not) and text.startswith("not"):
            yield _mutation("negate_condition", source, start, end, text[3:].lstrip(" \t"))
        else:
            yield _mutation("negate_condition", source, start, end, f"not ({text})")


# --------------------------------------------------------------------------- registry (priority order)

register(Operator("reduction_axis", "Reduce along the other axis of a table or array.", True,
                  _find_reduction_axis))
register(Operator("degrees_of_freedom", "Switch between the sample and the population formula for a spread.",
                  True, _find_degrees_of_freedom))
register(Operator("log_base", "Take the logarithm in a different base.", True, _find_log_base))
register(Operator("mean_median_sum", "Summarise with a different statistic (mean, median or total).", True,
                  _find_mean_median_sum))
register(Operator("comparison_boundary", "Move a threshold boundary so that the edge value flips sides.", True,
                  _find_comparison_boundary))
register(Operator("slice_off_by_one", "Shift an index or slice bound by one position.", True,
                  _find_slice_off_by_one))
register(Operator("sort_order", "Rank in the opposite direction.", True, _find_sort_order))
register(Operator("argmax_argmin", "Pick the opposite extreme (largest instead of smallest or back).", True,
                  _find_argmax_argmin))
register(Operator("unit_scale", "Convert with a factor off by a unit prefix, a decade or a time unit.", True,
                  _find_unit_scale))
register(Operator("sign", "Flip the sign of a quantity or the direction of a difference.", True, _find_sign))
register(Operator("key_swap", "Read a different named column or field.", True, _find_key_swap))
register(Operator("drop_missing_handling", "Stop skipping, dropping or filling missing values.", True,
                  _find_drop_missing_handling))
register(Operator("drop_normalisation", "Leave out the division that normalises a quantity.", True,
                  _find_drop_normalisation))
register(Operator("binary_operator", "Use the inverse arithmetic operator.", False, _find_binary_operator))
register(Operator("swap_operands", "Exchange the two sides of an order-sensitive operation.", False,
                  _find_swap_operands))
register(Operator("constant", "Change a numeric constant slightly.", False, _find_constant))
register(Operator("negate_condition", "Invert a branch, loop or filter condition.", False,
                  _find_negate_condition))
