"""Reading JSONL files line by line, where a bad line is a reason and never a crash."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

LineReject = tuple[str, str, str]  # (where "file:line", reason code, message)


def json_objects(path: Path) -> Iterator[tuple[str, dict[str, Any] | None, LineReject | None]]:
    """``(where, object, None)`` for each JSON object line, ``(where, None, reject)`` for each unusable one.

    Blank lines are skipped; bytes that are not UTF-8 are replaced rather than stopping the file.
    """
    with Path(path).open(encoding="utf-8", errors="replace") as handle:
        for number, line in enumerate(handle, start=1):
            where = f"{Path(path).name}:{number}"
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                yield where, None, (where, "malformed_json", str(exc))
                continue
            if not isinstance(record, dict):
                yield where, None, (where, "not_an_object", f"a JSON {type(record).__name__}, not an object")
                continue
            yield where, record, None
