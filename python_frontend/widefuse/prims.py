"""Thunder's prims that traced optimizer code calls: ``import widefuse as thunder`` makes
``thunder.prims.copy_`` widefuse's."""

from .functions import copy_

__all__ = ["copy_"]
