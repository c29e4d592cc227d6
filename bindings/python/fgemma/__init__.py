"""fgemma: FunctionGemma on device, from Python (ctypes over libfgemma's C API).

    import fgemma
    with fgemma.Model.load("functiongemma-270m-it-q8_0.gguf") as model, \\
         fgemma.FunctionCaller(model, tools) as caller:
        print(caller.call("turn on the kitchen lights")["message"]["tool_calls"])
"""
from ._native import ABI_VERSION
from .caller import DEFAULT_PREAMBLE, FunctionCaller, to_openai_message
from .errors import FgemmaError
from .model import Model
from . import evaluation

__all__ = ["Model", "FunctionCaller", "FgemmaError", "evaluation", "version", "DEFAULT_PREAMBLE", "ABI_VERSION",
           "to_openai_message"]


def version():
    """The loaded library's version string."""
    from . import _native
    return _native.lib().fgemma_version().decode()


def __getattr__(name):
    """`fgemma.__version__`: the library's version (written once, in CMake's project(VERSION)); this
    package is a thin layer over the libfgemma it loads."""
    if name == "__version__":
        return version()
    raise AttributeError(f"module 'fgemma' has no attribute {name!r}")
