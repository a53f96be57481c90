"""The data-flow graph of a seed program, from its source and a traced run.

A program is read as *units*: the statements directly inside one scope (the module body
or the body of a function the program defines). Each unit has the names it may define,
the names it fully rebinds (``kills``), the names it reads, the library operations it
calls and the program's own functions it calls. A method call that may change its
receiver in place (``rows.append``, ``inplace=True``) counts as a definition, and a
compound statement (a loop, a branch) is one unit whose definitions are possible ones.

The graph has three kinds of nodes:

- ``operation``: one unit, labelled with the operations it performs;
- ``variable``: one binding of a name by one unit (``name@path:line``), annotated with the
  value observed when the unit finished in the traced run;
- ``data_file`` / ``output``: files read, printed lines, written files and drawn figures.

Edges are data dependencies: a variable flows into every unit that reads it before it is
rebound; a call to a program-defined function links the calling unit to that function's
operations. The traced run (``trace_runner --values``) supplies the values, how often each
unit ran and which lines executed, so the pipeline can tell an informative intermediate
result (a fitted slope computed once) from a loop counter.
"""
from __future__ import annotations

import ast
import json
from dataclasses import dataclass, field
from typing import Any

import builtins

import networkx as nx

from .protocol import RunProtocol
from .parsing import parse_python
from .analysis import import_aliases, qualified_call_name

MODULE_SCOPE = 0
PLAN_FILE = ".tf_plan.json"  # read by sandbox/trace_runner.py
_BUILTINS = {name for name in dir(builtins) if not name.startswith("_")}
# Methods that change their receiver in place: calling one redefines the receiver.
MUTATING_METHODS = {
    "append", "extend", "insert", "update", "add", "pop", "popitem", "remove", "discard", "clear", "sort",
    "reverse", "setdefault", "fill", "resize", "shuffle", "put", "itemset", "rename_axis", "set_axis",
    "__setitem__", "write", "writerow", "writerows",
}
# Calls that save results to a file.
WRITE_CALLS = {"to_csv", "to_json", "to_excel", "to_parquet", "dump", "savetxt", "save", "savez", "write",
               "writerow", "writerows", "savefig"}
# Calls that draw what the plot recorder reads off a figure (``sandbox/plot_recorder.py``: lines, scatters, bars,
# histograms, error bars, images, titles and legends). A figure is an output whether it is saved or only shown.
PLOT_CALLS = {"plot", "scatter", "bar", "barh", "hist", "errorbar", "imshow", "matshow", "step", "stem", "semilogx",
              "semilogy", "loglog", "title", "set_title", "suptitle", "legend", "text", "annotate"}
# Calls that only report or save; a statement made of nothing else never feeds a result.
OUTPUT_CALLS = {
    "print", "makedirs", "mkdir", "to_csv", "to_json", "to_excel", "to_parquet", "savefig", "show", "plot",
    "write", "writerow", "writerows", "dump", "savetxt", "save", "savez", "close", "figure", "scatter", "bar",
    "hist", "xlabel", "ylabel", "title", "legend", "tight_layout", "subplots", "info", "debug", "warning",
    "log", "flush", "imshow", "colorbar", "suptitle", "grid", "text", "annotate", "set_xlabel", "set_ylabel",
    "set_title", "axhline", "axvline", "errorbar", "fill_between",
}


@dataclass(frozen=True)
class Unit:
    path: str
    scope: str
    scope_line: int
    index: int
    line: int
    end_line: int
    body_line: int  # first line of the body for a def, else the unit's own line
    kind: str
    defs: frozenset[str]
    kills: frozenset[str]
    uses: frozenset[str]
    calls: tuple[str, ...]
    local_calls: frozenset[str]
    effect: bool  # a bare call that may change hidden state (a random seed, sys.path)
    reads_strings: tuple[str, ...] = field(default=())
    header_names: frozenset[str] = field(default=frozenset())  # bound by a loop or `with` header
    method_calls: frozenset[str] = field(default=frozenset())  # `obj.name(...)` calls of methods the program defines

    @property
    def node_id(self) -> str:
        return f"op:{self.path}:{self.line}"


