"""The SkyPilot task text is one YAML document of the whole task, though the ranking dumps the
service block (whose replicas follow the load) apart from the rest and keeps each part."""

from __future__ import annotations

import pytest
import yaml

from service.engine.cache import EngineCache, Memo
from service.engine.choice import provision as pv
from service.engine.types import InferenceSpec, TrainingSpec, Workload
from service.presets.catalog import PRESETS
from tests.unit.catalog_data import gpus_by_slug, load_offers

SERVE = Workload(kind="inference", precision="bf16", model=PRESETS["llama-3.1-8b"].model,
                 inference=InferenceSpec(prompt_tokens=512, output_tokens=128))
TRAIN = Workload(kind="training", precision="bf16", model=PRESETS["llama-3.1-8b"].model,
                 training=TrainingSpec(batch_size=64, seq_len=2048, tokens=1e9))


def _whole(text: str) -> str:
    """The text of the task parsed back and dumped as one mapping (keys in their order)."""
    body = text.split("\n", 1)[1]
    return yaml.dump(yaml.safe_load(body), Dumper=pv._DUMPER, sort_keys=False)


@pytest.mark.parametrize("workload", [SERVE, TRAIN], ids=["serving", "training"])
@pytest.mark.parametrize("replicas", [1, 3, 17, 250])
def test_the_task_is_the_dump_of_the_whole_mapping(workload: Workload, replicas: int) -> None:
    gpu = gpus_by_slug()["nvidia-h100-sxm5-80gb"]
    offers = [o for o in load_offers() if o.gpu_slug == gpu.slug and o.pricing != "purchase"]
    assert offers
    memo = Memo(EngineCache())
    for offer in offers:
        for instances in (1, 2):
            text, why = pv.skypilot_task(workload, gpu, offer, instances, replicas, False, None,
                                         memo)
            if text is None:
                continue
            assert text.split("\n", 1)[1] == _whole(text)
            again, _ = pv.skypilot_task(workload, gpu, offer, instances, replicas, False, None,
                                        memo)
            assert again == text
            if workload.kind == "inference":
                assert yaml.safe_load(text)["service"]["replicas"] == replicas
