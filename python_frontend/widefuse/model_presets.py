"""Model presets: the parameter shapes of well-known models (GPT-2, BERT base, ViT-B/16,
LLaMA 7B, ...), computed from their public configurations, in the order torch's
``named_parameters()`` lists them. They are data, ``model_presets.json`` in this package, which
the command-line tools read too (``widefuse models`` lists them)."""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources

from ._widefuse import Error


@lru_cache(maxsize=1)
def _presets() -> dict[str, dict]:
    """The presets of model_presets.json by name, in the file's order (read once)."""
    text = resources.files(__package__).joinpath("model_presets.json").read_text()
    return {preset["name"]: preset for preset in json.loads(text)["presets"]}


def model_shapes(name: str) -> list[list[int]]:
    """The parameter shapes of model preset `name` (`widefuse models` lists them), in
    named_parameters() order; raises widefuse.Error naming the presets for an unknown name."""
    if not isinstance(name, str):
        raise TypeError(f"model_shapes(): the preset name must be a str, not "
                        f"{type(name).__name__}")
    presets = _presets()
    if name not in presets:
        raise Error(f"unknown model preset '{name}'; the presets are: {', '.join(presets)}")
    return [list(shape) for shape in presets[name]["shapes"]]
