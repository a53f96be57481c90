"""A program's steps as a nested, numbered outline of short code lines.

A Reproduction statement without a model cannot paraphrase the analysis, and a list of the library calls
it makes leaves out what decides its numbers: a running sum (``cum += x``), a 0/1 coding, a filter on a
literal (``animal == 'C2R'``), a correction applied to extreme rates. The outline states each of them as
the code wrote it, in order and nested as the code nests them, so the task is answerable from the
statement and the data; the agent still has to turn it into a program that reads the workspace and
reports the results. A model rewrite (``envs/rewrite.py``) may reword it; it may not drop a number.

Repository text stays untrusted: comments and docstrings never appear, and a string literal that could
address a reader (long, many words, or words such as ``ignore``) is shown as ``'…'``. Figure and print cosmetics (labels,
titles, legends, saving) are left out: they change no result.
"""
from __future__ import annotations

import ast
import copy
from dataclasses import dataclass, field

from .answers import MAX_LABEL_CHARS, MAX_LABEL_WORDS, has_instruction_words
from .parsing import call_name

MAX_STEPS = 150  # an outline longer than this is not a statement anyone reads; the Reproduction is rejected
# Characters of one step's code. A cut step loses what it says (a real `longest_orf(seq, min_codons=30)` at
# the end of a dict literal made its task underspecified); each string in it is already bounded.
LINE_LIMIT = 400
HIDDEN = "\u2026"

# Calls that only dress a figure or a console: their arguments change no result.
COSMETIC_CALLS = {
    "set_xlabel", "set_ylabel", "set_zlabel", "set_title", "xlabel", "ylabel", "title", "suptitle", "legend",
    "grid", "tight_layout", "savefig", "show", "close", "set_xticks", "set_yticks", "xticks", "yticks",
    "set_xticklabels", "set_yticklabels", "tick_params", "set_aspect", "subplots_adjust", "colorbar",
    "set_facecolor", "axis", "set_style", "set_context", "set_theme", "use", "rc", "rcParams", "filterwarnings",
    "simplefilter", "seterr", "set_printoptions", "set_option", "minorticks_on", "set_major_formatter",
    "set_minor_formatter", "set_major_locator", "set_minor_locator", "annotate_axes", "draw", "pause", "ion",
    "ioff", "clf", "cla", "set_size_inches", "invert_yaxis", "invert_xaxis", "set_label_position",
}

# The cosmetic calls that say which figure and axes a drawing lands on, and the titles, axis labels and legend
# entries a figure field is named by: an outline keeps them when the answer is read off figures
# (``program_outline(keep=...)``), or "the line in the axes titled 'Sample 1' (figure 2)" names what the
# listed code never makes.
FIGURE_CALLS = frozenset({"close", "clf", "cla", "title", "set_title", "suptitle", "xlabel", "ylabel", "set_xlabel",
                          "set_ylabel", "legend"})


@dataclass
class Outline:
    lines: list[str] = field(default_factory=list)
    kept_calls: frozenset[str] = frozenset()  # cosmetic calls shown all the same (``FIGURE_CALLS`` or none)
    steps: int = 0
    hidden_strings: int = 0
    cut_lines: int = 0
    unused_functions: int = 0  # top-level functions and classes left out because nothing reachable names them


def _names_in(nodes) -> set[str]:
    """Every name a piece of code could reach a top-level function or class by: names, attribute names
    (``helper.fit``, ``obj.fit``) and short identifier-like strings (``getattr(module, 'fit')``)."""
    found = set()
    for top in nodes:
        for node in ast.walk(top):
            if isinstance(node, ast.Name):
                found.add(node.id)
            elif isinstance(node, ast.Attribute):
                found.add(node.attr)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.isidentifier():
                found.add(node.value)
    return found


