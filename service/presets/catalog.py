"""Model presets: real architecture numbers with their sources. Pure data, no I/O."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from service.engine.types import GenericModel, TransformerModel

HF = "https://huggingface.co/{}/blob/main/config.json"


@dataclass(frozen=True)
class Preset:
    id: str
    name: str
    family: str
    model: TransformerModel | GenericModel
    source: str
    notes: str = ""


def _t(
    name: str,
    params: float,
    layers: int,
    hidden: int,
    heads: int,
    kv_heads: int,
    vocab: int,
    ffn: int,
    **extra: Any,
) -> TransformerModel:
    return TransformerModel(
        params=params,
        layers=layers,
        hidden_size=hidden,
        attention_heads=heads,
        kv_heads=kv_heads,
        vocab_size=vocab,
        intermediate_size=ffn,
        name=name,
        **extra,
    )


_PRESETS: tuple[Preset, ...] = (
    Preset(
        "resnet-50",
        "ResNet-50 v1.5",
        "cnn",
        GenericModel(25.6e6, 8.2, 45.0, name="resnet-50", layers=54, layer_table="resnet-50"),
        "He et al. 2016 (arXiv:1512.03385) Table 1: 3.8-4.1 GMAC at 224x224; torchvision "
        "resnet50 weights: 25.6M params, 4.09 GMAC",
        "gflops_per_sample = 2 x 4.1 GMAC. activation_mb_per_sample ~45 MB at fp16 (batch 256 "
        "AMP training fits a 16 GB V100 in NVIDIA DeepLearningExamples).",
    ),
    Preset(
        "ssd300",
        "SSD300",
        "detector",
        GenericModel(35.6e6, 69.7, 80.0, name="ssd300", layers=36),
        "Liu et al. 2016 (arXiv:1512.02325); torchvision ssd300_vgg16: 35.6M params, 34.86 "
        "GMAC at 300x300",
        "Figures are the VGG-16 SSD300 (torchvision). MLPerf Training's SSD uses a ResNet-34 "
        "backbone at 300x300 (similar order); MLPerf Inference 'ssd-resnet34' runs at "
        "1200x1200 (~433 GFLOP) and is NOT this preset. Activation MB is an estimate.",
    ),
    Preset(
        "yolov8-l",
        "YOLOv8-L",
        "detector",
        GenericModel(43.7e6, 165.2, 250.0, name="yolov8-l", layers=110),
        "Ultralytics YOLOv8 model table (docs.ultralytics.com/models/yolov8): 43.7M params, "
        "165.2 GFLOPs at 640x640",
        "Activation MB per 640x640 image is an estimate.",
    ),
    Preset(
        "bert-base",
        "BERT-Base (uncased)",
        "bert",
        _t("bert-base", 110e6, 12, 768, 12, 12, 30522, 3072, encoder_only=True),
        HF.format("google-bert/bert-base-uncased"),
        "Devlin et al. 2019: 110M parameters. Encoder only: inference has no output tokens.",
    ),
    Preset(
        "bert-large",
        "BERT-Large (uncased)",
        "bert",
        _t("bert-large", 340e6, 24, 1024, 16, 16, 30522, 4096, encoder_only=True),
        HF.format("google-bert/bert-large-uncased"),
        "Devlin et al. 2019: 340M parameters (335M counted from the config).",
    ),
    Preset(
        "gpt-2",
        "GPT-2 (124M)",
        "gpt",
        _t("gpt-2", 124e6, 12, 768, 12, 12, 50257, 3072),
        HF.format("openai-community/gpt2"),
        "The smallest GPT-2; n_positions 1024.",
    ),
    Preset(
        "gpt-j-6b",
        "GPT-J 6B",
        "gpt",
        _t("gpt-j-6b", 6.05e9, 28, 4096, 16, 16, 50400, 16384),
        HF.format("EleutherAI/gpt-j-6b"),
        "MLPerf Inference datacenter LLM benchmark (v3.1+). Context 2048.",
    ),
    Preset(
        "llama-2-7b",
        "Llama 2 7B",
        "llama",
        _t("llama-2-7b", 6.74e9, 32, 4096, 32, 32, 32000, 11008),
        HF.format("meta-llama/Llama-2-7b-hf"),
        "Touvron et al. 2023. MHA (no GQA); context 4096.",
    ),
    Preset(
        "llama-2-13b",
        "Llama 2 13B",
        "llama",
        _t("llama-2-13b", 13.0e9, 40, 5120, 40, 40, 32000, 13824),
        HF.format("meta-llama/Llama-2-13b-hf"),
        "Touvron et al. 2023. MHA; context 4096.",
    ),
    Preset(
        "llama-2-70b",
        "Llama 2 70B",
        "llama",
        _t("llama-2-70b", 68.98e9, 80, 8192, 64, 8, 32000, 28672),
        HF.format("meta-llama/Llama-2-70b-hf"),
        "GQA with 8 KV heads; context 4096. MLPerf Inference LLM benchmark since v4.0.",
    ),
    Preset(
        "llama-3.1-8b",
        "Llama 3.1 8B",
        "llama",
        _t("llama-3.1-8b", 8.03e9, 32, 4096, 32, 8, 128256, 14336),
        HF.format("meta-llama/Llama-3.1-8B"),
        "GQA 8 KV heads; context 128k.",
    ),
    Preset(
        "llama-3.1-70b",
        "Llama 3.1 70B",
        "llama",
        _t("llama-3.1-70b", 70.55e9, 80, 8192, 64, 8, 128256, 28672),
        HF.format("meta-llama/Llama-3.1-70B"),
        "GQA 8 KV heads; context 128k.",
    ),
    Preset(
        "llama-3.1-405b",
        "Llama 3.1 405B",
        "llama",
        _t("llama-3.1-405b", 405.9e9, 126, 16384, 128, 8, 128256, 53248),
        HF.format("meta-llama/Llama-3.1-405B"),
        "Dense; GQA 8 KV heads; trained on 16k H100s at 38-43% MFU (Llama 3 paper).",
    ),
    Preset(
        "mistral-7b",
        "Mistral 7B v0.1",
        "mistral",
        _t("mistral-7b", 7.24e9, 32, 4096, 32, 8, 32000, 14336, sliding_window=4096),
        HF.format("mistralai/Mistral-7B-v0.1"),
        "GQA 8 KV heads; sliding-window attention 4096 (config.json sliding_window; Jiang et "
        "al. 2023, arXiv:2310.06825 §2): KV cache per sequence capped at 4096 tokens.",
    ),
    Preset(
        "mixtral-8x7b",
        "Mixtral 8x7B",
        "mistral",
        _t(
            "mixtral-8x7b",
            46.7e9,
            32,
            4096,
            32,
            8,
            32000,
            14336,
            experts=8,
            experts_per_token=2,
            active_params=12.9e9,
        ),
        HF.format("mistralai/Mixtral-8x7B-v0.1"),
        "Jiang et al. 2024 (arXiv:2401.04088): 46.7B total, 12.9B active per token, 8 experts, "
        "top-2 routing.",
    ),
    Preset(
        "gpt-3-175b",
        "GPT-3 175B",
        "gpt",
        _t("gpt-3-175b", 175e9, 96, 12288, 96, 96, 50257, 49152),
        "Brown et al. 2020 (arXiv:2005.14165) Table 2.1: 96 layers, d_model 12288, 96 heads",
        "Context 2048. MLPerf Training 'gpt3' benchmark.",
    ),
)

PRESETS: dict[str, Preset] = {p.id: p for p in _PRESETS}


def preset_to_dict(p: Preset) -> dict[str, Any]:
    """JSON-ready view of a preset for GET /v1/models."""
    model = asdict(p.model)
    kind = "transformer" if isinstance(p.model, TransformerModel) else "generic"
    return {
        "id": p.id,
        "name": p.name,
        "family": p.family,
        "model_type": kind,
        "model": model,
        "source": p.source,
        "notes": p.notes,
    }


def closest_presets(name: str, *, n: int = 3) -> list[str]:
    """Preset ids closest to ``name`` (difflib ratio >= 0.6), best first: for did-you-mean."""
    import difflib

    return difflib.get_close_matches(name.lower(), list(PRESETS), n=n, cutoff=0.6)


def unknown_preset_message(name: str) -> str:
    close = closest_presets(name)
    hint = f"; did you mean {' or '.join(close)}?" if close else "; see GET /v1/models"
    return f"unknown preset {name!r}{hint}"
