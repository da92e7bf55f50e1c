"""The package tells the CUDA backend where pip put NVRTC: the `nvidia` package's directories
(docs/codegen.md §5.1), whose NVRTC files become candidates of the C++ side's choice."""

import importlib
import json
import os
import subprocess
import sys

from widefuse import _widefuse, nvrtc


def _nvidia_package(root):
    """A `nvidia` namespace package under `root` laid out as pip's NVRTC wheels lay it out
    (the CUDA 13 wheel's cu13/lib, the CUDA 12 one's cuda_nvrtc/lib); no libraries in it."""
    package = root / "nvidia"
    (package / "cu13" / "lib").mkdir(parents=True)
    (package / "cuda_nvrtc" / "lib").mkdir(parents=True)
    return package


def test_finds_every_part_of_the_nvidia_namespace_package(tmp_path, monkeypatch):
    first = _nvidia_package(tmp_path / "site-packages")
    second = _nvidia_package(tmp_path / "user-site")
    monkeypatch.syspath_prepend(str(second.parent))
    monkeypatch.syspath_prepend(str(first.parent))
    importlib.invalidate_caches()
    directories = nvrtc.nvidia_package_directories()
    assert str(first) in directories and str(second) in directories
    assert directories.index(str(first)) < directories.index(str(second))


def test_no_nvidia_package_gives_no_directories(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "path", [str(tmp_path)])
    assert nvrtc.nvidia_package_directories() == []


def test_a_regular_nvidia_package_beside_a_namespace_part_gives_both(tmp_path, monkeypatch):
    # torch's CUDA 12 wheels can leave an __init__.py in one site-packages' nvidia/: an import
    # would then see that directory alone.
    regular = _nvidia_package(tmp_path / "venv")
    (regular / "__init__.py").write_text("")
    part = _nvidia_package(tmp_path / "user-site")
    monkeypatch.setattr(sys, "path", [str(regular.parent), str(part.parent)])
    assert nvrtc.nvidia_package_directories() == [str(regular), str(part)]


def test_registered_directories_become_nvrtc_candidates(tmp_path, monkeypatch):
    package = _nvidia_package(tmp_path / "site-packages")
    monkeypatch.syspath_prepend(str(package.parent))
    monkeypatch.delenv("WIDEFUSE_NVRTC_LIBRARY", raising=False)
    importlib.invalidate_caches()
    nvrtc.register_nvidia_packages()
    candidates = _widefuse.nvrtc_candidate_paths()
    assert f"{package}/cu13/lib/libnvrtc.so.13" in candidates
    assert f"{package}/cuda_nvrtc/lib/libnvrtc.so.12" in candidates
    # The toolkit's sonames come first; the order only decides between equal versions.
    assert candidates[0] == "libnvrtc.so.13"


def test_an_explicit_nvrtc_is_the_only_candidate(monkeypatch):
    monkeypatch.setenv("WIDEFUSE_NVRTC_LIBRARY", "/opt/cuda/lib64/libnvrtc.so.12")
    assert _widefuse.nvrtc_candidate_paths() == ["/opt/cuda/lib64/libnvrtc.so.12"]


def test_importing_widefuse_registers_the_nvidia_packages(tmp_path):
    # In a child: this process imported widefuse before the package existed.
    package = _nvidia_package(tmp_path / "site-packages")
    path = os.pathsep.join(filter(None, [str(package.parent), os.environ.get("PYTHONPATH")]))
    env = {name: value for name, value in os.environ.items() if name != "WIDEFUSE_NVRTC_LIBRARY"}
    child = subprocess.run(
        [sys.executable, "-c", "import json, widefuse\n"
         "print(json.dumps(widefuse._widefuse.nvrtc_candidate_paths()))"],
        env={**env, "PYTHONPATH": path}, capture_output=True, text=True, timeout=120)
    assert child.returncode == 0, child.stderr
    candidates = json.loads(child.stdout)
    assert f"{package}/cu13/lib/libnvrtc.so.13" in candidates
    assert f"{package}/cuda_nvrtc/lib/libnvrtc.so.12" in candidates
