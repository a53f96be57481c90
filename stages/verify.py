"""Stage verify: execution-based checks (integrity, executability, reproducibility, gradability, isolation)."""
from pathlib import Path

from trailforge.cache import ContentCache, cache_dir_from_env
from trailforge.envs.verify import verify_task
from trailforge.executor import build_executor
from trailforge.io import StageRecorder, TaskRow, VerifiedTaskRow, read_rows
from trailforge.io.stage import params_or_exit, print_summary, stage_args, timed
from trailforge.sandbox import build_sandbox


def main() -> None:
    args = stage_args(__doc__, inputs=["tasks"])
    cfg = params_or_exit(args.params)
    recorder = StageRecorder("verify")
    tasks = read_rows(Path(args.tasks) / "data", TaskRow)
    sandbox, executor, cache = build_sandbox(cfg.sandbox), build_executor(cfg.executor), ContentCache(cache_dir_from_env())
    budget = cfg.budget
    with timed(recorder.figures):
        rows = executor.map(
            lambda t: verify_task(t, cfg.verifier, sandbox, cache, recorder, budget.max_answer_fields,
                                  budget.max_table_rows),
            tasks,
        )
    recorder.figures["cache"] = cache.stats.as_dict()
    print_summary(recorder.write([r for r in rows if r is not None], VerifiedTaskRow, Path(args.out)))


if __name__ == "__main__":
    main()
