"""How a script of a real repository is meant to be started: its working folder and its arguments.

Research scripts are written to be run one way by their author: from their own folder or from
the repository root, with a data file on the command line, with argparse values the README shows.
Nothing here uses a model. From the script's source and the repository's files it proposes a
short list of ways to start it, most promising first; the seeds stage tries them in order and
keeps the first under which the script runs and reads repository data.

- Working folder: every folder where the data paths the code names (string literals, the pieces
  of ``os.path.join`` calls, glob patterns) resolve to repository files, ranked by how many
  resolve; then the script's own folder and the root.
- Arguments: none, when the script needs none (argparse/click options with defaults count as
  none); otherwise a usage line for this script in the README or the module docstring; otherwise,
  for ``sys.argv[i]`` and positional file arguments, data files of the repository beside the
  script. A script whose required arguments cannot be filled this way cannot be run
  (``needs_arguments``).
"""
from __future__ import annotations

import ast
import fnmatch
import posixpath
import re
import shlex
from collections import Counter
from dataclasses import dataclass, field

from .parsing import call_name
from ..sandbox import PLOT_SCRIPT, TRACE_SCRIPT, RunRequest, runner_files

MAX_PROTOCOLS = 6
MAX_FILE_CHOICES = 4  # starts tried for a script taking one data file (see _data_arguments)
NEEDS_ARGUMENTS = "needs_arguments"
_DATA_SUFFIX = re.compile(r"\.(csv|tsv|txt|dat|json|xlsx?|raw|fasta|fa|fastq|gbk|gb|npy|npz|h5|hdf5|nc|parquet|"
                          r"pkl|pickle|yml|yaml|mat|fits|log|out|tab|xml)$", re.I)


@dataclass(frozen=True)
class RunProtocol:
    """One way to start a script: ``python <script relative to cwd> *args`` from ``cwd``."""

    cwd: str = "."
    args: tuple[str, ...] = ()
    why: str = "default"
    folders: tuple[str, ...] = ()  # empty folders the program writes into, created before it starts

    @classmethod
    def of(cls, row) -> "RunProtocol":
        """The start a seed or task row records (``cwd``, ``args``, ``output_folders``)."""
        return cls(row.cwd, tuple(row.args), folders=tuple(getattr(row, "output_folders", ()) or ()))

    def command(self, script: str, runner: tuple[str, ...] = ()) -> tuple[str, ...]:
        """The command line, with ``script`` (and a runner file at the root, if any) relative to ``cwd``."""
        runner = tuple(relative_to(self.cwd, part) if part.endswith(".py") else part for part in runner)
        return ("python", *runner, relative_to(self.cwd, script), *self.args)


def recorded_request(protocol: RunProtocol, script: str, files: dict[str, bytes], timeout_s: float,
                     trace: tuple[str, ...] | None = None) -> RunRequest:
    """The request for a run whose results are read: ``script`` started the ``protocol``'s way under the plot
    recorder, or, with ``trace`` (the tracer's options: ``()`` or ``("--values",)``), under the tracer, which
    records plots the same way. Every run an answer comes from is made here, so a plotted result means the
    same in the seed run, the reference runs, the variants and a release's re-check."""
    runner = (PLOT_SCRIPT,) if trace is None else (TRACE_SCRIPT, *trace)
    return RunRequest(protocol.command(script, runner), {**files, **runner_files(trace is not None)},
                      timeout_s=timeout_s, cwd=protocol.cwd, folders=protocol.folders)


@dataclass
class ArgumentNeeds:
    """What the script's own code says about its command line."""

    positional: list[str] = field(default_factory=list)  # names of required positionals / required options
    required_options: list[str] = field(default_factory=list)
    argv_indices: set[int] = field(default_factory=set)
    parses_arguments: bool = False

    @property
    def required(self) -> bool:
        return bool(self.positional or self.required_options or self.argv_indices)


