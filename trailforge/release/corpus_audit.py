"""Audit of any trajectory corpus in OpenAI chat format: scale, length, composition, tool use, metadata, linkage.

A corpus is one trajectory per record, each with a ``messages`` list (system, user, assistant, tool)
and optional release metadata (``sample_id``, ``tools``, ``parallel_tool_calls``, ``_src``,
``_grade``, ``_proposal_synth``, ...). It can be a JSONL file (plain, ``.gz``, or ``.zst`` when the
``zstandard`` module is present), a parquet file, a folder written by ``datasets.save_to_disk``
(a ``Dataset`` or a ``DatasetDict``), or a folder of JSONL/parquet shards.

What is counted, and how:

- Three units stay apart: a trajectory (one record), a message (one role-tagged event) and a tool call
  (one function invocation inside an assistant message; one message may hold several).
- Two token views per trajectory, both with a tiktoken encoding (``o200k_base`` unless told otherwise),
  encoding text that looks like a special token as plain text. *Text tokens* encode every string
  ``reasoning_content`` and ``content`` field in message order (reasoning before content within a
  message), joined by one newline. *Record tokens* encode the whole serialized record: for JSONL the
  exact line without its line ending, for columnar inputs ``json.dumps(record, ensure_ascii=False)``.
- Distributions give the mean and NumPy's linear-interpolation percentiles, plus how many trajectories
  fit within and go beyond 64k/128k/192k/256k tokens (k = 1024, the context-window convention).
- A tool observation is matched only against the ids of the most recent assistant message's calls
  (its batch). Ids are batch-local in practice: the same id may come back in a later batch for another
  call, and a trajectory-wide id map would then attach observations to the wrong call. Reuse is
  counted, and so are the observations such a map would misattribute.
- ``_grade`` (and every other label) keeps the literal string ``"None"`` apart from a missing key
  (``<missing>``) and from JSON null (``<null>``).
- Topics come from the first match of a configurable pattern in the tool-call arguments (paths under a
  topic directory); entropy is in bits, normalised by log2 of the number of distinct topics.
- The prompt date is the first valid ``YYYY-MM-DD`` in the first system message.

Columnar formats cannot say "absent" apart from null, and a struct column fills every key any row has,
so for parquet and Arrow rows a null value is read as an absent key. Columns holding JSON text (as
released ``messages``/``tools`` often are) are decoded as is, which keeps them lossless.

Bad input never stops the audit and is never dropped silently: an undecodable line, a record that is not
an object or lacks a usable ``messages`` list, an unreadable file, each becomes a counted reject with
its reason and location.

``audit_corpus(path, ...)`` returns the report as a dict; ``write_audit_report(report, out_dir)`` writes
``audit.json``, ``audit.md``, ``per_record.csv`` and the PNG plots.
"""
from __future__ import annotations

import csv
import gzip
import hashlib
import importlib.util
import io
import json
import math
import os
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any, Iterator

import numpy as np

DEFAULT_TOKENIZER = "o200k_base"
# Paths such as ``topics/<topic>/notes.md`` inside tool-call arguments; group 1 is the topic.
DEFAULT_TOPIC_PATTERN = r"topics/([^/\s\"'\\]+)"
# Turn-level value tier label on assistant messages (high / normal / low).
DEFAULT_TIER_KEY = "_value"
CONTEXT_THRESHOLDS = {"64k": 64 * 1024, "128k": 128 * 1024, "192k": 192 * 1024, "256k": 256 * 1024}
PERCENTILES = (5, 25, 50, 75, 90, 95, 99)
MISSING = "<missing>"
NULL = "<null>"
EMPTY = "<empty>"
# Chat-template control tokens: <|im_start|>, <|endoftext|>, and DeepSeek's full-width <｜end▁of▁sentence｜>.
SPECIAL_TOKEN_PATTERN = re.compile(r"<\|[^\s<>|]{1,64}\|>|<｜[^\s<>｜]{1,64}｜>")
ISO_DATE_PATTERN = re.compile(r"(?<!\d)(\d{4})-(\d{2})-(\d{2})(?!\d)")
JSONL_SUFFIXES = (".jsonl", ".json", ".jsonl.gz", ".json.gz", ".jsonl.zst", ".json.zst")
# Flush the tokenizer batch at this many characters: big enough to keep every thread busy, small enough
# that the token lists tiktoken returns stay a few hundred MB at most.
BATCH_CHARS = 16_000_000
REJECT_EXAMPLES = 20


# --------------------------------------------------------------------------- tokenizer

def _bundled_tiktoken_dir() -> str | None:
    """litellm ships tiktoken's BPE files under their cache names; found without importing litellm."""
    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(list(spec.submodule_search_locations)[0]) / "litellm_core_utils" / "tokenizers"
    return str(folder) if folder.is_dir() else None


def load_tokenizer(name: str = DEFAULT_TOKENIZER):
    """A tiktoken encoding by encoding name (``o200k_base``) or model name (``gpt-4o``), loaded offline.

    Unless ``TIKTOKEN_CACHE_DIR`` is already set, it points at litellm's bundled files so no download
    is attempted.
    """
    import tiktoken

    if not os.environ.get("TIKTOKEN_CACHE_DIR"):
        bundled = _bundled_tiktoken_dir()
        if bundled:
            os.environ["TIKTOKEN_CACHE_DIR"] = bundled
    known = tiktoken.list_encoding_names()
    try:
        return tiktoken.get_encoding(name) if name in known else tiktoken.encoding_for_model(name)
    except KeyError:
        raise ValueError(f"unknown tokenizer {name!r}: use a tiktoken encoding ({', '.join(known)}) "
                         "or a model name tiktoken maps to one") from None
    except Exception as exc:  # a missing BPE file turns into a download attempt, which fails offline
        raise RuntimeError(f"cannot load tokenizer {name!r} offline ({exc}); set TIKTOKEN_CACHE_DIR to a folder "
                           "holding its BPE file") from exc


