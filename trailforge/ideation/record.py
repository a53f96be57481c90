"""The public release record of an ideation trajectory: one JSON line per whole trajectory.

A record holds ``sample_id``, the ordered ``messages`` (OpenAI chat format: system, the one user task,
then assistant turns with ``reasoning_content`` and ``tool_calls``, and tool observations), the
``tools`` the agent had (OpenAI function definitions) and ``parallel_tool_calls``. Release metadata
keys start with an underscore and may be absent:

- ``_src``: which synthesis run the trajectory came from;
- ``_grade``: ``"A"``, ``"B"``, ``"C"`` or the literal string ``"None"``. The string ``"None"`` and a
  missing key are two different states and both occur; JSON ``null`` is neither and is refused;
- ``_naturalness``: the naturalness score the Advisor gave;
- ``_proposal_synth``: ``true`` on trajectories that go on to a research proposal; idea-level
  trajectories leave it out. It is never ``false``: the encoding is true-versus-absent, and
  ``_proposal_path`` comes and goes with it.

Assistant messages may carry a value tier under ``_value`` (``high``, ``normal`` or ``low``): how much
the turn contributes to the final idea or proposal, for weighted training. The corpus audit
(``trailforge.release.corpus_audit``) reads the same key.

Tool observations link to calls batch by batch: a tool message answers one of the calls of the most
recent assistant message. Ids are only unique inside a batch, so the same id may come back later for a
different call; a trajectory-wide id map would tie the earlier observations to the later call.
"""
from __future__ import annotations

import json
import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

RECORD_KEY_ORDER = ("sample_id", "messages", "tools", "parallel_tool_calls", "_src", "_grade", "_naturalness",
                    "_proposal_synth", "_proposal_path")
REQUIRED_KEYS = ("sample_id", "messages", "tools", "parallel_tool_calls")
GRADES = ("A", "B", "C", "None")
VALUE_KEY = "_value"
VALUE_TIERS = ("high", "normal", "low")
ROLES = ("system", "user", "assistant", "tool")

Grade = Literal["A", "B", "C", "None"]
ValueTier = Literal["high", "normal", "low"]


class RecordError(ValueError):
    """A record that cannot be released; ``problems`` lists every reason."""

    def __init__(self, problems: list[str]):
        super().__init__("invalid release record: " + "; ".join(problems))
        self.problems = problems


class ToolCallLink(BaseModel):
    """One tool observation tied to the call it answers."""
    model_config = ConfigDict(extra="forbid", frozen=True)

    observation_index: int       # index of the tool message in ``messages``
    call_message_index: int      # index of the assistant message holding the call
    call_position: int           # position of the call in that message's ``tool_calls``
    call_id: str
    tool_name: str
    arguments: str               # the call's arguments as sent (a JSON string, or "" when absent)


def _call_name_and_arguments(call: dict) -> tuple[str, str]:
    function = call.get("function") if isinstance(call.get("function"), dict) else {}
    name = function.get("name")
    arguments = function.get("arguments")
    if arguments is None:
        arguments = ""
    elif not isinstance(arguments, str):
        arguments = json.dumps(arguments, ensure_ascii=False)
    return (name if isinstance(name, str) else ""), arguments


def link_observations(messages: Any) -> tuple[list[ToolCallLink], list[str]]:
    """Tie every tool message to a call of the latest assistant batch; problems name what did not link.

    Also reported: calls left without an observation when the next assistant turn (or the end) comes,
    ids repeated inside one batch, and a call answered twice.
    """
    links: list[ToolCallLink] = []
    problems: list[str] = []
    if not isinstance(messages, list):
        return links, ["messages is not a list"]
    batch: dict[str, tuple[int, int, dict]] | None = None
    answered: set[str] = set()

    def close_batch() -> None:
        if batch:
            for call_id in batch:
                if call_id not in answered:
                    problems.append(f"messages[{batch[call_id][0]}]: tool call {call_id!r} has no observation")

    for index, message in enumerate(messages):
        if not isinstance(message, dict):
            continue
        role = message.get("role")
        if role == "assistant":
            close_batch()
            batch, answered = {}, set()
            calls = message.get("tool_calls") or []
            if not isinstance(calls, list):
                continue
            for position, call in enumerate(calls):
                if not isinstance(call, dict):
                    continue
                call_id = call.get("id")
                if not isinstance(call_id, str) or not call_id:
                    continue  # validate_record reports missing ids; nothing can link to them
                if call_id in batch:
                    problems.append(f"messages[{index}]: tool call id {call_id!r} is used twice in one message")
                    continue
                batch[call_id] = (index, position, call)
        elif role == "tool":
            call_id = message.get("tool_call_id")
            if batch is None:
                problems.append(f"messages[{index}]: tool message before any assistant tool call")
            elif not isinstance(call_id, str) or not call_id:
                problems.append(f"messages[{index}]: tool message without a tool_call_id")
            elif call_id not in batch:
                problems.append(f"messages[{index}]: tool_call_id {call_id!r} is not a call of the latest "
                                "assistant message")
            elif call_id in answered:
                problems.append(f"messages[{index}]: tool call {call_id!r} is answered more than once")
            else:
                answered.add(call_id)
                call_index, position, call = batch[call_id]
                name, arguments = _call_name_and_arguments(call)
                links.append(ToolCallLink(observation_index=index, call_message_index=call_index,
                                          call_position=position, call_id=call_id, tool_name=name,
                                          arguments=arguments))
    close_batch()
    return links, problems