@dataclass
class Program:
    """Every unit of every file of a program, by scope."""

    scopes: dict[tuple[str, int], list[Unit]]
    functions: dict[str, tuple[str, int]]  # function name -> scope key (path, def line)
    entry: str
    # method name -> scope keys of every class method of that name (``b.run()`` may call any of them)
    methods: dict[str, list[tuple[str, int]]] = field(default_factory=dict)

    def units(self):
        for key in sorted(self.scopes):
            yield from self.scopes[key]

    def scope_name(self, key: tuple[str, int]) -> str:
        return self.scopes[key][0].scope if self.scopes.get(key) else "<module>"


def _root_name(node) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _target_names(target, out: set[str]) -> None:
    if isinstance(target, ast.Name):
        out.add(target.id)
    elif isinstance(target, (ast.Tuple, ast.List)):
        for element in target.elts:
            _target_names(element, out)
    elif isinstance(target, ast.Starred):
        _target_names(target.value, out)


def _function_free_names(node: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    params = {a.arg for a in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]}
    params |= {a.arg for a in (node.args.vararg, node.args.kwarg) if a is not None}
    loads, stores = set(), set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name):
            (loads if isinstance(sub.ctx, ast.Load) else stores).add(sub.id)
    defaults = set()
    for default in [*node.args.defaults, *node.args.kw_defaults, *node.decorator_list]:
        if default is not None:
            defaults |= {n.id for n in ast.walk(default) if isinstance(n, ast.Name)}
    return (loads - stores - params) | defaults


def analyse_statement(node: ast.stmt, aliases: dict[str, str]) -> dict[str, Any]:
    """defs, kills, uses, operations and local calls of one statement."""
    defs: set[str] = set()
    uses: set[str] = set()
    kills: set[str] = set()
    calls: list[str] = []
    called_names: set[str] = set()
    attributes: set[str] = set()  # names called as `obj.name(...)`
    receivers: dict[str, set[str]] = {}  # attribute called -> the names it was called on
    strings: list[str] = []
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        defs.add(node.name)
        kills.add(node.name)
        if isinstance(node, ast.ClassDef):
            uses |= {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        else:
            uses |= _function_free_names(node)
        return {"defs": defs, "kills": kills, "uses": uses, "calls": [], "local": set(), "strings": []}
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        for alias in node.names:
            name = alias.asname or alias.name.split(".")[0]
            defs.add(name)
            kills.add(name)
        return {"defs": defs, "kills": kills, "uses": uses, "calls": [], "local": set(), "strings": []}
    if isinstance(node, ast.Assign):
        for target in node.targets:
            _target_names(target, kills)
    elif isinstance(node, ast.AnnAssign) and node.value is not None:
        _target_names(node.target, kills)
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name):
            (defs if isinstance(sub.ctx, (ast.Store, ast.Del)) else uses).add(sub.id)
        elif isinstance(sub, (ast.Subscript, ast.Attribute)) and isinstance(sub.ctx, (ast.Store, ast.Del)):
            root = _root_name(sub)
            if root:
                defs.add(root)
                uses.add(root)
        elif isinstance(sub, ast.AugAssign) and isinstance(sub.target, ast.Name):
            uses.add(sub.target.id)
        elif isinstance(sub, ast.Call):
            name = qualified_call_name(sub.func, aliases)
            if name:
                calls.append(name)
            if isinstance(sub.func, ast.Name):
                called_names.add(sub.func.id)
                if sub.func.id in _BUILTINS and sub.func.id not in aliases:
                    calls.append(sub.func.id)
            elif isinstance(sub.func, ast.Attribute):
                attributes.add(sub.func.attr)
                root = _root_name(sub.func.value)
                inplace = any(k.arg == "inplace" and isinstance(k.value, ast.Constant) and k.value.value is True
                              for k in sub.keywords)
                if root and root not in aliases:
                    receivers.setdefault(sub.func.attr, set()).add(root)
                if root and root not in aliases and (sub.func.attr in MUTATING_METHODS or inplace):
                    defs.add(root)
                    uses.add(root)
        elif isinstance(sub, ast.BinOp) and not isinstance(sub.op, ast.Mod):
            calls.append("arithmetic")
        elif isinstance(sub, ast.Constant) and isinstance(sub.value, str):
            strings.append(sub.value)
        elif isinstance(sub, (ast.Global, ast.Nonlocal)):
            defs |= set(sub.names)
    # Comprehension variables are private to the comprehension.
    private = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.comprehension):
            _target_names(sub.target, private)
    defs -= private - kills
    uses -= private
    ordered = list(dict.fromkeys(calls))
    return {"defs": defs, "kills": kills, "uses": uses, "calls": ordered, "local": called_names, "strings": strings,
            "attributes": attributes, "receivers": receivers}


