"""Stage seeds: run candidate entry scripts in the sandbox; keep those that read data and produce results."""
from pathlib import Path

from trailforge.cache import ContentCache, cache_dir_from_env
from trailforge.envs.seeds import find_candidates, run_candidate, unusable_files
from trailforge.executor import build_executor
from trailforge.io import SeedRow, SnapshotRow, StageRecorder, read_rejects, read_rows
from trailforge.io.stage import params_or_exit, print_summary, stage_args, timed
from trailforge.sandbox import build_sandbox


def main() -> None:
    args = stage_args(__doc__, inputs=["snapshots"])
    cfg = params_or_exit(args.params)
    recorder = StageRecorder("seeds")
    snapshots = read_rows(Path(args.snapshots) / "data", SnapshotRow)
    unusable = unusable_files(read_rejects(Path(args.snapshots) / "rejects.parquet"))
    sandbox, executor, cache = build_sandbox(cfg.sandbox), build_executor(cfg.executor), ContentCache(cache_dir_from_env())
    with timed(recorder.figures):
        candidates = [c for snap in snapshots
                      for c in find_candidates(snap, unusable, cfg.budget.max_seeds_per_repo, recorder)]
        recorder.count("candidates", len(candidates))
        rows = executor.map(lambda c: run_candidate(c, sandbox, cache, cfg.sandbox.timeout_s, recorder), candidates)
    recorder.figures["cache"] = cache.stats.as_dict()
    print_summary(recorder.write([r for r in rows if r is not None], SeedRow, Path(args.out)))


if __name__ == "__main__":
    main()
