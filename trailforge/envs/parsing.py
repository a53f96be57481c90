"""Parsing Python source that comes from a mined repository (or a program derived from one).

``ast.parse`` on hostile text fails in more ways than SyntaxError: a 200 KB ``X = 1+1+...``
raises RecursionError while the tree is built, a huge file can raise MemoryError, null bytes
raise ValueError on some 3.11 releases, and a tree that parses can still be too deep for the
recursive visitors that run on it afterwards (``ast.dump``, ``ast.literal_eval``, our own
analyses). ``parse_python`` turns all of these into one exception, ``UnparseableSource``,
carrying a reason code that callers record as a counted reject.
"""
from __future__ import annotations

import ast
import re

# Deeper trees are refused. Across ~29,000 files of the standard library and installed packages
# only three (generated sympy tables) pass 150; the recursion limit is 1000 frames and a
# recursive visitor spends one or two per level, so 200 leaves room for the caller's own stack.
MAX_AST_DEPTH = 200

SYNTAX_ERROR = "syntax_error"              # the parser says it is not Python
UNPARSEABLE_SOURCE = "unparseable_source"  # too deep or too large to parse safely, or null bytes
PYTHON2_ONLY = "python2_only"              # Python 2 syntax: it cannot run under the Python 3 we have


# A subclass of SyntaxError so that every handler written for "does not parse" (there are several,
# and callers of find_mutations / scan_imports rely on it) also covers the failures that used to
# escape as RecursionError or MemoryError.
class UnparseableSource(SyntaxError):
    def __init__(self, path: str, reason: str, detail: str, line: int | None = None):
        super().__init__(f"{path} cannot be parsed: {detail}")
        self.path, self.reason, self.detail = path, reason, detail
        self.lineno = line

    def __str__(self) -> str:
        return self.args[0]


def parse_python(source: str | bytes, path: str = "<source>") -> ast.Module:
    """``ast.parse(source)``, or ``UnparseableSource`` naming ``path`` and why."""
    try:
        tree = ast.parse(source, filename=path)
    except SyntaxError as exc:
        if "null bytes" in str(exc.msg):
            raise UnparseableSource(path, UNPARSEABLE_SOURCE, "the file contains null bytes") from None
        line = f"line {exc.lineno}: " if exc.lineno else ""
        construct = looks_like_python2(source, exc)
        if construct:
            raise UnparseableSource(path, PYTHON2_ONLY, f"it is Python 2 only ({construct}); Python 3 cannot run it",
                                    exc.lineno) from None
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


# What Python 3.11's parser says about the Python 2 statements it meets.
_PY2_MESSAGES = (("Missing parentheses in call to 'print'", "print statement"),
                 ("Missing parentheses in call to 'exec'", "exec statement"),
                 ("leading zeros in decimal integer literals", "old octal literal"),
                 ("multiple exception types must be parenthesized", "except X, e clause"))
_PY2_LINE = ((re.compile(r"^\s*print\s*(>>|[\"'\w])"), "print statement"),
             (re.compile(r"^\s*except\s+[\w.]+\s*,\s*\w+\s*:"), "except X, e clause"),
             (re.compile(r"^\s*raise\s+[\w.]+\s*,"), "raise X, message statement"),
             (re.compile(r"^\s*exec\s+[\"'\w]"), "exec statement"),
             (re.compile(r"<>"), "<> operator"),
             (re.compile(r"`[^`\n]+`"), "backtick repr"),
             (re.compile(r"\b\d+[lL]\b"), "long integer literal"),
             (re.compile(r"\bur['\"]"), "ur'' string"))
MAX_PY2_SCAN_BYTES = 2_000_000


def looks_like_python2(source: str | bytes, error: SyntaxError) -> str | None:
    """What Python 2 construct explains ``error`` ("print statement at line 12"), or None when the file
    is broken some other way. Judged from the parser's message and the failing line only: a file that
    fails for another reason is a syntax error, whatever old idioms it holds elsewhere."""
    message, line = str(error.msg or ""), error.lineno
    where = f" at line {line}" if line else ""
    for text, construct in _PY2_MESSAGES:
        if text in message:
            return construct + where
    if isinstance(source, bytes):
        source = source.decode("utf-8", errors="replace")
    if not line or len(source) > MAX_PY2_SCAN_BYTES:
        return None
    lines = source.splitlines()
    failing = lines[line - 1] if 0 < line <= len(lines) else (error.text or "")
    code = _without_strings_and_comments(failing)
    for pattern, construct in _PY2_LINE:
        if pattern.search(code if construct not in ("print statement", "exec statement", "ur'' string")
                          else failing):
            return construct + where
    return None


def _without_strings_and_comments(line: str) -> str:
    """The line with simple string literals and a trailing comment blanked, so a "<>" in text is not code."""
    return re.sub(r"#.*", "", re.sub(r"(['\"]).*?\1", "''", line))


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
