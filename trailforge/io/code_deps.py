"""The code each DVC stage depends on, computed from the imports of its stage module.

``dvc.yaml`` names, per stage, the project files whose change must re-run it. Written by hand, those lists drift
from the code (a stage gains an import, nobody adds the dep, and editing that file re-runs nothing). Here they are
derived statically:

- the stage module (``python -m stages.<name>`` in the stage's ``cmd``) is parsed with ``ast``, and every import of a
  module inside the project packages (``trailforge``, ``stages``) is followed, transitively, including imports inside
  functions (they run when the function does) but not those under ``if TYPE_CHECKING:`` (they never run);
- importing ``a.b.c`` runs ``a/__init__.py`` and ``a/b/__init__.py`` too, so they are deps;
- files a module reads from inside its package (``Path(__file__).parent / "templates"``,
  ``Path(__file__).with_name("trace_runner.py")``, ``importlib.resources.files("pkg").joinpath("x")``) are deps: a
  file when the code names a file, the whole folder when it names a folder (it may load any file in it).

Only what is imported or read is listed, file by file: a module of a package that no stage imports is no dep, so
editing it re-runs nothing. Data deps (``outputs/...``, ``examples/repos``) are not this module's business; the
rewrite keeps them, with every comment, params, outs and metrics, byte for byte.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import yaml

CODE_PACKAGES = ("trailforge", "stages")

# `python -m stages.seeds ...` (or `python3`); a stage can also start a project script by path.
_MODULE_CMD = re.compile(r"\bpython3?\s+-m\s+([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)(?![\w.$])")
_SCRIPT_CMD = re.compile(r"\bpython3?\s+([\w./-]+\.py)\b")


class DepsError(Exception):
    """dvc.yaml or a source file cannot be read the way the deps computation needs; the message says where."""


@dataclass
class StageDrift:
    """How one stage's code deps in dvc.yaml differ from its import closure."""
    stage: str
    module: str
    missing: list[str] = field(default_factory=list)  # imported or read, not listed: editing it re-runs nothing
    stale: list[str] = field(default_factory=list)  # listed, not imported: editing it re-runs the stage for nothing


def is_code_path(entry: object, packages: tuple[str, ...] = CODE_PACKAGES) -> bool:
    """A dep entry this module manages: a path inside one of the project's source packages."""
    if not isinstance(entry, str):
        return False
    head = PurePosixPath(entry).parts[:1]
    return bool(head) and head[0] in packages


# ---------------------------------------------------------------------------------------------------------------
# The import closure


def _module_path(root: Path, dotted: str, packages: tuple[str, ...]) -> Path | None:
    """The file that defines module ``dotted`` inside the project, or None when it is not a project module."""
    parts = dotted.split(".")
    if not parts or parts[0] not in packages:
        return None
    base = root.joinpath(*parts)
    if (base / "__init__.py").is_file():
        return base / "__init__.py"
    if base.with_suffix(".py").is_file():
        return base.with_suffix(".py")
    return None


def _package_inits(root: Path, dotted: str) -> list[Path]:
    """``__init__.py`` of every package on the way to ``dotted``: importing a.b.c runs a and a.b first."""
    parts = dotted.split(".")
    inits = []
    for depth in range(1, len(parts)):
        init = root.joinpath(*parts[:depth], "__init__.py")
        if init.is_file():
            inits.append(init)
    return inits


