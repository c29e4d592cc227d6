"""The C API of libfgemma (include/fgemma/fgemma.h) declared for ctypes.

The library is found, in order: the FGEMMA_LIBRARY environment variable (a path), beside this
package (a wheel that bundles it), then the system's linker search (ctypes.util.find_library).
Calls into the library release the GIL, so other Python threads run (and may cancel) meanwhile.
"""
import ctypes
import ctypes.util
import os

ABI_VERSION = 4  # FGEMMA_ABI_VERSION this package was written against

TOKEN_CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int32, ctypes.POINTER(ctypes.c_char), ctypes.c_size_t,
                                  ctypes.c_void_p)


class ModelParams(ctypes.Structure):
    _fields_ = [("tokenizer_path", ctypes.c_char_p)]


class CallerParams(ctypes.Structure):
    _fields_ = [("cache_path", ctypes.c_char_p), ("n_ctx", ctypes.c_uint32), ("n_threads", ctypes.c_int32),
                ("max_tokens", ctypes.c_uint32), ("time_budget_ms", ctypes.c_double),
                ("restricted_head", ctypes.c_bool), ("jump_forward", ctypes.c_bool),
                ("trust_content_tokens", ctypes.c_bool), ("draft", ctypes.c_bool),
                ("lora_path", ctypes.c_char_p), ("lora_scale", ctypes.c_float),
                ("share_passes", ctypes.c_bool)]


def _candidates():
    explicit = os.environ.get("FGEMMA_LIBRARY")
    if explicit:
        return [explicit]
    here = os.path.dirname(os.path.abspath(__file__))
    found = [os.path.join(here, name) for name in ("libfgemma.so", "libfgemma.so.1") if
             os.path.exists(os.path.join(here, name))]
    system = ctypes.util.find_library("fgemma")
    if system:
        found.append(system)
    return found or ["libfgemma.so.1"]


def _declare(lib):
    c = ctypes
    P = c.c_void_p
    sigs = {
        "fgemma_abi_version": (c.c_int32, []),
        "fgemma_version": (c.c_char_p, []),
        "fgemma_status_name": (c.c_char_p, [c.c_int]),
        "fgemma_last_error": (c.c_char_p, []),
        "fgemma_model_default_params": (ModelParams, []),
        "fgemma_model_load": (c.c_int, [c.c_char_p, ModelParams, c.POINTER(P)]),
        "fgemma_model_free": (None, [P]),
        "fgemma_model_vocab_size": (c.c_int32, [P]),
        "fgemma_tokenize": (c.c_int64, [P, c.c_char_p, c.c_size_t, c.c_bool, c.c_bool, c.POINTER(c.c_int32),
                                        c.c_size_t]),
        "fgemma_detokenize": (c.c_int64, [P, c.POINTER(c.c_int32), c.c_size_t, c.c_bool, c.c_char_p, c.c_size_t]),
        "fgemma_render": (c.c_int64, [P, c.c_char_p, c.c_char_p, c.c_size_t]),
        "fgemma_caller_default_params": (CallerParams, []),
        "fgemma_caller_new": (c.c_int, [P, CallerParams, c.POINTER(P)]),
        "fgemma_caller_free": (None, [P]),
        "fgemma_caller_call": (c.c_int, [P, c.c_char_p, c.c_char_p, c.c_char_p, TOKEN_CALLBACK, P]),
        "fgemma_caller_call_openai": (c.c_int, [P, c.c_char_p, TOKEN_CALLBACK, P]),
        "fgemma_caller_result_json": (c.c_int64, [P, c.c_char_p, c.c_size_t]),
        "fgemma_caller_cancel": (c.c_int, [P]),
        "fgemma_caller_prompt_tokens": (c.c_int64, [P, c.POINTER(c.c_int32), c.c_size_t]),
    }
    for name, (restype, argtypes) in sigs.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes


_lib = None


def lib():
    """The loaded library (loaded on first use); OSError names every place tried."""
    global _lib
    if _lib is None:
        errors = []
        for path in _candidates():
            try:
                candidate = ctypes.CDLL(path)
                _declare(candidate)
            except (OSError, AttributeError) as e:
                errors.append(f"{path}: {e}")
                continue
            if candidate.fgemma_abi_version() != ABI_VERSION:
                errors.append(f"{path}: ABI version {candidate.fgemma_abi_version()}, expected {ABI_VERSION}")
                continue
            _lib = candidate
            break
        if _lib is None:
            raise OSError("cannot load libfgemma (set FGEMMA_LIBRARY to its path): " + "; ".join(errors))
    return _lib


def read_text(fill):
    """Calls a C function that fills a caller-owned buffer (returning the length it needs, or a
    negative status) twice at most: once to learn the size, once to fill."""
    cap = 4096
    while True:
        buf = ctypes.create_string_buffer(cap)
        n = fill(buf, cap)
        if n < 0:
            return n, None
        if n < cap:
            return n, buf.raw[:n]
        cap = n + 1
