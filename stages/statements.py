"""Stage statements: with tasks.statements=model, a model rewrites each statement; checked rewrites replace it."""
from pathlib import Path

from trailforge.cache import ContentCache, cache_dir_from_env
from trailforge.envs.rewrite import rewrite_statement
from trailforge.executor import build_executor
from trailforge.io import StageRecorder, TaskRow, read_rows
from trailforge.io.stage import model_or_exit, params_or_exit, print_summary, stage_args, timed
from trailforge.llm import BudgetExhausted


def main() -> None:
    args = stage_args(__doc__, inputs=["tasks"])
    cfg = params_or_exit(args.params)
    recorder = StageRecorder("statements")
    llm = model_or_exit(cfg, "statements", ContentCache(cache_dir_from_env()))
    tasks = read_rows(Path(args.tasks) / "data", TaskRow)
    if llm is None:  # tasks.statements=deterministic
        recorder.count("statements_deterministic", len(tasks))
        print_summary(recorder.write(tasks, TaskRow, Path(args.out)))
        return
    executor = build_executor(cfg.executor)

    def one(task: TaskRow) -> TaskRow:
        # The row comes back as the result (not through a dict on the driver), so it also works on Ray.
        try:
            return rewrite_statement(task, llm, recorder)
        except BudgetExhausted as exc:
            recorder.count("statements_left_by_budget")
            recorder.figures["budget"] = exc.message
            return task  # past the budget a task keeps its deterministic statement

    with timed(recorder.figures):
        rows = executor.map(one, tasks, label="statements", cache_hits=lambda: llm.usage.cached_calls,
                            cost_usd=lambda: llm.usage.cost_usd, figures=recorder.figures)
    recorder.figures["llm"] = llm.usage.as_dict()
    left = recorder.counters.get("statements_left_by_budget", 0)
    if left:
        print(f"budget exhausted ({recorder.figures['budget']}): {left} of {len(tasks)} statements were not "
              "rewritten and keep their deterministic text; raise the budget and re-run to finish them")
    print_summary(recorder.write(rows, TaskRow, Path(args.out)))


if __name__ == "__main__":
    main()
