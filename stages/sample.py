"""Stage sample: a subset under the lineage.sampling budget, with its diversity next to a uniform sample's."""
import json
from pathlib import Path

import networkx as nx

from trailforge.io import LineageRow, StageRecorder, read_rows
from trailforge.io.stage import params_or_exit, print_summary, stage_args
from trailforge.lineage.curate import select


def main() -> None:
    args = stage_args(__doc__, inputs=["lineage", "kept"])
    cfg = params_or_exit(args.params)
    graph = nx.node_link_graph(json.loads((Path(args.lineage) / "graph.json").read_text(encoding="utf-8")),
                               edges="edges")
    rows = read_rows(Path(args.kept) / "data", LineageRow)
    chosen, info = select(graph, rows, cfg.lineage, cfg.seed)
    recorder = StageRecorder("sample")
    recorder.figures.update(info)
    picked = set(chosen)
    recorder.count("not_selected", len(rows) - len(picked))
    print_summary(recorder.write([r for r in rows if r.item_id in picked], LineageRow, Path(args.out)))
    print(json.dumps({"selected": info["selected"], "uniform_same_size": info["uniform_same_size"]}, sort_keys=True))


if __name__ == "__main__":
    main()
