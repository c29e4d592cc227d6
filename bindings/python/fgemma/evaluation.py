"""Evaluation over the Mobile Actions layout: one JSON object per line with `metadata` ("train" or
"eval"), `tools` (OpenAI function tools) and `messages` (the user turn(s), then the expected
assistant turn: `tool_calls` whose `arguments` are JSON text, or `content` when no call is expected).
"""
import json
import time
from dataclasses import dataclass, field

from .caller import FunctionCaller
from .errors import FgemmaError
from .model import INVALID_ARGUMENT


@dataclass
class Row:
    line: int                      # 1-based line in the file
    tools: list
    messages: list                 # what the model sees (the expected turn removed)
    expected_calls: list           # [(name, arguments dict)]; empty when no call is expected
    expected_text: str = None


def _expected_calls(turn, where):
    calls = []
    for i, c in enumerate(turn.get("tool_calls") or []):
        fn = c.get("function") if isinstance(c, dict) else None
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
            raise FgemmaError(INVALID_ARGUMENT, f"{where}.tool_calls[{i}].function.name: missing")
        args = fn.get("arguments", "{}")
        try:
            args = json.loads(args) if isinstance(args, str) else args
        except ValueError as e:
            raise FgemmaError(INVALID_ARGUMENT, f"{where}.tool_calls[{i}].function.arguments: not JSON: {e}") from None
        calls.append((fn["name"], args))
    return calls


def read_rows(path, split="eval"):
    """The rows of `split` ("train", "eval" or None for all) of a Mobile Actions JSONL file."""
    rows = []
    with open(path, encoding="utf-8") as f:
        for n, text in enumerate(f, 1):
            if not text.strip():
                continue
            where = f"{path}:{n}"
            try:
                obj = json.loads(text)
            except ValueError as e:
                raise FgemmaError(INVALID_ARGUMENT, f"{where}: not JSON: {e}") from None
            if not isinstance(obj, dict) or not isinstance(obj.get("messages"), list) or not obj["messages"]:
                raise FgemmaError(INVALID_ARGUMENT, f"{where}: expected an object with a non-empty 'messages' list")
            if split is not None and obj.get("metadata") != split:
                continue
            *given, expected = obj["messages"]
            if not isinstance(expected, dict) or expected.get("role") != "assistant":
                raise FgemmaError(INVALID_ARGUMENT, f"{where}: the last message must be the expected assistant turn")
            rows.append(Row(n, obj.get("tools") or [], given, _expected_calls(expected, f"{where}.messages[-1]"),
                            expected.get("content")))
    return rows


@dataclass
class Report:
    rows: int = 0
    exact: int = 0              # every call's name and arguments equal (as JSON values), or no call when none expected
    name_correct: int = 0       # rows whose called names equal the expected ones
    no_call_rows: int = 0
    no_call_correct: int = 0
    arg_true_positive: int = 0
    arg_predicted: int = 0
    arg_expected: int = 0
    latencies_ms: list = field(default_factory=list)
    per_function: dict = field(default_factory=dict)  # name -> [rows, exact]
    seconds: float = 0.0

    def summary(self):
        lat = sorted(self.latencies_ms)

        def pct(p):
            return lat[min(len(lat) - 1, int(p * len(lat)))] if lat else 0.0

        ratio = lambda a, b: a / b if b else 0.0  # noqa: E731
        return {"rows": self.rows, "exact_match": ratio(self.exact, self.rows),
                "function_name_accuracy": ratio(self.name_correct, self.rows),
                "argument_precision": ratio(self.arg_true_positive, self.arg_predicted),
                "argument_recall": ratio(self.arg_true_positive, self.arg_expected),
                "no_call_accuracy": ratio(self.no_call_correct, self.no_call_rows),
                "latency_ms_p50": pct(0.50), "latency_ms_p95": pct(0.95),
                "rows_per_second": ratio(self.rows, self.seconds),
                "per_function": {k: {"rows": v[0], "exact_match": ratio(v[1], v[0])}
                                 for k, v in sorted(self.per_function.items())}}


def score_row(report, row, produced_calls):
    """Adds one row's outcome (produced_calls: [(name, arguments dict)]) to `report`."""
    report.rows += 1
    exact = [(n, a) for n, a in produced_calls] == [(n, a) for n, a in row.expected_calls]
    report.exact += exact
    report.name_correct += [n for n, _ in produced_calls] == [n for n, _ in row.expected_calls]
    if not row.expected_calls:
        report.no_call_rows += 1
        report.no_call_correct += not produced_calls
    expected_pairs = {(n, k, json.dumps(v, sort_keys=True)) for n, a in row.expected_calls for k, v in a.items()}
    produced_pairs = {(n, k, json.dumps(v, sort_keys=True)) for n, a in produced_calls for k, v in a.items()}
    report.arg_true_positive += len(expected_pairs & produced_pairs)
    report.arg_predicted += len(produced_pairs)
    report.arg_expected += len(expected_pairs)
    for name in {n for n, _ in row.expected_calls} or {"(no call)"}:
        entry = report.per_function.setdefault(name, [0, 0])
        entry[0] += 1
        entry[1] += exact


def evaluate(model, rows, tool_choice="auto", limit=None, **caller_options):
    """Runs every row (at most `limit`) and returns Report.summary(). Rows that share a tool list
    share one FunctionCaller, so its catalog state is computed once."""
    report = Report()
    callers = {}
    start = time.monotonic()
    try:
        for row in rows[:limit] if limit is not None else rows:
            key = json.dumps(row.tools, sort_keys=True)
            if key not in callers:
                callers[key] = FunctionCaller(model, row.tools, **caller_options)
            t0 = time.monotonic()
            result = callers[key].call(row.messages, tool_choice)
            report.latencies_ms.append((time.monotonic() - t0) * 1000)
            calls = [(c["name"], c["arguments"]) for c in result["fgemma"].get("calls", [])]
            score_row(report, row, calls)
    finally:
        for c in callers.values():
            c.close()
    report.seconds = time.monotonic() - start
    return report.summary()
