"""IMD Box: run the IMD worker inside a walled Docker container."""

import importlib
import importlib.util
import sys
import types

__version__ = "0.1.0"


class _OnFirstUse(types.ModuleType):
    """Stands in for a module until something reads a name from it; then imports it."""

    def __getattr__(self, attr: str):  # only for names the stand-in does not have yet
        if sys.modules.get(self.__name__) is self:
            del sys.modules[self.__name__]
        real = importlib.import_module(self.__name__)
        self.__dict__.update(real.__dict__)
        return getattr(real, attr)


# The docker SDK imports paramiko for ssh:// engines, a tenth of a second of every box
# command; box reaches those through the system's ssh client (engine.connect passes
# use_ssh_client), which never reads from paramiko. Not installed: the SDK's own error.
if "paramiko" not in sys.modules and importlib.util.find_spec("paramiko") is not None:
    sys.modules["paramiko"] = _OnFirstUse("paramiko")
