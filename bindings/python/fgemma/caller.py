"""The function-calling engine over one tool catalog: constrained decoding, the catalog cache."""
import ctypes
import json
import math
import os
import queue
import threading

from . import _native
from .errors import FgemmaError, check
from .model import INVALID_ARGUMENT, Model, _path_bytes

# The developer turn `fgemma call` writes before an utterance (FunctionGemma's own preamble).
DEFAULT_PREAMBLE = "You are a model that can do function calling with the following functions"


def _finite(value, name, minimum=None):
    """`value` as a float when it is a finite number (not a bool) >= minimum; NaN, infinities and
    ints past a float's range are refused here (the C API checks the upper limits, docs/limits.md)."""
    number = None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            number = float(value)
        except OverflowError:
            pass
    if number is None or not math.isfinite(number) or (minimum is not None and number < minimum):
        kind = "a finite number" if minimum is None else f"a finite number >= {minimum}"
        raise FgemmaError(INVALID_ARGUMENT, f"{name}: expected {kind}, got {value!r}")
    return number


def _tools_json(tools):
    if isinstance(tools, (str, bytes)):
        try:
            tools = json.loads(tools)
        except ValueError as e:
            raise FgemmaError(INVALID_ARGUMENT, f"tools: not JSON: {e}") from None
    if isinstance(tools, dict) and "tools" in tools:
        tools = tools["tools"]
    if not isinstance(tools, list):
        raise FgemmaError(INVALID_ARGUMENT, f"tools: expected a list of tools, got {type(tools).__name__}")
    return json.dumps(tools).encode("utf-8")


def _messages(messages, system):
    """An utterance becomes FunctionGemma's developer preamble (or `system`) plus the user turn."""
    if isinstance(messages, str):
        return [{"role": "developer", "content": system or DEFAULT_PREAMBLE}, {"role": "user", "content": messages}]
    if isinstance(messages, (list, tuple)):
        return list(messages)
    raise FgemmaError(INVALID_ARGUMENT,
                      f"messages: expected an utterance (str) or a list of messages, got {type(messages).__name__}")


def _tool_choice(choice):
    if choice is None:
        return None
    if isinstance(choice, dict):
        return json.dumps(choice).encode("utf-8")
    if isinstance(choice, str):
        return choice.encode("utf-8")
    raise FgemmaError(INVALID_ARGUMENT, f"tool_choice: expected a string or an object, got {type(choice).__name__}")


def to_openai_message(outcome):
    """The outcome JSON of the C API as an OpenAI chat-completions choice: message + finish_reason.
    The whole outcome (timing, errors) stays under "fgemma"."""
    calls = [{"id": f"call_{i}", "type": "function",
              "function": {"name": c["name"], "arguments": json.dumps(c["arguments"], ensure_ascii=False)}}
             for i, c in enumerate(outcome.get("calls", []))]
    message = {"role": "assistant", "content": outcome.get("text")}
    if calls:
        message["tool_calls"] = calls
    return {"message": message, "finish_reason": "tool_calls" if calls else "stop", "fgemma": outcome}


class _StreamClosed(Exception):
    """Raised inside the token callback when the consumer of stream() stopped iterating."""


