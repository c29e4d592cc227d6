"""An utterance to a function call with the fgemma package: python3 call_lights.py MODEL"""
import sys

import fgemma

TOOLS = [{"type": "function", "function": {
    "name": "set_lights", "description": "Switch the lights of a room on or off",
    "parameters": {"type": "object", "required": ["room", "on"],
                   "properties": {"room": {"type": "string"}, "on": {"type": "boolean"}}}}}]

with fgemma.Model.load(sys.argv[1]) as model, \
        fgemma.FunctionCaller(model, TOOLS, cache_path="lights.cache") as caller:
    # One call: an OpenAI-shaped assistant message (tool_calls with JSON-string arguments).
    result = caller.call("Turn on the kitchen lights", tool_choice="required")
    for call in result["message"].get("tool_calls", []):
        print(call["function"]["name"], call["function"]["arguments"])
    # The same, streamed: token events as they are generated, then the result.
    for event in caller.stream("Switch off the lights in the hall", tool_choice="required"):
        if event["type"] == "result":
            print(event["finish_reason"], event["fgemma"]["calls"])
