"""build_lineage gives the same rows and figures whichever executor runs its per-item work."""
from __future__ import annotations

import json

from conftest import PROJECT_ROOT
from trailforge.config import compose, validate
from trailforge.executor import LocalExecutor
from trailforge.lineage.curate import build_lineage
from trailforge.lineage.items import read_items

EXAMPLES = PROJECT_ROOT / "examples" / "lineage"


def test_per_item_work_on_an_executor_changes_nothing_but_the_executor_figures():
    cfg = validate(compose("curate", [f"lineage.input.path={EXAMPLES / 'planted.jsonl'}",
                                      f"lineage.contamination.benchmarks=[{EXAMPLES / 'benchmark'}]",
                                      "lineage.batch_size=150"], root=PROJECT_ROOT)).lineage
    items, _ = read_items(cfg.input.path, cfg.input.format, cfg.input.fields)
    plain_graph, plain_rows, plain_figures = build_lineage(items, cfg)
    graph, rows, figures = build_lineage(items, cfg, LocalExecutor(max_workers=2))
    assert [r.model_dump() for r in rows] == [r.model_dump() for r in plain_rows]
    assert json.dumps(graph.node_link(), sort_keys=True) == json.dumps(plain_graph.node_link(), sort_keys=True)
    assert figures == plain_figures and figures["contamination_seeds"]