def unreachable_definitions(program: dict[str, str], entry: str) -> dict[str, list[tuple[str, int, int]]]:
    """Top-level functions and classes of the program's ``.py`` files that no code run from ``entry`` names:
    ``{path: [(name, first line, last line)]}``.

    What runs is every module's top-level code that is not a definition (the entry's, its main guard, and
    each helper module's, run when imported); a definition is reached when reached code names it, by any
    name in any file (an over-approximation: a method called ``fit`` keeps a function ``fit``). A decorated
    definition is always kept (a decorator may register it), and a file that does not parse keeps all."""
    trees = {}
    for path, text in program.items():
        if path.endswith(".py"):
            try:
                trees[path] = ast.parse(text)
            except (SyntaxError, ValueError, RecursionError):
                return {}
    definitions: dict[str, list[tuple[str, ast.stmt]]] = {}
    roots = []
    for path, tree in trees.items():
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and not node.decorator_list:
                definitions.setdefault(node.name, []).append((path, node))
            else:
                roots.append(node)
    reached: set[int] = set()
    pending = _names_in(roots)
    seen: set[str] = set()
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        for _, node in definitions.get(name, []):
            if id(node) not in reached:
                reached.add(id(node))
                pending |= _names_in([node]) - seen
    unused: dict[str, list[tuple[str, int, int]]] = {}
    for name, places in definitions.items():
        for path, node in places:
            if id(node) not in reached:
                unused.setdefault(path, []).append((name, node.lineno, node.end_lineno or node.lineno))
    return unused


def _safe_string(text: str) -> bool:
    """A literal short and plain enough to show inside a code span: the limits of a field label
    (``answers``), with any printable character but a backtick (``'RMSE:'``, ``'{:.3f}'``, ``'°C'``)."""
    # Tabs and newlines are shown as the escapes unparse writes ('\t'), so a delimiter stays visible.
    plain = text.replace("\t", " ").replace("\n", " ").replace("\r", " ")
    return (len(text) <= MAX_LABEL_CHARS and plain.isprintable() and "`" not in text
            and len(text.split()) <= MAX_LABEL_WORDS and not has_instruction_words(text))


class _HideUnsafeStrings(ast.NodeTransformer):
    def __init__(self):
        self.hidden = 0

    def visit_Constant(self, node: ast.Constant):
        if isinstance(node.value, str) and not _safe_string(node.value):
            self.hidden += 1
            return ast.copy_location(ast.Constant(HIDDEN), node)
        return node

    def visit_JoinedStr(self, node: ast.JoinedStr):
        # An f-string's text parts are checked one by one; its format specs are JoinedStrs of their own.
        self.generic_visit(node)
        return node


def _code(node: ast.AST, outline: Outline) -> str:
    hider = _HideUnsafeStrings()
    shown = hider.visit(copy.deepcopy(node))
    outline.hidden_strings += hider.hidden
    try:
        text = ast.unparse(shown)
    except (ValueError, RecursionError):
        text = HIDDEN
    text = " ".join(text.split())
    if len(text) > LINE_LIMIT:
        outline.cut_lines += 1
        text = text[:LINE_LIMIT - 1] + HIDDEN
    # Hidden strings carry no backtick and unparse adds none, so one backtick delimits the span.
    return f"`{text}`" if "`" not in text else f"`{HIDDEN}`"


def _is_cosmetic(stmt: ast.stmt, kept: frozenset[str] = frozenset()) -> bool:
    if isinstance(stmt, ast.Expr):
        name = call_name(stmt.value)
        return name in COSMETIC_CALLS and name not in kept
    if isinstance(stmt, (ast.Assign, ast.AugAssign)):
        target = stmt.targets[0] if isinstance(stmt, ast.Assign) else stmt.target
        # plt.rcParams['font.size'] = 12
        return isinstance(target, ast.Subscript) and "rcParams" in ast.unparse(target.value)
    return False


def _is_main_guard(stmt: ast.stmt) -> bool:
    return (isinstance(stmt, ast.If) and isinstance(stmt.test, ast.Compare)
            and isinstance(stmt.test.left, ast.Name) and stmt.test.left.id == "__name__")


def _header(stmt: ast.stmt, outline: Outline) -> str | None:
    """The line that opens a compound statement, or None for a simple one."""
    if isinstance(stmt, (ast.For, ast.AsyncFor)):
        return f"for each {_code(stmt.target, outline)} in {_code(stmt.iter, outline)}:"
    if isinstance(stmt, ast.While):
        return f"while {_code(stmt.test, outline)}:"
    if isinstance(stmt, ast.If):
        return f"if {_code(stmt.test, outline)}:"
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        items = ", ".join(_code(item.context_expr, outline)
                          + (f" as {_code(item.optional_vars, outline)}" if item.optional_vars else "")
                          for item in stmt.items)
        return f"with {items}:"
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return f"define the function {_code(ast.Name(stmt.name), outline)} of {_code(stmt.args, outline)}:" \
            if stmt.args.args or stmt.args.vararg or stmt.args.kwarg else \
            f"define the function {_code(ast.Name(stmt.name), outline)} (no arguments):"
    if isinstance(stmt, ast.ClassDef):
        return f"define the class {_code(ast.Name(stmt.name), outline)}:"
    if isinstance(stmt, ast.Try) or type(stmt).__name__ == "TryStar":
        return "try:"
    return None


