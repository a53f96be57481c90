"""Stage discover: list the recipe's repositories and keep those that fit the domain."""
from pathlib import Path

from trailforge.envs.discover import discover
from trailforge.io import RepoRow, StageRecorder
from trailforge.io.stage import params_or_exit, print_summary, stage_args, timed


def main() -> None:
    args = stage_args(__doc__, inputs=[])
    cfg = params_or_exit(args.params)
    recorder = StageRecorder("discover")
    with timed(recorder.figures):
        rows = discover(cfg.source.repos, cfg.domain, Path.cwd(), cfg.budget.max_repos, recorder)
    print_summary(recorder.write(rows, RepoRow, Path(args.out)))


if __name__ == "__main__":
    main()
