"""Stage tasks: synthesise tasks (Reproduction) with reference answers, schemas and statements."""
from pathlib import Path

from trailforge.envs.tasks import build_reproduction
from trailforge.io import SeedRow, StageRecorder, TaskRow, read_rows
from trailforge.io.stage import params_or_exit, print_summary, stage_args, timed


def main() -> None:
    args = stage_args(__doc__, inputs=["seeds"])
    cfg = params_or_exit(args.params)
    recorder = StageRecorder("tasks")
    seeds = read_rows(Path(args.seeds) / "data", SeedRow)
    with timed(recorder.figures):
        rows = [build_reproduction(s, cfg.budget.max_answer_fields, cfg.budget.max_table_rows, recorder) for s in seeds]
    print_summary(recorder.write([r for r in rows if r is not None], TaskRow, Path(args.out)))


if __name__ == "__main__":
    main()
