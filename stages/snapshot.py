"""Stage snapshot: pin and copy each repository; infer its dependencies."""
from pathlib import Path

from trailforge.envs.snapshot import snapshot_repo
from trailforge.executor import build_executor
from trailforge.io import RepoRow, SnapshotRow, StageRecorder, read_rows
from trailforge.io.stage import params_or_exit, print_summary, stage_args, timed


def main() -> None:
    args = stage_args(__doc__, inputs=["repos"])
    cfg = params_or_exit(args.params)
    out = Path(args.out)
    recorder = StageRecorder("snapshot")
    repos = read_rows(Path(args.repos) / "data", RepoRow)
    executor = build_executor(cfg.executor)
    with timed(recorder.figures):
        rows = executor.map(
            lambda repo: snapshot_repo(repo, Path.cwd(), out / "trees", cfg.budget.max_file_bytes, recorder), repos,
            label="snapshot", figures=recorder.figures)
    print_summary(recorder.write([r for r in rows if r is not None], SnapshotRow, out))


if __name__ == "__main__":
    main()
