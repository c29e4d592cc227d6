"""Rows in the Mobile Actions layout -> token ids, with the prompt rendered by fgemma itself.

For each row: `fgemma render` of {tools, user turn, add_generation_prompt} is the exact prompt
`fgemma eval`/`call` feeds the model; `fgemma render --no-generation-prompt` of the whole exchange
(arguments as JSON objects, as the template wants them) gives the model's turn, which is the text
after that prompt up to and including the marker that ends the turn (<start_function_response>
after a call, <end_of_turn> after text). `fgemma tokenize` turns both into ids in one process.
"""
import json
import os
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor

TURN_ENDS = ("<start_function_response>", "<end_of_turn>")


def _render(fgemma, request):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(request, f)
        path = f.name
    try:
        flags = [] if request["add_generation_prompt"] else ["--no-generation-prompt"]
        out = subprocess.run([fgemma, "render", "--request", path] + flags, check=True, capture_output=True)
        return out.stdout.decode("utf-8")
    finally:
        os.unlink(path)


def _assistant_with_objects(message):
    if not message.get("tool_calls"):
        return message
    calls = []
    for c in message["tool_calls"]:
        fn = dict(c["function"])
        if isinstance(fn["arguments"], str):
            fn["arguments"] = json.loads(fn["arguments"])
        calls.append({**c, "function": fn})
    return {**message, "tool_calls": calls}


def render_row(fgemma, row):
    user, answer = row["messages"][0], row["messages"][1]
    prompt = _render(fgemma, {"tools": row["tools"], "messages": [user], "add_generation_prompt": True})
    full = _render(fgemma, {"tools": row["tools"], "messages": [user, _assistant_with_objects(answer)],
                            "add_generation_prompt": False})
    if not full.startswith(prompt):
        raise ValueError("the exchange does not start with the prompt: " + user["content"])
    turn = full[len(prompt):]
    cut = min((turn.find(m) + len(m) for m in TURN_ENDS if m in turn), default=-1)
    if cut < 0:
        raise ValueError("the model turn has no end marker: " + repr(turn))
    return prompt, turn[:cut]


def tokenize_all(fgemma, tokenizer, texts):
    lines = "".join(json.dumps(t) + "\n" for t in texts)
    out = subprocess.run([fgemma, "tokenize", "--model", tokenizer, "--jsonl", "-"], input=lines.encode("utf-8"),
                         check=True, capture_output=True)
    ids = [json.loads(l) for l in out.stdout.decode("utf-8").splitlines()]
    if len(ids) != len(texts):
        raise ValueError(f"tokenize gave {len(ids)} lines for {len(texts)} texts")
    return ids


def prepare(fgemma, tokenizer, rows, workers=2):
    """-> [{tools_key, prompt_ids, target_ids}] in the order of rows."""
    with ThreadPoolExecutor(workers) as pool:
        rendered = list(pool.map(lambda r: render_row(fgemma, r), rows))
    prompt_ids = tokenize_all(fgemma, tokenizer, [p for p, _ in rendered])
    full_ids = tokenize_all(fgemma, tokenizer, [p + t for p, t in rendered])
    out = []
    for row, p, f in zip(rows, prompt_ids, full_ids):
        if f[:len(p)] != p or len(f) == len(p):
            raise ValueError("prompt ids are not a prefix of the exchange's ids: " + row["messages"][0]["content"])
        out.append({"tools_key": json.dumps(row["tools"], sort_keys=True), "prompt_ids": p, "target_ids": f[len(p):]})
    return out