def _is_effect(node: ast.stmt, calls: list[str]) -> bool:
    if not isinstance(node, ast.Expr) or not isinstance(node.value, ast.Call):
        return False
    last = [c.split(".")[-1] for c in calls if c != "arithmetic"]
    return bool(last) and last[0] not in OUTPUT_CALLS


def _first_line(node) -> int:
    decorators = getattr(node, "decorator_list", [])
    return min([node.lineno, *[d.lineno for d in decorators]])


def _units(body: list[ast.stmt], path: str, scope: str, scope_line: int, aliases, local_names,
           method_names: frozenset[str] = frozenset()) -> list[Unit]:
    units = []
    for index, node in enumerate(body):
        info = analyse_statement(node, aliases)
        local_calls = frozenset(info["local"] & local_names)
        # `obj.run(...)` may run any method named run; `Bucket(...)` runs Bucket.__init__ (keyed by the class name)
        method_calls = frozenset((info.get("attributes", set()) & method_names)
                                 | {c for c in info["local"] & method_names if c[:1].isupper() and c not in local_names})
        for method in method_calls:  # a method of the program may change the object it is called on
            receivers = info.get("receivers", {}).get(method, set())
            info["defs"] |= receivers
            info["uses"] |= receivers
        is_def = isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        header: set[str] = set()
        if isinstance(node, (ast.For, ast.AsyncFor)):
            _target_names(node.target, header)
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                if item.optional_vars is not None:
                    _target_names(item.optional_vars, header)
        units.append(Unit(
            path=path, scope=scope, scope_line=scope_line, index=index,
            line=_first_line(node), end_line=node.end_lineno or node.lineno,
            body_line=node.body[0].lineno if is_def else node.lineno,
            kind=type(node).__name__,
            defs=frozenset(info["defs"]), kills=frozenset(info["kills"]), uses=frozenset(info["uses"]),
            calls=tuple(c for c in info["calls"]), local_calls=local_calls,
            effect=_is_effect(node, info["calls"]), reads_strings=tuple(info["strings"]),
            header_names=frozenset(header), method_calls=method_calls,
        ))
    return units


def analyse_program(sources: dict[str, str], entry: str) -> Program:
    """Units of every scope of every file. ``sources`` maps repository paths to text."""
    trees = {path: parse_python(text, path) for path, text in sources.items()}
    local_names = set()
    functions: dict[str, tuple[str, int]] = {}
    for path in sorted(trees):
        for node in trees[path].body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                local_names.add(node.name)
                # The entry script's own definition wins when two files define the same name.
                if node.name not in functions or path == entry:
                    functions[node.name] = (path, _first_line(node))
    # Methods of the module-level classes are scopes too (``Class.method``): a model written as a class
    # (hydroRaVENS' Buckets.initialize/run/finalize) had no traced line, so no graph, Completion or Correction.
    methods: dict[str, list[tuple[str, int]]] = {}
    for path in sorted(trees):
        for node in trees[path].body:
            if isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        methods.setdefault(item.name, []).append((path, _first_line(item)))
                        if item.name == "__init__":  # `Bucket(3.0)` runs Bucket.__init__
                            methods.setdefault(node.name, []).append((path, _first_line(item)))
    method_names = frozenset(methods)
    scopes = {}
    for path, tree in trees.items():
        aliases = import_aliases(tree)
        scopes[(path, MODULE_SCOPE)] = _units(tree.body, path, "<module>", MODULE_SCOPE, aliases, local_names,
                                              method_names)
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                key = (path, _first_line(node))
                scopes[key] = _units(node.body, path, node.name, key[1], aliases, local_names, method_names)
            elif isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        key = (path, _first_line(item))
                        scopes[key] = _units(item.body, path, f"{node.name}.{item.name}", key[1], aliases,
                                             local_names, method_names)
    return Program(scopes=scopes, functions=functions, entry=entry, methods=methods)


def trace_plan(program: Program) -> dict[str, Any]:
    """What the value tracer observes: per scope, the start line of each unit and the names it binds."""
    plan: dict[str, Any] = {}
    for (path, scope_line), units in sorted(program.scopes.items()):
        plan.setdefault(path, {})[str(scope_line)] = {str(u.line): sorted(u.defs) for u in units}
    return plan