def count_tokens(encoding, texts: list[str], threads: int = 1) -> list[int]:
    """Token count of each text, special-token look-alikes encoded as ordinary text."""
    if not texts:
        return []
    return [len(tokens) for tokens in encoding.encode_ordinary_batch(texts, num_threads=max(1, threads))]


def available_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


# --------------------------------------------------------------------------- reading

@dataclass
class RawItem:
    """One item read from the corpus: a record with its exact text, or a reject."""
    origin: str                     # file:line (JSONL) or file#row (columnar)
    record: Any = None
    text: str | None = None         # what record tokens encode
    reject: str | None = None       # reason code when the item could not be read
    detail: str = ""


def _drop_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _drop_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_nulls(v) for v in value]
    return value


def _from_columnar_row(row: dict) -> dict:
    """A parquet/Arrow row as a record: null means absent; JSON-text message/tool columns are decoded."""
    record = {}
    for key, value in row.items():
        if value is None:
            continue
        if key in ("messages", "tools") and isinstance(value, str):
            try:
                value = json.loads(value)
            except json.JSONDecodeError:
                pass  # left as text: the record check rejects it with a reason
            record[key] = value
        else:
            record[key] = _drop_nulls(value)
    return record


def _open_jsonl(path: Path):
    name = path.name.lower()
    if name.endswith(".gz"):
        return gzip.open(path, "rb")
    if name.endswith(".zst"):
        try:
            import zstandard
        except ImportError:
            raise OSError("reading .zst needs the zstandard module") from None
        return io.BufferedReader(zstandard.ZstdDecompressor().stream_reader(path.open("rb")))
    return path.open("rb")


def _read_jsonl(path: Path, label: str, counters: Counter) -> Iterator[RawItem]:
    try:
        handle = _open_jsonl(path)
    except OSError as exc:
        yield RawItem(origin=label, reject="unreadable_file", detail=str(exc))
        return
    with handle:
        try:
            for number, raw in enumerate(handle, start=1):
                origin = f"{label}:{number}"
                if not raw.strip():
                    counters["blank_lines"] += 1
                    continue
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    yield RawItem(origin=origin, reject="invalid_utf8", detail=str(exc))
                    continue
                text = text[:-1] if text.endswith("\n") else text
                text = text[:-1] if text.endswith("\r") else text
                try:
                    record = json.loads(text)
                except json.JSONDecodeError as exc:
                    yield RawItem(origin=origin, reject="invalid_json", detail=str(exc))
                    continue
                yield RawItem(origin=origin, record=record, text=text)
        except (OSError, EOFError) as exc:  # truncated gzip/zstd stream
            yield RawItem(origin=label, reject="unreadable_file", detail=str(exc))


def _rows_of_batches(batches, label: str) -> Iterator[RawItem]:
    row_number = 0
    for batch in batches:
        # Slices keep at most a few dozen long trajectories as Python objects at once.
        for start in range(0, batch.num_rows, 32):
            for row in batch.slice(start, 32).to_pylist():
                record = _from_columnar_row(row)
                yield RawItem(origin=f"{label}#{row_number}", record=record,
                              text=json.dumps(record, ensure_ascii=False))
                row_number += 1


def _read_parquet(path: Path, label: str) -> Iterator[RawItem]:
    import pyarrow.parquet as pq

    try:
        yield from _rows_of_batches(pq.ParquetFile(path).iter_batches(batch_size=256), label)
    except Exception as exc:  # pyarrow raises several types for a damaged file
        yield RawItem(origin=label, reject="unreadable_file", detail=f"{type(exc).__name__}: {exc}")


def _read_arrow_stream(path: Path, label: str) -> Iterator[RawItem]:
    import pyarrow as pa

    try:
        with pa.memory_map(str(path)) as source:
            yield from _rows_of_batches(pa.ipc.open_stream(source), label)
    except Exception as exc:
        yield RawItem(origin=label, reject="unreadable_file", detail=f"{type(exc).__name__}: {exc}")


def _dataset_arrow_files(folder: Path) -> list[Path]:
    """Arrow files of a ``save_to_disk`` folder, in order, for a Dataset or every split of a DatasetDict."""
    if (folder / "dataset_dict.json").is_file():
        splits = json.loads((folder / "dataset_dict.json").read_text())["splits"]
        return [f for split in splits for f in _dataset_arrow_files(folder / split)]
    state = json.loads((folder / "state.json").read_text())
    return [folder / entry["filename"] for entry in state["_data_files"]]


def corpus_files(path: Path) -> tuple[str, list[Path]]:
    """The input form and the files to read, in order."""
    if path.is_file():
        name = path.name.lower()
        if name.endswith(".parquet"):
            return "parquet", [path]
        if name.endswith(".arrow"):
            return "datasets", [path]
        return "jsonl", [path]
    if not path.is_dir():
        raise FileNotFoundError(f"no corpus at {path}")
    if (path / "dataset_dict.json").is_file() or (path / "state.json").is_file():
        return "datasets", _dataset_arrow_files(path)
    files = sorted(p for p in path.rglob("*") if p.is_file()
                   and (p.name.lower().endswith(JSONL_SUFFIXES) or p.name.lower().endswith(".parquet")))
    if not files:
        raise FileNotFoundError(f"{path} holds no JSONL, parquet or save_to_disk dataset")
    forms = {"parquet" if p.name.lower().endswith(".parquet") else "jsonl" for p in files}
    return (forms.pop() if len(forms) == 1 else "mixed"), files


def iter_corpus(path: Path, counters: Counter | None = None) -> Iterator[RawItem]:
    counters = counters if counters is not None else Counter()
    root = path if path.is_dir() else path.parent
    _, files = corpus_files(path)
    for file in files:
        label = file.relative_to(root).as_posix() if file.is_relative_to(root) else str(file)
        name = file.name.lower()
        if name.endswith(".parquet"):
            yield from _read_parquet(file, label)
        elif name.endswith(".arrow"):
            yield from _read_arrow_stream(file, label)
        else:
            yield from _read_jsonl(file, label, counters)


