"""Benchmark: tokenizer throughput of the corpus audit on full-record counting, per core.

Builds a synthetic chat-format corpus (seeded: long tool observations, reasoning, parallel tool calls,
prose mixed with numbers, paths, URLs and code) as JSONL in a temporary folder, then times:

1. full-record counting alone (every JSONL line through ``count_tokens``) with 1 thread, which is the
   per-core figure, and with every available core;
2. the whole ``audit_corpus`` run (reading, JSON parsing, all counts, three token views) end to end.

Prints figures; the only check is that both runs count the same record tokens. The bar the audit is
held to is 1M tokens/s per core on step 1. The whole audit is slower per token because it encodes three
views (record, text fields, and each observation again for per-tool lengths) and parses every line.

    python bench/audit.py [--records 100] [--turns 40] [--seed 0]
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from trailforge.release.corpus_audit import audit_corpus, available_cores, count_tokens, load_tokenizer  # noqa: E402

TOOLS = ["View", "WebSearch", "Scraper", "Write", "Edit", "Glob", "Grep"]


def _sentence_pool(rng: random.Random, size: int = 4000) -> list[str]:
    """Sentences of invented words, numbers, paths, URLs and code, so the text is not one repeated pattern."""
    syllables = ["ra", "to", "ne", "mi", "sal", "cor", "ven", "tri", "po", "lex", "da", "qui", "ster", "on", "ab"]
    words = ["".join(rng.choices(syllables, k=rng.randint(1, 4))) for _ in range(3000)]
    words += ["the", "of", "and", "to", "in", "model", "results", "we", "data", "method", "is", "for", "with"] * 40
    extras = [lambda: f"{rng.uniform(0, 1000):.3f}", lambda: str(rng.randint(1, 10**6)),
              lambda: f"https://arxiv.org/abs/{rng.randint(1000, 2599)}.{rng.randint(10000, 99999)}",
              lambda: f"topics/{rng.choice(words)}/notes_{rng.randint(1, 99)}.md",
              lambda: f"def {rng.choice(words)}(x, y=None):\n    return x ** {rng.randint(2, 5)}",
              lambda: f"({rng.choice(words).capitalize()} et al., {rng.randint(1990, 2025)})"]
    pool = []
    for _ in range(size):
        parts = [rng.choice(extras)() if rng.random() < 0.08 else rng.choice(words) for _ in range(rng.randint(6, 30))]
        pool.append(" ".join(parts).capitalize() + rng.choice([".", ".", "?", ";", ":"]))
    return pool


def _text(rng: random.Random, pool: list[str], sentences: int) -> str:
    return " ".join(rng.choices(pool, k=sentences))


def synthetic_record(rng: random.Random, pool: list[str], index: int, turns: int) -> dict:
    cutoff = f"{2020 + index % 6}-0{1 + index % 9}-15"
    messages = [{"role": "system",
                 "content": f"You are a research agent. Evidence cutoff {cutoff}. " + _text(rng, pool, 10)},
                {"role": "user", "content": _text(rng, pool, 4)}]
    for turn in range(turns):
        calls = [{"id": f"call_{k}", "type": "function",  # ids restart every batch, as in released corpora
                  "function": {"name": rng.choice(TOOLS),
                               "arguments": json.dumps({"path": f"topics/t{index % 97}/f{turn}.md",
                                                        "query": _text(rng, pool, 1)})}}
                 for k in range(rng.choice([1, 1, 2, 3, 3, 4, 5]))]
        messages.append({"role": "assistant", "content": "", "reasoning_content": _text(rng, pool, rng.randint(3, 12)),
                         "tool_calls": calls, "_value": rng.choice(["high", "normal", "low"])})
        messages += [{"role": "tool", "tool_call_id": call["id"], "content": _text(rng, pool, rng.randint(5, 40))}
                     for call in calls]
    messages.append({"role": "assistant", "content": _text(rng, pool, 3), "reasoning_content": _text(rng, pool, 5)})
    return {"sample_id": f"s{index:05d}", "messages": messages,
            "tools": [{"type": "function", "function": {"name": name, "parameters": {"type": "object"}}}
                      for name in TOOLS],
            "parallel_tool_calls": True, "_src": rng.choice(["a", "b"]), "_grade": rng.choice(["A", "B", "None"])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=100)
    parser.add_argument("--turns", type=int, default=40, help="assistant tool-calling turns per trajectory")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    pool = _sentence_pool(rng)
    cores = available_cores()
    encoding = load_tokenizer("o200k_base")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "corpus.jsonl"
        started = time.perf_counter()
        with path.open("w", encoding="utf-8") as handle:
            for index in range(args.records):
                handle.write(json.dumps(synthetic_record(rng, pool, index, args.turns), ensure_ascii=False) + "\n")
        built = time.perf_counter() - started
        lines = path.read_text(encoding="utf-8").splitlines()
        print(f"corpus: {len(lines)} trajectories, {path.stat().st_size / 1e6:.1f} MB JSONL, built in {built:.1f}s, "
              f"{cores} core(s) available")

        figures = {}
        for threads in sorted({1, cores}):
            started = time.perf_counter()
            tokens = sum(count_tokens(encoding, lines, threads))
            seconds = time.perf_counter() - started
            figures[threads] = tokens / seconds
            print(f"full-record counting, {threads} thread(s): {tokens:,} tokens in {seconds:.2f}s = "
                  f"{tokens / seconds / 1e6:.2f}M tokens/s ({tokens / seconds / threads / 1e6:.2f}M per core)")

        started = time.perf_counter()
        report = audit_corpus(path, threads=cores)
        seconds = time.perf_counter() - started
        scale = report["scale"]
        print(f"whole audit, {cores} thread(s): {seconds:.2f}s for {scale['record_tokens']:,} record tokens, "
              f"{scale['text_tokens']:,} text tokens, {scale['messages']:,} messages, {scale['tool_calls']:,} calls = "
              f"{scale['record_tokens'] / seconds / 1e6:.2f}M record tokens/s "
              f"({scale['record_tokens'] / seconds / cores / 1e6:.2f}M per core)")
        assert report["rejects"]["total"] == 0 and scale["record_tokens"] == tokens
        print(f"per-core bar (1M tokens/s on full-record counting, 1 thread): "
              f"{'met' if figures[1] >= 1e6 else 'NOT met'} at {figures[1] / 1e6:.2f}M tokens/s")


if __name__ == "__main__":
    main()
