"""Stage tasks: Reproduction, Subflow, Completion and Correction tasks with reference answers, schemas and statements."""
from collections import Counter
from pathlib import Path

from trailforge.cache import ContentCache, cache_dir_from_env
from trailforge.envs.tasks import build_seed_tasks
from trailforge.executor import build_executor
from trailforge.io import SeedRow, StageRecorder, TaskRow, WorkflowRow, read_rows
from trailforge.io.stage import params_or_exit, print_summary, stage_args, timed
from trailforge.sandbox import build_sandbox


def main() -> None:
    args = stage_args(__doc__, inputs=["seeds", "workflows"])
    cfg = params_or_exit(args.params)
    recorder = StageRecorder("tasks")
    seeds = read_rows(Path(args.seeds) / "data", SeedRow)
    workflows = {w.seed_id: w for w in read_rows(Path(args.workflows) / "data", WorkflowRow)}
    sandbox, executor, cache = build_sandbox(cfg.sandbox), build_executor(cfg.executor), ContentCache(cache_dir_from_env())
    seeds_of = Counter(s.repo_id for s in seeds)  # a repository with few seeds gets higher per-seed caps
    with timed(recorder.figures):
        per_seed = executor.map(
            lambda s: build_seed_tasks(s, workflows.get(s.seed_id), cfg, sandbox, cache, recorder,
                                       seeds_in_repository=seeds_of[s.repo_id]), seeds,
            label="tasks", cache_hits=lambda: cache.stats.hits, figures=recorder.figures)
    rows = sorted((task for tasks in per_seed for task in tasks), key=lambda t: t.task_id)
    recorder.figures["by_task_type"] = {kind: sum(t.task_type == kind for t in rows)
                                        for kind in cfg.tasks.types}
    recorder.figures["cache"] = cache.stats.as_dict()
    print_summary(recorder.write(rows, TaskRow, Path(args.out)))


if __name__ == "__main__":
    main()
