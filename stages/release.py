"""Stage release: a datasets.DatasetDict plus one self-contained folder per verified environment."""
import json
from pathlib import Path

from trailforge.io import VerifiedTaskRow, read_rows
from trailforge.io.stage import params_or_exit, stage_args
from trailforge.release.export import release


def main() -> None:
    args = stage_args(__doc__, inputs=["verified"])
    cfg = params_or_exit(args.params)
    out = Path(args.out)
    tasks = read_rows(Path(args.verified) / "data", VerifiedTaskRow)
    summary = {"stage": "release", "name": cfg.publish.name, **release(tasks, out)}
    (out / "stats.json").write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    print(json.dumps(summary, sort_keys=True))


if __name__ == "__main__":
    main()
