"""The one record type lineage works on, and readers that turn datasets into it.

A lineage item is anything with text: an environment, a trajectory, a line of an external JSONL
file. Code, outputs, explicit parents, a time, an evaluation outcome and a proxy score are
optional. Provenance (``repo_id``, ``seed_id``, a mutation) is what trailforge itself recorded
when it made the item; it becomes exact edges to provenance nodes, never guessed ones.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..io.jsonl import json_objects


@dataclass
class LineageItem:
    item_id: str
    text: str
    kind: str = "item"
    code: str = ""
    outputs: str = ""
    parents: list[str] = field(default_factory=list)
    time: float | None = None
    passed: bool | None = None
    score: float | None = None
    provenance: dict[str, Any] = field(default_factory=dict)


class InputError(ValueError):
    """A dataset that cannot be read as lineage items; the message names the file and the problem."""


def _as_time(value: Any, where: str) -> float | None:
    if value is None or value == "":
        return None
    if isinstance(value, (int, float)):
        return float(value)
    from datetime import datetime

    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()
    except ValueError:
        raise InputError(f"{where}: time '{value}' is neither a number nor an ISO date") from None


def _code_of(value: Any) -> str:
    if isinstance(value, dict):  # a program as {path: text}
        return "\n\n".join(str(value[k]) for k in sorted(value))
    return "" if value is None else str(value)


def item_from_record(record: dict[str, Any], fields: dict[str, str], where: str) -> LineageItem:
    """One external record (a JSONL line, a parquet row) mapped through ``fields`` (our name -> theirs)."""
    def get(name):
        return record.get(fields.get(name, name))

    item_id, text = get("id"), get("text")
    if item_id is None or str(item_id) == "":
        raise InputError(f"{where}: no '{fields.get('id', 'id')}' field")
    if text is None and isinstance(record.get("messages"), list):  # chat-format trajectories
        text = "\n".join(str(m.get("content") or "") for m in record["messages"] if isinstance(m, dict))
    if text is None:
        raise InputError(f"{where}: no '{fields.get('text', 'text')}' field (nor chat 'messages')")
    parents = get("parents") or []
    if isinstance(parents, str):
        parents = [parents]
    passed = get("passed")
    score = get("score")
    return LineageItem(
        item_id=str(item_id), text=str(text), kind=str(get("kind") or "item"), code=_code_of(get("code")),
        outputs="" if get("outputs") is None else str(get("outputs")), parents=[str(p) for p in parents],
        time=_as_time(get("time"), where), passed=None if passed is None else bool(passed),
        score=None if score is None else float(score),
        provenance={k: v for k, v in (get("provenance") or {}).items()} if isinstance(get("provenance"), dict) else {},
    )


def read_jsonl(path: Path, fields: dict[str, str]) -> tuple[list[LineageItem], list[tuple[str, str, str]]]:
    """Items of a JSONL file, and ``(where, reason, message)`` for each line that could not be used."""
    items, rejects = [], []
    for where, record, reject in json_objects(path):
        if reject:
            rejects.append(reject)
            continue
        try:
            items.append(item_from_record(record, fields, where))
        except InputError as exc:
            rejects.append((where, "missing_field", str(exc)))
    return items, rejects


def read_parquet(path: Path, fields: dict[str, str]) -> tuple[list[LineageItem], list[tuple[str, str, str]]]:
    import pyarrow.parquet as pq

    files = sorted(path.glob("**/*.parquet")) if path.is_dir() else [path]
    items, rejects = [], []
    for file in files:
        for number, record in enumerate(pq.read_table(file).to_pylist()):
            for key, value in list(record.items()):  # trailforge stores nested fields as JSON text
                if isinstance(value, str) and value[:1] in "[{":
                    try:
                        record[key] = json.loads(value)
                    except json.JSONDecodeError:
                        pass
            if "env_id" in record and "attempt" in record and fields.get("id", "id") not in record:
                record = _trajectory_record(record)
            where = f"{file.name}:{number}"
            try:
                items.append(item_from_record(record, fields, where))
            except InputError as exc:
                rejects.append((where, "missing_field", str(exc)))
    return items, rejects


def _trajectory_record(row: dict[str, Any]) -> dict[str, Any]:
    """A rollout-stage trajectory row: its parent is the environment it ran in."""
    return {"id": f"{row['env_id']}#{row['attempt']}", "kind": "trajectory", "messages": row.get("messages"),
            "parents": [row["env_id"]], "passed": float(row.get("reward") or 0) >= 1.0,
            "score": row.get("reward"), "outputs": row.get("grader_message", "")}


def read_environments(folder: Path) -> tuple[list[LineageItem], list[tuple[str, str, str]]]:
    """Released environment folders: statement as text, reference program as code, answer as outputs."""
    items, rejects = [], []
    for env in sorted(p for p in folder.iterdir() if p.is_dir()):
        meta_path = env / "metadata.json"
        if not meta_path.is_file():
            rejects.append((env.name, "missing_metadata", f"{env.name} has no metadata.json"))
            continue
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            rejects.append((env.name, "malformed_json", f"{meta_path}: {exc}"))
            continue
        statement = (env / "task.md").read_text(encoding="utf-8") if (env / "task.md").is_file() else ""
        solution = env / "solution"
        code = "\n\n".join(p.read_text(encoding="utf-8", errors="replace")
                           for p in sorted(solution.rglob("*.py"))) if solution.is_dir() else ""
        expected = env / "eval" / "expected.json"
        outputs = expected.read_text(encoding="utf-8") if expected.is_file() else ""
        construction = meta.get("construction") or {}
        items.append(LineageItem(
            item_id=meta.get("env_id", env.name), text=statement, kind="environment", code=code, outputs=outputs,
            provenance={"repo_id": meta.get("repo_id"), "seed_id": meta.get("seed_id"),
                        "task_type": meta.get("task_type"), "discipline": meta.get("discipline"),
                        **({"mutation": construction["operator"]} if "operator" in construction else {})},
        ))
    return items, rejects


def read_items(path: str | Path, fmt: str, fields: dict[str, str]) -> tuple[list[LineageItem], list[tuple[str, str, str]]]:
    path = Path(path)
    if not path.exists():
        raise InputError(f"lineage.input.path: {path} does not exist")
    if fmt == "environments":
        if not path.is_dir():
            raise InputError(f"lineage.input.path: {path} is not a folder of released environments")
        return read_environments(path)
    if fmt == "jsonl":
        return read_jsonl(path, fields)
    if fmt == "parquet":
        return read_parquet(path, fields)
    raise InputError(f"lineage.input.format: unknown format '{fmt}'; known: environments, jsonl, parquet")
