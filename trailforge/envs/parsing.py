"""Parsing Python source that comes from a mined repository (or a program derived from one).

``ast.parse`` on hostile text fails in more ways than SyntaxError: a 200 KB ``X = 1+1+...``
raises RecursionError while the tree is built, a huge file can raise MemoryError, null bytes
raise ValueError on some 3.11 releases, and a tree that parses can still be too deep for the
recursive visitors that run on it afterwards (``ast.dump``, ``ast.literal_eval``, our own
analyses). ``parse_python`` turns all of these into one exception, ``UnparseableSource``,
carrying a reason code that callers record as a counted reject.

Mined repositories hold many Python 2 scripts (``print x``, ``except E, e:``, backticks, ``0777``).
They fail ``ast.parse`` too, but they are not broken: they are written for an interpreter we do not
run. ``looks_like_python2`` recognises the construct the parser stopped at, and ``parse_python``
then rejects the file as ``python2_only`` instead of ``syntax_error``.
"""
from __future__ import annotations

import ast
import io
import re
import tokenize

# Deeper trees are refused. Across ~29,000 files of the standard library and installed packages
# only three (generated sympy tables) pass 150; the recursion limit is 1000 frames and a
# recursive visitor spends one or two per level, so 200 leaves room for the caller's own stack.
MAX_AST_DEPTH = 200

SYNTAX_ERROR = "syntax_error"              # the parser says it is not Python
UNPARSEABLE_SOURCE = "unparseable_source"  # too deep or too large to parse safely, or null bytes
PYTHON2_ONLY = "python2_only"              # Python 2 syntax (print statement, except E, e: ...)
# Every reason parse_python gives: a file rejected for any of them has no syntax tree to analyse.
UNPARSEABLE_REASONS = frozenset({SYNTAX_ERROR, UNPARSEABLE_SOURCE, PYTHON2_ONLY})


# A subclass of SyntaxError so that every handler written for "does not parse" (there are several,
# and callers of find_mutations / scan_imports rely on it) also covers the failures that used to
# escape as RecursionError or MemoryError.
class UnparseableSource(SyntaxError):
    def __init__(self, path: str, reason: str, detail: str, line: int | None = None, message: str | None = None):
        super().__init__(message or f"{path} cannot be parsed: {detail}")
        self.path, self.reason, self.detail = path, reason, detail
        self.lineno = line

    def __str__(self) -> str:
        return self.args[0]


def call_name(node: ast.AST) -> str | None:
    """The called name of a call node: ``f`` for ``f(x)``, ``mean`` for ``np.mean(x)``; None for anything else."""
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Attribute):
            return func.attr
        if isinstance(func, ast.Name):
            return func.id
    return None


def parse_python(source: str | bytes, path: str = "<source>") -> ast.Module:
    """``ast.parse(source)``, or ``UnparseableSource`` naming ``path`` and why."""
    try:
        tree = ast.parse(source, filename=path)
    except SyntaxError as exc:
        if "null bytes" in str(exc.msg):
            raise UnparseableSource(path, UNPARSEABLE_SOURCE, "the file contains null bytes") from None
        construct = looks_like_python2(source, exc)
        if construct:
            raise UnparseableSource(path, PYTHON2_ONLY, construct, exc.lineno,
                                    f"{path} is Python 2 only ({construct}); it cannot run under Python 3") from None
        line = f"line {exc.lineno}: " if exc.lineno else ""
        raise UnparseableSource(path, SYNTAX_ERROR, f"{line}{exc.msg}", exc.lineno) from None
    except ValueError as exc:  # null bytes on Python releases that raise ValueError for them
        raise UnparseableSource(path, UNPARSEABLE_SOURCE, str(exc)) from None
    except RecursionError:
        raise UnparseableSource(path, UNPARSEABLE_SOURCE,
                                "nested too deeply for the parser (RecursionError)") from None
    except MemoryError:
        raise UnparseableSource(path, UNPARSEABLE_SOURCE, "too large for the parser (MemoryError)") from None
    too_deep, line = _deeper_than(tree, MAX_AST_DEPTH)
    if too_deep:
        raise UnparseableSource(path, UNPARSEABLE_SOURCE,
                                f"syntax tree nested more than {MAX_AST_DEPTH} levels deep (near line {line})", line)
    return tree


def _deeper_than(tree: ast.AST, limit: int) -> tuple[bool, int | None]:
    """Whether some node is deeper than ``limit``, and the line it sits on. Iterative: a recursive
    check would be the very crash it is there to prevent."""
    stack = [(tree, 1, None)]
    while stack:
        node, depth, line = stack.pop()
        line = getattr(node, "lineno", line)
        if depth > limit:
            return True, line
        stack.extend((child, depth + 1, line) for child in ast.iter_child_nodes(node))
    return False, None


# --- Python 2 ---------------------------------------------------------------------------------------
# Only the line the parser stopped at is examined, and at most this much of it: the check costs the
# same on a 200 KB one-line file as on a short script.
_MAX_LINE_CHARS = 4000

