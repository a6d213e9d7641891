"""Varied LLM-inference bodies for POST /v1/recommendations: every request a new workload.

Recommendation throughput is measured with a different workload in every POST, so that
no whole-answer cache can stand in for the ranking. One generator, written twice: in Python
(:class:`VariedBodies`: bench/loadgen.py, bench/profile_request.py, the validity check) and in
Lua (:func:`wrk_script`: wrk's ``request`` hook). Both draw from the same Lehmer generator
(x <- 48271 x mod 2^31-1; every product stays below 2^53, so Lua's doubles are exact) and
format the body with the same template, so thread ``t`` of a wrk run with seed ``s`` sends
byte for byte the bodies of ``VariedBodies(s, t)``. wrk prints each thread's first body, and
bench_http checks it against Python's.

Each body: one of :data:`PRESETS` (bf16), prompt 256-4,096 tokens, output 32-1,024 tokens,
1-97 requests/s, the SLOs of bench_http's fixed LLM-inference workload (TTFT 500 ms, TPOT
50 ms), objective cost, default limit (10). ~16 billion distinct bodies.

``python -m bench.varied [N]`` prints the first N bodies of thread 1 (seed BENCH_SEED).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

MODULUS = 2_147_483_647
"""2^31 - 1, the Lehmer generator's prime modulus."""
MULTIPLIER = 48_271
WARMUP_DRAWS = 4
"""Draws discarded after seeding: a small seed's first draws are small."""
SEED = int(os.environ.get("BENCH_SEED", "14"))

PRESETS = ("llama-3.1-8b", "mistral-7b", "llama-2-13b", "llama-3.1-70b")
PROMPT_TOKENS = (256, 4096)
OUTPUT_TOKENS = (32, 1024)
TARGET_REQUESTS_PER_S = (1, 97)
TEMPLATE = ('{"kind":"inference","model":{"preset":"%s"},"precision":"bf16",'
            '"objective":"cost","inference":{"prompt_tokens":%d,"output_tokens":%d,'
            '"max_ttft_ms":500,"max_tpot_ms":50,"target_requests_per_s":%d}}')
"""The body, for Python's ``%`` and Lua's ``string.format`` alike (only %s and %d)."""


def thread_seed(seed: int, thread: int) -> int:
    """The generator's starting state for wrk thread ``thread`` (1-based) of a run."""
    return 1 + (seed * 7919 + thread * 104_729) % (MODULUS - 1)


class VariedBodies:
    """The body stream of wrk thread ``thread`` for ``seed``; ``next()`` gives the JSON text."""

    def __init__(self, seed: int = SEED, thread: int = 1) -> None:
        self.state = thread_seed(seed, thread)
        for _ in range(WARMUP_DRAWS):
            self._draw()

    def _draw(self) -> int:
        self.state = self.state * MULTIPLIER % MODULUS
        return self.state

    def _between(self, lo: int, hi: int) -> int:
        """An integer in [lo, hi], as the Lua does it: floor(x / m * n)."""
        return lo + int(self._draw() / MODULUS * (hi - lo + 1))

    def next(self) -> str:
        preset = PRESETS[self._between(0, len(PRESETS) - 1)]
        prompt = self._between(*PROMPT_TOKENS)
        output = self._between(*OUTPUT_TOKENS)
        rate = self._between(*TARGET_REQUESTS_PER_S)
        return TEMPLATE % (preset, prompt, output, rate)

    def next_body(self) -> dict[str, Any]:
        body: dict[str, Any] = json.loads(self.next())
        return body

    def take(self, n: int) -> list[str]:
        return [self.next() for _ in range(n)]


_LUA = """
local M, A = %(modulus)d, %(multiplier)d
local presets = {%(presets)s}
local template = %(template)s
local seed = %(seed)d
local state = 1
local count = 0

local function draw()
  state = (state * A) %% M
  return state
end

local function between(lo, hi)
  return lo + math.floor(draw() / M * (hi - lo + 1))
end

local function body()
  local preset = presets[between(0, #presets - 1) + 1]
  local prompt = between(%(prompt_lo)d, %(prompt_hi)d)
  local output = between(%(output_lo)d, %(output_hi)d)
  local rate = between(%(rate_lo)d, %(rate_hi)d)
  return string.format(template, preset, prompt, output, rate)
end

function setup(thread)
  count = count + 1
  thread:set("thread_index", count)
end

function init(args)
  state = 1 + (seed * 7919 + thread_index * 104729) %% (M - 1)
  for i = 1, %(warmup)d do draw() end
  -- Each thread's first body, for bench_http to compare with Python's; then the same start.
  local saved = state
  io.write(string.format("FIRST %%d %%s\\n", thread_index, body()))
  state = saved
  wrk.headers["Content-Type"] = "application/json"
end

function request()
  return wrk.format("POST", nil, wrk.headers, body())
end
"""


def wrk_script(seed: int = SEED) -> str:
    """wrk's Lua for the varied route (without the ``done`` hook, which bench_http adds)."""
    return _LUA % {
        "modulus": MODULUS, "multiplier": MULTIPLIER, "warmup": WARMUP_DRAWS, "seed": seed,
        "presets": ", ".join(json.dumps(p) for p in PRESETS),
        "template": json.dumps(TEMPLATE),
        "prompt_lo": PROMPT_TOKENS[0], "prompt_hi": PROMPT_TOKENS[1],
        "output_lo": OUTPUT_TOKENS[0], "output_hi": OUTPUT_TOKENS[1],
        "rate_lo": TARGET_REQUESTS_PER_S[0], "rate_hi": TARGET_REQUESTS_PER_S[1],
    }


if __name__ == "__main__":
    for text in VariedBodies().take(int(sys.argv[1]) if len(sys.argv) > 1 else 5):
        print(text)
