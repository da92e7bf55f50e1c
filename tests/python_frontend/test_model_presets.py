"""widefuse.model_shapes: the model presets read from model_presets.json in the package (the
file the command-line tools embed): the published parameter counts of each model, fresh lists
per call, widefuse.Error for an unknown name, and the same totals as `widefuse models --json`
when the tools are built next to the package."""

import json
import subprocess
from pathlib import Path

import pytest

import widefuse

# (tensors, elements): the counts of each model's PyTorch module (named_parameters(), numel()).
KNOWN_TOTALS = {
    "tiny": (6, 16 + 3 + 1 + 0 + 30 + 17),
    "seed": (2, 2 * 1024 * 1024),
    "gpt2": (2 + 12 * 12 + 2, 124_439_808),
    "bert-base": (5 + 12 * 16 + 2, 109_482_240),
    "vit-b16": (4 + 12 * 12 + 2 + 2, 86_567_656),
    "llama-7b": (1 + 32 * 9 + 2, 6_738_415_616),
}


def elements(shapes):
    total = 0
    for shape in shapes:
        count = 1
        for extent in shape:
            count *= extent
        total += count
    return total


@pytest.mark.parametrize("name", list(KNOWN_TOTALS))
def test_presets_have_the_published_parameter_counts(name):
    shapes = widefuse.model_shapes(name)
    assert all(isinstance(shape, list) and all(type(e) is int and e >= 0 for e in shape)
               for shape in shapes)
    assert (len(shapes), elements(shapes)) == KNOWN_TOTALS[name]


def test_shapes_follow_the_modules_layout_and_are_fresh_lists():
    gpt2 = widefuse.model_shapes("gpt2")
    assert gpt2[0] == [50257, 768] and gpt2[4] == [768, 2304] and gpt2[-1] == [768]
    assert widefuse.model_shapes("vit-b16")[3] == [1, 197, 768]  # encoder.pos_embedding
    assert widefuse.model_shapes("seed") == [[1024, 1024], [1024, 1024]]
    gpt2[0].append(1)
    gpt2.clear()  # the caller's copy: the next call is unchanged
    assert widefuse.model_shapes("gpt2")[0] == [50257, 768]


def test_an_unknown_preset_names_the_presets():
    with pytest.raises(widefuse.Error) as error:
        widefuse.model_shapes("gpt3")
    message = str(error.value)
    assert "unknown model preset 'gpt3'" in message
    assert "tiny, seed, gpt2, bert-base, vit-b16, llama-7b" in message
    with pytest.raises(TypeError):
        widefuse.model_shapes(2)


def test_the_presets_are_the_package_s_json():
    # The file a wheel ships (pyproject.toml's wheel.packages takes the package's folder) and
    # the build copies next to the modules.
    path = Path(widefuse.__file__).parent / "model_presets.json"
    presets = json.loads(path.read_text())["presets"]
    assert [preset["name"] for preset in presets] == list(KNOWN_TOTALS)
    for preset in presets:
        assert preset["shapes"] == widefuse.model_shapes(preset["name"])


def test_the_tools_list_the_same_presets():
    cli = Path(widefuse.__file__).resolve().parents[2] / "bin" / "widefuse"
    if not cli.exists():
        pytest.skip("no build/bin/widefuse next to the package (an installed package)")
    result = subprocess.run([str(cli), "models", "--json"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    listed = {entry["name"]: (entry["tensors"], entry["elements"])
              for entry in json.loads(result.stdout)}
    assert listed == {name: (len(widefuse.model_shapes(name)),
                             elements(widefuse.model_shapes(name))) for name in KNOWN_TOTALS}