def record_problem(record: Any) -> str | None:
    """Why a parsed record cannot be audited as a trajectory, or None when it can."""
    if not isinstance(record, dict):
        return "not_an_object"
    if "messages" not in record:
        return "no_messages"
    messages = record["messages"]
    if not isinstance(messages, list):
        return "messages_not_a_list"
    if not messages:
        return "empty_messages"
    if not all(isinstance(m, dict) for m in messages):
        return "message_not_an_object"
    return None


# --------------------------------------------------------------------------- counting

def label(container: dict, key: str) -> str:
    """A value as a category label that keeps missing, null, empty and the literal string "None" apart."""
    if key not in container:
        return MISSING
    value = container[key]
    if value is None:
        return NULL
    if isinstance(value, str):
        return value if value else EMPTY
    return json.dumps(value, sort_keys=True)


def distribution(values) -> dict:
    """Count, total, mean, min, max and linear-interpolation percentiles (NumPy's default rule)."""
    array = np.asarray(list(values), dtype=float)
    if array.size == 0:
        return {"count": 0}
    out = {"count": int(array.size), "total": _number(array.sum()), "mean": float(array.mean()),
           "min": _number(array.min()), "max": _number(array.max())}
    for q, value in zip(PERCENTILES, np.percentile(array, PERCENTILES, method="linear")):
        out[f"p{q}"] = float(value)
    return out


def _number(value: float) -> int | float:
    return int(value) if float(value).is_integer() else float(value)


def entropy_bits(counts) -> tuple[float, float | None]:
    """Shannon entropy in bits and its value divided by log2(number of categories) (None below two)."""
    counts = [c for c in counts if c > 0]
    total = sum(counts)
    if not total:
        return 0.0, None
    entropy = -sum(c / total * math.log2(c / total) for c in counts)
    entropy = max(0.0, entropy)  # -0.0 for a single category
    return entropy, (entropy / math.log2(len(counts)) if len(counts) > 1 else None)


def first_iso_date(text: str) -> date | None:
    for match in ISO_DATE_PATTERN.finditer(text):
        try:
            return date(int(match[1]), int(match[2]), int(match[3]))
        except ValueError:
            continue  # 2025-02-30 and friends: keep looking
    return None


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


@dataclass
class Tally:
    """Running counts over the records seen so far."""
    rejects: Counter = field(default_factory=Counter)
    reject_examples: list = field(default_factory=list)
    sample_ids: list = field(default_factory=list)
    message_counts: list = field(default_factory=list)
    text_tokens: list = field(default_factory=list)
    record_tokens: list = field(default_factory=list)
    record_bytes: int = 0
    seen_ids: Counter = field(default_factory=Counter)
    roles: Counter = field(default_factory=Counter)
    chars_by_source: Counter = field(default_factory=Counter)
    non_string_text_fields: Counter = field(default_factory=Counter)
    calls_by_tool: Counter = field(default_factory=Counter)
    observation_chars: dict = field(default_factory=lambda: defaultdict(list))
    observation_tokens: dict = field(default_factory=lambda: defaultdict(list))
    fanout: list = field(default_factory=list)
    assistant_messages: int = 0
    with_reasoning: int = 0
    with_visible_content: int = 0
    reasoning_chars: int = 0
    visible_chars: int = 0
    tiers: Counter = field(default_factory=Counter)
    tier_labels_on_other_roles: int = 0
    grades: Counter = field(default_factory=Counter)
    sources: Counter = field(default_factory=Counter)
    source_grade: dict = field(default_factory=lambda: defaultdict(Counter))
    parallel_flags: Counter = field(default_factory=Counter)
    tool_sets: Counter = field(default_factory=Counter)
    tools_per_record: Counter = field(default_factory=Counter)
    record_meta_keys: Counter = field(default_factory=Counter)
    record_meta_true: Counter = field(default_factory=Counter)
    message_meta_keys: Counter = field(default_factory=Counter)
    message_meta_true: Counter = field(default_factory=Counter)
    record_variants: Counter = field(default_factory=Counter)
    message_variants: Counter = field(default_factory=Counter)
    structure: Counter = field(default_factory=Counter)
    final_roles: Counter = field(default_factory=Counter)
    linkage: Counter = field(default_factory=Counter)
    unmatched_causes: Counter = field(default_factory=Counter)
    reuse_trajectories: int = 0
    repeated_id_occurrences: int = 0
    max_id_uses: int = 0
    topics: Counter = field(default_factory=Counter)
    without_topic: int = 0
    dates: Counter = field(default_factory=Counter)
    no_system_prompt: int = 0
    no_date: int = 0
    special_tokens: Counter = field(default_factory=Counter)  # trajectories holding each string
    special_token_trajectories: int = 0


@dataclass
class Settings:
    tokenizer: str = DEFAULT_TOKENIZER
    topic_pattern: str | None = DEFAULT_TOPIC_PATTERN
    tier_key: str = DEFAULT_TIER_KEY

    def compiled_topic_pattern(self) -> re.Pattern | None:
        return re.compile(self.topic_pattern) if self.topic_pattern else None


def _topic_in(text: str, pattern: re.Pattern | None) -> str | None:
    if pattern is None:
        return None
    match = pattern.search(text)
    if not match:
        return None
    return match.group(1) if pattern.groups else match.group(0)


