"""Model calls through litellm: cached by the whole request, retried, limited, budgeted, accounted.

- **Cache.** The key is the entire request: model, base URL, messages, every generation
  parameter, tools and the response schema. Changing only the temperature is a miss; changing
  nothing is a hit, and a hit costs no call, no token and no budget. The API key is never part
  of the key or of anything written to disk.
- **Retries.** Timeouts, 429s, 5xx and unreadable responses are retried with exponential
  backoff up to ``max_retries``; then the call fails with an ``LLMError`` whose ``reason``
  (``rate_limited``, ``timeout``, ``server_error``...) becomes a counted reject.
- **Structured output.** With ``response_model`` the reply must be JSON that validates against
  the pydantic model; otherwise the model is asked again with the validation error, at most
  ``max_reasks`` times (each re-ask is its own cached request).
- **Budget.** ``budget.max_llm_calls`` / ``max_llm_tokens`` / ``max_llm_cost_usd`` are checked
  before every uncached call; past them ``BudgetExhausted`` is raised and the stage keeps what it
  finished and says what it left undone. With ``executor=ray`` the check runs against one ledger
  that every worker's copy of the client shares, so the limits hold for the cluster as a whole.
- **Offline.** litellm is imported lazily with its local cost map; no network is touched until a
  request is actually sent to the configured endpoint.
"""
from __future__ import annotations

import json
import os
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ValidationError

from ..cache import ContentCache
from ..executor import events as executor_events

LLM_OP = "llm.completion"
LLM_VERSION = 1
_RETRYABLE = {
    "RateLimitError": "rate_limited",
    "Timeout": "timeout",
    "APIConnectionError": "connection_error",
    "InternalServerError": "server_error",
    "ServiceUnavailableError": "server_error",
    "BadGatewayError": "server_error",
    "APIError": "server_error",
}


class LLMError(Exception):
    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason, self.message = reason, message


class BudgetExhausted(LLMError):
    def __init__(self, message: str):
        super().__init__("budget_exhausted", message)


class ModelRequired(RuntimeError):
    """A stage that cannot run without a model was started with ``llm=none``."""