class FunctionCaller:
    """Turns utterances into calls of `tools`. One call at a time per caller (calls from several
    threads wait for each other); cancel() may be called from any thread. Close it, or use it as
    a context manager; a closed caller raises FgemmaError when used, never crashes.

    Numbers are checked when it is made (docs/limits.md): threads 0 (all cores) to 256, context 1
    to the model's maximum, time_budget_ms finite from 0 (none) to 86,400,000, lora_scale finite
    with |lora_scale| <= 1000; others raise FgemmaError naming the argument."""

    def __init__(self, model, tools, cache_path=None, context=4096, threads=0, max_tokens=0, time_budget_ms=0.0,
                 trust_content_tokens=False, draft=True, lora=None, lora_scale=1.0, share_passes=False):
        if not isinstance(model, Model):
            raise FgemmaError(INVALID_ARGUMENT, f"model: expected a fgemma.Model, got {type(model).__name__}")
        self._tools = _tools_json(tools)
        lib = _native.lib()
        params = lib.fgemma_caller_default_params()
        if cache_path is not None:
            params.cache_path = _path_bytes(cache_path, "cache_path")
        for name, value in (("context", context), ("threads", threads), ("max_tokens", max_tokens)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 0 or value >= 2**31:
                raise FgemmaError(INVALID_ARGUMENT, f"{name}: expected a non-negative int, got {value!r}")
        params.n_ctx, params.n_threads, params.max_tokens = context, threads, max_tokens
        params.time_budget_ms = _finite(time_budget_ms, "time_budget_ms", minimum=0)
        # False: control tokens only from the chat template ("<end_of_turn>" in a message is text);
        # True: the plain Hugging Face tokenization, for content fully trusted.
        if not isinstance(trust_content_tokens, bool):
            raise FgemmaError(INVALID_ARGUMENT, f"trust_content_tokens: expected a bool, got {trust_content_tokens!r}")
        params.trust_content_tokens = trust_content_tokens
        # Exact speculative drafts: the same output in fewer passes; False only for comparisons.
        if not isinstance(draft, bool):
            raise FgemmaError(INVALID_ARGUMENT, f"draft: expected a bool, got {draft!r}")
        params.draft = draft
        # A PEFT LoRA adapter directory applied over the model at run time (None: the base alone).
        if lora is not None:
            params.lora_path = _path_bytes(lora, "lora")
        params.lora_scale = _finite(lora_scale, "lora_scale")
        # Callers of one model with share_passes and equal context, threads and adapter share
        # forward passes while they call at once from several threads (same answers).
        if not isinstance(share_passes, bool):
            raise FgemmaError(INVALID_ARGUMENT, f"share_passes: expected a bool, got {share_passes!r}")
        params.share_passes = share_passes
        self._model = model
        model_handle = model._acquire()
        handle = ctypes.c_void_p()
        try:
            check(lib.fgemma_caller_new(model_handle, params, ctypes.byref(handle)))
        except BaseException:
            model._release()
            raise
        self._handle = handle
        self._call_lock = threading.Lock()   # one call at a time
        self._state_lock = threading.Lock()  # the handle's life, for cancel() racing close()

    def _live(self):
        if self._handle is None:
            raise FgemmaError(INVALID_ARGUMENT, "the function caller is closed")
        return self._handle

    def call(self, messages, tool_choice="auto", on_token=None, system=None):
        """Runs one call: `messages` is an utterance (str) or a list of chat messages. Returns
        {"message": OpenAI assistant message, "finish_reason": ..., "fgemma": outcome with timing}.
        `on_token(token_id, text)` sees each generated token; if it raises, the call is cancelled and
        the exception re-raised here."""
        msgs = json.dumps(_messages(messages, system)).encode("utf-8")
        choice = _tool_choice(tool_choice)
        if on_token is not None and not callable(on_token):
            raise FgemmaError(INVALID_ARGUMENT, f"on_token: expected a callable, got {type(on_token).__name__}")
        raised = []

        def forward(token, text, length, _user):
            if on_token is None:
                return 0
            try:
                on_token(int(token), ctypes.string_at(text, length).decode("utf-8", "replace"))
                return 0
            except BaseException as e:  # noqa: B902 -- re-raised after the C call returns
                raised.append(e)
                return 1

        callback = _native.TOKEN_CALLBACK(forward)
        lib = _native.lib()
        with self._call_lock:
            handle = self._live()
            status = lib.fgemma_caller_call(handle, self._tools, msgs, choice, callback, None)
            if raised:
                raise raised[0]
            check(status)
            n, raw = _native.read_text(lambda buf, cap: lib.fgemma_caller_result_json(handle, buf, cap))
            check(-n if n < 0 else 0)
        return to_openai_message(json.loads(raw))

    def stream(self, messages, tool_choice="auto", system=None):
        """Yields {"type": "token", "token": id, "text": str} as tokens are generated, then
        {"type": "result", **call result}. Leaving the loop early stops the call at its next token."""
        events = queue.Queue()
        stop = threading.Event()
        done = object()

        def on_token(token, text):
            if stop.is_set():
                raise _StreamClosed()
            events.put({"type": "token", "token": token, "text": text})

        def run():
            try:
                events.put({"type": "result", **self.call(messages, tool_choice, on_token=on_token, system=system)})
            except _StreamClosed:
                pass
            except BaseException as e:  # handed to the consumer
                events.put(e)
            events.put(done)

        worker = threading.Thread(target=run, daemon=True)
        worker.start()
        try:
            while True:
                item = events.get()
                if item is done:
                    return
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            stop.set()
            worker.join()

    def prompt_tokens(self):
        """Token ids of the prompt of the last call that ran (<bos>, catalog, messages)."""
        lib = _native.lib()
        with self._call_lock:
            handle = self._live()
            n = lib.fgemma_caller_prompt_tokens(handle, None, 0)
            check(-n if n < 0 else 0)
            ids = (ctypes.c_int32 * max(n, 1))()
            n = lib.fgemma_caller_prompt_tokens(handle, ids, n)
            check(-n if n < 0 else 0)
            return list(ids[:n])

    def cancel(self):
        """Cancels the call in progress (it raises FgemmaError FGEMMA_ERR_CANCELLED) or, if none,
        the next one. Safe from any thread."""
        with self._state_lock:
            check(_native.lib().fgemma_caller_cancel(self._live()))

    def close(self):
        """Frees the caller (waiting for a call in progress). Closing twice is harmless."""
        with self._call_lock, self._state_lock:
            if self._handle is not None:
                _native.lib().fgemma_caller_free(self._handle)
                self._handle = None
                self._model._release()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            if getattr(self, "_handle", None) is not None:
                self.close()
        except Exception:
            pass
