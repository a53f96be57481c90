"""The model client through litellm against a real local OpenAI-compatible server: cache, retries, budget, schema."""
from __future__ import annotations

import json

import pytest
from pydantic import BaseModel

from trailforge.cache import ContentCache
from trailforge.config import compose, validate
from trailforge.llm import BudgetExhausted, Endpoint, Limits, LLMClient, LLMError, ModelRequired, build_llm, require_model
from trailforge.testing.openai_server import FakeOpenAIServer

from conftest import PROJECT_ROOT

MESSAGES = [{"role": "user", "content": "Name the statistic."}]


def client(server, tmp_path, **limits) -> LLMClient:
    endpoint = Endpoint(model="openai/fake-model", api_base=server.url, api_key_env="TF_TEST_KEY", timeout_s=2)
    return LLMClient({"generator": endpoint, "validator": endpoint}, ContentCache(tmp_path / "cache"),
                     Limits(backoff_s=0.01, **limits))


def test_a_call_goes_through_litellm_and_a_repeat_is_served_from_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TF_TEST_KEY", "sk-test-secret")
    with FakeOpenAIServer(["Shannon entropy"]) as server:
        first = client(server, tmp_path)
        assert first.complete(MESSAGES) == "Shannon entropy"
        assert server.calls == 1 and server.requests[0]["messages"] == MESSAGES
        second = client(server, tmp_path)  # a new process, same cache
        assert second.complete(MESSAGES) == "Shannon entropy"
        assert server.calls == 1 and second.usage.calls == 0 and second.usage.cached_calls == 1
        assert first.usage.prompt_tokens > 0 and first.usage.completion_tokens == 2
    stored = "".join(p.read_text() for p in (tmp_path / "cache").rglob("*.json"))
    assert "sk-test-secret" not in stored, "the key never reaches the cache"


def test_changing_only_the_temperature_is_a_miss(tmp_path):
    with FakeOpenAIServer(["a"]) as server:
        llm = client(server, tmp_path)
        llm.complete(MESSAGES, temperature=0.0)
        llm.complete(MESSAGES, temperature=0.0)
        assert server.calls == 1
        llm.complete(MESSAGES, temperature=0.7)
        assert server.calls == 2 and server.requests[1]["temperature"] == 0.7


def test_a_429_storm_is_retried_then_reported(tmp_path):
    with FakeOpenAIServer([{"fault": "429"}, {"fault": "429"}, "recovered"]) as server:
        llm = client(server, tmp_path, max_retries=3)
        assert llm.complete(MESSAGES) == "recovered"
        assert llm.usage.retries == 2
    with FakeOpenAIServer([{"fault": "429"}]) as server:
        llm = client(server, tmp_path / "b", max_retries=2)
        with pytest.raises(LLMError) as err:
            llm.complete(MESSAGES)
        assert err.value.reason == "rate_limited" and server.calls == 3
        assert llm.usage.failures == {"rate_limited": 1}


@pytest.mark.parametrize("fault, reason", [({"fault": "timeout", "delay_s": 4}, "timeout"),
                                           ({"fault": "500"}, "server_error"),
                                           ({"fault": "invalid_json"}, "server_error")])
def test_timeouts_server_errors_and_unreadable_bodies_end_as_reasons(tmp_path, fault, reason):
    with FakeOpenAIServer([fault]) as server:
        llm = client(server, tmp_path, max_retries=1)
        with pytest.raises(LLMError) as err:
            llm.complete(MESSAGES)
        assert err.value.reason == reason and server.calls == 2
        assert not list((tmp_path / "cache").rglob("*.json")), "a failure is never cached"


def test_a_truncated_reply_is_an_error_not_an_answer(tmp_path):
    with FakeOpenAIServer([{"fault": "truncated", "content": "the full answer is long"}]) as server:
        with pytest.raises(LLMError) as err:
            client(server, tmp_path).complete(MESSAGES)
        assert err.value.reason == "truncated"


class Verdict(BaseModel):
    score: int
    reason: str


def test_invalid_structured_output_is_re_asked_with_the_error(tmp_path):
    good = json.dumps({"score": 4, "reason": "sound"})
    with FakeOpenAIServer(["not json at all", "```json\n" + good + "\n```"]) as server:
        llm = client(server, tmp_path)
        verdict = llm.structured(MESSAGES, Verdict, role="validator")
        assert verdict == Verdict(score=4, reason="sound") and llm.usage.reasks == 1
        reask = server.requests[1]["messages"]
        assert reask[-2]["content"] == "not json at all" and "not valid" in reask[-1]["content"]
        assert server.requests[0]["response_format"] == {"type": "json_object"}
    with FakeOpenAIServer([json.dumps({"score": "high"})]) as server:
        llm = client(server, tmp_path / "b", max_reasks=1)
        with pytest.raises(LLMError) as err:
            llm.structured(MESSAGES, Verdict)
        assert err.value.reason == "invalid_output" and server.calls == 2


def test_the_budget_stops_new_calls_but_not_cached_ones(tmp_path):
    with FakeOpenAIServer(["one", "two"]) as server:
        llm = client(server, tmp_path, max_calls=1)
        assert llm.complete(MESSAGES) == "one"
        with pytest.raises(BudgetExhausted, match="max_llm_calls=1"):
            llm.complete([{"role": "user", "content": "another question"}])
        assert llm.complete(MESSAGES) == "one", "a cached reply costs nothing"
        assert server.calls == 1


def _cfg(overrides):
    data = compose("demo", overrides, root=PROJECT_ROOT)
    return validate(data)


def test_recipes_build_a_client_per_role_or_refuse_without_a_model(tmp_path):
    assert build_llm(_cfg([]), ContentCache(tmp_path)) is None
    with pytest.raises(ModelRequired, match="llm=openai"):
        require_model(_cfg([]), "the statements stage")
    llm = build_llm(_cfg(["llm=vllm", "+llm.roles.judge.model=openai/judge-model", "budget.max_llm_calls=5"]),
                    ContentCache(tmp_path))
    assert llm.roles["generator"].model == "openai/Qwen2.5-7B-Instruct"
    assert llm.roles["judge"].model == "openai/judge-model"
    assert llm.roles["generator"].api_base == "http://localhost:8000/v1" and llm.limits.max_calls == 5


TOOLS = [{"type": "function", "function": {"name": "run_shell", "description": "Run a shell command.",
                                           "parameters": {"type": "object", "properties": {"command": {"type": "string"}},
                                                          "required": ["command"]}}}]


def test_tool_calls_come_back_raw_and_the_tools_are_part_of_the_cache_key(tmp_path):
    script = [{"tool_calls": [{"name": "run_shell", "arguments": {"command": "ls data"}}]},
              {"tool_calls": [{"name": "run_shell", "arguments": "{not json"}]}]
    with FakeOpenAIServer(script) as server:
        llm = client(server, tmp_path)
        turn = llm.chat(MESSAGES, TOOLS)
        assert turn["tool_calls"][0]["name"] == "run_shell"
        assert json.loads(turn["tool_calls"][0]["arguments"]) == {"command": "ls data"}
        assert server.requests[0]["tools"][0]["function"]["name"] == "run_shell"
        assert llm.chat(MESSAGES, TOOLS) == turn and server.calls == 1, "the same turn is a cache hit"
        renamed = [{**TOOLS[0], "function": {**TOOLS[0]["function"], "description": "Run a command."}}]
        malformed = llm.chat(MESSAGES, renamed)
        assert server.calls == 2 and malformed["tool_calls"][0]["arguments"] == "{not json"