def _observe_record_fields(tally: Tally, record: dict) -> None:
    """Record-level counts: schema, metadata labels, tool definitions, special tokens, shape, prompt date."""
    messages = record["messages"]
    tally.record_variants[tuple(sorted(record))] += 1
    for key, value in record.items():
        if key.startswith("_"):
            tally.record_meta_keys[key] += 1
            tally.record_meta_true[key] += value is True
    grade, source = label(record, "_grade"), label(record, "_src")
    tally.grades[grade] += 1
    tally.sources[source] += 1
    tally.source_grade[source][grade] += 1
    tally.parallel_flags[label(record, "parallel_tool_calls")] += 1
    tools = record.get("tools")
    if isinstance(tools, list):
        tally.tools_per_record[len(tools)] += 1
        canonical = json.dumps(tools, sort_keys=True, ensure_ascii=False).encode("utf-8")
        tally.tool_sets[hashlib.sha256(canonical).hexdigest()[:16]] += 1
    else:
        tally.tools_per_record[label(record, "tools") if tools is None else "not_a_list"] += 1

    found = {s for text in _strings(record) for s in SPECIAL_TOKEN_PATTERN.findall(text)}
    if found:
        tally.special_token_trajectories += 1
        tally.special_tokens.update(found)

    roles = [m.get("role") for m in messages]
    tally.structure["starts_with_system"] += roles[0] == "system"
    tally.structure["user_second"] += len(roles) > 1 and roles[1] == "user"
    tally.structure["exactly_one_user_message"] += roles.count("user") == 1
    tally.final_roles[label(messages[-1], "role")] += 1

    system = next((m for m in messages if m.get("role") == "system"), None)
    if system is None:
        tally.no_system_prompt += 1
    else:
        prompt_date = first_iso_date("\n".join(_strings(system.get("content"))))
        if prompt_date is None:
            tally.no_date += 1
        else:
            tally.dates[prompt_date.isoformat()] += 1


def _call_tool_and_arguments(tally: Tally, call: dict) -> tuple[str, str | None]:
    """The tool label of one call (empty and missing names kept apart) and its arguments as text."""
    function = call.get("function") if isinstance(call.get("function"), dict) else {}
    name = function.get("name")
    if name is None:
        tally.linkage["calls_without_function_name"] += 1
        tool = MISSING
    elif not isinstance(name, str) or not name.strip():
        tally.linkage["calls_with_empty_function_name"] += 1
        tool = EMPTY if isinstance(name, str) else json.dumps(name)
    else:
        tool = name
    arguments = function.get("arguments")
    if arguments is not None and not isinstance(arguments, str):
        tally.linkage["arguments_not_a_string"] += 1
        arguments = json.dumps(arguments, ensure_ascii=False)
    return tool, arguments


def _unmatched_cause(batch: dict | None, call_id: Any) -> str | None:
    """Why a tool message cannot be linked to a call of the latest batch, or None when it can."""
    if batch is None:
        return "no_preceding_call_batch"
    if not isinstance(call_id, str) or not call_id:
        return "missing_tool_call_id"
    if call_id not in batch:
        return "id_not_in_latest_batch"
    return None


def observe_record(tally: Tally, record: dict, topic_pattern: re.Pattern | None,
                   tier_key: str) -> tuple[str, list[tuple[str, str]]]:
    """Count everything about one trajectory except tokens.

    Returns what still needs the tokenizer: the joined text fields and the (tool, observation) pairs.
    """
    _observe_record_fields(tally, record)
    messages = record["messages"]

    # A trajectory-wide map keeps, for each id, the last call that used it: the naive linkage whose
    # mistakes we want to count.
    global_last_call: dict[str, tuple[int, int]] = {}
    for m_index, message in enumerate(messages):
        calls = message.get("tool_calls") if message.get("role") == "assistant" else None
        if isinstance(calls, list):
            for c_index, call in enumerate(calls):
                if isinstance(call, dict) and isinstance(call.get("id"), str) and call["id"]:
                    global_last_call[call["id"]] = (m_index, c_index)

    text_parts: list[str] = []
    observations: list[tuple[str, str]] = []
    id_uses: Counter = Counter()
    batch: dict[str, tuple[str, tuple[int, int]]] | None = None  # id -> (tool, call position)
    answered: set[str] = set()
    topic = None
    for m_index, message in enumerate(messages):
        role = label(message, "role")
        tally.roles[role] += 1
        tally.message_variants[tuple(sorted(message))] += 1
        for key, value in message.items():
            if key.startswith("_"):
                tally.message_meta_keys[key] += 1
                tally.message_meta_true[key] += value is True
        for name in ("reasoning_content", "content"):
            value = message.get(name)
            if isinstance(value, str):
                text_parts.append(value)
                tally.chars_by_source[f"{role}.{name}"] += len(value)
            elif value is not None:
                tally.non_string_text_fields[f"{role}.{name}"] += 1
        if tier_key in message and role != "assistant":
            tally.tier_labels_on_other_roles += 1

        if role == "assistant":
            tally.assistant_messages += 1
            reasoning, content = message.get("reasoning_content"), message.get("content")
            if isinstance(reasoning, str):
                tally.reasoning_chars += len(reasoning)
                tally.with_reasoning += bool(reasoning.strip())
            if isinstance(content, str):
                tally.visible_chars += len(content)
                tally.with_visible_content += bool(content.strip())
            tally.tiers[label(message, tier_key)] += 1
            if batch is not None:
                tally.linkage["calls_without_observation"] += len(batch) - len(answered & set(batch))
            batch, answered = {}, set()
            calls = message.get("tool_calls")
            if calls is None:
                calls = []
            elif not isinstance(calls, list):
                tally.linkage["tool_calls_not_a_list"] += 1
                calls = []
            emitted = 0
            for c_index, call in enumerate(calls):
                if not isinstance(call, dict):
                    tally.linkage["calls_not_an_object"] += 1
                    continue
                emitted += 1
                tool, arguments = _call_tool_and_arguments(tally, call)
                tally.calls_by_tool[tool] += 1
                if topic is None and arguments:
                    topic = _topic_in(arguments, topic_pattern)
                call_id = call.get("id")
                if not isinstance(call_id, str) or not call_id:
                    tally.linkage["calls_without_id"] += 1
                    continue
                id_uses[call_id] += 1
                if call_id in batch:
                    tally.linkage["ids_repeated_within_one_message"] += 1
                else:
                    batch[call_id] = (tool, (m_index, c_index))
            if emitted:
                tally.fanout.append(emitted)
        elif role == "tool":
            call_id = message.get("tool_call_id")
            content = message.get("content")
            text = content if isinstance(content, str) else "" if content is None else json.dumps(content)
            cause = _unmatched_cause(batch, call_id)
            if cause:
                tally.linkage["unmatched_tool_observations"] += 1
                tally.unmatched_causes[cause] += 1
                continue
            tool, position = batch[call_id]
            if call_id in answered:
                tally.linkage["repeated_observations_for_one_call"] += 1
            answered.add(call_id)
            tally.linkage["matched_tool_observations"] += 1
            if global_last_call[call_id] != position:
                tally.linkage["observations_a_global_id_map_misattributes"] += 1
            tally.observation_chars[tool].append(len(text))
            observations.append((tool, text))
    if batch is not None:
        tally.linkage["calls_without_observation"] += len(batch) - len(answered & set(batch))

    reused = {i: n for i, n in id_uses.items() if n > 1}
    if reused:
        tally.reuse_trajectories += 1
        tally.repeated_id_occurrences += sum(n - 1 for n in reused.values())
    tally.max_id_uses = max([tally.max_id_uses, *id_uses.values()])

    if topic is None:
        tally.without_topic += 1
    else:
        tally.topics[topic] += 1
    return "\n".join(text_parts), observations


