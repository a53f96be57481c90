"""Stage seeds: run candidate entry scripts in the sandbox; keep those that read data and produce results."""
import shutil
from pathlib import Path

from trailforge.cache import ContentCache, cache_dir_from_env
from trailforge.envs.seed_model import consolidate_seed, judge_seed, write_tree_index
from trailforge.envs.seeds import find_candidates, run_repository, unusable_files
from trailforge.executor import build_executor
from trailforge.io import SeedRow, SnapshotRow, StageRecorder, read_rejects, read_rows
from trailforge.io.stage import model_or_exit, params_or_exit, print_summary, stage_args, timed
from trailforge.llm import BudgetExhausted
from trailforge.sandbox import build_sandbox


def main() -> None:
    args = stage_args(__doc__, inputs=["snapshots"])
    cfg = params_or_exit(args.params)
    recorder = StageRecorder("seeds")
    cache = ContentCache(cache_dir_from_env())
    # Before any run: a recipe that asks for a model step with llm=none stops here, not after the sandbox runs.
    llm = model_or_exit(cfg, "seeds", cache)  # None unless tasks.seeds.judge or tasks.seeds.consolidate
    snapshots = read_rows(Path(args.snapshots) / "data", SnapshotRow)
    unusable = unusable_files(read_rejects(Path(args.snapshots) / "rejects.parquet"))
    sandbox, executor = build_sandbox(cfg.sandbox), build_executor(cfg.executor)
    trees = Path(args.out) / "trees"  # consolidated and parameterised seeds live here (a DVC out)
    shutil.rmtree(trees, ignore_errors=True)
    trees.mkdir(parents=True)
    with timed(recorder.figures):
        by_repo = [find_candidates(snap, unusable, recorder) for snap in snapshots]
        recorder.count("candidates", sum(len(c) for c in by_repo))
        budget = cfg.budget
        # One item per repository: its candidates run in order of promise until the budget is met.
        parameter_trees = trees if cfg.tasks.seeds.parameters else None  # seeds whose data are their constants
        found = executor.map(lambda c: run_repository(c, sandbox, cache, cfg.sandbox.timeout_s,
                                                      budget.max_seeds_per_repo, budget.seed_seconds_per_repo,
                                                      recorder, parameter_trees, budget.starts_per_script),
                             [c for c in by_repo if c], label="seeds", cache_hits=lambda: cache.stats.hits,
                             figures=recorder.figures)
        rows = [row for repo_rows in found for row in repo_rows]
        if llm is not None:
            rows = _with_model(rows, llm, cfg, sandbox, cache, executor, recorder, trees)
    write_tree_index(rows, trees)
    recorder.figures["cache"] = cache.stats.as_dict()
    print_summary(recorder.write(rows, SeedRow, Path(args.out)))


def _with_model(rows, llm, cfg, sandbox, cache, executor, recorder, trees):
    """Judge and consolidate seeds with the recipe's model; a run out of budget keeps seeds as they ran."""
    steps = cfg.tasks.seeds

    def one(seed):
        try:
            if steps.judge and not judge_seed(seed, llm, recorder):
                return None
            if steps.consolidate:
                return consolidate_seed(seed, llm, sandbox, cache, recorder, trees, cfg.budget.max_answer_fields,
                                        cfg.budget.max_table_rows)
        except BudgetExhausted as exc:
            recorder.count("seeds_left_by_budget")
            recorder.figures["budget"] = exc.message
        return seed

    kept = [r for r in executor.map(one, rows, label="seeds (model)", cache_hits=lambda: cache.stats.hits,
                                    cost_usd=lambda: llm.usage.cost_usd, figures=recorder.figures) if r is not None]
    recorder.figures["llm"] = llm.usage.as_dict()
    return kept


if __name__ == "__main__":
    main()
