"""The `trailforge` command: a thin layer over the library.

  trailforge --version                           the installed trailforge version
  trailforge ls                                  recipes, config groups and their options
  trailforge validate [recipe=NAME] [overrides]  compose and validate (schema, and the models the stages need)
  trailforge compose [recipe=NAME] [overrides]   write params.yaml and versions.yaml (and point DVC at the recipe)
  trailforge versions [--check]                  record the installed versions stages depend on in versions.yaml
  trailforge run [recipe=NAME] [overrides]       compose, then `dvc repro`
  trailforge report [--outputs DIR]              accepted / rejected counts, reasons and figures per stage
  trailforge recheck [DIR]                       re-run every exported environment's controls from its folder
  trailforge publish [--release DIR] [--dry-run]  push the release's changed files to the Hub (publish.repo_id)
  trailforge fetch-env REPO ENV_ID --dest DIR [--answer FILE]  download one environment from a Hub copy of a
                                                 release and grade its reference (or your) answer with its eval
  trailforge graph SEED_ID [--format svg|dot|json]  print a seed program's workflow graph (picture, Graphviz, node-link)
  trailforge review-sheet [--size N] [--min-per-stratum K]  a stratified, blinded review sheet of verified environments
  trailforge deps [--check | --write]            each stage's code deps from its imports; compare with / rewrite dvc.yaml
  trailforge audit PATH [--out DIR] [--tokenizer NAME] [--topic-pattern REGEX] [--no-plots]
                                                 length, composition, tool-use and linkage audit of a chat-format
                                                 trajectory corpus (JSONL, parquet, or a save_to_disk folder)
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from .. import __version__
from ..config import ConfigError, compose, validate, write_params
from ..config.compose import list_groups, list_recipes, point_dvc_at_recipe, project_root
from ..config.requirements import check_model_settings
from ..config.versions import VERSIONS_FILE, read_versions, recorded_versions, version_drift, write_versions
from ..io.pipeline import pipeline_stages


class InputMissing(Exception):
    """A folder or file a command reads does not exist, or holds nothing built; the message says which."""


def _folder(path: Path, what: str, hint: str) -> Path:
    """``path`` when it is a folder, else the one-line error a user sees (no traceback)."""
    if not path.is_dir():
        problem = "is not a folder" if path.exists() else "does not exist"
        raise InputMissing(f"{what} {path} {problem}; {hint}")
    return path


class _Parser(argparse.ArgumentParser):
    """argparse, with a bad argument reported like every other error of the command: one line, exit 2.

    argparse prints the whole usage block before its message; the message alone names the problem, and
    ``--help`` is one command away. Subcommand parsers are made of this class too (``add_subparsers``).
    """

    def error(self, message: str):
        self.exit(2, f"error: {message} (see `{self.prog} --help`)\n")


def _split(args: list[str]) -> tuple[str, list[str]]:
    recipe, overrides = "demo", []
    for arg in args:
        if arg.startswith("recipe="):
            recipe = arg.split("=", 1)[1]
        else:
            overrides.append(arg)
    return recipe, overrides


def cmd_ls(_: argparse.Namespace) -> int:
    root = project_root()
    print("recipes:", ", ".join(list_recipes(root)))
    for group, options in list_groups(root).items():
        print(f"{group}: {', '.join(options)}")
    return 0


def _compose_valid(args: argparse.Namespace):
    recipe, overrides = _split(args.settings)
    data = compose(recipe, overrides)
    cfg = validate(data)
    # The same model checks every stage of `dvc repro` makes at its start, made before DVC deletes any output.
    check_model_settings(cfg, pipeline_stages(project_root()))
    return recipe, data


def cmd_validate(args: argparse.Namespace) -> int:
    recipe, data = _compose_valid(args)
    print(f"recipe '{recipe}' is valid ({len(data)} top-level keys)")
    return 0


def cmd_compose(args: argparse.Namespace) -> int:
    recipe, data = _compose_valid(args)
    root = project_root()
    out = Path(args.output) if args.output else root / "params.yaml"
    write_params(data, out)
    write_versions(recorded_versions(data), out.parent / VERSIONS_FILE)
    point_dvc_at_recipe(root, recipe)
    print(f"wrote {out} from recipe '{recipe}' (and {VERSIONS_FILE})")
    return 0


def cmd_versions(args: argparse.Namespace) -> int:
    """Rewrite (or with --check compare) versions.yaml for the params.yaml already composed."""
    import yaml

    params = Path(args.params) if args.params else project_root() / "params.yaml"
    if not params.is_file():
        raise InputMissing(f"{params} does not exist; run `trailforge compose recipe=demo` first")
    path = params.parent / VERSIONS_FILE
    current = recorded_versions(yaml.safe_load(params.read_text(encoding="utf-8")) or {})
    if args.check:
        drift = version_drift(read_versions(path), current) if path.is_file() else [f"{path} does not exist"]
        for line in drift:
            print(line)
        return 1 if drift else 0
    write_versions(current, path)
    print(f"wrote {path}")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    args.output = None
    cmd_compose(args)
    return subprocess.call(["dvc", "repro"], cwd=project_root())


def cmd_report(args: argparse.Namespace) -> int:
    from ..io.pipeline import read_stage_stats
    from ..release.stage_summary import summary_line

    outputs = _folder(Path(args.outputs), "outputs folder", "build the corpus with `dvc repro` or pass --outputs DIR")
    stages: list[str] = []
    for start in (outputs.resolve(), None):  # the project the outputs belong to, else the one we are in
        try:
            stages = pipeline_stages(project_root(start))
            break
        except ConfigError:
            continue  # outside any project: only the stage folders found, by name
    try:
        found = read_stage_stats(outputs, stages)
    except ValueError as exc:
        raise InputMissing(str(exc)) from None
    if not any(found.values()):
        raise InputMissing(f"nothing has been built in {outputs}: no stage folder holds a stats.json; run `dvc repro`")
    for stage, stats in found.items():
        print(summary_line(stage, stats))
    return 0


def cmd_recheck(args: argparse.Namespace) -> int:
    from ..config import load_params
    from ..executor import build_executor
    from ..release.recheck import recheck_release
    from ..sandbox import build_sandbox

    environments = _folder(Path(args.environments), "environments folder",
                            "build the release with `dvc repro release` or name the folder")
    if not any((p / "metadata.json").is_file() for p in environments.iterdir()):
        raise InputMissing(f"{environments} holds no exported environment (a folder with metadata.json)")
    cfg = load_params(args.params)
    summary = recheck_release(environments, build_sandbox(cfg.sandbox), build_executor(cfg.executor),
                              cfg.budget.max_answer_fields, cfg.budget.max_table_rows)
    print(json.dumps(summary, indent=2, sort_keys=True))
    return 0 if summary["passed"] == summary["environments"] else 1


def cmd_publish(args: argparse.Namespace) -> int:
    from ..config import load_params
    from ..release.publish import PublishError, pipeline_status, publish_release, recipe_files

    _folder(Path(args.release), "release folder", "build it with `dvc repro release` or pass --release DIR")
    params = Path(args.params)
    cfg = load_params(params)
    root = project_root(params.resolve().parent)
    try:
        if (root / "dvc.lock").is_file() and not args.no_dvc_status:  # a DVC-built release: ask DVC too
            pipeline_status(root, cfg.publish.set)
        files = recipe_files(root, params)
        summary = publish_release(Path(args.release), cfg.publish, files, dry_run=args.dry_run,
                                  selection_dir=Path(args.outputs) / cfg.publish.set)
    except PublishError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(summary, indent=2, sort_keys=True))
    return 0


def cmd_fetch_env(args: argparse.Namespace) -> int:
    from ..config import load_params
    from ..release.fetch import FetchError, fetch_environment, grade_fetched, release_config
    from ..sandbox import build_sandbox

    try:
        answer = Path(args.answer).read_bytes() if args.answer else None
    except OSError as exc:
        print(f"error: cannot read the answer file: {exc}", file=sys.stderr)
        return 2
    try:
        fetched = fetch_environment(args.repo, args.env_id, Path(args.dest), revision=args.revision)
        if args.no_check:
            print(json.dumps({"env_id": args.env_id, "folder": str(fetched.folder)}, indent=2))
            return 0
        cfg = load_params(args.params) if args.params else release_config(fetched.params)
        report = grade_fetched(fetched.folder, build_sandbox(cfg.sandbox), cfg.budget.max_answer_fields,
                               cfg.budget.max_table_rows, answer)
    except FetchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(report, indent=2, sort_keys=True))
    return 0 if report.get("accepted", report.get("ok")) else 1


def cmd_graph(args: argparse.Namespace) -> int:
    from ..envs.graph_render import render_dot, render_svg
    from ..envs.workflow import graph_from_json
    from ..io import WorkflowRow, read_rows

    data = _folder(Path(args.workflows), "workflows folder", "build it with `dvc repro workflows`") / "data"
    if not any(data.glob("data-*.parquet")):
        raise InputMissing(f"{args.workflows} holds no workflow rows; build it with `dvc repro workflows`")
    for row in read_rows(data, WorkflowRow):
        if row.seed_id == args.seed_id:
            renderers = {"svg": render_svg, "dot": render_dot}
            text = renderers[args.format](graph_from_json(row.graph), row.seed_id) if args.format in renderers \
                else json.dumps(row.graph, indent=2, sort_keys=True)
            print(text, end="" if text.endswith("\n") else "\n")
            return 0
    print(f"error: no workflow for seed '{args.seed_id}' in {args.workflows}", file=sys.stderr)
    return 2


def cmd_review_sheet(args: argparse.Namespace) -> int:
    from ..io import VerifiedTaskRow, read_rows
    from ..release.audit import write_audit

    data = _folder(Path(args.verified), "verify folder", "build it with `dvc repro verify`") / "data"
    if not any(data.glob("data-*.parquet")):
        raise InputMissing(f"{args.verified} holds no verified tasks; build it with `dvc repro verify`")
    tasks = read_rows(data, VerifiedTaskRow)
    summary = write_audit(tasks, Path(args.out), args.size, args.min_per_stratum, args.seed)
    print(json.dumps(summary, indent=2, sort_keys=True))
    return 0


def cmd_deps(args: argparse.Namespace) -> int:
    from ..io.code_deps import DepsError, check_deps, generated_deps, rewrite_deps

    dvc_file = Path(args.dvc_file) if args.dvc_file else project_root() / "dvc.yaml"
    if not dvc_file.is_file():
        print(f"error: no {dvc_file}", file=sys.stderr)
        return 2
    root, text = dvc_file.resolve().parent, dvc_file.read_text(encoding="utf-8")
    try:
        if args.check:
            drift = check_deps(text, root, where=str(dvc_file))
            for stage in drift:
                print(f"{stage.stage} ({stage.module}):")
                print("".join(f"  missing {path}\n" for path in stage.missing) + "".join(
                    f"  stale   {path}\n" for path in stage.stale), end="")
            if drift:
                print(f"{dvc_file}: the code deps of {len(drift)} stage(s) differ from their imports; "
                      "`trailforge deps --write` rewrites them", file=sys.stderr)
                return 1
            print(f"{dvc_file}: every stage's code deps match its imports")
            return 0
        wanted = generated_deps(text, root, where=str(dvc_file))
        if args.write:
            new = rewrite_deps(text, wanted, where=str(dvc_file))
            if new != text:
                dvc_file.write_text(new, encoding="utf-8")
            done = "rewrote the code deps of {} stages" if new != text else "the code deps of {} stages were right"
            print(f"{dvc_file}: {done.format(len(wanted))}")
            return 0
        for stage, deps in wanted.items():
            print(f"{stage}:" + "".join(f"\n  - {path}" for path in deps))
        return 0
    except DepsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def cmd_audit(args: argparse.Namespace) -> int:
    from ..release.corpus_audit import audit_corpus, write_audit_report

    # Options left unset fall through to the library's defaults, which are defined in one place only.
    options = {name: getattr(args, name) for name in ("tokenizer", "topic_pattern", "tier_key", "threads")
               if getattr(args, name) is not None}
    if options.get("topic_pattern") == "":
        options["topic_pattern"] = None  # an empty pattern turns topic extraction off
    try:
        report = audit_corpus(Path(args.path), **options)
    except (FileNotFoundError, ValueError, RuntimeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    out = Path(args.out) if args.out else Path("outputs/corpus_audit")
    write_audit_report(report, out, plots=not args.no_plots)
    scale = report["scale"]
    print(json.dumps({"trajectories": scale["trajectories"], "rejected": report["rejects"]["total"],
                      "messages": scale["messages"], "tool_calls": scale["tool_calls"],
                      "text_tokens": scale["text_tokens"], "record_tokens": scale["record_tokens"],
                      "report": str(out / "audit.md")}, indent=2))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="trailforge", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"trailforge {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("ls", help="list recipes, config groups and options").set_defaults(func=cmd_ls)
    for name, func, text in [
        ("validate", cmd_validate, "compose and validate a recipe without running it"),
        ("compose", cmd_compose, "write the resolved recipe to params.yaml"),
        ("run", cmd_run, "compose, then run the pipeline with `dvc repro`"),
    ]:
        command = sub.add_parser(name, help=text)
        command.add_argument("settings", nargs="*", help="recipe=NAME and Hydra overrides such as verifier.repeats=3")
        if name == "compose":
            command.add_argument("--output", help="where to write (default: <project>/params.yaml)")
        command.set_defaults(func=func)
    versions = sub.add_parser("versions", help="record the installed library versions stages depend on")
    versions.add_argument("--params", default=None, help="the composed config (default: the project's params.yaml)")
    versions.add_argument("--check", action="store_true", help="compare with versions.yaml; exit 1 on a difference")
    versions.set_defaults(func=cmd_versions)
    report = sub.add_parser("report", help="per-stage accepted/rejected counts, reject reasons and figures")
    report.add_argument("--outputs", default="outputs")
    report.set_defaults(func=cmd_report)
    recheck = sub.add_parser("recheck", help="re-run reference and negative controls of exported environments")
    recheck.add_argument("environments", nargs="?", default="outputs/release/environments")
    recheck.add_argument("--params", default="params.yaml", help="sandbox and answer limits (default: params.yaml)")
    recheck.set_defaults(func=cmd_recheck)
    publish = sub.add_parser("publish", help="push the release to a Hugging Face Hub dataset repository")
    publish.add_argument("--release", default="outputs/release")
    publish.add_argument("--params", default="params.yaml", help="publish settings (default: params.yaml)")
    publish.add_argument("--outputs", default="outputs", help="stage folders; publish.set=sample reads outputs/sample")
    publish.add_argument("--dry-run", action="store_true", help="list what would be uploaded; write nothing")
    publish.add_argument("--no-dvc-status", action="store_true",
                         help="skip `dvc status` (for a release built outside this project's pipeline)")
    publish.set_defaults(func=cmd_publish)
    fetch = sub.add_parser("fetch-env", help="download one environment from a Hub copy of a release and grade it")
    fetch.add_argument("repo", help="the Hub dataset repository, NAMESPACE/NAME (HF_ENDPOINT names another Hub)")
    fetch.add_argument("env_id", help="an env_id of the dataset's rows (a folder under environments/)")
    fetch.add_argument("--dest", required=True, help="folder to create (must not exist or be empty)")
    fetch.add_argument("--revision", default="main")
    fetch.add_argument("--answer", help="grade this answer file instead of re-checking the reference")
    fetch.add_argument("--params", help="sandbox and answer limits (default: the release's recipe/params.yaml)")
    fetch.add_argument("--no-check", action="store_true", help="only download; grade nothing")
    fetch.set_defaults(func=cmd_fetch_env)
    graph = sub.add_parser("graph", help="print one seed program's workflow graph")
    graph.add_argument("seed_id", help="for example meadow-quadrats:diversity.py")
    graph.add_argument("--format", choices=["svg", "dot", "json"], default="svg")
    graph.add_argument("--workflows", default="outputs/workflows")
    graph.set_defaults(func=cmd_graph)
    sheet = sub.add_parser("review-sheet", help="write a stratified, blinded review sheet of verified environments")
    sheet.add_argument("--verified", default="outputs/verify")
    sheet.add_argument("--out", default="outputs/audit")
    sheet.add_argument("--size", type=int, default=60)
    sheet.add_argument("--min-per-stratum", type=int, default=2)
    sheet.add_argument("--seed", type=int, default=0)
    sheet.set_defaults(func=cmd_review_sheet)
    deps = sub.add_parser("deps", help="each dvc.yaml stage's code deps, from the imports of its stage module")
    mode = deps.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="exit 1 and list missing and stale entries on drift")
    mode.add_argument("--write", action="store_true", help="rewrite the code entries of each stage's deps")
    deps.add_argument("--dvc-file", help="the dvc.yaml to read (default: the project's)")
    deps.set_defaults(func=cmd_deps)
    audit = sub.add_parser("audit", help="audit a chat-format trajectory corpus (JSONL, parquet, save_to_disk folder)")
    audit.add_argument("path", help="a .jsonl[.gz] or .parquet file, a save_to_disk folder, or a folder of shards")
    audit.add_argument("--out", help="report folder (default: outputs/corpus_audit)")
    audit.add_argument("--tokenizer", help="tiktoken encoding or model name (default: o200k_base)")
    audit.add_argument("--topic-pattern", help="regex over tool-call arguments, group 1 is the topic "
                                               "(default: topics/<topic>/ paths; '' turns topics off)")
    audit.add_argument("--tier-key", help="assistant-message key holding the value tier (default: _value)")
    audit.add_argument("--threads", type=int, help="tokenizer threads (default: all available cores)")
    audit.add_argument("--no-plots", action="store_true", help="write audit.json, audit.md and per_record.csv only")
    audit.set_defaults(func=cmd_audit)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (ConfigError, InputMissing) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
