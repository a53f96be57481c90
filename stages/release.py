"""Stage release: a datasets.DatasetDict, one self-contained folder per verified environment, and the
release's statistics as a dataset card (README.md) and a static HTML report with plots (report/).

The upstream stage folders (--discover ... --statements) feed the verification funnel and the
repository tables; each one given must hold stats.json and rejects.parquet. Leaving them all out
still releases the environments, with a funnel of the verify stage alone.
"""
import argparse
import json
import sys
from pathlib import Path

from trailforge.io import RepoRow, SeedRow, SnapshotRow, VerifiedTaskRow, read_rows
from trailforge.io.stage import params_or_exit
from trailforge.io.store import STATS_FILE, TIMINGS_FILE, write_json
from trailforge.release.card import code_version, params_sha256
from trailforge.release.export import release
from trailforge.release.report import write_plot_tables, write_release_report
from trailforge.release.stats import FUNNEL_STAGES, StageFolderError, read_stage_outcome, release_statistics

UPSTREAM = [stage for stage in FUNNEL_STAGES if stage != "verify"]


def _args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--params", default="params.yaml", help="composed config (default: params.yaml)")
    parser.add_argument("--verified", required=True, help="upstream stage folder: verify")
    for stage in UPSTREAM:
        parser.add_argument(f"--{stage}", help=f"upstream stage folder: {stage} (for the funnel and tables)")
    parser.add_argument("--out", required=True, help="this stage's output folder")
    return parser.parse_args()


def main() -> None:
    args = _args()
    cfg = params_or_exit(args.params)
    out = Path(args.out)
    folders = {stage: getattr(args, stage) for stage in UPSTREAM} | {"verify": args.verified}
    try:
        tasks = read_rows(Path(args.verified) / "data", VerifiedTaskRow)
        outcomes = [read_stage_outcome(stage, Path(folders[stage])) for stage in FUNNEL_STAGES if folders[stage]]
        repos = read_rows(Path(args.discover) / "data", RepoRow) if args.discover else None
        snapshots = read_rows(Path(args.snapshot) / "data", SnapshotRow) if args.snapshot else None
        seeds = read_rows(Path(args.seeds) / "data", SeedRow) if args.seeds else None
    except (StageFolderError, FileNotFoundError, ValueError) as exc:
        sys.exit(f"error: {exc}")

    summary = {"stage": "release", "name": cfg.publish.name, **release(tasks, out)}
    stats = release_statistics(tasks, outcomes, seed=cfg.seed, repos=repos, snapshots=snapshots, seed_rows=seeds)
    version = code_version(Path.cwd())  # DVC runs every stage from the project root
    recipe_facts = {"llm_provider": cfg.llm.provider, "statements": cfg.tasks.statements}
    write_release_report(out, name=cfg.publish.name, recipe=cfg.recipe, params_hash=params_sha256(Path(args.params)),
                         version=version, stats=stats, recipe_facts=recipe_facts)
    # The funnel is a plot (and each stage's own stats.json), not a second copy of those counts in this one.
    write_plot_tables(stats, out / "plots")
    summary["diversity"] = {g["group"]: {"vendi": g["vendi"], "centroid_distance": g["centroid_distance"]}
                            for g in stats["diversity"]["groups"] if g["vendi"] is not None}
    summary["diversity_sample_size"] = stats["diversity"]["sample_size"]
    write_json(out / STATS_FILE, summary)
    # The commit (and the dirty flag) change with every commit while the corpus need not: not a metric, so
    # `dvc exp show` does not list it for every experiment; timings.json is not cached, so the dirty flag may
    # live there and nowhere else (never in the card, which is cached).
    write_json(out / TIMINGS_FILE, {"stage": "release", "code_version": version})
    if version["dirty"]:
        print(f"note: the code has uncommitted changes on top of {version['commit']}", file=sys.stderr)
    print(json.dumps({k: summary[k] for k in ("stage", "name", "environments", "by_task_type")}, sort_keys=True))


if __name__ == "__main__":
    main()