@dataclass
class _Pending:
    sample_id: str
    messages: int
    record_text: str
    field_text: str
    observations: list


def _flush(tally: Tally, pending: list[_Pending], encoding, threads: int) -> None:
    if not pending:
        return
    record_counts = count_tokens(encoding, [p.record_text for p in pending], threads)
    field_counts = count_tokens(encoding, [p.field_text for p in pending], threads)
    observed = [(tool, text) for p in pending for tool, text in p.observations]
    observation_counts = count_tokens(encoding, [text for _, text in observed], threads)
    for p, record_count, field_count in zip(pending, record_counts, field_counts):
        tally.sample_ids.append(p.sample_id)
        tally.message_counts.append(p.messages)
        tally.record_tokens.append(record_count)
        tally.text_tokens.append(field_count)
    for (tool, _), count in zip(observed, observation_counts):
        tally.observation_tokens[tool].append(count)
    pending.clear()


def _reject(tally: Tally, origin: str, reason: str, detail: str = "") -> None:
    tally.rejects[reason] += 1
    if len(tally.reject_examples) < REJECT_EXAMPLES:
        tally.reject_examples.append({"origin": origin, "reason": reason, "detail": detail[:200]})


def audit_corpus(path: str | Path, tokenizer: str = DEFAULT_TOKENIZER,
                 topic_pattern: str | None = DEFAULT_TOPIC_PATTERN, tier_key: str = DEFAULT_TIER_KEY,
                 threads: int | None = None) -> dict:
    """Read a corpus and return the full audit report (see the module docstring for what is counted)."""
    path = Path(path)
    settings = Settings(tokenizer=tokenizer, topic_pattern=topic_pattern, tier_key=tier_key)
    pattern = settings.compiled_topic_pattern()
    encoding = load_tokenizer(tokenizer)
    threads = threads or available_cores()
    form, files = corpus_files(path)
    read_counters: Counter = Counter()
    tally = Tally()
    pending: list[_Pending] = []
    pending_chars = 0
    for item in iter_corpus(path, read_counters):
        read_counters["items"] += 1
        if item.reject:
            _reject(tally, item.origin, item.reject, item.detail)
            continue
        problem = record_problem(item.record)
        if problem:
            _reject(tally, item.origin, problem)
            continue
        sample_id = label(item.record, "sample_id")
        tally.seen_ids[sample_id] += 1
        tally.record_bytes += len(item.text.encode("utf-8"))
        field_text, observations = observe_record(tally, item.record, pattern, tier_key)
        pending.append(_Pending(sample_id, len(item.record["messages"]), item.text, field_text, observations))
        pending_chars += len(item.text) + len(field_text)
        if pending_chars >= BATCH_CHARS:
            _flush(tally, pending, encoding, threads)
            pending_chars = 0
    _flush(tally, pending, encoding, threads)
    source = {"path": str(path), "form": form, "files": len(files), "items_read": read_counters["items"],
              "blank_lines": read_counters["blank_lines"]}
    return {"input": source, **build_report(tally, settings)}


# --------------------------------------------------------------------------- report

def _share(part: int | float, whole: int | float) -> float | None:
    return part / whole if whole else None


def _counted(counter: Counter | dict, total: int | None = None) -> dict:
    """A counter as {label: {count, share}}, most frequent first, ties by label."""
    total = sum(counter.values()) if total is None else total
    return {str(k): {"count": v, "share": _share(v, total)}
            for k, v in sorted(counter.items(), key=lambda kv: (-kv[1], str(kv[0])))}


def _context_shares(values: list[int]) -> dict:
    n = len(values)
    out = {}
    for name, threshold in CONTEXT_THRESHOLDS.items():
        within = sum(1 for v in values if v <= threshold)
        out[name] = {"threshold": threshold, "within": within, "within_share": _share(within, n),
                     "beyond": n - within, "beyond_share": _share(n - within, n)}
    return out


def build_report(tally: Tally, settings: Settings) -> dict:
    n = len(tally.message_counts)
    total_calls = sum(tally.calls_by_tool.values())
    per_tool = {}
    for tool, calls in sorted(tally.calls_by_tool.items(), key=lambda kv: (-kv[1], kv[0])):
        per_tool[tool] = {"calls": calls, "share": _share(calls, total_calls),
                          "observations": len(tally.observation_chars.get(tool, [])),
                          "observation_chars": distribution(tally.observation_chars.get(tool, [])),
                          "observation_tokens": distribution(tally.observation_tokens.get(tool, []))}
    topic_counts = sorted(tally.topics.values(), reverse=True)
    entropy, normalised = entropy_bits(topic_counts)
    top10 = sum(topic_counts[:10])
    singletons = sum(1 for c in topic_counts if c == 1)
    duplicate_ids = {k: v for k, v in tally.seen_ids.items() if v > 1 and k != MISSING}
    dated = sum(tally.dates.values())
    by_year = Counter()
    for day, count in tally.dates.items():
        by_year[day[:4]] += count
    all_chars = sum(tally.chars_by_source.values())
    return {
        "settings": {"tokenizer": settings.tokenizer, "topic_pattern": settings.topic_pattern,
                     "tier_key": settings.tier_key, "context_thresholds": CONTEXT_THRESHOLDS,
                     "percentiles": list(PERCENTILES), "percentile_method": "linear"},
        "rejects": {"total": sum(tally.rejects.values()), "by_reason": dict(sorted(tally.rejects.items())),
                    "examples": tally.reject_examples},
        "scale": {"trajectories": n, "messages": sum(tally.message_counts), "tool_calls": total_calls,
                  "text_tokens": sum(tally.text_tokens), "record_tokens": sum(tally.record_tokens),
                  "record_bytes": tally.record_bytes,
                  "unique_sample_ids": len([k for k in tally.seen_ids if k != MISSING]),
                  "duplicate_sample_ids": len(duplicate_ids), "records_without_sample_id": tally.seen_ids[MISSING]},
        "lengths": {"messages": distribution(tally.message_counts), "text_tokens": distribution(tally.text_tokens),
                    "record_tokens": distribution(tally.record_tokens)},
        "context": {"text_tokens": _context_shares(tally.text_tokens),
                    "record_tokens": _context_shares(tally.record_tokens)},
        "composition": {
            "messages_by_role": _counted(tally.roles),
            "characters_by_source": {k: {"chars": v, "share": _share(v, all_chars)}
                                     for k, v in sorted(tally.chars_by_source.items(), key=lambda kv: (-kv[1], kv[0]))},
            "non_string_text_fields": dict(sorted(tally.non_string_text_fields.items())),
        },
        "tools": {
            "calls": total_calls, "per_tool": per_tool,
            "fanout": {"assistant_messages": tally.assistant_messages, "with_calls": len(tally.fanout),
                       "with_calls_share": _share(len(tally.fanout), tally.assistant_messages),
                       "calls_per_calling_message": distribution(tally.fanout),
                       "histogram": {str(k): v for k, v in sorted(Counter(tally.fanout).items())}},
            "id_reuse": {"trajectories_reusing_ids": tally.reuse_trajectories,
                         "repeated_id_occurrences": tally.repeated_id_occurrences,
                         "max_uses_of_one_id": tally.max_id_uses},
        },
        "assistant": {"messages": tally.assistant_messages, "with_reasoning": tally.with_reasoning,
                      "with_reasoning_share": _share(tally.with_reasoning, tally.assistant_messages),
                      "with_visible_content": tally.with_visible_content,
                      "with_visible_content_share": _share(tally.with_visible_content, tally.assistant_messages),
                      "reasoning_chars": tally.reasoning_chars, "visible_chars": tally.visible_chars},
        "metadata": {
            "value_tiers": _counted(tally.tiers),
            "tier_labels_on_other_roles": tally.tier_labels_on_other_roles,
            "grades": _counted(tally.grades),
            "sources": _counted(tally.sources),
            "source_by_grade": {s: dict(sorted(g.items())) for s, g in sorted(tally.source_grade.items())},
            "parallel_tool_calls": _counted(tally.parallel_flags),
            "distinct_tool_sets": len(tally.tool_sets),
            "tools_per_record": {str(k): v for k, v in sorted(tally.tools_per_record.items(),
                                                              key=lambda kv: str(kv[0]))},
            "record_keys": {k: {"present": v, "true": tally.record_meta_true[k]}
                            for k, v in sorted(tally.record_meta_keys.items())},
            "message_keys": {k: {"present": v, "true": tally.message_meta_true[k]}
                             for k, v in sorted(tally.message_meta_keys.items())},
        },
        "structure": {"starts_with_system": tally.structure["starts_with_system"],
                      "user_second": tally.structure["user_second"],
                      "exactly_one_user_message": tally.structure["exactly_one_user_message"],
                      "final_role": _counted(tally.final_roles)},
        "topics": {"with_topic": sum(topic_counts), "without_topic": tally.without_topic,
                   "distinct": len(topic_counts), "singletons": singletons,
                   "singleton_share": _share(singletons, len(topic_counts)),
                   "top10_trajectories": top10, "top10_share": _share(top10, sum(topic_counts)),
                   "entropy_bits": entropy, "normalised_entropy": normalised,
                   "top": [[t, c] for t, c in sorted(tally.topics.items(), key=lambda kv: (-kv[1], kv[0]))[:20]],
                   "rank_frequency": topic_counts},
        "dates": {"parseable": dated, "parseable_share": _share(dated, n), "no_system_prompt": tally.no_system_prompt,
                  "no_date_in_system_prompt": tally.no_date, "unique": len(tally.dates),
                  "earliest": min(tally.dates) if tally.dates else None,
                  "latest": max(tally.dates) if tally.dates else None,
                  "by_year": dict(sorted(by_year.items()))},
        "format": {
            "record_schema_variants": len(tally.record_variants),
            "message_schema_variants": len(tally.message_variants),
            "record_variants": [{"keys": list(k), "records": v} for k, v in tally.record_variants.most_common()],
            "message_variants": [{"keys": list(k), "messages": v} for k, v in tally.message_variants.most_common()],
            "assistant_final": tally.final_roles["assistant"], "tool_final": tally.final_roles["tool"],
            "unmatched_tool_observations": tally.linkage["unmatched_tool_observations"],
            "unmatched_by_cause": dict(sorted(tally.unmatched_causes.items())),
            "matched_tool_observations": tally.linkage["matched_tool_observations"],
            "calls_with_empty_function_name": tally.linkage["calls_with_empty_function_name"],
            "calls_without_function_name": tally.linkage["calls_without_function_name"],
            "calls_without_id": tally.linkage["calls_without_id"],
            "calls_without_observation": tally.linkage["calls_without_observation"],
            "ids_repeated_within_one_message": tally.linkage["ids_repeated_within_one_message"],
            "repeated_observations_for_one_call": tally.linkage["repeated_observations_for_one_call"],
            "observations_a_global_id_map_misattributes": tally.linkage["observations_a_global_id_map_misattributes"],
            "tool_calls_not_a_list": tally.linkage["tool_calls_not_a_list"],
            "calls_not_an_object": tally.linkage["calls_not_an_object"],
            "arguments_not_a_string": tally.linkage["arguments_not_a_string"],
            "special_token_trajectories": tally.special_token_trajectories,
            "special_token_unique": len(tally.special_tokens),
            "special_tokens": dict(sorted(tally.special_tokens.items(), key=lambda kv: (-kv[1], kv[0]))),
        },
        "per_record": {"sample_id": tally.sample_ids, "messages": tally.message_counts,
                       "text_tokens": tally.text_tokens, "record_tokens": tally.record_tokens},
    }


