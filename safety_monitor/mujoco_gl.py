"""MuJoCo, imported here for the whole package: `import mujoco` loads the OpenGL backend `MUJOCO_GL` names,
although the package never renders, and a backend this machine lacks (`osmesa` without libOSMesa) or one
MuJoCo does not know fails that import with an error that names neither (`'NoneType' object has no attribute
'glGetError'`). Here it becomes one line naming the variable, its value and the fix.
"""

import os

from safety_monitor.errors import EnvironmentSetupError

_FIX = "set MUJOCO_GL=egl on a machine without a display (libEGL, Debian package libegl1), or unset it"

try:
    import mujoco
except Exception as exc:
    _backend = os.environ.get("MUJOCO_GL", "")
    if not _backend.strip():
        raise
    _what = (str(exc).strip().splitlines() or [""])[0]
    if isinstance(exc, RuntimeError) and "MUJOCO_GL" in _what:
        raise EnvironmentSetupError(f"MUJOCO_GL={_backend} is not an OpenGL backend MuJoCo knows: {_FIX}") from exc
    raise EnvironmentSetupError(
        f"MUJOCO_GL={_backend}: MuJoCo cannot load this OpenGL backend, its library is missing "
        f"({type(exc).__name__}: {_what}): {_FIX}"
    ) from exc

__all__ = ["mujoco"]