def observations(trace: dict[str, Any]) -> dict[tuple[str, int, str], dict[str, Any]]:
    return {(v["path"], v["line"], v["name"]): v for v in trace.get("values", [])}


def unit_runs(trace: dict[str, Any]) -> dict[tuple[str, int], int]:
    return {(u["path"], u["line"]): u["count"] for u in trace.get("units", [])}


def build_graph(program: Program, trace: dict[str, Any], data_files: list[str], written: list[str]) -> nx.DiGraph:
    graph = nx.DiGraph()
    observed = observations(trace)
    runs = unit_runs(trace)
    returns: dict[str, str] = {}
    module_latest: dict[tuple[str, str], str] = {}  # (file, name) -> its last module-level binding
    for name, (path, line) in program.functions.items():
        returns[name] = f"return:{path}:{name}"
        graph.add_node(returns[name], kind="return", function=name, path=path, line=line)
    method_returns: dict[tuple[str, int], str] = {}
    for keys in program.methods.values():
        for key in keys:
            scope = program.scope_name(key)
            method_returns[key] = f"return:{key[0]}:{scope}"
            graph.add_node(method_returns[key], kind="return", function=scope, path=key[0], line=key[1])
    for (path, scope_line), units in sorted(program.scopes.items()):
        latest: dict[str, str] = {}
        for unit in units:
            if unit.kind in ("FunctionDef", "AsyncFunctionDef") and unit.scope == "<module>":
                continue  # its body is a scope of its own
            operations = [c for c in unit.calls if c != "arithmetic"] or (["arithmetic"] if unit.calls else [])
            graph.add_node(unit.node_id, kind="operation", path=path, line=unit.line, end_line=unit.end_line,
                           scope=unit.scope, statement=unit.kind, operations=operations[:8],
                           runs=runs.get((path, unit.line), 0))
            read = []  # the variables this statement reads, by their latest binding
            for name in sorted(unit.uses):
                source = latest.get(name)
                if source is None and scope_line != MODULE_SCOPE:
                    source = module_latest.get((path, name))
                if source is not None:
                    graph.add_edge(source, unit.node_id)
                    read.append(source)
            for function in sorted(unit.local_calls):
                graph.add_edge(returns[function], unit.node_id)
                # What the call passes flows into the function's body, which may plot, print or save it
                # (``volcano_plot(results)`` in a ``main()``): without these edges nothing upstream of such a
                # call fed an output. The edges start at the variables passed, not at the call itself: the
                # call depends on the body's return, and a loop call -> body -> return -> call would make
                # every step of the function upstream of every other.
                for callee in program.scopes.get(program.functions[function], []):
                    if callee.kind not in ("FunctionDef", "AsyncFunctionDef", "ClassDef"):
                        for source in read:
                            graph.add_edge(source, callee.node_id)
            for method in sorted(unit.method_calls):
                # What the method computes (its return, the state it leaves) flows into the call; the object and
                # arguments at the call flow into the method's body, which may print or save them.
                for key in program.methods[method]:
                    graph.add_edge(method_returns[key], unit.node_id)
                    for callee in program.scopes.get(key, []):
                        if callee.kind not in ("FunctionDef", "AsyncFunctionDef", "ClassDef"):
                            graph.add_edge(unit.node_id, callee.node_id)
            for text in unit.reads_strings:
                for data in data_files:
                    if text == data or text.endswith("/" + data) or data.endswith("/" + text) and "/" in text:
                        graph.add_node(f"data:{data}", kind="data_file", path=data)
                        graph.add_edge(f"data:{data}", unit.node_id)
                for out in written:
                    if text == out or out.endswith(text) and "/" in text:
                        graph.add_node(f"written:{out}", kind="output", path=out)
                        graph.add_edge(unit.node_id, f"written:{out}")
            if set(c.split(".")[-1] for c in unit.calls) & WRITE_CALLS:
                graph.add_node("written:*", kind="output", path="*")
                graph.add_edge(unit.node_id, "written:*")
            if "print" in unit.calls:
                graph.add_node(f"printed:{path}:{unit.line}", kind="output", path=path, line=unit.line)
                graph.add_edge(unit.node_id, f"printed:{path}:{unit.line}")
            if set(c.split(".")[-1] for c in unit.calls) & PLOT_CALLS:
                graph.add_node(f"plotted:{path}:{unit.line}", kind="output", path=path, line=unit.line)
                graph.add_edge(unit.node_id, f"plotted:{path}:{unit.line}")
            for name in sorted(unit.defs):
                var = f"var:{name}@{path}:{unit.line}"
                seen = observed.get((path, unit.line, name))
                graph.add_node(var, kind="variable", name=name, path=path, line=unit.line, scope=unit.scope,
                               runs=seen["count"] if seen else 0, value=seen["summary"] if seen else None)
                graph.add_edge(unit.node_id, var)
                latest[name] = var
        if scope_line == MODULE_SCOPE:
            module_latest.update({(path, n): v for n, v in latest.items()})
        elif (path, scope_line) in method_returns:
            # A method's effect is also the state it leaves on its object: every operation feeds its summary.
            for unit in units:
                if graph.has_node(unit.node_id):
                    graph.add_edge(unit.node_id, method_returns[(path, scope_line)])
        elif program.scope_name((path, scope_line)) in returns:
            # Every operation of a function feeds what it returns (a conservative summary).
            for unit in units:
                if graph.has_node(unit.node_id) and unit.kind in ("Return", "If", "For", "While", "With", "Try"):
                    graph.add_edge(unit.node_id, returns[unit.scope])
    return graph