# Messages Python 3 gives for Python 2 constructs (3.8 to 3.13 wordings), and what they name.
_MESSAGES = (
    ("Missing parentheses in call to 'print'", "print statement"),
    ("Missing parentheses in call to 'exec'", "exec statement"),
    ("multiple exception types must be parenthesized", "except X, e clause"),
    ("leading zeros in decimal integer literals", "old octal literal"),
    ("Function parameters cannot be parenthesized", "tuple parameter unpacking"),
    ("Lambda expression parameters cannot be parenthesized", "tuple parameter unpacking"),
)
_LONG_LITERAL = re.compile(r"(?<![\w.])(?:0[xX][0-9a-fA-F]+|\d+)[lL]\b")
_OCTAL_LITERAL = re.compile(r"(?<![\w.])0[0-7]+[lL]?(?![\w.])")
_NOT_PRINTED = frozenset({"if", "else", "in", "is", "and", "or", "for", "as", "import"})


def looks_like_python2(source: str | bytes, error: SyntaxError) -> str | None:
    """A short description of the Python 2 construct that explains ``error`` ("print statement at
    line 12"), or None when the error is not one Python 2 would have accepted.

    Pure and bounded: it reads the error's message and the one source line it points at (cut to
    ``_MAX_LINE_CHARS``), tokenized on its own, so a hostile file costs no more than a short one."""
    lineno = error.lineno or 0
    where = f" at line {lineno}" if lineno else ""
    message = str(error.msg or "")
    if isinstance(error, TabError):
        # Python 2 read a tab as eight columns and accepted indentation that mixes them with spaces.
        return f"indentation mixing tabs and spaces{where}"
    text = _error_line(source, error)
    for words, construct in _MESSAGES:
        if words in message:
            if construct == "old octal literal" and not _OCTAL_LITERAL.search(text):
                return None  # 09 and the like: Python 2 refused them too
            return construct + where
    if "invalid" in message and "literal" in message and _LONG_LITERAL.search(text):
        return f"long integer literal ({_LONG_LITERAL.search(text).group()}){where}"
    construct = _construct_in_line(text, error.offset)
    return construct + where if construct else None


def _error_line(source: str | bytes, error: SyntaxError) -> str:
    """The source line ``error`` points at, at most ``_MAX_LINE_CHARS`` long ('' when unknown)."""
    if error.text:
        return error.text[:_MAX_LINE_CHARS]
    if not error.lineno or error.lineno < 1:
        return ""
    if isinstance(source, bytes):
        source = source.decode("utf-8", errors="replace")
    start = 0
    for _ in range(error.lineno - 1):  # walk to the line without splitting the whole file
        start = source.find("\n", start) + 1
        if start == 0:
            return ""
    end = source.find("\n", start, start + _MAX_LINE_CHARS)
    return source[start:end if end >= 0 else start + _MAX_LINE_CHARS]


def _line_tokens(text: str) -> list[tokenize.TokenInfo]:
    """The tokens of one line, as far as the tokenizer gets (an unterminated string or bracket, or a
    character Python 3 does not know, ends it early; the tokens before it still count)."""
    tokens = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(text.strip("\n").lstrip() + "\n").readline):
            if token.type in (tokenize.NEWLINE, tokenize.NL, tokenize.ENDMARKER):
                break
            if token.type not in (tokenize.INDENT, tokenize.DEDENT, tokenize.COMMENT):
                tokens.append(token)
    except (tokenize.TokenError, SyntaxError, ValueError):
        pass
    return tokens


def _construct_in_line(text: str, offset: int | None) -> str | None:
    """Token checks, on the error's line, for the Python 2 forms the parser reports as plain
    "invalid syntax": backticks, ``<>``, ``ur''``, ``print x``, ``print >>f``, ``exec "..."``,
    ``except E, e:`` and ``raise E, "message"``."""
    if not text.strip():
        return None
    tokens = _line_tokens(text)
    first = tokens[0].string if tokens else ""
    following = tokens[1] if len(tokens) > 1 else None
    if first == "print" and following is not None:
        if following.string == ">>":
            return "print >> statement"
        if following.type in (tokenize.STRING, tokenize.NUMBER) or following.string == "`" \
                or (following.type == tokenize.NAME and following.string not in _NOT_PRINTED):
            return "print statement"
    if first == "exec" and following is not None and following.type in (tokenize.STRING, tokenize.NAME):
        return "exec statement"
    if first in ("except", "raise") and _comma_before_colon(tokens[1:]):
        return "except X, e clause" if first == "except" else "raise X, message statement"
    for before, token in zip([None, *tokens], tokens):
        if token.string == "`":
            return "backtick repr"
        if before is not None and before.end == token.start:
            if before.string == "<" and token.string == ">":
                return "<> operator"
            if before.type == tokenize.NAME and before.string.lower() == "ur" and token.type == tokenize.STRING:
                return "ur'' string"
            if before.type == tokenize.NUMBER and token.type == tokenize.NAME and token.string in ("l", "L"):
                return f"long integer literal ({before.string}{token.string})"
            if before.string == "0" and token.type == tokenize.NUMBER and token.string.isdigit():
                return "old octal literal"
    # The tokenizer stops at a character it does not know; the parser's offset still points at it.
    line = text.lstrip()
    column = (offset or 0) - 1 - (len(text) - len(line))
    if 0 <= column < len(line):
        if line[column] == "`":
            return "backtick repr"
        if line.startswith("<>", column):
            return "<> operator"
    return None


def _comma_before_colon(tokens: list[tokenize.TokenInfo]) -> bool:
    """Whether a comma outside brackets comes before the statement's colon (or its end)."""
    depth = 0
    for token in tokens:
        if token.string in ("(", "[", "{"):
            depth += 1
        elif token.string in (")", "]", "}"):
            depth -= 1
        elif depth == 0 and token.string == ":":
            return False
        elif depth == 0 and token.string == ",":
            return True
    return False