# --------------------------------------------------------------------------- writing

def _fmt(value: Any, digits: int = 1) -> str:
    if value is None:
        return "-"
    if isinstance(value, float) and not value.is_integer():
        return f"{value:,.{digits}f}"
    if isinstance(value, (int, float)):
        return f"{int(value):,}"
    return str(value)


def _pct(share: float | None) -> str:
    return "-" if share is None else f"{100 * share:.1f}%"


def _table(header: list[str], rows: list[list[Any]]) -> list[str]:
    def cell(v: Any) -> str:
        text = str(v).replace("|", "\\|").replace("\n", " ")
        # Labels such as <missing> and <|im_start|> would be swallowed as HTML tags when rendered.
        return text if text.startswith("`") else text.replace("<", "&lt;").replace(">", "&gt;")
    lines = ["| " + " | ".join(cell(h) for h in header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return lines + [""]


def render_markdown(report: dict) -> str:
    """The report as markdown tables, one section per part of the audit."""
    s, lengths, tools, fmt = report["scale"], report["lengths"], report["tools"], report["format"]
    out = [f"# Corpus audit: `{report['input']['path']}`", "",
           f"Tokenizer `{report['settings']['tokenizer']}`; percentiles by linear interpolation; "
           f"k = 1024 tokens.", ""]
    out += ["## Scale and integrity", ""]
    out += _table(["Check", "Value"], [
        ["Input form / files", f"{report['input']['form']} / {report['input']['files']}"],
        ["Trajectories", _fmt(s["trajectories"])], ["Rejected items", _fmt(report["rejects"]["total"])],
        ["Messages", _fmt(s["messages"])], ["Tool calls", _fmt(s["tool_calls"])],
        ["Text tokens", _fmt(s["text_tokens"])], ["Record tokens", _fmt(s["record_tokens"])],
        ["Record bytes (MB / MiB)", f"{s['record_bytes'] / 1e6:,.2f} / {s['record_bytes'] / 2**20:,.2f}"],
        ["Unique sample ids / duplicated / without id",
         f"{_fmt(s['unique_sample_ids'])} / {_fmt(s['duplicate_sample_ids'])} / "
         f"{_fmt(s['records_without_sample_id'])}"],
        ["Starting with a system message", _fmt(report["structure"]["starts_with_system"])],
        ["User message second", _fmt(report["structure"]["user_second"])],
        ["Exactly one user message", _fmt(report["structure"]["exactly_one_user_message"])],
        ["Distinct tool-definition sets", _fmt(report["metadata"]["distinct_tool_sets"])],
    ])
    if report["rejects"]["total"]:
        out += ["### Rejects", ""]
        out += _table(["Reason", "Items"], [[k, v] for k, v in report["rejects"]["by_reason"].items()])
        out += _table(["Where", "Reason", "Detail"], [[e["origin"], e["reason"], e["detail"]]
                                                      for e in report["rejects"]["examples"]])
    out += ["## Length distributions", ""]
    names = {"messages": "Messages", "text_tokens": "Text tokens", "record_tokens": "Record tokens"}
    out += _table(["View", "Mean", "Min", *[f"P{q}" for q in PERCENTILES], "Max"],
                  [[names[k], _fmt(d.get("mean")), _fmt(d.get("min")), *[_fmt(d.get(f"p{q}")) for q in PERCENTILES],
                    _fmt(d.get("max"))] for k, d in lengths.items()])
    out += _table(["View", *[f"within {k} / beyond" for k in CONTEXT_THRESHOLDS]],
                  [[names[view], *[f"{v['within']} ({_pct(v['within_share'])}) / "
                                   f"{v['beyond']} ({_pct(v['beyond_share'])})" for v in shares.values()]]
                   for view, shares in report["context"].items()])
    comp = report["composition"]
    out += ["## Composition", ""]
    out += _table(["Role", "Messages", "Share"], [[r, _fmt(v["count"]), _pct(v["share"])]
                                                  for r, v in comp["messages_by_role"].items()])
    out += _table(["Character source", "Characters", "Share"], [[k, _fmt(v["chars"]), _pct(v["share"])]
                                                                for k, v in comp["characters_by_source"].items()])
    a = report["assistant"]
    out += _table(["Assistant messages", "Count", "Share", "Characters"], [
        ["with non-empty reasoning", _fmt(a["with_reasoning"]), _pct(a["with_reasoning_share"]),
         _fmt(a["reasoning_chars"])],
        ["with non-empty visible content", _fmt(a["with_visible_content"]), _pct(a["with_visible_content_share"]),
         _fmt(a["visible_chars"])]])
    out += ["## Tool use", ""]
    out += _table(["Tool", "Calls", "Share", "Observations", "Mean obs. chars", "Median obs. chars",
                   "Mean obs. tokens", "P95 obs. tokens"],
                  [[t, _fmt(v["calls"]), _pct(v["share"]), _fmt(v["observations"]),
                    _fmt(v["observation_chars"].get("mean")), _fmt(v["observation_chars"].get("p50")),
                    _fmt(v["observation_tokens"].get("mean")),
                    _fmt(v["observation_tokens"].get("p95"))] for t, v in tools["per_tool"].items()])
    f = tools["fanout"]
    d = f["calls_per_calling_message"]
    out += _table(["Calls per assistant message", "Value"], [
        ["Assistant messages / with calls",
         f"{_fmt(f['assistant_messages'])} / {_fmt(f['with_calls'])} ({_pct(f['with_calls_share'])})"],
        ["Mean / median / P95 / max",
         f"{_fmt(d.get('mean'), 2)} / {_fmt(d.get('p50'))} / {_fmt(d.get('p95'))} / {_fmt(d.get('max'))}"],
        ["Histogram", ", ".join(f"{k}: {v}" for k, v in f["histogram"].items()) or "-"]])
    out += ["## Supervision and release metadata", ""]
    m = report["metadata"]
    out += _table([f"Value tier (`{report['settings']['tier_key']}`)", "Assistant messages", "Share"],
                  [[k, _fmt(v["count"]), _pct(v["share"])] for k, v in m["value_tiers"].items()])
    out += _table(["`_grade`", "Trajectories", "Share"], [[k, _fmt(v["count"]), _pct(v["share"])]
                                                          for k, v in m["grades"].items()])
    grades = sorted({g for row in m["source_by_grade"].values() for g in row})
    out += _table(["`_src` \\ `_grade`", *grades], [[src, *[row.get(g, 0) for g in grades]]
                                                   for src, row in m["source_by_grade"].items()])
    for title, keys in (("Record key", m["record_keys"]), ("Message key", m["message_keys"])):
        if keys:
            out += _table([title, "Present", "True"], [[k, v["present"], v["true"]] for k, v in keys.items()])
    t, dates = report["topics"], report["dates"]
    out += ["## Topics and prompt dates", ""]
    out += _table(["Figure", "Value"], [
        ["Topic pattern", f"`{report['settings']['topic_pattern']}`"],
        ["Trajectories with / without a topic", f"{_fmt(t['with_topic'])} / {_fmt(t['without_topic'])}"],
        ["Distinct topics / occurring once",
         f"{_fmt(t['distinct'])} / {_fmt(t['singletons'])} ({_pct(t['singleton_share'])})"],
        ["Ten most frequent topics cover", f"{_fmt(t['top10_trajectories'])} ({_pct(t['top10_share'])})"],
        ["Entropy (bits) / normalised", f"{t['entropy_bits']:.3f} / {_fmt(t['normalised_entropy'], 3)}"],
        ["Most frequent", ", ".join(f"{name} ({count})" for name, count in t["top"][:5]) or "-"],
        ["Prompt dates parseable", f"{_fmt(dates['parseable'])} ({_pct(dates['parseable_share'])})"],
        ["Unique dates / range", f"{dates['unique']} / {dates['earliest'] or '-'} to {dates['latest'] or '-'}"],
        ["By year", ", ".join(f"{y}: {c}" for y, c in dates["by_year"].items()) or "-"]])
    out += ["## Format and linkage", ""]
    out += _table(["Check", "Value"], [
        ["Record / message schema variants", f"{fmt['record_schema_variants']} / {fmt['message_schema_variants']}"],
        ["Assistant-final / tool-final trajectories", f"{_fmt(fmt['assistant_final'])} / {_fmt(fmt['tool_final'])}"],
        ["Matched / unmatched tool observations",
         f"{_fmt(fmt['matched_tool_observations'])} / {_fmt(fmt['unmatched_tool_observations'])}"
         + (" (" + ", ".join(f"{k}: {v}" for k, v in fmt["unmatched_by_cause"].items()) + ")"
            if fmt["unmatched_by_cause"] else "")],
        ["Calls with empty / missing function name",
         f"{fmt['calls_with_empty_function_name']} / {fmt['calls_without_function_name']}"],
        ["Calls without id / without observation", f"{fmt['calls_without_id']} / {fmt['calls_without_observation']}"],
        ["Trajectories reusing call ids", _fmt(tools["id_reuse"]["trajectories_reusing_ids"])],
        ["Repeated call-id occurrences", _fmt(tools["id_reuse"]["repeated_id_occurrences"])],
        ["Maximum uses of one call id", _fmt(tools["id_reuse"]["max_uses_of_one_id"])],
        ["Ids repeated inside one message", _fmt(fmt["ids_repeated_within_one_message"])],
        ["Observations a trajectory-wide id map would misattribute",
         _fmt(fmt["observations_a_global_id_map_misattributes"])],
        ["Trajectories with special-token-like strings", _fmt(fmt["special_token_trajectories"])],
        ["Unique special-token-like strings", _fmt(fmt["special_token_unique"])],
        ["Most common (trajectories)",
         ", ".join(f"{k} ({v})" for k, v in list(fmt["special_tokens"].items())[:10]) or "-"],
    ])
    return "\n".join(out)


def write_audit_report(report: dict, out_dir: str | Path, plots: bool = True) -> list[Path]:
    """Write audit.json (everything but the per-record columns), per_record.csv, audit.md and the plots."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    summary = {k: v for k, v in report.items() if k != "per_record"}
    written = [out / "audit.json", out / "per_record.csv", out / "audit.md"]
    written[0].write_text(json.dumps(summary, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    columns = report["per_record"]
    with written[1].open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(list(columns))
        writer.writerows(zip(*columns.values()))
    written[2].write_text(render_markdown(report) + "\n", encoding="utf-8")
    if plots:
        from .corpus_plots import write_plots

        written += write_plots(report, out)
    return written
