"""Mutations as text edits: the span they replace, character offsets from the byte columns ``ast`` reports,
operator precedence and brackets, and the edits several operators share (swap two operands, rename a call,
flip a literal boolean). Every byte outside a mutation's span is left as it was."""
from __future__ import annotations

import ast
import bisect
import functools
import re
from dataclasses import dataclass

from ..parsing import parse_python



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


def apply_mutation(source: str, mutation: Mutation) -> str:
    """Splice the replacement into ``source``; refuse if the span no longer holds ``original``."""
    start, end = resolve(source, mutation)
    return source[:start] + mutation.replacement + source[end:]


def mutated_line(source: str, mutation: Mutation) -> tuple[str, str]:
    """The whole line(s) the mutation touches, before and after, without line terminators."""
    start, end = resolve(source, mutation)
    starts = _line_starts(source)
    first = starts[mutation.line - 1]
    last = _line_end(source, starts, mutation.end_line - 1)
    return source[first:last], source[first:start] + mutation.replacement + source[end:last]


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


def span(source: str, node: ast.AST) -> tuple[int, int]:
    return (_offset(source, node.lineno, node.col_offset),
            _offset(source, node.end_lineno, node.end_col_offset))


def _line_col(source: str, offset: int) -> tuple[int, int]:
    starts = _line_starts(source)
    index = bisect.bisect_right(starts, offset) - 1
    return index + 1, offset - starts[index]


def resolve(source: str, mutation: Mutation) -> tuple[int, int]:
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


def make_mutation(operator: str, source: str, start: int, end: int, replacement: str) -> Mutation:
    line, col = _line_col(source, start)
    end_line, end_col = _line_col(source, end)
    return Mutation(operator, "", line, col, end_line, end_col, source[start:end], replacement)


def changes_tree(tree: ast.Module, text: str, start: int, end: int, replacement: str,
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
            child_start, child_end = span(text, child)
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


def _code_chars(gap: str) -> str:
    """Blank out comments in the text between two tokens, keeping its length.

    Only used on gaps between the pieces of one expression, which hold nothing but
    blanks, brackets, comments, line continuations and the operator itself (never a
    string), so a plain '#'-to-end-of-line rule is exact there.
    """
    return re.sub(r"#[^\r\n]*", lambda m: " " * len(m.group()), gap)


def token_between(source: str, start: int, end: int) -> tuple[int, int] | None:
    """Span of the operator token that sits between two operands."""
    found = re.search(r"[^\s()\\]+", _code_chars(source[start:end]))
    return (start + found.start(), start + found.end()) if found else None


def binop_operands(source: str, node: ast.AST, left: ast.AST, right: ast.AST):
    """Split a binary expression into (left text, operator span, right text).

    The operand texts carry the brackets the author put around them, which ast leaves
    outside the operand nodes, so they can be moved around without changing meaning.
    Returns None if the operator cannot be located.
    """
    start, end = span(source, node)
    left_end = span(source, left)[1]
    right_start = span(source, right)[0]
    op = token_between(source, left_end, right_start)
    if op is None:
        return None
    closers = _code_chars(source[left_end:op[0]]).count(")")
    openers = _code_chars(source[op[1]:right_start]).count("(")
    left_text = source[start:left_end] + ")" * closers
    right_text = "(" * openers + source[right_start:end]
    return left_text, op, right_text, closers > 0, openers > 0


def name_token(source: str, func: ast.expr) -> tuple[int, int] | None:
    """Span of the bare function name in ``f`` or ``obj.f`` (the part an edit renames)."""
    if isinstance(func, ast.Name):
        return span(source, func)
    if isinstance(func, ast.Attribute):
        end = span(source, func)[1]
        start = end - len(func.attr)
        # identifiers are NFKC-normalised by the parser; give up if the spelling differs
        return (start, end) if source[start:end] == func.attr else None
    return None


def receiver_text(source: str, func: ast.Attribute) -> str | None:
    """Text of ``obj`` in ``obj.method``, with the author's brackets around it."""
    start = span(source, func)[0]
    value_end = span(source, func.value)[1]
    token = name_token(source, func)
    if token is None:
        return None
    gap = _code_chars(source[value_end:token[0]])
    if gap.count(".") != 1:
        return None
    return source[start:value_end] + ")" * gap[:gap.index(".")].count(")")


def enclosed(source: str, start: int, end: int) -> bool:
    """Whether brackets sit immediately around the span (so it is already grouped)."""
    before = source[:start].rstrip()
    after = _code_chars(source[end:end + 200]).lstrip()
    return before.endswith("(") and after.startswith(")")


def string_text(original: str, old: str, new: str) -> str:
    """Literal text for ``new`` in the quoting style of ``original`` when that is trivially safe."""
    quote = original[:1]
    if quote in ("'", '"') and original == quote + old + quote and quote not in new and "\\" not in new:
        return quote + new + quote
    return repr(new)


def add_keyword(source: str, call: ast.Call, keyword: str) -> tuple[int, int, str] | None:
    """An edit appending ``keyword`` (e.g. ``ddof=1``) as the last argument of ``call``."""
    if any(k.arg is None for k in call.keywords):
        return None  # a **mapping may already pass the keyword; adding it could duplicate it
    call_end = span(source, call)[1]
    if source[call_end - 1:call_end] != ")":
        return None
    items = [*call.args, *call.keywords]
    if not items:
        func_end = span(source, call.func)[1]
        return func_end, call_end, source[func_end:call_end - 1] + keyword + ")"
    if len(items) == 1 and isinstance(items[0], ast.GeneratorExp) and span(source, items[0])[1] == call_end:
        # f(x for x in y): the generator shares the call's brackets and needs its own once
        # another argument follows it.
        gen_start = span(source, items[0])[0]
        return gen_start, call_end, "(" + source[gen_start:call_end] + ", " + keyword + ")"
    last = max(items, key=lambda n: (n.end_lineno, n.end_col_offset))
    start, end = span(source, last)
    tail = _code_chars(source[end:call_end - 1])
    if ")" in tail:  # brackets around the last argument belong to it
        end += tail.rindex(")") + 1
    return start, end, source[start:end] + ", " + keyword


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


def needs_brackets(precedence: int, parent: ast.AST | None, field: str) -> bool:
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


def bracket(text: str, node: ast.AST, minimum: int) -> str:
    return text if _precedence(node) >= minimum else f"({text})"


def rename(operator: str, source: str, call: ast.Call, new: str) -> Mutation | None:
    token = name_token(source, call.func)
    return None if token is None else make_mutation(operator, source, *token, new)


def bool_flip(operator: str, source: str, node: ast.AST) -> Mutation | None:
    if isinstance(node, ast.Constant) and type(node.value) is bool:
        return make_mutation(operator, source, *span(source, node), str(not node.value))
    return None


def swap(operator: str, source: str, node: ast.BinOp) -> Mutation | None:
    """Exchange the operands of a binary expression, bracketing them where precedence needs it."""
    parts = binop_operands(source, node, node.left, node.right)
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
    start, end = span(source, node)
    return make_mutation(operator, source, start, end, f"{new_left}{before}{source[op_start:op_end]}{after}{new_right}")
