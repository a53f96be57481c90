"""Stage lineage: the lineage graph over a dataset's items, with contamination and redundancy labels."""
import json
from pathlib import Path

from trailforge.executor import build_executor
from trailforge.io import LineageRow, StageRecorder
from trailforge.io.stage import params_or_exit, print_summary, stage_args, timed
from trailforge.lineage.curate import build_lineage
from trailforge.lineage.items import InputError, read_items


def main() -> None:
    args = stage_args(__doc__, inputs=[])
    cfg = params_or_exit(args.params)
    source = cfg.lineage.input
    recorder = StageRecorder("lineage")
    try:
        items, unreadable = read_items(source.path, source.format, source.fields)
    except (InputError, FileNotFoundError) as exc:
        raise SystemExit(f"error: {exc}") from None
    for where, reason, message in unreadable:
        recorder.reject(where, reason, message)
    with timed(recorder.figures):
        try:
            lineage, rows, figures = build_lineage(items, cfg.lineage, build_executor(cfg.executor))
        except FileNotFoundError as exc:
            raise SystemExit(f"error: {exc}") from None
    kept = {item_id: id(entry.item) for item_id, entry in lineage.entries.items()}
    for item in items:  # the graph keeps the first item with an id; every other one is a reject
        if kept.get(item.item_id) != id(item):
            recorder.reject(item.item_id, "duplicate_id", f"an earlier item (or a provenance node) already has "
                                                          f"the id {item.item_id}")
    recorder.figures.update(figures)
    out = Path(args.out)
    stats = recorder.write(rows, LineageRow, out)
    (out / "graph.json").write_text(json.dumps(lineage.node_link(), sort_keys=True) + "\n", encoding="utf-8")
    print_summary(stats)


if __name__ == "__main__":
    main()
