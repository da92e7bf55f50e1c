"""Where pip put NVRTC. The C++ side cannot know site-packages, so on import the package tells
it the directories of the ``nvidia`` package, where pip's CUDA wheels (torch's dependencies
among them) install NVRTC; the C++ side knows the files to look for in them and chooses among
every NVRTC it finds (docs/codegen.md §5.1)."""

from __future__ import annotations

import importlib.util

from . import _widefuse


def nvidia_package_directories() -> list[str]:
    """The directories of the ``nvidia`` package on sys.path, without importing it: a
    namespace package, so each site-packages may hold a part of it."""
    try:
        spec = importlib.util.find_spec("nvidia")
    except (ImportError, ValueError):
        return []
    if spec is None or spec.submodule_search_locations is None:
        return []
    return [str(location) for location in spec.submodule_search_locations]


def register_nvidia_packages() -> None:
    """Gives the C++ side the ``nvidia`` package directories found now."""
    _widefuse.add_nvrtc_package_directories(nvidia_package_directories())
