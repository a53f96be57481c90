"""Stage verify: execution-based checks (integrity, executability, reproducibility, gradability, isolation),
then, with verifier.review, a model review with recursive repair of the statement."""
from pathlib import Path

from trailforge.cache import ContentCache, cache_dir_from_env
from trailforge.envs.review import review_task
from trailforge.envs.verify import verify_task
from trailforge.executor import build_executor
from trailforge.io import StageRecorder, TaskRow, VerifiedTaskRow, read_rows
from trailforge.io.stage import model_or_exit, params_or_exit, print_summary, stage_args, timed
from trailforge.llm import BudgetExhausted
from trailforge.sandbox import build_sandbox


def main() -> None:
    args = stage_args(__doc__, inputs=["tasks"])
    cfg = params_or_exit(args.params)
    recorder = StageRecorder("verify")
    cache = ContentCache(cache_dir_from_env())
    llm = model_or_exit(cfg, "verify", cache)  # None unless verifier.review=true
    tasks = read_rows(Path(args.tasks) / "data", TaskRow)
    sandbox, executor = build_sandbox(cfg.sandbox), build_executor(cfg.executor)
    budget = cfg.budget

    def check(task: TaskRow) -> VerifiedTaskRow | None:
        return verify_task(task, cfg.verifier, sandbox, cache, recorder, budget.max_answer_fields,
                           budget.max_table_rows)

    def one(task: TaskRow) -> VerifiedTaskRow | None:
        row = check(task)
        if row is None or llm is None:
            return row
        try:
            return review_task(row, check, llm, cfg.verifier.max_repair_rounds, cfg.verifier.min_review_score,
                               recorder)
        except BudgetExhausted as exc:
            recorder.reject(task.task_id, "budget_exhausted", f"not reviewed: {exc.message}")
            return None

    with timed(recorder.figures):
        rows = executor.map(one, tasks, label="verify", cache_hits=lambda: cache.stats.hits,
                           cost_usd=(lambda: llm.usage.cost_usd) if llm else None, figures=recorder.figures)
    recorder.figures["cache"] = cache.stats.as_dict()
    if llm is not None:
        recorder.figures["llm"] = llm.usage.as_dict()
        unreviewed = sum(1 for r in recorder.rejects if r.reason == "budget_exhausted")
        if unreviewed:
            print(f"model budget exhausted: {unreviewed} of {len(tasks)} tasks passed the execution checks but were "
                  "not reviewed and are left out; raise budget.max_llm_* and re-run (finished reviews are cached)")
    print_summary(recorder.write([r for r in rows if r is not None], VerifiedTaskRow, Path(args.out)))


if __name__ == "__main__":
    main()