def upstream_operations(graph: nx.DiGraph, node: str) -> int:
    return sum(1 for n in nx.ancestors(graph, node) if graph.nodes[n].get("kind") == "operation"
               and graph.nodes[n].get("operations"))


def graph_json(graph: nx.DiGraph) -> dict[str, Any]:
    data = nx.node_link_data(graph, edges="edges")
    data["nodes"] = sorted(data["nodes"], key=lambda n: n["id"])
    data["edges"] = sorted(data["edges"], key=lambda e: (e["source"], e["target"]))
    return data


def graph_from_json(data: dict[str, Any]) -> nx.DiGraph:
    return nx.node_link_graph(data, edges="edges")


def result_kind(summary: dict[str, Any] | None, max_rows: int) -> str | None:
    """The answer type an observed value would make, or None when it is not a gradable result."""
    if not summary:
        return None
    kind = summary.get("type")
    if kind == "float" and isinstance(summary.get("value"), float):
        return "number"
    if kind == "int" and isinstance(summary.get("value"), int) and abs(summary["value"]) > 1:
        return "integer"
    shape = summary.get("shape")
    if kind in ("Series", "ndarray") and summary.get("numeric") and shape and len(shape) == 1 and 2 <= shape[0] <= max_rows:
        return "table" if kind == "Series" else "number_list"
    if kind == "DataFrame" and shape and 1 <= shape[0] <= max_rows and shape[1] <= 12 and summary.get("numeric_columns"):
        return "table"
    if kind in ("list", "tuple") and summary.get("numeric") and 2 <= summary.get("len", 0) <= max_rows:
        return "number_list"
    if kind == "dict" and summary.get("numeric") and 2 <= summary.get("len", 0) <= 12:
        return "mapping"
    return None


def informative_targets(program: Program, graph: nx.DiGraph, trace: dict[str, Any], literals: set,
                        min_upstream_ops: int, max_rows: int) -> list[dict[str, Any]]:
    """Intermediate results of the program worth a focused question (in the entry script or a module it uses).

    A target is bound once by a statement that ran once, holds a number, a short numeric
    series or a small table, is not a constant written in the program, and depends on at
    least ``min_upstream_ops`` operations.
    """
    runs = unit_runs(trace)
    units = {(u.path, u.line): u for u in program.units()}
    targets = []
    seen_values: set[str] = set()
    for node, attrs in sorted(graph.nodes(data=True)):
        if attrs.get("kind") != "variable":
            continue
        unit = units.get((attrs["path"], attrs["line"]))
        if unit is None or runs.get((unit.path, unit.line)) != 1 or attrs["name"] in unit.header_names:
            continue
        if unit.kind not in ("Assign", "AugAssign", "AnnAssign", "For", "While", "If", "With", "Try"):
            continue
        if unit.kind in ("For", "While") and not _bound_before(program, unit, attrs["name"]):
            continue  # a value from the loop's last pass, not a result of the loop
        kind = result_kind(attrs.get("value"), max_rows)
        if kind is None:
            continue
        fingerprint = json.dumps([kind, attrs["value"]], sort_keys=True)
        if fingerprint in seen_values:
            continue  # the same result under another name (a returned value unpacked by the caller)
        seen_values.add(fingerprint)
        value = attrs["value"].get("value")
        if value is not None and value in literals:
            continue
        upstream = upstream_operations(graph, node)
        if upstream < min_upstream_ops:
            continue
        targets.append({"node": node, "name": attrs["name"], "path": unit.path, "line": unit.line,
                        "scope_line": unit.scope_line, "kind": kind, "value": attrs["value"],
                        "upstream_operations": upstream})
    return targets