def run_note(script: str, cwd: str, args, folders=(), data_paths=()) -> str:
    """A statement's sentences on how the program is started and on the folders it writes into that the
    workspace lacks (``folders``: the seed's ``output_folders``; ``data_paths``: the workspace's files); empty
    for the root without arguments and with nothing to create."""
    from .untrusted_text import inline_code  # repository paths are shown as code that nothing in them can end

    sentences = []
    if cwd not in ("", ".") or args:
        command = shlex.join(["python", relative_to(cwd, script), *args])
        folder = "the workspace root" if cwd in ("", ".") else f"the workspace folder {inline_code(cwd)}"
        sentences.append(f"The program is run from {folder} as {inline_code(command)}.")
    # A folder holding a data file arrives with the data; an empty one does not (a download, a Hub copy).
    missing = [f for f in folders if not any(p.startswith(f"{f}/") for p in data_paths)]
    if missing:
        which = "this folder" if len(missing) == 1 else "these folders"
        subject = "It" if sentences else "The program"
        sentences.append(f"{subject} writes files into {', '.join(inline_code(f) for f in missing)} under the workspace, "
                         f"which the data do not include: create {which} before running it.")
    return f"\n\n{' '.join(sentences)}\n" if sentences else ""


def relative_to(cwd: str, path: str) -> str:
    return path if cwd in ("", ".") else posixpath.relpath(path, cwd)


def infer_protocols(script: str, module: ast.Module, repo_files: set[str], docs: dict[str, str]) -> list[RunProtocol]:
    """Ways to start ``script``, most promising first (at most ``MAX_PROTOCOLS``); [] when it needs
    arguments nothing here can supply. ``docs`` maps README-like file paths to their text."""
    folders = candidate_folders(script, module, repo_files)
    needs = argument_needs(module)
    shown = _usage_protocols(script, module, docs, repo_files, folders)
    if not needs.required:
        plain = [RunProtocol(cwd, (), why) for cwd, why in folders]
        # Options without defaults can still be what the program cannot do without (a None path):
        # the README's example line comes right after the first plain start.
        ordered = plain[:1] + (shown if needs.parses_arguments else []) + plain[1:]
        return _unique(ordered)[:MAX_PROTOCOLS]
    protocols: list[RunProtocol] = list(shown)
    if needs.argv_indices or needs.positional:
        count = max([*needs.argv_indices, len(needs.positional)]) if not needs.required_options else 0
        if count:
            for cwd, why in folders[:2]:
                for chosen in _data_arguments(script, cwd, module, repo_files, count):
                    protocols.append(RunProtocol(cwd, tuple(chosen), f"data files as arguments; {why}"))
    return _unique(protocols)[:MAX_PROTOCOLS]


def _unique(protocols: list[RunProtocol]) -> list[RunProtocol]:
    unique: list[RunProtocol] = []
    for protocol in protocols:
        if all((p.cwd, p.args) != (protocol.cwd, protocol.args) for p in unique):
            unique.append(protocol)
    return unique


def _usage_protocols(script: str, module: ast.Module, docs: dict[str, str], repo_files: set[str],
                     folders: list[tuple[str, str]]) -> list[RunProtocol]:
    """Starts from the usage lines shown for the script, each from the folder where most of the line's
    file arguments resolve (an output file named there need not exist yet)."""
    protocols = []
    for args in usage_lines(script, module, docs, repo_files):
        # Inputs place the working folder; an output the line names (after -o / --output) may exist or not.
        paths = [a for i, a in enumerate(args) if not a.startswith("-") and ("/" in a or _DATA_SUFFIX.search(a))
                 and not (i and _OUTPUT_FLAG.fullmatch(args[i - 1]))]
        scored = sorted(((sum(_resolves(f, a, repo_files) for a in paths), order, f)
                         for order, (f, _) in enumerate(_all_folders(script, repo_files))), key=lambda t: (-t[0], t[1]))
        fitting = [f for hits, _, f in scored if hits and hits == scored[0][0]]
        for cwd in fitting[:2] or [f for f, _ in folders[:2]]:
            why = "the usage line's files resolve there" if fitting else "usage line"
            protocols.append(RunProtocol(cwd, tuple(args), why))
        if paths and not fitting:
            protocols.extend(_with_files_of_the_tree(args, paths, repo_files))
    return protocols


def _with_files_of_the_tree(args: list[str], paths: list[str], repo_files: set[str]) -> list[RunProtocol]:
    """A usage line often names a file the reader is meant to make (``config.yml``); where the tree holds
    files of that kind, run the line with the first of them (by depth, then name), from its folder."""
    chosen = list(args)
    folder = None
    for path in paths:
        suffix = posixpath.splitext(path)[1].lower()
        kin = sorted((p for p in repo_files if posixpath.splitext(p)[1].lower() == suffix and not
                      any(part.startswith(".") for part in p.split("/"))), key=lambda p: (p.count("/"), p))
        if not kin or (folder is not None and posixpath.dirname(kin[0]) != folder):
            return []
        folder = posixpath.dirname(kin[0]) or "."
        chosen[chosen.index(path)] = posixpath.basename(kin[0])
    return [RunProtocol(folder, tuple(chosen), "the usage line with a file of the tree in place of its example")]


def _all_folders(script: str, repo_files: set[str]) -> list[tuple[str, str]]:
    """The script's folder, the root, then every other folder of the tree (sorted)."""
    own = posixpath.dirname(script) or "."
    folders = set()
    for path in repo_files:  # every folder of the tree and its ancestors
        parent = posixpath.dirname(path)
        while parent:
            folders.add(parent)
            parent = posixpath.dirname(parent)
    rest = sorted(folders - {own, "."})
    return [(own, "the script's folder"), *([(".", "the repository root")] if own != "." else []),
            *((f, "a folder of the tree") for f in rest)]


def candidate_folders(script: str, module: ast.Module, repo_files: set[str]) -> list[tuple[str, str]]:
    """Working folders to try, with why: where most of the code's data paths resolve, then the
    script's own folder, then the repository root."""
    own = posixpath.dirname(script) or "."
    folders = {f for f, _ in _all_folders(script, repo_files)}
    literals = data_literals(module)
    scores = {}
    for folder in folders:
        hits = sum(1 for literal in literals if _resolves(folder, literal, repo_files))
        if hits:
            scores[folder] = hits
    ranked = sorted(scores, key=lambda f: (-scores[f], f != own, f != ".", f))
    ordered = [(f, f"{scores[f]} data path(s) resolve there") for f in ranked]
    for folder, why in ((own, "the script's folder"), (".", "the repository root")):
        if folder not in scores:
            ordered.append((folder, why))
    seen, result = set(), []
    for folder, why in ordered:
        if folder not in seen:
            seen.add(folder)
            result.append((folder, why))
    return result


def data_literals(module: ast.Module) -> list[str]:
    """Strings the code may open: path-like literals and the joined pieces of ``os.path.join`` calls."""
    found = []
    joined: set[int] = set()  # the pieces of a join stand for the joined path, not for paths of their own
    for node in ast.walk(module):
        if isinstance(node, ast.Call) and call_name(node) in ("join", "Path") and node.args:
            pieces = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            if len(pieces) == len(node.args) and len(pieces) > 1:
                found.append(posixpath.join(*pieces))
                joined.update(id(a) for a in node.args)
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):  # Path("data") / "x.csv"
            pieces = _div_pieces(node)
            if pieces:
                found.append(posixpath.join(*pieces))
                joined.update(id(n) for n in ast.walk(node))
    for node in ast.walk(module):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in joined:
            text = node.value.strip()
            if 0 < len(text) < 300 and "\n" not in text and ("/" in text or _DATA_SUFFIX.search(text)):
                found.append(text)
    return found


def _div_pieces(node) -> list[str] | None:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        left, right = _div_pieces(node.left), _div_pieces(node.right)
        return left + right if left is not None and right is not None else None
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.Call) and call_name(node) == "Path" and len(node.args) == 1:
        return _div_pieces(node.args[0])
    return None


def _resolves(folder: str, literal: str, repo_files: set[str]) -> bool:
    if literal.startswith("/") or "://" in literal:
        return False
    joined = posixpath.normpath(posixpath.join(folder, literal.rstrip("/")))
    if joined.startswith(".."):
        return False
    if any(ch in literal for ch in "*?["):
        return any(fnmatch.fnmatch(path, joined) for path in repo_files)
    return joined in repo_files or any(path.startswith(joined + "/") for path in repo_files)


def argument_needs(module: ast.Module) -> ArgumentNeeds:
    """Required positionals and options (argparse, click) and ``sys.argv[i]`` reads of the script."""
    needs = ArgumentNeeds()
    guarded = _argv_length_checked(module)
    for node in ast.walk(module):
        if isinstance(node, ast.Call) and call_name(node) == "add_argument" and node.args:
            needs.parses_arguments = True
            first = node.args[0]
            if not (isinstance(first, ast.Constant) and isinstance(first.value, str)):
                continue
            keywords = {k.arg: k.value for k in node.keywords if k.arg}
            optional_count = isinstance(keywords.get("nargs"), ast.Constant) and keywords["nargs"].value in ("?", "*")
            if not first.value.startswith("-"):
                if not optional_count and "default" not in keywords:
                    needs.positional.append(first.value)
            elif isinstance(keywords.get("required"), ast.Constant) and keywords["required"].value is True:
                needs.required_options.append(first.value)
        elif isinstance(node, ast.Call) and call_name(node) == "argument" and isinstance(node.func, ast.Attribute):
            needs.parses_arguments = True  # click.argument: required unless given a default
            keywords = {k.arg for k in node.keywords}
            if "default" not in keywords and "required" not in keywords and node.args:
                needs.positional.append(str(getattr(node.args[0], "value", "arg")))
        elif isinstance(node, ast.Subscript) and _is_sys_argv(node.value) and not guarded:
            index = node.slice
            if isinstance(index, ast.Constant) and isinstance(index.value, int) and index.value >= 1:
                needs.argv_indices.add(index.value)
    return needs


