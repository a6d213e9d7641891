"""Known models as data (architecture numbers from their papers / HF config.json)."""

from service.presets.catalog import PRESETS, Preset, preset_to_dict

__all__ = ["PRESETS", "Preset", "preset_to_dict"]