def _dotted_name(root: Path, path: Path) -> str:
    rel = path.relative_to(root).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _runtime_nodes(tree: ast.AST):
    """Every node of the module except the bodies of ``if TYPE_CHECKING:`` (never executed)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
            continue
        stack.extend(ast.iter_child_nodes(node))


def _imported_modules(tree: ast.AST, dotted: str, is_package: bool) -> list[tuple[str, list[str], int]]:
    """(module, names imported from it, line) for each import statement that runs."""
    found = []
    package = dotted if is_package else dotted.rpartition(".")[0]
    for node in _runtime_nodes(tree):
        if isinstance(node, ast.Import):
            found.extend((alias.name, [], node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = package.split(".") if package else []
                if node.level - 1 > len(anchor) - 1:
                    continue  # a relative import above the top package fails at run time anyway
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            found.append((base, [a.name for a in node.names if a.name != "*"], node.lineno))
    return found


# Path expressions that point into the package a module lives in. Evaluated on the AST, never executed.
_PATH_CALLS = {"Path", "PurePath", "PosixPath"}


class _PathEvaluator:
    def __init__(self, root: Path, module_file: Path, packages: tuple[str, ...], names: dict[str, Path]):
        self.root, self.file, self.packages, self.names = root, module_file, packages, names
        self.imported: set[str] = set()  # files("a.b") imports package a.b to find it

    def __call__(self, node: ast.AST) -> Path | None:
        if isinstance(node, ast.Name):
            return self.file if node.id == "__file__" else self.names.get(node.id)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            left, right = self(node.left), _string(node.right)
            return left / right if left is not None and right is not None else None
        if isinstance(node, ast.Attribute) and node.attr == "parent":
            inner = self(node.value)
            return inner.parent if inner is not None else None
        if not isinstance(node, ast.Call):
            return None
        func, args = node.func, node.args
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        strings = [_string(a) for a in args]
        if name in _PATH_CALLS and len(args) == 1:
            return self(args[0])
        if name in {"abspath", "realpath", "resolve", "absolute"}:
            return self(args[0]) if args else self(func.value) if isinstance(func, ast.Attribute) else None
        if name == "dirname" and len(args) == 1:
            inner = self(args[0])
            return inner.parent if inner is not None else None
        if name == "files" and len(args) == 1 and strings[0]:  # importlib.resources.files("trailforge.envs")
            module = _module_path(self.root, strings[0], self.packages)
            if module is None or module.name != "__init__.py":
                return None
            self.imported.add(strings[0])
            return module.parent
        if name == "join" and args and None not in strings[1:]:  # os.path.join(HERE, "templates")
            base = self(args[0])
            return base.joinpath(*strings[1:]) if base is not None else None
        if isinstance(func, ast.Attribute) and name in {"joinpath", "with_name"} and args and None not in strings:
            base = self(func.value)
            if base is None:
                return None
            return base.joinpath(*strings) if name == "joinpath" else base.with_name(strings[0])
        return None


def _string(node: ast.AST) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _read_paths(root: Path, module_file: Path, tree: ast.AST,
                packages: tuple[str, ...]) -> tuple[set[Path], set[str]]:
    """Files and folders inside the project packages that the module names through its own location, and the
    packages it names to ``importlib.resources.files`` (which imports them)."""
    names: dict[str, Path] = {}
    evaluate = _PathEvaluator(root, module_file, packages, names)
    # Names bound to a path (TEMPLATES = Path(__file__).parent / "templates"), in source order, so that later
    # expressions built on them (TEMPLATES / "card.md.j2") resolve.
    for node in sorted((n for n in _runtime_nodes(tree) if isinstance(n, ast.Assign)), key=lambda n: n.lineno):
        value = evaluate(node.value)
        if value is not None:
            for target in node.targets:
                if isinstance(target, ast.Name):
                    names[target.id] = value
    found: set[Path] = set()
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
            continue
        if isinstance(node, ast.expr) and not isinstance(node, ast.Name):
            value = evaluate(node)
            if value is not None:
                # The largest expression that still resolves is what the code reads: `HERE / "templates" / name`
                # reads somewhere in templates/, `HERE / "templates" / "eval.py"` reads that one file.
                found.add(value)
                continue
        stack.extend(ast.iter_child_nodes(node))
    read = {p for p in (_normal(p) for p in found) if _is_package_data(root, module_file, p, packages)}
    return read, evaluate.imported


def _normal(path: Path) -> Path:
    parts: list[str] = []
    for part in path.parts:
        if part == "..":
            parts = parts[:-1]
        elif part != ".":
            parts.append(part)
    return Path(*parts)


def _is_package_data(root: Path, module_file: Path, path: Path, packages: tuple[str, ...]) -> bool:
    """A file or folder of the project's source the module reads: not the module itself and not a package folder
    (``os.path.dirname(__file__)`` alone names where the module is, not what it reads)."""
    try:
        rel = path.relative_to(root)
    except ValueError:
        return False
    if not rel.parts or rel.parts[0] not in packages or path == module_file or not path.exists():
        return False
    return not (path.is_dir() and (path / "__init__.py").is_file())


def _scan(root: Path, path: Path, packages: tuple[str, ...]) -> tuple[list[Path], set[Path]]:
    """What one file pulls in: the project modules its imports run, and the package data it reads."""
    rel = path.relative_to(root).as_posix()
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=rel)
    except SyntaxError as exc:
        raise DepsError(f"{rel}:{exc.lineno}: cannot parse ({exc.msg}), so its imports are unknown") from exc
    modules: list[Path] = []
    for base, names, line in _imported_modules(tree, _dotted_name(root, path), path.name == "__init__.py"):
        if not base or base.split(".")[0] not in packages:
            continue  # the standard library and third-party packages are not the project's code
        module = _module_path(root, base, packages)
        if module is None and not root.joinpath(*base.split(".")).is_dir():  # a folder alone: a namespace package
            raise DepsError(f"{rel}:{line}: imports {base}, which is no module of the project")
        modules += [module] if module is not None else []
        modules += _package_inits(root, base)
        for name in names:  # `from trailforge.envs import seeds` imports the submodule seeds
            submodule = _module_path(root, f"{base}.{name}", packages)
            if submodule is not None:
                modules.append(submodule)
    read_paths, resource_packages = _read_paths(root, path, tree, packages)
    for package in resource_packages:
        modules += [_module_path(root, package, packages), *_package_inits(root, package)]
    for read in read_paths:
        # Python files read as data still run (the sandbox's supervisor, the eval template): follow them too.
        modules += [read] if read.suffix == ".py" else sorted(read.rglob("*.py")) if read.is_dir() else []
    return modules, read_paths


def import_closure(module_file: Path | str, root: Path, packages: tuple[str, ...] = CODE_PACKAGES,
                   _scanned: dict | None = None) -> list[str]:
    """Project source files (and package-data folders) that running ``module_file`` imports or reads, transitively.

    Paths are relative to ``root`` in POSIX form, the stage module first, then sorted; a file inside a folder
    that is itself listed is covered by the folder and not repeated.
    """
    root = root.resolve()
    start = (root / module_file).resolve()
    if not start.is_file():
        raise DepsError(f"{module_file}: no such file under {root}")
    scanned = {} if _scanned is None else _scanned  # stages share most modules: parse each file once per run
    seen: set[Path] = set()
    data: set[Path] = set()
    queue = [start, *_package_inits(root, _dotted_name(root, start))]
    while queue:
        path = queue.pop()
        if path in seen:
            continue
        seen.add(path)
        if path not in scanned:
            scanned[path] = _scan(root, path, packages)
        modules, read_paths = scanned[path]
        queue += modules
        data |= read_paths
    folders = {p for p in data if p.is_dir()}
    entries = {p for p in seen | data if not any(folder in p.parents for folder in folders)}
    rest = sorted(p.relative_to(root).as_posix() for p in entries - {start})
    return [start.relative_to(root).as_posix(), *rest]


# ---------------------------------------------------------------------------------------------------------------
# dvc.yaml


def stage_module(cmd: object, root: Path, packages: tuple[str, ...] = CODE_PACKAGES) -> Path | None:
    """The project module a stage's ``cmd`` runs (``python -m stages.seeds`` -> stages/seeds.py), or None."""
    text = " ".join(cmd) if isinstance(cmd, list) else str(cmd or "")
    for match in _MODULE_CMD.finditer(text):
        module = _module_path(root, match.group(1), packages)
        if module is not None:
            return module.relative_to(root)
        if match.group(1).split(".")[0] in packages:
            # A project module that is not there: a dvc.yaml read against the wrong folder would otherwise
            # "match its imports" with no stage checked at all.
            raise DepsError(f"the stage command {text!r} runs {match.group(1)}, which is not a module under {root}")
    for match in _SCRIPT_CMD.finditer(text):
        if is_code_path(match.group(1), packages) and (root / match.group(1)).is_file():
            return Path(match.group(1))
    return None


