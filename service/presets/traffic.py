"""Traffic presets: request-size histograms of published LLM serving traces. Pure data.

Each preset is a list of buckets (prompt tokens, output tokens, share of the requests), with
the trace it was computed from. The buckets bin the trace's requests by prompt length on a
doubling grid (0-255, 256-511, 512-1023, 1024-2047, 2048-4095, 4096 and more tokens); a
bucket's prompt and output tokens are the means of its requests (rounded to whole tokens) and
its share is its requests / all requests. The bins and means were computed from the released
CSV files (commit b469a11 of github.com/Azure/AzurePublicDataset, ``data/``); the trace itself
is not copied here. A bucket's mean understates its longest prompts: memory is sized for the
mean, not the bucket's tail.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from service.engine.types import TrafficBucket

AZURE_2023 = (
    "Azure LLM inference trace 2023 (Patel et al., \"Splitwise: Efficient generative LLM "
    "inference using phase splitting\", ISCA 2024), released as "
    "https://github.com/Azure/AzurePublicDataset/blob/master/AzureLLMInferenceDataset2023.md "
    "(CC-BY); sampled from Azure production LLM inference services in November 2023"
)


@dataclass(frozen=True)
class TrafficPreset:
    id: str
    name: str
    buckets: tuple[TrafficBucket, ...]
    source: str
    notes: str = ""

    @property
    def mean_prompt_tokens(self) -> float:
        return sum(b.prompt_tokens * b.share for b in self.buckets)

    @property
    def mean_output_tokens(self) -> float:
        return sum(b.output_tokens * b.share for b in self.buckets)


def _buckets(rows: tuple[tuple[int, int, int], ...]) -> tuple[TrafficBucket, ...]:
    """(prompt mean, output mean, requests) rows -> buckets with shares = requests / total."""
    total = sum(n for _, _, n in rows)
    return tuple(TrafficBucket(p, o, n / total) for p, o, n in rows)


TRAFFIC_PRESETS: dict[str, TrafficPreset] = {
    p.id: p
    for p in (
        TrafficPreset(
            "azure-conversation-2023",
            "Chat (Azure conversation trace, 2023)",
            # 19,366 requests of AzureLLMInferenceTrace_conv.csv: prompt median 1,020, mean
            # 1,155 tokens; output median 129, mean 211 tokens (the Splitwise paper's
            # "conversation" service). Prompt bins 0-255 .. 4096+ (the one request over 8,192
            # tokens is in the last bin).
            _buckets((
                (172, 142, 2601),
                (398, 95, 5041),
                (943, 319, 2153),
                (1198, 341, 6868),
                (3395, 80, 2287),
                (4538, 79, 416),
            )),
            AZURE_2023 + "; file data/AzureLLMInferenceTrace_conv.csv",
            "A chat service: mostly 0.25-2k-token prompts (history + question) with 80-340-token "
            "answers; 14% of the requests have prompts of 2k+ tokens.",
        ),
        TrafficPreset(
            "azure-code-2023",
            "Long prompts, short outputs (Azure code trace, 2023)",
            # 8,819 requests of AzureLLMInferenceTrace_code.csv: prompt median 1,469, mean
            # 2,048 tokens; output median 13, mean 28 tokens (the Splitwise paper's "coding"
            # service: code completion).
            _buckets((
                (120, 28, 1416),
                (377, 30, 636),
                (783, 28, 1287),
                (1486, 27, 2171),
                (2805, 28, 2068),
                (6136, 28, 1241),
            )),
            AZURE_2023 + "; file data/AzureLLMInferenceTrace_code.csv",
            "Prefill-heavy: long contexts (14% of the prompts over 4k tokens) and ~28-token "
            "outputs, the shape of code completion, and the nearest published trace to "
            "long-context summarisation/RAG (long input, short output).",
        ),
    )
}


def preset_out(preset: TrafficPreset) -> dict[str, Any]:
    """JSON-ready view of a traffic preset."""
    return {
        "id": preset.id,
        "name": preset.name,
        "buckets": [{"prompt_tokens": b.prompt_tokens, "output_tokens": b.output_tokens,
                     "share": round(b.share, 9)} for b in preset.buckets],
        "mean_prompt_tokens": round(preset.mean_prompt_tokens, 1),
        "mean_output_tokens": round(preset.mean_output_tokens, 1),
        "source": preset.source,
        "notes": preset.notes,
    }


def unknown_traffic_preset_message(name: str) -> str:
    return (f"unknown traffic preset {name!r}; one of "
            f"{', '.join(sorted(TRAFFIC_PRESETS))}")
