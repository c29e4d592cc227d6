"""A loaded model: weights (memory-mapped), tokenizer and chat template."""
import contextlib
import ctypes
import json
import os
import threading

from . import _native
from .errors import FgemmaError, check, check_length

INVALID_ARGUMENT = 1


def _path_bytes(path, what):
    if not isinstance(path, (str, bytes, os.PathLike)):
        raise FgemmaError(INVALID_ARGUMENT, f"{what}: expected a path, got {type(path).__name__}")
    return os.fsencode(path)


def _text_bytes(text, what):
    if isinstance(text, bytes):
        return text
    if not isinstance(text, str):
        raise FgemmaError(INVALID_ARGUMENT, f"{what}: expected a string, got {type(text).__name__}")
    return text.encode("utf-8")


class Model:
    """An immutable model that any number of FunctionCallers on any threads may share.

    Close it (or use it as a context manager) after the callers made from it; a closed model raises
    FgemmaError when used, never crashes."""

    def __init__(self, path, tokenizer_path=None):
        """Loads `path`: a Hugging Face directory, a .safetensors file or a .gguf file (the same as
        Model.load). Anything but a path raises TypeError before the library is touched."""
        if not isinstance(path, (str, bytes, os.PathLike)):
            raise TypeError(f"Model(path): expected a path (str, bytes or os.PathLike), got {type(path).__name__}")
        if tokenizer_path is not None and not isinstance(tokenizer_path, (str, bytes, os.PathLike)):
            raise TypeError(f"Model(tokenizer_path=...): expected a path, got {type(tokenizer_path).__name__}")
        self._handle = None  # until the load succeeds: close() and __del__ of a failed load do nothing
        self._closed = True
        self._lock = threading.Lock()
        self._users = 0  # open FunctionCallers and calls in progress: the C model must outlive them
        lib = _native.lib()
        params = lib.fgemma_model_default_params()
        if tokenizer_path is not None:
            params.tokenizer_path = _path_bytes(tokenizer_path, "tokenizer_path")
        handle = ctypes.c_void_p()
        check(lib.fgemma_model_load(_path_bytes(path, "path"), params, ctypes.byref(handle)))
        self._handle = handle
        self._closed = False

    @classmethod
    def load(cls, path, tokenizer_path=None):
        """`path`: a Hugging Face directory, a .safetensors file or a .gguf file. Arguments that are no
        paths raise FgemmaError (INVALID_ARGUMENT), like every other argument of the package."""
        _path_bytes(path, "path")
        if tokenizer_path is not None:
            _path_bytes(tokenizer_path, "tokenizer_path")
        return cls(path, tokenizer_path)

    def _live(self):
        if self._closed:
            raise FgemmaError(INVALID_ARGUMENT, "the model is closed")
        return self._handle

    def _acquire(self):
        """A new user (a FunctionCaller, or one call below) of the C model; it calls _release when
        it is done, so a close() from another thread meanwhile frees the model only after it."""
        with self._lock:
            handle = self._live()
            self._users += 1
            return handle

    def _release(self):
        with self._lock:
            self._users -= 1
            self._free_if_unused()

    def _free_if_unused(self):
        if self._closed and self._users == 0 and self._handle is not None:
            _native.lib().fgemma_model_free(self._handle)
            self._handle = None

    @contextlib.contextmanager
    def _in_use(self):
        """The C model's handle, held for one call (a close() racing it waits for the call)."""
        handle = self._acquire()
        try:
            yield handle
        finally:
            self._release()

    @property
    def vocab_size(self):
        with self._in_use() as handle:
            return _native.lib().fgemma_model_vocab_size(handle)

    def tokenize(self, text, add_bos=False, parse_special=False):
        """Token ids of `text`; control tokens written in it are matched only with parse_special."""
        data = _text_bytes(text, "text")
        for name, flag in (("add_bos", add_bos), ("parse_special", parse_special)):
            if not isinstance(flag, bool):
                raise FgemmaError(INVALID_ARGUMENT, f"{name}: expected a bool, got {type(flag).__name__}")
        lib = _native.lib()
        cap = len(data) + 2
        with self._in_use() as handle:
            while True:
                out = (ctypes.c_int32 * cap)()
                n = check_length(lib.fgemma_tokenize(handle, data, len(data), add_bos, parse_special, out, cap))
                if n <= cap:
                    return list(out[:n])
                cap = n

    def detokenize(self, tokens, skip_special=False):
        ids = list(tokens) if isinstance(tokens, (list, tuple, range)) else None
        if ids is None or not all(isinstance(t, int) and not isinstance(t, bool) and -2**31 <= t < 2**31 for t in ids):
            raise FgemmaError(INVALID_ARGUMENT, "tokens: expected a list of 32-bit int token ids")
        arr = (ctypes.c_int32 * max(len(ids), 1))(*ids)
        with self._in_use() as handle:
            n, raw = _native.read_text(lambda buf, cap: _native.lib().fgemma_detokenize(
                handle, arr, len(ids), skip_special, buf, cap))
        check_length(n)
        return raw.decode("utf-8", "replace")

    def render(self, request):
        """The prompt text of a chat request (a dict or JSON text: tools, messages, ...)."""
        body = request if isinstance(request, (str, bytes)) else json.dumps(request)
        data = _text_bytes(body, "request")
        with self._in_use() as handle:
            n, raw = _native.read_text(lambda buf, cap: _native.lib().fgemma_render(handle, data, buf, cap))
        check_length(n)
        return raw.decode("utf-8")

    def close(self):
        """Closes the model: it cannot be used again, and its memory is freed once the last
        FunctionCaller made from it is closed too. Closing twice is harmless."""
        with self._lock:
            self._closed = True
            self._free_if_unused()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass
