"""Benchmark: what the pipeline gets out of the real research repositories in ../shared/realrepos.

The repositories (real public code at pinned commits, see ../shared/realrepos/README.md) are copied into a
temporary folder, listed in a recipe as ``source.kind=local``, and the stage modules run in order
(``python -m stages.<name>``) in a temporary project, from discover through ``--through`` (seeds by default).
The manifest says, per repository, which scripts exit 0 when run the way their authors meant. Printed, per
repository and overall:

- whether discover accepted the repository (and the reason when it did not), and its discipline;
- found and ran: of the manifest's exit-0 scripts, how many the seeds stage ran to a clean exit (kept as a seed,
  or judged after the run to read no repository data / produce nothing);
- seeds recall: of the manifest's exit-0 scripts, how many the seeds stage kept as a seed program, and for
  each one it missed the reject (stage, reason code, message) that accounts for it, or ``silent`` when no
  stage recorded one;
- extra seeds: seed programs the manifest does not list as exit 0;
- with ``--through verify`` or later: environments per task type;
- with ``--recheck`` (after ``--through release``): ``trailforge recheck`` of the released environments, from
  their exported folders alone, passed per repository; ``--recheck-only PROJECT`` does that for a project an
  earlier run kept (``--keep``), without running any stage again;
- the wall time of every stage, and the traceback of any stage that crashed (the run stops there).

It measures and asserts nothing. The execution cache persists between runs (``--cache``), so a re-run
repeats no program execution; delete the folder for a cold run.

    python bench/real_repos.py [--recipe repos] [--overrides sandbox.timeout_s=60 ...]
                               [--repos Kian158__pendulum-data-analysis ...] [--through seeds] [--json]
                               [--recheck] [--recheck-only PROJECT]

The corpus is looked up at ``../shared/realrepos`` from the project root, or at ``$TRAILFORGE_REALREPOS``.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import pandas as pd  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

from trailforge.config import compose, validate, write_params  # noqa: E402
from trailforge.config.schema import RepoEntry  # noqa: E402
from trailforge.envs.answers import extract_answer, is_result_file  # noqa: E402
from trailforge.envs.discover import repo_id_for  # noqa: E402
from trailforge.testing.corpus import STAGE_CHAIN  # noqa: E402

TYPES = ("reproduction", "subflow", "completion", "correction")
STAGES = [name for name, _ in STAGE_CHAIN]
# Seeds rejects made after a clean exit: the script was found and ran, and was judged no seed program.
RAN_REJECTS = {"no_data_read", "no_output"}
DEFAULT_CACHE = Path(tempfile.gettempdir()) / "trailforge-bench-realrepos-cache"


def realrepos_root() -> Path:
    """Where the corpus lives: $TRAILFORGE_REALREPOS, else ../shared/realrepos from the project root."""
    return Path(os.environ.get("TRAILFORGE_REALREPOS") or ROOT.parent / "shared" / "realrepos")


def load_manifest(corpus: Path) -> list[dict]:
    return json.loads((corpus / "manifest.json").read_text(encoding="utf-8"))


def known_to_run(entry: dict) -> dict[str, list[dict]]:
    """The manifest's exit-0 runs of one repository, by script path (one path may run several ways)."""
    runs: dict[str, list[dict]] = {}
    for script in entry["scripts"]:
        if script["exit"] == 0:
            runs.setdefault(script["path"], []).append(script)
    return runs


# ---------------------------------------------------------------- running the stages


def prepare(work: Path, corpus: Path, folders: list[str], recipe: str, overrides: list[str]) -> tuple[Path, dict]:
    """Copy the repositories under ``work/repos`` and write the project's params.yaml; returns (project, repo paths)."""
    repos = {}
    for folder in folders:
        dest = work / "repos" / folder
        shutil.copytree(corpus / folder, dest, symlinks=True)
        repos[folder] = dest
    project = work / "project"
    project.mkdir(parents=True)
    data = compose(recipe, overrides, root=ROOT)
    # The recipe's other choices stay as they are; only the source becomes these repositories.
    data["source"] = {"kind": "local", "repos": [{"path": str(path)} for path in repos.values()]}
    validate(data)
    write_params(data, project / "params.yaml")
    return project, repos


