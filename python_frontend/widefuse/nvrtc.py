"""Where pip put NVRTC. The C++ side cannot know site-packages, so on import the package tells
it the directories of the ``nvidia`` package, where pip's CUDA wheels (torch's dependencies
among them) install NVRTC; the C++ side knows the files to look for in them and chooses among
every NVRTC it finds (docs/codegen.md §5.1)."""

from __future__ import annotations

import os
import sys

from . import _widefuse


def nvidia_package_directories() -> list[str]:
    """The ``nvidia`` directory of every sys.path entry, in path order, without importing
    it: pip's CUDA wheels install there, and ``nvidia`` is a namespace package in some
    environments (each site-packages holds a part) and a regular one in others (a wheel
    installed its ``__init__.py``; importing would then see one directory only)."""
    found: list[str] = []
    for entry in sys.path:
        directory = os.path.join(entry or os.getcwd(), "nvidia")
        if directory not in found and os.path.isdir(directory):
            found.append(directory)
    return found


def register_nvidia_packages() -> None:
    """Gives the C++ side the ``nvidia`` package directories found now."""
    _widefuse.add_nvrtc_package_directories(nvidia_package_directories())
