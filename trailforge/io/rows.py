"""Row types that flow between stages. Each stage reads one type and writes the next."""
from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Row(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Reject(_Row):
    """An item a stage dropped, and why. Every drop is recorded; nothing disappears silently."""

    stage: str
    item_id: str
    reason: str
    message: str
    detail: dict[str, Any] = Field(default_factory=dict)


class FileEntry(_Row):
    path: str
    sha256: str
    size: int
    kind: Literal["python", "data", "text", "binary", "manifest", "doc"]


class RepoRow(_Row):
    repo_id: str
    origin: str
    origin_kind: Literal["path", "git"]
    ref: str | None = None
    discipline: str
    discipline_scores: dict[str, int]
    has_paper: bool


class SnapshotRow(_Row):
    repo_id: str
    origin: str
    discipline: str
    commit: str | None
    content_hash: str
    tree: str
    files: list[FileEntry]
    requirements: list[str]
    imports: list[str]
    distributions: list[str]
    local_modules: list[str]
    # The commit's date (ISO 8601) for a git source; None for a copied folder, whose history is unknown.
    commit_date: str | None = None


class WrittenFile(_Row):
    path: str
    sha256: str
    size: int
    text: str | None = None


class SeedRow(_Row):
    seed_id: str
    repo_id: str
    discipline: str
    script: str
    tree: str
    program_files: list[str]
    data_files: list[FileEntry]
    stdout: str
    files_written: list[WrittenFile]
    distributions: list[str]
    sandbox_spec: dict[str, Any]
    # What its matplotlib figures showed ({"figures": [...]}, see sandbox/plot_recorder.py); {} when it drew none.
    plots: dict[str, Any] = Field(default_factory=dict)
    # How the script is started (inferred by the run protocol): its working folder, relative to the
    # repository root, and its command-line arguments.
    cwd: str = "."
    args: list[str] = Field(default_factory=list)
    # Folders of the repository the program wrote into: every later run gets them, empty.
    output_folders: list[str] = Field(default_factory=list)
    # Every environment the seeds stage tried, in order (rung, distributions, as_of, outcome); the last ran.
    environment_attempts: list[dict[str, Any]] = Field(default_factory=list)
    # The data file the seeds stage generated from the script's own numeric constants (parameters as data,
    # ``envs/parameters.py``): one of ``data_files``, in the seed's own tree; None for a script that reads data.
    parameters_file: str | None = None
    # Names of the stdout lines that hold one bare number, by line index (as text): the expression of the
    # print() call that printed each, from the traced seed run (``envs/printed/sites.py``); {} when none.
    stdout_names: dict[str, str] = Field(default_factory=dict)
    # Where the script was cut (``envs/seeds/cuts.py``, ``cut_before``): no start ran it to the end, so the seed is
    # the part before the top-level statement that failed at this line; None for a script that ran whole.
    cut_before_line: int | None = None


class AnswerField(_Row):
    name: str
    type: Literal["number", "integer", "string", "boolean", "number_list", "table"]
    label: str
    unit: str | None = None
    source: str
    decimals: int | None = None
    resolution: float | None = None


class WorkflowRow(_Row):
    """A seed program's data-flow graph and the traced run that annotates it."""

    seed_id: str
    repo_id: str
    graph: dict[str, Any]   # networkx node-link data
    nodes: int
    edges: int
    operations: int
    trace: dict[str, Any]   # lines, units, values, calls (see sandbox/trace_runner.py)
    targets: list[dict[str, Any]]  # informative intermediate results, candidates for Subflow
    truncated: bool = False


TASK_TYPES = ("reproduction", "subflow", "completion", "correction")
TaskType = Literal["reproduction", "subflow", "completion", "correction"]


class TaskRow(_Row):
    task_id: str
    task_type: TaskType
    seed_id: str
    repo_id: str
    discipline: str
    statement: str
    answer_schema: list[AnswerField]
    reference_answer: dict[str, Any]
    entrypoint: str
    reference_program: dict[str, str]
    # Working folder (relative to the workspace root) and arguments the entrypoint is started with.
    cwd: str = "."
    args: list[str] = Field(default_factory=list)
    output_folders: list[str] = Field(default_factory=list)  # created empty before a run (the seed's)
    workspace_files: list[FileEntry]
    tree: str
    distributions: list[str]
    sandbox_spec: dict[str, Any]
    # Where the answer comes from when the reference program runs: everything it prints and
    # writes, or only the files it saves under result/ (Subflow).
    answer_from: Literal["outputs", "result_files"] = "outputs"
    # Program files the agent receives (Completion: with a hole; Correction: with a defect).
    workspace_program: dict[str, str] = Field(default_factory=dict)
    # Programs whose output the eval must reject: {"name", "entrypoint", "files"}.
    negative_programs: list[dict[str, Any]] = Field(default_factory=list)
    # How the task was made (target, hole, injected defect); for verification, never shown.
    construction: dict[str, Any] = Field(default_factory=dict)
    # Intermediate values the answer is derived from; the statement must not contain them.
    derived_values: list[float] = Field(default_factory=list)


class VerifiedTaskRow(TaskRow):
    # Per field: rtol, atol; a number list or table also rtols, atols (per element or cell, see envs.verify.tolerances.calibrate).
    tolerances: dict[str, dict[str, Any]]
    checks: dict[str, Any]


class TrajectoryRow(_Row):
    """One agent episode in the OpenAI chat format trainers read, with its outcome."""

    env_id: str
    attempt: int
    task_type: str
    difficulty: int | None = None
    model: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    parallel_tool_calls: bool = False
    reward: float
    exit_status: str
    grader_message: str
    steps: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    wall_s: float
    label: Literal["success", "failure"] = "success"


class LineageRow(_Row):
    """One item in the lineage graph: where it comes from, what taints it, what it repeats."""

    item_id: str
    kind: str
    text: str
    parents: list[dict[str, Any]]          # {"id", "type", "signal", "weight"}
    roots: list[str]
    depth: int
    contamination: float = 0.0
    contamination_reason: str | None = None
    contamination_source: str | None = None
    contamination_path: list[str] = Field(default_factory=list)
    redundant_with: list[dict[str, Any]] = Field(default_factory=list)   # {"id", "kind", "score"}
    diminishing: float | None = None       # novelty of a refinement step below the threshold
    score: float | None = None
    passed: bool | None = None
    weight: float = 1.0                    # sampling weight after decontamination


class IdeationRow(_Row):
    """One kept ideation trajectory: its public record and what the checks measured."""

    sample_id: str
    endpoint: Literal["idea_only", "proposal_extension"]
    grade: str | None
    turns: int
    retries: dict[str, int]
    convergence: dict[str, Any]
    qc: dict[str, Any]
    record: dict[str, Any]