def run_stages(project: Path, through: str, cache: Path) -> list[dict]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TRAILFORGE_CACHE_DIR": str(cache),
           "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    done_stages = []
    for stage, args in STAGE_CHAIN[: STAGES.index(through) + 1]:
        start = time.monotonic()
        done = subprocess.run([sys.executable, "-m", f"stages.{stage}", *args, "--out", f"out/{stage}"], cwd=project,
                              env=env, capture_output=True, text=True)
        record = {"stage": stage, "wall_s": round(time.monotonic() - start, 2), "exit": done.returncode}
        stats_path = project / "out" / stage / "stats.json"
        if done.returncode == 0 and stats_path.exists():
            stats = json.loads(stats_path.read_text())
            record.update(accepted=stats.get("accepted"), rejected=stats.get("rejected"),
                          reject_reasons=stats.get("reject_reasons", {}))
            if stats.get("counters"):  # e.g. tasks: answer fields that did / did not move with the data
                record["counters"] = stats["counters"]
            timings = json.loads((stats_path.parent / "timings.json").read_text())
            if "environment_ladder" in timings:  # what each rung of the dependency ladder cost (seeds)
                record["environment_ladder"] = timings["environment_ladder"]
        else:
            record["crash"] = (done.stderr.strip() or done.stdout.strip())[-6000:]
        done_stages.append(record)
        if done.returncode != 0:
            break  # what follows reads this stage's outputs
    return done_stages


def recheck(project: Path, cache: Path) -> dict:
    """``trailforge recheck`` of the project's released environments: its JSON summary, or ``{"error": ...}``."""
    folder = project / "out" / "release" / "environments"
    if not folder.is_dir():
        return {"error": f"no released environments at {folder}"}
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TRAILFORGE_CACHE_DIR": str(cache),
           "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "trailforge.cli.main", "recheck", str(folder),
                           "--params", str(project / "params.yaml")], cwd=project, env=env, capture_output=True,
                          text=True)
    try:
        summary = json.loads(done.stdout)
    except json.JSONDecodeError:
        return {"error": f"recheck exited {done.returncode}: {(done.stderr or done.stdout).strip()[-2000:]}"}
    return {**summary, "wall_s": round(time.monotonic() - start, 1)}


def print_recheck(summary: dict) -> None:
    if "error" in summary:
        print(f"\nrecheck: {summary['error']}")
        return
    print(f"\nrecheck of the released environments from their folders ({summary['wall_s']} s): "
          f"{summary['passed']}/{summary['environments']} passed, "
          f"{summary['positive_controls_accepted']} positive controls accepted, "
          f"{summary['negative_controls_rejected']} negative controls rejected, "
          f"{summary.get('references_rerun_after_timeout', 0)} references run again after a timeout")
    for repo_id, counts in summary.get("by_repository", {}).items():
        print(f"  {repo_id:<72} {counts['passed']:>4}/{counts['environments']}")
    for failure in summary["failures"]:
        print(f"  FAILED {failure['env_id']}: {'; '.join(failure['problems'])[:600]}")


# ---------------------------------------------------------------- reading what the stages wrote


def read_rejects(out: Path, stage: str) -> list[dict]:
    path = out / stage / "rejects.parquet"
    if not path.exists():
        return []
    return pd.read_parquet(path, columns=["stage", "item_id", "reason", "message"]).to_dict("records")


def read_accepted(out: Path, stage: str, columns: list[str]) -> list[dict] | None:
    """The stage's accepted rows (only ``columns``), or None when the stage wrote none (did not run or crashed)."""
    shards = sorted((out / stage / "data").glob("data-*.parquet"))
    if not shards:
        return None
    present = set(pq.read_schema(shards[0]).names)  # a column newer than these outputs is left out
    return pd.concat([pd.read_parquet(s, columns=[c for c in columns if c in present]) for s in shards]
                     ).to_dict("records")


def _json_list(value) -> list:
    """A list column as stored by trailforge.io (nested values are JSON text)."""
    if value is None:
        return []
    return json.loads(value) if isinstance(value, str) else list(value)


