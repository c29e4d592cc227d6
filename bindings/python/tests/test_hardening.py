"""Issue #30's binding findings: a model closed while one of its calls runs, and numbers no run can
honour (docs/limits.md)."""
import math
import threading
import time

import pytest

import fgemma
from conftest import fixture

INVALID_ARGUMENT, OUT_OF_RANGE = 1, 5


@pytest.mark.parametrize("use", ["tokenize", "detokenize", "render", "vocab_size"])
def test_close_while_a_model_call_runs_never_crashes(use):
    """At 3576020 tokenize ran on a freed model when close() came 0-20 ms into it (SIGSEGV). Now
    every call holds the model: it finishes (close frees after it) or, started after close, raises."""
    text = "ab c" * 1_000_000
    for delay in (0.0, 0.005, 0.02):
        model = fgemma.Model.load(fixture("models/mini-bf16"))
        ids = model.tokenize("ab c" * 1000) if use == "detokenize" else None
        calls = {
            "tokenize": lambda: model.tokenize(text),
            "detokenize": lambda: model.detokenize(ids * 1000),
            "render": lambda: model.render({"messages": [{"role": "user", "content": text[:800_000]}]}),
            "vocab_size": lambda: [model.vocab_size for _ in range(100_000)],
        }
        outcome = []

        def run():
            try:
                outcome.append(calls[use]())
            except fgemma.FgemmaError as e:
                outcome.append(e)

        worker = threading.Thread(target=run)
        worker.start()
        time.sleep(delay)
        model.close()
        worker.join()
        result = outcome[0]
        if isinstance(result, fgemma.FgemmaError):
            assert result.status == INVALID_ARGUMENT and "closed" in result.message
        else:
            assert result  # finished on the live model
        with pytest.raises(fgemma.FgemmaError):
            model.tokenize("x")


@pytest.mark.parametrize("kwargs, status, words", [
    ({"threads": 2000}, OUT_OF_RANGE, "threads"),
    ({"threads": 2**31 - 1}, OUT_OF_RANGE, "threads"),
    ({"context": 10**6}, INVALID_ARGUMENT, "max_position_embeddings"),
    ({"context": 0}, INVALID_ARGUMENT, "n_ctx"),
    ({"time_budget_ms": math.inf}, INVALID_ARGUMENT, "time_budget_ms"),
    ({"time_budget_ms": math.nan}, INVALID_ARGUMENT, "time_budget_ms"),
    ({"time_budget_ms": 10**400}, INVALID_ARGUMENT, "time_budget_ms"),
    ({"time_budget_ms": 1e12}, OUT_OF_RANGE, "time_budget_ms"),
    ({"lora_scale": math.nan}, INVALID_ARGUMENT, "lora_scale"),
    ({"lora_scale": -math.inf}, INVALID_ARGUMENT, "lora_scale"),
])
def test_numbers_no_run_can_honour_are_refused_at_once(model, tools, kwargs, status, words):
    """At 3576020: 2,000 threads were made, 2**31-1 hung, inf failed every call, NaN meant none."""
    started = time.monotonic()
    with pytest.raises(fgemma.FgemmaError) as e:
        fgemma.FunctionCaller(model, tools, **kwargs)
    assert e.value.status == status, e.value.message
    assert words in e.value.message
    assert threading.active_count() < 50
    assert time.monotonic() - started < 60  # 2**31-1 threads used to hang here


def test_limits_themselves_are_accepted(model, tools):
    with fgemma.FunctionCaller(model, tools, threads=1, time_budget_ms=86_400_000, lora_scale=1000) as caller:
        assert caller.call("turn on the kitchen lights", "required")["finish_reason"] == "tool_calls"