def _walk(body: list[ast.stmt], depth: int, outline: Outline, skip: frozenset[str] = frozenset(),
          number: int = 0, unused: frozenset[int] = frozenset()) -> int:
    """Append ``body``'s steps, numbered on from ``number``; returns the last number used. ``unused``: first
    lines of top-level definitions nothing reachable names (left out)."""
    for stmt in body:
        if isinstance(stmt, (ast.Import, ast.ImportFrom, ast.Pass, ast.Global, ast.Nonlocal)):
            continue
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name in skip:
            continue
        if depth == 0 and isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) \
                and stmt.lineno in unused:
            outline.unused_functions += 1
            continue
        if isinstance(stmt, ast.Expr) and call_name(stmt.value) in skip:
            # The slice's own report call: where (and in which loop pass) the asked-for value is taken.
            args = stmt.value.args
            if len(args) == 2:
                number += 1
                outline.steps += 1
                outline.lines.append(f"{'   ' * depth}{number}. the requested result is {_code(args[1], outline)} "
                                     "as it stands here")
                break  # the slice stops here (its SystemExit): nothing after it is a step
            continue
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            continue  # a docstring or a bare literal
        if _is_cosmetic(stmt, outline.kept_calls):
            continue
        if _is_main_guard(stmt):
            number = _walk(stmt.body, depth, outline, skip, number, unused)  # on the module's numbering
            continue
        header = _header(stmt, outline)
        number += 1
        outline.steps += 1
        indent = "   " * depth
        if header is None:
            outline.lines.append(f"{indent}{number}. {_code(stmt, outline)}")
            continue
        outline.lines.append(f"{indent}{number}. {header}")
        if isinstance(stmt, ast.ClassDef):
            _walk(stmt.body, depth + 1, outline, skip)
            continue
        _walk(stmt.body, depth + 1, outline, skip)
        if isinstance(stmt, ast.Try) or type(stmt).__name__ == "TryStar":
            for handler in stmt.handlers:
                caught = f" ({_code(handler.type, outline)})" if handler.type is not None else ""
                outline.lines.append(f"{indent}   - if that fails{caught}:")
                _walk(handler.body, depth + 2, outline, skip)
            orelse, final = stmt.orelse, stmt.finalbody
            if orelse:
                outline.lines.append(f"{indent}   - if it succeeds:")
                _walk(orelse, depth + 2, outline, skip)
            if final:
                outline.lines.append(f"{indent}   - in any case:")
                _walk(final, depth + 2, outline, skip)
            continue
        orelse = getattr(stmt, "orelse", None)
        if orelse:
            if isinstance(stmt, ast.If) and len(orelse) == 1 and isinstance(orelse[0], ast.If):
                outline.lines.append(f"{indent}   - otherwise:")
            else:
                outline.lines.append(f"{indent}   - otherwise" + (" (when the loop ends without break):"
                                                                 if not isinstance(stmt, ast.If) else ":"))
            _walk(orelse, depth + 2, outline, skip)
    return number


def program_outline(program: dict[str, str], entry: str, skip: frozenset[str] = frozenset(),
                    keep: frozenset[str] = frozenset()) -> Outline:
    """The outline of ``entry``, then of every other file of the program (its helper modules). Functions named
    in ``skip`` are left out; a statement that only calls one with ``(name, value)`` (a slice's ``report_result``)
    becomes the step that says the value there is the requested result. Top-level functions and classes that
    nothing run from ``entry`` names are left out (``unreachable_definitions``; ``verify`` leaves the same
    code out of what a statement must state), and a last line says so. Cosmetic calls named in ``keep`` are
    shown as steps (``FIGURE_CALLS`` when the answer is read off figures)."""
    outline = Outline(kept_calls=keep)
    unused = unreachable_definitions(program, entry)
    for path in [entry, *sorted(p for p in program if p != entry)]:
        if not path.endswith(".py"):
            continue
        tree = ast.parse(program[path])
        if path != entry:
            shown = path if _safe_string(path) else HIDDEN
            outline.lines.append(f"In the helper module `{shown}`:")
        before = len(outline.lines)
        _walk(tree.body, 0, outline, skip, unused=frozenset(first for _, first, _ in unused.get(path, [])))
        if path != entry and len(outline.lines) == before:
            outline.lines.pop()
    if outline.unused_functions:
        outline.lines.append("(Functions and classes the program defines but never uses are left out.)")
    return outline