def _tool_problems(tools: Any) -> tuple[list[str], set[str] | None]:
    """Problems with the tool definitions, and the tool names they define (None when there is no list)."""
    problems: list[str] = []
    names: set[str] = set()
    if not isinstance(tools, list):
        return ["tools is not a list"], None
    for i, tool in enumerate(tools):
        where = f"tools[{i}]"
        if not isinstance(tool, dict):
            problems.append(f"{where}: not an object")
            continue
        if tool.get("type") != "function":
            problems.append(f"{where}: type must be 'function'")
        function = tool.get("function")
        if not isinstance(function, dict):
            problems.append(f"{where}: no 'function' object")
            continue
        name = function.get("name")
        if not isinstance(name, str) or not name.strip():
            problems.append(f"{where}: function has no name")
            continue
        if name in names:
            problems.append(f"{where}: tool {name!r} is defined twice")
        names.add(name)
        if "description" in function and not isinstance(function["description"], str):
            problems.append(f"{where}: description of {name!r} is not a string")
        parameters = function.get("parameters")
        if not isinstance(parameters, dict) or parameters.get("type") != "object":
            problems.append(f"{where}: parameters of {name!r} must be a JSON schema with type 'object'")
    return problems, names


def _call_problems(where: str, call: Any, tool_names: set[str] | None) -> list[str]:
    if not isinstance(call, dict):
        return [f"{where}: tool call is not an object"]
    problems = []
    if not isinstance(call.get("id"), str) or not call.get("id"):
        problems.append(f"{where}: tool call has no id")
    if call.get("type") != "function":
        problems.append(f"{where}: tool call type must be 'function'")
    function = call.get("function")
    if not isinstance(function, dict):
        return problems + [f"{where}: tool call has no 'function' object"]
    name = function.get("name")
    if not isinstance(name, str) or not name.strip():
        problems.append(f"{where}: tool call has an empty function name")
    elif tool_names is not None and name not in tool_names:
        problems.append(f"{where}: tool call names {name!r}, which is not among the record's tools")
    arguments = function.get("arguments")
    if not isinstance(arguments, str):
        problems.append(f"{where}: arguments must be a JSON string")
    else:
        try:
            parsed = json.loads(arguments)
        except json.JSONDecodeError as exc:
            problems.append(f"{where}: arguments are not valid JSON ({exc.msg})")
        else:
            if not isinstance(parsed, dict):
                problems.append(f"{where}: arguments must encode a JSON object")
    return problems


def _message_problems(index: int, message: Any, tool_names: set[str] | None) -> list[str]:
    where = f"messages[{index}]"
    if not isinstance(message, dict):
        return [f"{where}: not an object"]
    role = message.get("role")
    if role not in ROLES:
        return [f"{where}: role {role!r} is not one of {', '.join(ROLES)}"]
    problems = []
    content = message.get("content")
    if role in ("system", "user", "tool") and not isinstance(content, str):
        problems.append(f"{where}: {role} message content must be a string")
    if role == "assistant" and content is not None and not isinstance(content, str):
        problems.append(f"{where}: assistant content must be a string or null")
    if "reasoning_content" in message:
        if role != "assistant":
            problems.append(f"{where}: reasoning_content on a {role} message")
        elif message["reasoning_content"] is not None and not isinstance(message["reasoning_content"], str):
            problems.append(f"{where}: reasoning_content must be a string")
    if VALUE_KEY in message:
        if role != "assistant":
            problems.append(f"{where}: value tier on a {role} message (only assistant turns carry one)")
        elif message[VALUE_KEY] not in VALUE_TIERS:
            problems.append(f"{where}: {VALUE_KEY} is {message[VALUE_KEY]!r}, not one of {', '.join(VALUE_TIERS)}")
    if "tool_calls" in message:
        calls = message["tool_calls"]
        if role != "assistant":
            problems.append(f"{where}: tool_calls on a {role} message")
        elif calls is not None and not isinstance(calls, list):
            problems.append(f"{where}: tool_calls must be a list")
        elif calls:
            for position, call in enumerate(calls):
                problems += _call_problems(f"{where}.tool_calls[{position}]", call, tool_names)
    if role == "tool":
        if "name" in message and not isinstance(message["name"], str):
            problems.append(f"{where}: tool message name must be a string")
    return problems