def released_environments(out: Path) -> list[dict] | None:
    folder = out / "release" / "environments"
    if not folder.is_dir():
        return None
    return [json.loads(p.read_text()) for p in sorted(folder.glob("*/metadata.json"))]


def account_for(script: str, repo_id: str, rejects: dict[str, list[dict]], crashed: str | None) -> dict:
    """The reject that explains why ``script`` is not a seed: the script's own, else its repository's."""
    item = f"{repo_id}:{script}"
    for stage in ("seeds", "snapshot"):
        for r in rejects[stage]:
            if r["item_id"] == item:
                return {"stage": stage, "reason": r["reason"], "message": r["message"]}
    for stage in ("discover", "snapshot"):
        for r in rejects[stage]:
            if r["item_id"] == repo_id:
                return {"stage": stage, "reason": r["reason"], "message": r["message"]}
    if crashed:
        return {"stage": crashed, "reason": "stage_crashed", "message": f"stage {crashed} exited nonzero (see crash)"}
    return {"stage": None, "reason": "silent", "message": "no stage recorded a reject for this script"}


def figures(project: Path, manifest: list[dict], repos: dict[str, Path], stages: list[dict]) -> dict:
    out = project / "out"
    crashed = next((s["stage"] for s in stages if s["exit"] != 0), None)
    rejects = {stage: read_rejects(out, stage) for stage in ("discover", "snapshot", "seeds")}
    accepted_repos = {r["repo_id"]: r for r in read_accepted(out, "discover", ["repo_id", "discipline"]) or []}
    seeds = read_accepted(out, "seeds", ["repo_id", "script", "cwd", "args"]) or []
    seeded: dict[str, set[str]] = {}
    started: dict[tuple[str, str], list[dict]] = {}  # how the seeds stage started each seed, where it says
    for seed in seeds:
        seeded.setdefault(seed["repo_id"], set()).add(seed["script"])
        if "cwd" in seed:
            started.setdefault((seed["repo_id"], seed["script"]), []).append(
                {"cwd": seed["cwd"], "args": _json_list(seed.get("args"))})
    verified = read_accepted(out, "verify", ["repo_id", "task_type"])
    released = released_environments(out)
    by_folder = {entry["folder"]: entry for entry in manifest}
    per_repo = {}
    for folder in repos:
        entry = by_folder[folder]
        repo_id = repo_id_for(RepoEntry(path=str(repos[folder])))
        runs = known_to_run(entry)
        kept = seeded.get(repo_id, set())
        found = sorted(p for p in runs if p in kept)
        # Ran to exit 0 under an inferred start but kept as no seed: the seeds stage's post-run rejects.
        ran_only = sorted(p for p in runs if p not in kept and any(
            r["item_id"] == f"{repo_id}:{p}" and r["reason"] in RAN_REJECTS for r in rejects["seeds"]))
        discover_reject = next((r for r in rejects["discover"] if r["item_id"] == repo_id), None)
        record = {
            "repo_id": repo_id,
            "manifest_discipline": entry.get("discipline"),
            "discover": "accepted" if repo_id in accepted_repos else (
                {"reason": discover_reject["reason"], "message": discover_reject["message"]} if discover_reject
                else "missing"),
            "discipline": accepted_repos.get(repo_id, {}).get("discipline"),
            "known_runs": sum(len(v) for v in runs.values()),
            "found_runs": sum(len(runs[p]) for p in found),
            "known_scripts": len(runs),
            "found_scripts": len(found),
            "found": found,
            "ran_runs": sum(len(runs[p]) for p in [*found, *ran_only]),
            # The manifest's exit-0 runs that read a repository file: a seed needs data, so these are the bar.
            "known_data_runs": sum(1 for v in runs.values() for run in v if run.get("reads")),
            "found_data_runs": sum(1 for p in found for run in runs[p] if run.get("reads")),
            "ran_scripts": len(found) + len(ran_only),
            # Per seeded script: how the seeds stage ran it, and whether that is one of the manifest's exit-0 runs.
            "found_runs_as": {p: [{**run, "as_in_manifest": any(run["cwd"] == m["cwd"] and run["args"] == m["args"]
                                                                for m in runs[p])}
                                  for run in started.get((repo_id, p), [])] for p in found},
            "misses": [{"script": p, **account_for(p, repo_id, rejects, crashed),
                        "manifest_runs": [{"cwd": r["cwd"], "args": r["args"], "env": r["env"]} for r in runs[p]]}
                       for p in sorted(runs) if p not in kept],
            "extra": sorted(kept - set(runs)),
        }
        if verified is not None:
            record["verified"] = dict(Counter(t["task_type"] for t in verified if t["repo_id"] == repo_id))
        if released is not None:
            record["released"] = dict(Counter(t["task_type"] for t in released if t["repo_id"] == repo_id))
        per_repo[folder] = record
    records = list(per_repo.values())
    overall = {**released_field_audit(released, project), **plot_only_yield(out, released)}
    overall.update({
        "repositories": len(records),
        "accepted_at_discover": sum(r["discover"] == "accepted" for r in records),
        "known_runs": sum(r["known_runs"] for r in records),
        "found_runs": sum(r["found_runs"] for r in records),
        "known_scripts": sum(r["known_scripts"] for r in records),
        "found_scripts": sum(r["found_scripts"] for r in records),
        "ran_runs": sum(r["ran_runs"] for r in records),
        "known_data_runs": sum(r["known_data_runs"] for r in records),
        "found_data_runs": sum(r["found_data_runs"] for r in records),
        "ran_scripts": sum(r["ran_scripts"] for r in records),
        "seeds": len(seeds),
        "extra_seeds": sum(len(r["extra"]) for r in records),
        "miss_reasons": dict(Counter(f"{m['stage']}:{m['reason']}" for r in records for m in r["misses"])
                             .most_common()),
    })
    for key in ("verified", "released"):
        if all(key in r for r in records) and records:
            overall[key] = {t: sum(r[key].get(t, 0) for r in records) for t in TYPES}
    return {"repositories": per_repo, "overall": overall}


