"""yardstick shim: nvfuser.nvfuser_version (widefuse has no counterpart)."""
import widefuse as _wf

_V = getattr(_wf, "nvfuser_version", None)
if _V is not None and hasattr(_V, "Version"):
    Version = _V.Version
else:
    from . import _missing

    Version = _missing("nvfuser_version.Version")
