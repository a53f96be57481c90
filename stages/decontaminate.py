"""Stage decontaminate: drop items whose contamination weight reaches the threshold, down-weight the rest."""
from pathlib import Path

from trailforge.io import LineageRow, StageRecorder, read_rows
from trailforge.io.stage import params_or_exit, print_summary, stage_args
from trailforge.lineage.curate import decontaminate


def main() -> None:
    args = stage_args(__doc__, inputs=["lineage"])
    cfg = params_or_exit(args.params)
    c = cfg.lineage.contamination
    recorder = StageRecorder("decontaminate")
    rows = read_rows(Path(args.lineage) / "data", LineageRow)
    kept, dropped = decontaminate(rows, c.drop_threshold, c.downweight_threshold)
    for row in dropped:
        recorder.reject(row.item_id, f"contaminated_{row.contamination_reason}",
                        f"contamination {row.contamination} from {row.contamination_source} along "
                        f"{' -> '.join(row.contamination_path)}", weight=row.contamination,
                        path=row.contamination_path)
    recorder.figures["downweighted"] = sum(1 for r in kept if r.weight < 1.0)
    print_summary(recorder.write(kept, LineageRow, Path(args.out)))


if __name__ == "__main__":
    main()