def released_field_audit(released: list[dict] | None, project: Path) -> dict:
    """What the released answers are made of: fields in all, by source kind, and any read from a file that can
    hold no result (a library cache, HOME, config or bytecode: ``is_result_file``), which must be none."""
    if released is None:
        return {}
    fields = [f for env in released for f in env.get("answer_schema", [])]
    # stdout@<line>: a bare number named by the print call that printed it (envs/printed/sites.py)
    kinds = Counter("stdout_print_call" if f["source"].startswith("stdout@") else
                    f["source"].split(":", 1)[0].split("/", 1)[0] for f in fields)
    not_results = [f"{env['env_id']}:{f['name']} <- {f['source']}" for env in released
                   for f in env.get("answer_schema", [])
                   if f["source"].startswith("file:") and not is_result_file(f["source"][5:])]
    return {"released_fields": len(fields), "released_field_sources": dict(kinds.most_common()),
            "released_fields_not_results": not_results}


def plot_only_yield(out: Path, released: list[dict] | None) -> dict:
    """Of the seed programs whose only results are figures (nothing read from stdout or a written table, JSON
    or text file, one figure or more recorded), how many gave at least one released environment."""
    seeds = read_accepted(out, "seeds", ["seed_id", "stdout", "files_written", "plots"]) or []
    plot_only = []
    for seed in seeds:
        plots = json.loads(seed["plots"]) if isinstance(seed.get("plots"), str) else (seed.get("plots") or {})
        if not plots.get("figures"):
            continue
        written = {w["path"]: w.get("text") for w in _json_list(seed.get("files_written"))
                   if is_result_file(w["path"])}
        schema, _, _ = extract_answer(seed["stdout"] or "", written)
        if not schema:
            plot_only.append(seed["seed_id"])
    if released is None:
        return {"plot_only_seeds": len(plot_only)}
    with_env = {env["seed_id"] for env in released}
    return {"plot_only_seeds": len(plot_only), "plot_only_seeds_released": sum(s in with_env for s in plot_only)}


# ---------------------------------------------------------------- printing


def _ratio(found: int, known: int) -> str:
    return f"{found}/{known}" + (f" ({100 * found / known:.0f}%)" if known else "")