def _is_sys_argv(node) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "argv" and getattr(node.value, "id", None) == "sys"


def _argv_length_checked(module: ast.Module) -> bool:
    """``if len(sys.argv) > 1:``-style guards: the script also runs without arguments."""
    for node in ast.walk(module):
        if isinstance(node, ast.Compare) and isinstance(node.left, ast.Call) and call_name(node.left) == "len" \
                and node.left.args and _is_sys_argv(node.left.args[0]):
            return True
    return False


_OUTPUT_FLAG = re.compile(r"--?o(ut(put)?)?([_-]\w+)?")
_HELP_ONLY = {"-h", "--help", "-help", "--version", "-V"}
_PLACEHOLDER = re.compile(r"[<>\[\]{}]|^\.\.\.$|^\$")


def usage_lines(script: str, module: ast.Module, docs: dict[str, str], repo_files: set[str] = frozenset()
                ) -> list[list[str]]:
    """Argument lists shown for this script in the README-like files or its docstring: after
    ``python [path/]script.py``, or after the script's bare name (an installed command) when the line goes
    on with an option or a repository file. Template lines (``<input>``, ``[-v]``) are not runnable and are skipped."""
    name = re.escape(posixpath.basename(script))
    stem = re.escape(posixpath.splitext(posixpath.basename(script))[0])
    pattern = re.compile(rf"(?:python[0-9.]*\s+(?:\S*/)?{name}|(?<![\w/.-]){stem})[ \t]+([^\n`|;&]+)")
    texts = [*docs.values(), ast.get_docstring(module) or ""]
    found = []
    for text in texts:
        for match in pattern.finditer(text):
            try:
                args = shlex.split(match.group(1).strip())
            except ValueError:
                continue
            if not args or set(args) <= _HELP_ONLY or any(_PLACEHOLDER.search(a) for a in args):
                continue
            bare = not match.group(0).startswith("python")
            if bare and not (args[0].startswith("-") or any(_resolves(".", a, repo_files) for a in args)):
                continue  # prose that mentions the name, not a command line
            if args not in found:
                found.append(args)
    return found[:2]


def _data_arguments(script: str, cwd: str, module: ast.Module, repo_files: set[str], count: int) -> list[list[str]]:
    """Data files of the repository to pass as ``count`` file arguments: those beside the script
    (or below its folder) with a suffix the code mentions first, then files of a series (a folder holding
    several files of one suffix: the runs a script taking one file is run on, one by one), then the
    shallowest. Two choices, or for one file argument up to ``MAX_FILE_CHOICES``: each is a start of its own
    (the seeds stage may keep several, one per data set)."""
    own = posixpath.dirname(script)
    suffixes = {m.group(0).lower() for text in data_literals(module) for m in [_DATA_SUFFIX.search(text)] if m}
    beside = sorted(p for p in repo_files if _DATA_SUFFIX.search(p) and (not own or p.startswith(own + "/"))
                    and not p.endswith(".py"))
    if not beside:
        beside = sorted(p for p in repo_files if _DATA_SUFFIX.search(p))
    series = Counter((posixpath.dirname(p), posixpath.splitext(p)[1].lower()) for p in beside)
    beside.sort(key=lambda p: (posixpath.splitext(p)[1].lower() not in suffixes,
                               series[(posixpath.dirname(p), posixpath.splitext(p)[1].lower())] < 2, p.count("/"), p))
    if len(beside) < count:
        return []
    if count == 1:
        return [[relative_to(cwd, p)] for p in beside[:MAX_FILE_CHOICES]]
    choices = [beside[:count]]
    if len(beside) > count:
        choices.append(beside[1:count + 1])
    return [[relative_to(cwd, p) for p in choice] for choice in choices]