def _load(text: str, where: str) -> dict:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise DepsError(f"{where} is not valid YAML: {exc}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("stages"), dict):
        raise DepsError(f"{where} has no 'stages:' mapping")
    return data


def generated_deps(dvc_text: str, root: Path, where: str = "dvc.yaml",
                   packages: tuple[str, ...] = CODE_PACKAGES) -> dict[str, list[str]]:
    """Per stage that runs a project module: the code deps its import closure gives, in dvc.yaml order."""
    stages = _load(dvc_text, where)["stages"]
    wanted, scanned = {}, {}
    for name, stage in stages.items():
        if not isinstance(stage, dict):
            raise DepsError(f"{where}: stages.{name} is not a mapping")
        module = stage_module(stage.get("cmd"), root, packages)
        if module is not None:
            wanted[name] = import_closure(module, root, packages, scanned)
    return wanted


def check_deps(dvc_text: str, root: Path, where: str = "dvc.yaml",
               packages: tuple[str, ...] = CODE_PACKAGES) -> list[StageDrift]:
    """Stages whose listed code deps differ from their import closure (empty when dvc.yaml is right)."""
    stages = _load(dvc_text, where)["stages"]
    drift = []
    for name, wanted in generated_deps(dvc_text, root, where, packages).items():
        listed = {d for d in stages[name].get("deps") or [] if is_code_path(d, packages)}
        missing = [d for d in wanted if d not in listed]
        stale = sorted(listed - set(wanted))
        if missing or stale:
            drift.append(StageDrift(name, wanted[0], missing, stale))
    return drift


@dataclass
class _Item:
    lines: list[str]  # the `- entry` line and any deeper continuation lines
    value: object = None
    comment: bool = False  # a full-line comment or blank line between entries


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _is_filler(line: str) -> bool:
    return not line.strip() or line.lstrip().startswith("#")


def _stage_span(lines: list[str], name: str, where: str) -> tuple[int, int, int]:
    """(first line, end line, key indent) of stage ``name`` under the top-level ``stages:`` key."""
    top = next((i for i, line in enumerate(lines) if re.match(r"stages:\s*(#.*)?$", line)), None)
    if top is None:
        raise DepsError(f"{where}: no top-level 'stages:' line")
    key = re.compile(rf"( +)(['\"]?){re.escape(name)}\2:\s*(#.*)?$")
    for i in range(top + 1, len(lines)):
        line = lines[i]
        if not _is_filler(line) and _indent(line) == 0:
            break
        match = key.match(line)
        if match:
            indent = len(match.group(1))
            end = i + 1
            for j in range(i + 1, len(lines)):
                if _is_filler(lines[j]):
                    continue
                if _indent(lines[j]) <= indent:
                    break
                end = j + 1
            return i, end, indent
    raise DepsError(f"{where}: cannot find the line of stage '{name}'")


def _deps_block(lines: list[str], start: int, end: int, where: str, name: str):
    """(index of the `deps:` line or None, its indent, the items, index after the last item) within a stage."""
    key_indent = None
    for i in range(start + 1, end):
        if _is_filler(lines[i]):
            continue
        key_indent = _indent(lines[i]) if key_indent is None else key_indent
        if _indent(lines[i]) == key_indent and re.match(r"\s*deps:\s*(#.*)?$", lines[i]):
            items: list[_Item] = []
            pending: list[_Item] = []  # fillers belong to the list only when an entry follows them
            j, after = i + 1, i + 1
            while j < end:
                line = lines[j]
                if _is_filler(line):
                    pending.append(_Item([line], comment=True))
                    j += 1
                    continue
                # `dvc stage add` writes the entries at the key's own indent, by hand they sit deeper.
                if _indent(line) < key_indent or not line.lstrip().startswith("- "):
                    break
                item = _Item([line])
                j += 1
                while j < end and not _is_filler(lines[j]) and _indent(lines[j]) > _indent(line):
                    item.lines.append(lines[j])
                    j += 1
                items += pending + [item]
                pending = []
                after = j
            return i, key_indent, items, after
    return None, key_indent, [], None


def _entry_line(indent: int, entry: str) -> str:
    # dvc.yaml paths are plain words; quote anything YAML would read as something else.
    text = entry if re.fullmatch(r"[\w][\w./-]*", entry) else yaml.safe_dump(entry, default_style='"').strip()
    return f"{' ' * indent}- {text}"


def rewrite_deps(dvc_text: str, wanted: dict[str, list[str]], where: str = "dvc.yaml",
                 packages: tuple[str, ...] = CODE_PACKAGES) -> str:
    """dvc.yaml with the code entries of each stage in ``wanted`` replaced, everything else kept as written.

    A stage's generated entries take the place of its first code entry (its first entry when it had none);
    data entries, comments and blank lines keep their order, and an entry kept keeps its inline comment.
    """
    data = _load(dvc_text, where)
    lines = dvc_text.splitlines()
    trailing_newline = dvc_text.endswith("\n")
    # Bottom-up, so the line numbers of stages not yet rewritten stay valid.
    spans = sorted(((name, *_stage_span(lines, name, where)) for name in wanted), key=lambda s: -s[1])
    for name, start, end, _ in spans:
        listed = data["stages"][name].get("deps") or []
        deps_line, key_indent, items, after = _deps_block(lines, start, end, where, name)
        entries = [item for item in items if not item.comment]
        if len(entries) != len(listed):
            raise DepsError(f"{where}: read {len(entries)} deps entries of stage '{name}' where YAML has "
                            f"{len(listed)}; write its deps one per line as '- path'")
        for item, value in zip(entries, listed):
            item.value = value
        item_indent = _indent(entries[0].lines[0]) if entries else (key_indent or 4) + 2
        kept = {item.value: item.lines for item in entries if is_code_path(item.value, packages)}
        new_code = [line for entry in wanted[name] for line in kept.get(entry, [_entry_line(item_indent, entry)])]
        placed = not any(is_code_path(item.value, packages) for item in entries)
        body: list[str] = list(new_code) if placed else []  # no code entries yet: the generated ones go first
        for item in items:
            if not item.comment and is_code_path(item.value, packages):
                if not placed:
                    body += new_code
                    placed = True
                continue
            body += item.lines
        if deps_line is None:
            # No deps: list yet; put one before outs/metrics/plots, or at the end of the stage.
            key_indent = key_indent or 4
            at = next((i for i in range(start + 1, end) if _indent(lines[i]) == key_indent
                       and re.match(r"\s*(outs|metrics|plots):", lines[i])), end)
            lines[at:at] = [f"{' ' * key_indent}deps:", *body]
        else:
            lines[deps_line + 1:after] = body
    text = "\n".join(lines) + ("\n" if trailing_newline else "")
    _prove_only_code_changed(dvc_text, text, wanted, where, packages)
    return text


def _prove_only_code_changed(dvc_text: str, text: str, wanted: dict[str, list[str]], where: str,
                             packages: tuple[str, ...]) -> None:
    # The rewrite is textual; prove it changed nothing but the code entries before anyone writes it.
    expected = _load(dvc_text, where)
    for name, code in wanted.items():
        stage = expected["stages"][name]
        old = stage.get("deps") or []
        first = next((i for i, d in enumerate(old) if is_code_path(d, packages)), 0)
        rest = [d for d in old if not is_code_path(d, packages)]
        stage["deps"] = rest[:first] + list(code) + rest[first:]
    if _load(text, where) != expected:
        raise DepsError(f"{where}: rewriting the deps would change more than the code entries; not written")