def print_report(report: dict) -> None:
    print(f"recipe={report['recipe']} overrides={report['overrides']} through={report['through']}")
    print(f"corpus={report['corpus']} cache={report['cache']}\n")
    print("stages:")
    for s in report["stages"]:
        line = f"  {s['stage']:<11} {s['wall_s']:>8.1f} s  exit {s['exit']}"
        if "accepted" in s:
            line += f"  accepted {s['accepted']}  rejected {s['rejected']}  {s['reject_reasons']}"
        print(line)
    for s in report["stages"]:
        for rung, cost in s.get("environment_ladder", {}).items():
            print(f"  {'':<11} ladder {rung:<8} attempts {cost['attempts']:>4}  seeds {cost['seeds']:>3}  "
                  f"installing {cost['prepare_s']:>7.1f} s  running {cost['run_s']:>7.1f} s")
    for s in report["stages"]:
        if "crash" in s:
            print(f"\nstage {s['stage']} CRASHED (exit {s['exit']}); the run stopped there:\n{s['crash']}")
    repos, overall = report["repositories"], report["overall"]
    typed = [k for k in ("verified", "released") if k in overall]
    print("\nper repository (exit-0 runs seeded / known; distinct scripts seeded / known):")
    header = f"  {'folder':<44} {'discover':<16} {'discipline':<14} {'runs':>10} {'scripts':>10} {'extra':>5}"
    for key in typed:
        header += f"  {key} " + "/".join(t[:4] for t in TYPES)
    print(header)
    for folder, r in repos.items():
        verdict = r["discover"] if isinstance(r["discover"], str) else r["discover"]["reason"]
        line = (f"  {folder[:44]:<44} {verdict:<16} {str(r['discipline'] or '-'):<14} "
                f"{r['found_runs']:>4}/{r['known_runs']:<5} {r['found_scripts']:>4}/{r['known_scripts']:<5} "
                f"{len(r['extra']):>5}")
        for key in typed:
            line += f"  {key} " + "/".join(str(r[key].get(t, 0)) for t in TYPES)
        print(line)
    rejected = {f: r["discover"] for f, r in repos.items() if r["discover"] != "accepted"}
    print(f"\ndiscover: {overall['accepted_at_discover']}/{overall['repositories']} repositories accepted")
    for folder, why in rejected.items():
        print(f"  rejected {folder}: " + (why if isinstance(why, str) else f"{why['reason']}: {why['message']}"))
    print(f"\nfound and ran to exit 0: {_ratio(overall['ran_runs'], overall['known_runs'])} exit-0 runs, "
          f"{_ratio(overall['ran_scripts'], overall['known_scripts'])} distinct exit-0 scripts")
    print(f"seeds recall (kept as seed programs): {_ratio(overall['found_runs'], overall['known_runs'])} exit-0 runs, "
          f"{_ratio(overall['found_scripts'], overall['known_scripts'])} distinct exit-0 scripts; "
          f"{overall['seeds']} seeds in all, {overall['extra_seeds']} not listed as exit 0 in the manifest")
    print(f"seeds recall on the exit-0 runs that read repository data (manifest `reads`): "
          f"{_ratio(overall['found_data_runs'], overall['known_data_runs'])}")
    print("miss reasons (stage:reason, distinct scripts): "
          + (", ".join(f"{k} {v}" for k, v in overall["miss_reasons"].items()) or "none"))
    for key in typed:
        print(f"{key} environments: " + ", ".join(f"{t} {overall[key][t]}" for t in TYPES))
    counters = next((s.get("counters", {}) for s in report["stages"] if s["stage"] == "tasks"), {})
    if counters:
        print(f"data dependence (tasks): {counters.get('answer_fields_data_dependent', 0)} answer fields moved "
              f"with the data and were kept, {counters.get('answer_fields_not_data_dependent', 0)} did not and were "
              "dropped")
    checked = next((s.get("counters", {}) for s in report["stages"] if s["stage"] == "verify"), {})
    if checked:  # rejects for it (kernel_sensitive) are in the verify line above
        print(f"other numerical kernels (verify): {checked.get('kernel_sensitive_tasks', 0)} verified tasks have fields "
              "that moved with them and are graded with a tolerance that covers the move")
    if "released_fields" in overall:
        print(f"released answer fields: {overall['released_fields']} "
              f"(sources {overall['released_field_sources']}); from caches, HOME, config or bytecode: "
              f"{len(overall['released_fields_not_results'])}")
        for line in overall["released_fields_not_results"][:20]:
            print(f"  {line}")
    if "plot_only_seeds" in overall:
        line = f"plot-only seed programs (results only in figures): {overall['plot_only_seeds']}"
        if "plot_only_seeds_released" in overall:
            line += f", {_ratio(overall['plot_only_seeds_released'], overall['plot_only_seeds'])} gave an environment"
        print(line)
    print("\nfound:")
    for folder, r in repos.items():
        for script in r["found"]:
            ran = "; ".join(f"cwd={x['cwd']} args={x['args']}"
                            + ("" if x["as_in_manifest"] else " (not a manifest run)")
                            for x in r["found_runs_as"].get(script, []))
            print(f"  {folder}: {script}" + (f"  (seeded as: {ran})" if ran else ""))
    print("\nmisses:")
    for folder, r in repos.items():
        for m in r["misses"]:
            ran = "; ".join(f"cwd={x['cwd']} args={x['args']} env={x['env']}" for x in m["manifest_runs"])
            print(f"  {folder}: {m['script']}  [{m['stage']}:{m['reason']}] {m['message'][:240]}  (manifest: {ran})")
    extras = [(folder, s) for folder, r in repos.items() for s in r["extra"]]
    if extras:
        print("\nextra seeds (not exit 0 in the manifest):")
        for folder, script in extras:
            print(f"  {folder}: {script}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--recipe", default="repos",
                        help="recipe to compose (default: repos, each program in its own venv); its source is replaced")
    parser.add_argument("--overrides", nargs="*", default=[], help="extra Hydra overrides, e.g. sandbox.timeout_s=60")
    parser.add_argument("--repos", nargs="*", help="folder names to run (default: every folder of the manifest)")
    parser.add_argument("--through", default="seeds", choices=STAGES, help="last stage to run (default: seeds)")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE,
                        help=f"execution cache, kept between runs (default: {DEFAULT_CACHE})")
    parser.add_argument("--keep", action="store_true", help="keep the temporary project and print where it is")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--recheck", action="store_true",
                        help="after --through release: re-check every released environment from its folder")
    parser.add_argument("--recheck-only", type=Path, metavar="PROJECT",
                        help="only re-check the release of a project an earlier run kept, and print that")
    args = parser.parse_args()
    if args.recheck_only:
        summary = recheck(args.recheck_only.resolve(), args.cache.resolve())
        print(json.dumps(summary, indent=2) if args.json else "", end="")
        if not args.json:
            print_recheck(summary)
        sys.exit(0 if summary.get("passed") == summary.get("environments") else 1)
    if args.recheck and args.through != "release":
        sys.exit("--recheck needs --through release")

    corpus = realrepos_root()
    if not (corpus / "manifest.json").is_file():
        sys.exit(f"no real-repository corpus at {corpus} (set TRAILFORGE_REALREPOS to where it is)")
    manifest = load_manifest(corpus)
    folders = [e["folder"] for e in manifest]
    if args.repos:
        unknown = sorted(set(args.repos) - set(folders))
        if unknown:
            sys.exit(f"not in the manifest: {unknown}; known: {folders}")
        folders = [f for f in folders if f in args.repos]

    work = Path(tempfile.mkdtemp(prefix="trailforge-bench-realrepos-"))
    try:
        project, repos = prepare(work, corpus, folders, args.recipe, args.overrides)
        stages = run_stages(project, args.through, args.cache.resolve())
        report = {"recipe": args.recipe, "overrides": args.overrides, "through": args.through, "corpus": str(corpus),
                  "cache": str(args.cache), "stages": stages, **figures(project, manifest, repos, stages)}
        if args.recheck:
            report["recheck"] = recheck(project, args.cache.resolve())
    finally:
        if args.keep:
            print(f"kept the project at {work / 'project'}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print_report(report)
        if "recheck" in report:
            print_recheck(report["recheck"])


if __name__ == "__main__":
    main()