def _bound_before(program: Program, unit: Unit, name: str) -> bool:
    return any(name in u.defs for u in program.scopes[(unit.path, unit.scope_line)][:unit.index])


# A traced run slower than this many times its plain run is reported (figure ``traced_slowdown``): the tracer's
# per-line hook costs most in tight Python loops, and a slowdown that large says the graph cost real time.
MUCH_SLOWER = 3.0


def trace_seed(seed, sandbox, cache, recorder, min_upstream_ops: int, max_rows: int,
               plain_s: float | None = None):
    """Run a seed program under the value tracer and build its ``WorkflowRow`` (None when it cannot be traced).

    The traced run asks for three times ``sandbox.timeout_s`` (the sandbox bounds it by ``max_timeout_s``).
    ``plain_s``, the seeds stage's recorded duration of the plain run, only feeds the report."""
    from pathlib import Path

    from ..io import WorkflowRow
    from ..sandbox import TRACE_FILE, run_cached
    from .protocol import recorded_request
    from .parameters import seed_literals

    tree = Path(seed.tree)
    sources = {path: (tree / path).read_text(encoding="utf-8") for path in seed.program_files}
    try:
        program = analyse_program(sources, seed.script)
    except (SyntaxError, ValueError, RecursionError) as exc:
        recorder.reject(seed.seed_id, "unanalysable", f"the program cannot be analysed: {type(exc).__name__}: {exc}")
        return None
    env = sandbox.prepare(seed.distributions)
    if not env.ready:
        recorder.reject(seed.seed_id, "missing_dependency", f"the sandbox lacks {', '.join(env.missing)}")
        return None
    files = {f.path: (tree / f.path).read_bytes() for f in seed.data_files}
    files.update({path: text.encode("utf-8") for path, text in sources.items()})
    files[PLAN_FILE] = json.dumps(trace_plan(program), sort_keys=True).encode("utf-8")
    protocol = RunProtocol.of(seed)
    request = recorded_request(protocol, seed.script, files, sandbox.timeout_s * 3, trace=("--values",))
    result, hit = run_cached(cache, sandbox, env, request)
    recorder.count("traced_runs_cached" if hit else "traced_runs_executed")
    if plain_s and result.duration_s > MUCH_SLOWER * max(plain_s, 0.1):
        recorder.figures.setdefault("traced_slowdown", {})[seed.seed_id] = {
            "plain_s": round(plain_s, 2), "traced_s": round(result.duration_s, 2)}
    if not result.ok:
        tail = (result.stderr.strip().splitlines() or [""])[-1]
        plain = f"; the plain run took {plain_s:.1f} s" if plain_s else ""
        recorder.reject(seed.seed_id, "trace_failed", f"the traced run ended with {result.reason} after "
                        f"{result.duration_s:.1f} s{plain}: {tail[:300]}")
        return None
    try:
        trace = json.loads(result.files[TRACE_FILE])
    except (KeyError, ValueError):
        recorder.reject(seed.seed_id, "trace_failed", "the traced run left no readable trace")
        return None
    trace.pop("reads", None)
    trace.pop("local_modules", None)
    trace.pop("prints", None)  # the seed run's record names its stdout; a graph needs none of it
    written = [w.path for w in seed.files_written]
    graph = build_graph(program, trace, [f.path for f in seed.data_files], written)
    literals = seed_literals(seed, sources.values())
    targets = informative_targets(program, graph, trace, literals, min_upstream_ops, max_rows)
    recorder.count("informative_targets", len(targets))
    recorder.count("graph_nodes", graph.number_of_nodes())
    return WorkflowRow(
        seed_id=seed.seed_id, repo_id=seed.repo_id, graph=graph_json(graph),
        nodes=graph.number_of_nodes(), edges=graph.number_of_edges(),
        operations=sum(1 for _, a in graph.nodes(data=True) if a.get("kind") == "operation"),
        trace=trace, targets=targets, truncated=bool(trace.get("truncated")),
    )
