#!/usr/bin/env python3
"""Calls `fgemma serve` with a tool catalog and prints the tool calls (standard library only).

    fgemma serve --model models/functiongemma-270m-it --port 8080 &
    python3 examples/python_client.py --tools tools.json "Turn on the kitchen lights"
"""
import argparse
import json
import sys
import urllib.error
import urllib.request


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("utterance")
    ap.add_argument("--url", default="http://127.0.0.1:8080")
    ap.add_argument("--model", default=None, help="model id (default: the first of /v1/models)")
    ap.add_argument("--tools", required=True, help="JSON array of {type: function, function: {...}}")
    ap.add_argument("--tool-choice", default="auto")
    ap.add_argument("--api-key", default=None)
    args = ap.parse_args()

    headers = {"Content-Type": "application/json"}
    if args.api_key:
        headers["Authorization"] = "Bearer " + args.api_key

    def request(path, body=None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(args.url + path, data=data, headers=headers)
        with urllib.request.urlopen(req, timeout=120) as resp:
            return json.load(resp)

    with open(args.tools, encoding="utf-8") as f:
        tools = json.load(f)
    try:
        model = args.model or request("/v1/models")["data"][0]["id"]
        reply = request("/v1/chat/completions", {
            "model": model,
            "tools": tools,
            "tool_choice": args.tool_choice,
            "messages": [{"role": "user", "content": args.utterance}],
        })
    except urllib.error.HTTPError as e:
        print("error %d: %s" % (e.code, e.read().decode()), file=sys.stderr)
        return 1
    message = reply["choices"][0]["message"]
    for call in message.get("tool_calls") or []:
        fn = call["function"]
        print("tool call: %s(%s)" % (fn["name"], json.dumps(json.loads(fn["arguments"]), ensure_ascii=False)))
    if message.get("content"):
        print("text:", message["content"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