@dataclass
class Usage:
    """Token, cost and call accounting; thread-safe; ``as_dict`` goes into a stage's stats.json."""

    calls: int = 0
    cached_calls: int = 0
    retries: int = 0
    reasks: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    failures: dict[str, int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _event_token: str | None = field(default=None, repr=False, compare=False)

    def add(self, **counts) -> None:
        with self._lock:
            for name, value in counts.items():
                if name == "failure":
                    self.failures[value] = self.failures.get(value, 0) + 1
                else:
                    setattr(self, name, getattr(self, name) + value)
        executor_events.note(self._event_token, "add", **counts)

    # A remote executor pickles the client with the item function; the copy on the worker accounts as
    # usual and notes every addition, which the driver replays here (trailforge.executor.events).
    def __getstate__(self) -> dict[str, Any]:
        return executor_events.shipped_state(self, "failures")

    def __setstate__(self, state: dict[str, Any]) -> None:
        executor_events.restore_state(self, state)

    def as_dict(self) -> dict[str, Any]:
        return {"calls": self.calls, "cached_calls": self.cached_calls, "retries": self.retries,
                "reasks": self.reasks, "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens, "cost_usd": round(self.cost_usd, 6),
                "failures": dict(sorted(self.failures.items()))}


@dataclass(frozen=True)
class Endpoint:
    """One role's model: what litellm is called with (the key is read from the environment at call time)."""

    model: str
    api_base: str | None = None
    api_key_env: str | None = None
    temperature: float = 0.0
    max_tokens: int = 1024
    timeout_s: float = 60.0


@dataclass
class Limits:
    max_retries: int = 4
    backoff_s: float = 1.0
    max_reasks: int = 2
    max_concurrency: int = 4
    max_calls: int | None = None
    max_tokens: int | None = None
    max_cost_usd: float | None = None


def _budget_totals(usage: Usage) -> dict[str, float]:
    """What the budget limits: calls made, tokens used, dollars spent."""
    return {"calls": usage.calls, "tokens": usage.prompt_tokens + usage.completion_tokens, "cost_usd": usage.cost_usd}


class LLMClient:
    def __init__(self, roles: dict[str, Endpoint], cache: ContentCache, limits: Limits | None = None):
        self.roles = roles
        self.cache = cache
        self.limits = limits or Limits()
        self.usage = Usage()
        self._slots = threading.Semaphore(self.limits.max_concurrency)
        self._budget_lock = threading.Lock()
        self._shared_budget = None  # on a remote executor's worker: the ledger all copies of this client share

    # A remote executor pickles the client with the item function. Each worker copy checks the budget
    # against a ledger every copy shares (when the executor offers one), so the limits hold across the
    # cluster while items run; usage itself comes back through Usage's events.
    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_shared_budget"] = executor_events.shared_ledger(self, _budget_totals(self.usage))
        return state

    # ------------------------------------------------------------------ public

    def complete(self, messages: list[dict[str, str]], role: str = "generator", **params) -> str:
        """The assistant's text for ``messages`` (cached, retried, budgeted)."""
        endpoint = self._endpoint(role)
        request = self._request(endpoint, messages, params)
        record, hit = self.cache.get_or_compute(LLM_OP, LLM_VERSION, request, lambda: self._call(endpoint, request))
        if hit:
            self.usage.add(cached_calls=1)
        return record["content"]

    def chat(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], role: str = "generator",
             **params) -> dict[str, Any]:
        """One assistant turn with tools offered: ``{"content", "tool_calls": [{"id", "name", "arguments"}]}``.

        ``arguments`` is the raw string the model sent (it may not be valid JSON: the caller decides).
        The tools are part of the request, hence of the cache key.
        """
        endpoint = self._endpoint(role)
        request = self._request(endpoint, messages, {**params, "tools": tools})
        record, hit = self.cache.get_or_compute(LLM_OP, LLM_VERSION, request, lambda: self._call(endpoint, request))
        if hit:
            self.usage.add(cached_calls=1)
        return {"content": record["content"], "tool_calls": record.get("tool_calls", [])}

    def structured(self, messages: list[dict[str, str]], response_model: type[BaseModel], role: str = "generator",
                   **params) -> BaseModel:
        """A validated ``response_model`` instance; re-asks with the validation error when the reply is wrong."""
        schema = response_model.model_json_schema()
        conversation = list(messages)
        for attempt in range(self.limits.max_reasks + 1):
            text = self.complete(conversation, role=role, response_schema=schema, **params)
            try:
                return response_model.model_validate(json.loads(_strip_fences(text)))
            except (ValueError, ValidationError) as exc:
                if attempt == self.limits.max_reasks:
                    self.usage.add(failure="invalid_output")
                    raise LLMError("invalid_output", f"no valid {response_model.__name__} after "
                                   f"{attempt + 1} answers: {str(exc)[:300]}") from None
                self.usage.add(reasks=1)
                conversation = conversation + [
                    {"role": "assistant", "content": text},
                    {"role": "user", "content": "That reply is not valid. Answer again with only a JSON object "
                                                f"matching the schema. The problem: {str(exc)[:500]}"},
                ]
        raise AssertionError("unreachable")

    # ------------------------------------------------------------------ internals

    def _endpoint(self, role: str) -> Endpoint:
        if role in self.roles:
            return self.roles[role]
        if "generator" in self.roles:
            return self.roles["generator"]
        raise ModelRequired(f"no model configured for role '{role}'")

    @staticmethod
    def _request(endpoint: Endpoint, messages: list[dict[str, str]], params: dict[str, Any]) -> dict[str, Any]:
        request = {
            "model": endpoint.model,
            "api_base": endpoint.api_base,
            "messages": [dict(m) for m in messages],
            "temperature": endpoint.temperature,
            "max_tokens": endpoint.max_tokens,
        }
        request.update(params)  # every parameter is part of the request, hence of the cache key
        return request

    def _reserve_call(self) -> None:
        """Count one call against the budget before it is sent, so parallel calls cannot overshoot."""
        limits = self.limits
        bounds = {"calls": limits.max_calls, "tokens": limits.max_tokens, "cost_usd": limits.max_cost_usd}
        with self._budget_lock:
            if self._shared_budget is not None:
                reached = self._shared_budget.reserve({"calls": 1}, bounds)
            else:
                totals = _budget_totals(self.usage)
                reached = next((name for name, bound in bounds.items()
                                if bound is not None and totals[name] >= bound), None)
            if reached is not None:
                config_key = {"calls": "max_llm_calls", "tokens": "max_llm_tokens", "cost_usd": "max_llm_cost_usd"}
                raise BudgetExhausted(f"budget.{config_key[reached]}={bounds[reached]} reached")
            self.usage.add(calls=1)

    def _call(self, endpoint: Endpoint, request: dict[str, Any]) -> dict[str, Any]:
        litellm = _litellm()
        self._reserve_call()
        kwargs = {k: v for k, v in request.items() if k not in ("api_base", "response_schema") and v is not None}
        if request.get("response_schema") is not None:
            kwargs["response_format"] = {"type": "json_object"}
        if endpoint.api_base:
            kwargs["api_base"] = endpoint.api_base
        key = os.environ.get(endpoint.api_key_env) if endpoint.api_key_env else None
        kwargs["api_key"] = key or "no-key"  # local servers (vllm, ollama, tests) accept any key
        delay = self.limits.backoff_s
        for attempt in range(self.limits.max_retries + 1):
            try:
                with self._slots:
                    response = litellm.completion(timeout=endpoint.timeout_s, num_retries=0, max_retries=0, **kwargs)
                break
            except Exception as exc:  # litellm maps provider errors onto its own exception types
                reason = _RETRYABLE.get(type(exc).__name__)
                if reason is None:
                    self.usage.add(failure="request_error")
                    raise LLMError("request_error", f"{type(exc).__name__}: {str(exc)[:300]}") from None
                if attempt == self.limits.max_retries:
                    self.usage.add(failure=reason)
                    raise LLMError(reason, f"gave up after {attempt + 1} attempts: {type(exc).__name__}: "
                                   f"{str(exc)[:200]}") from None
                self.usage.add(retries=1)
                time.sleep(delay)
                delay *= 2
        choice = response.choices[0]
        content = choice.message.content or ""
        usage = getattr(response, "usage", None)
        prompt = int(getattr(usage, "prompt_tokens", 0) or 0)
        completion = int(getattr(usage, "completion_tokens", 0) or 0)
        try:
            cost = float(litellm.completion_cost(completion_response=response) or 0.0)
        except Exception:  # models without a price (local servers) cost nothing we can know
            cost = 0.0
        self.usage.add(prompt_tokens=prompt, completion_tokens=completion, cost_usd=cost)
        if self._shared_budget is not None:
            self._shared_budget.add({"tokens": prompt + completion, "cost_usd": cost})
        if choice.finish_reason == "length":
            self.usage.add(failure="truncated")
            raise LLMError("truncated", f"the reply hit max_tokens={request.get('max_tokens')} and was cut off")
        calls = [{"id": call.id, "name": call.function.name, "arguments": call.function.arguments or ""}
                 for call in (getattr(choice.message, "tool_calls", None) or [])]
        return {"content": content, "tool_calls": calls, "finish_reason": choice.finish_reason,
                "prompt_tokens": prompt, "completion_tokens": completion, "cost_usd": cost}


def _strip_fences(text: str) -> str:
    match = re.search(r"```(?:json)?\s*(.*?)```", text, re.S)
    return match.group(1) if match else text.strip()


def _litellm():
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # never fetch the cost map at import
    import litellm

    litellm.suppress_debug_info = True
    return litellm