def _metadata_problems(record: dict) -> list[str]:
    problems = []
    if "_src" in record and (not isinstance(record["_src"], str) or not record["_src"]):
        problems.append("_src must be a non-empty string when present")
    if "_grade" in record:
        grade = record["_grade"]
        if grade is None:
            problems.append('_grade is null; write the string "None" or leave the key out')
        elif grade not in GRADES:
            problems.append(f"_grade is {grade!r}, not one of {', '.join(GRADES)} (or absent)")
    if "_naturalness" in record:
        value = record["_naturalness"]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            problems.append("_naturalness must be a finite number when present")
    synth, path = "_proposal_synth" in record, "_proposal_path" in record
    if synth and record["_proposal_synth"] is not True:
        problems.append(f"_proposal_synth is {record['_proposal_synth']!r}; it is true or absent, never false")
    if path and (not isinstance(record["_proposal_path"], str) or not record["_proposal_path"]):
        problems.append("_proposal_path must be a non-empty string when present")
    if synth != path:
        present, absent = ("_proposal_synth", "_proposal_path") if synth else ("_proposal_path", "_proposal_synth")
        problems.append(f"{present} is present without {absent}; proposal trajectories carry both, "
                        "idea-level ones neither")
    return problems


def validate_record(record: Any) -> list[str]:
    """Every reason ``record`` is not a valid release record; an empty list when it is."""
    if not isinstance(record, dict):
        return [f"record is {type(record).__name__}, not an object"]
    problems = [f"missing required key {key!r}" for key in REQUIRED_KEYS if key not in record]
    problems += [f"unknown key {key!r}; release metadata keys start with '_'"
                 for key in record if key not in REQUIRED_KEYS and not key.startswith("_")]
    if "sample_id" in record and (not isinstance(record["sample_id"], str) or not record["sample_id"]):
        problems.append("sample_id must be a non-empty string")
    if "parallel_tool_calls" in record and not isinstance(record["parallel_tool_calls"], bool):
        problems.append("parallel_tool_calls must be true or false")
    # Without a tools list there is nothing to check call names against; the missing key is reported.
    tool_problems, tool_names = _tool_problems(record["tools"]) if "tools" in record else ([], None)
    problems += tool_problems
    problems += _metadata_problems(record)

    messages = record.get("messages")
    if "messages" in record and not isinstance(messages, list):
        return problems + ["messages is not a list"]
    if not messages:
        return problems + ([] if "messages" not in record else ["messages is empty"])
    for index, message in enumerate(messages):
        problems += _message_problems(index, message, tool_names)
    roles = [m.get("role") if isinstance(m, dict) else None for m in messages]
    if roles[0] != "system":
        problems.append("the first message must be the system prompt")
    if len(roles) < 2 or roles[1] != "user":
        problems.append("the second message must be the user task")
    if roles.count("user") != 1:
        problems.append(f"a trajectory has exactly one user message, found {roles.count('user')}")
    links, link_problems = link_observations(messages)
    problems += link_problems
    for link in links:
        name = messages[link.observation_index].get("name")
        if isinstance(name, str) and name != link.tool_name:
            problems.append(f"messages[{link.observation_index}]: tool message name {name!r} differs from the "
                            f"call it answers ({link.tool_name!r})")
    return problems


def build_record(sample_id: str, messages: list[dict], tools: list[dict], *, parallel_tool_calls: bool = True,
                 src: str | None = None, grade: Grade | None = None, naturalness: float | None = None,
                 proposal_path: str | None = None) -> dict:
    """A release record with absent metadata left out.

    ``grade=None`` leaves ``_grade`` out; ``grade="None"`` writes the literal string. A ``proposal_path``
    marks a proposal trajectory and writes ``_proposal_synth: true`` with it; without one both are absent.
    """
    record: dict[str, Any] = {"sample_id": sample_id, "messages": messages, "tools": tools,
                              "parallel_tool_calls": parallel_tool_calls}
    if src is not None:
        record["_src"] = src
    if grade is not None:
        record["_grade"] = grade
    if naturalness is not None:
        record["_naturalness"] = naturalness
    if proposal_path is not None:
        record["_proposal_synth"] = True
        record["_proposal_path"] = proposal_path
    return record


def serialize_record(record: dict) -> str:
    """One JSONL line (ending in a newline) for a valid record; ``RecordError`` lists why one is not.

    Keys follow ``RECORD_KEY_ORDER`` and any other metadata keys follow in their own order. Nothing is
    added or dropped, so an absent key stays absent and the string ``"None"`` stays a string.
    """
    problems = validate_record(record)
    if problems:
        raise RecordError(problems)
    ordered = {key: record[key] for key in RECORD_KEY_ORDER if key in record}
    ordered.update((key, value) for key, value in record.items() if key not in ordered)
    return json.dumps(ordered, ensure_ascii=False, allow_nan=False) + "\n"
