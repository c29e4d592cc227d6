#!/usr/bin/env python3
"""Differential test of fgemma's native prompt renderer against jinja2.

Generates random requests, well-formed and odd (missing descriptions, upper-case types, numeric
enums, extra keys in `items`, keys differing only in case, non-ASCII keys, floats of every
magnitude, string tool-call arguments, every tool-response shape, ...), renders each with the
official template through jinja2 configured as Hugging Face's apply_chat_template does, and with
`fgemma render --raw`, and reports any difference. A developer tool (needs python3-jinja2); the
C++ tests do not depend on it.

Usage: scripts/chat_template_fuzz.py [--cases N] [--seed S] [--cli build/release/tools/fgemma]
"""
import argparse, json, os, random, subprocess, sys, tempfile

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "fixtures", "chat")


def make_env(path):
    from jinja2.exceptions import TemplateError
    from jinja2.ext import loopcontrols
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    def raise_exception(message):
        raise TemplateError(message)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
    env.globals["raise_exception"] = raise_exception
    with open(path) as f:
        return env.from_string(f.read())


WORDS = ["room", "Room", "ROOM", "level", "Level", "a", "A", "b", "B", "zeta", "Zeta", "état", "État", "Ärger",
         "apfel", "Σigma", "σigma", "İstanbul", "istanbul", "东京", "x_y", "x-y", "x.y", "Beta", "alpha", "_u", "9n"]
TEXTS = ["", " ", "hello", " padded ", "line\nbreak", "tab\there", "naïve café", "東京", "a,b{c}[d]:e",
         "quote \"q\" 'p'", "\u00a0nbsp\u3000", "\u2028sep\u2029", "<b>tag</b>", "x\x1cy\x1f", "emoji 🙂"]
FLOATS = [0.5, -1.0, 2.0, 1e16, 1e15, 1e-5, 1e-4, 0.1, 123456789.123, 1e300, 5e-324, 2.5e-7, -0.0, 3.25,
          1234567890123456.0, 12345678901234567.0, 0.30000000000000004]


def rnd_scalar(r):
    k = r.randrange(6)
    if k == 0: return r.choice(TEXTS)
    if k == 1: return r.randrange(-1000, 1000)
    if k == 2: return r.choice(FLOATS)
    if k == 3: return r.random() < 0.5
    if k == 4: return None
    return r.choice([2**63 - 1, -2**63, 0, 10**15])


def rnd_value(r, depth=0):
    k = r.randrange(8 if depth < 3 else 4)
    if k < 4: return rnd_scalar(r)
    if k < 6: return [rnd_value(r, depth + 1) for _ in range(r.randrange(4))]
    return {r.choice(WORDS): rnd_value(r, depth + 1) for _ in range(r.randrange(4))}


def rnd_type(r):
    t = r.choice(["string", "integer", "number", "boolean", "array", "object"])
    return r.choice([t, t, t, t.upper(), t.capitalize()])


def rnd_schema(r, depth=0, odd=False):
    t = rnd_type(r) if depth < 3 else r.choice(["string", "integer", "boolean"])
    s = {"type": t}
    if r.random() < 0.7: s["description"] = r.choice(TEXTS)
    if odd and r.random() < 0.1: s["description"] = r.choice([5, 1.5, True, None, ["l"]])
    if odd and r.random() < 0.05: del s["type"]
    lt = t.lower()
    if lt == "string" and r.random() < 0.3:
        s["enum"] = [r.choice(TEXTS) for _ in range(r.randrange(1, 4))]
        if odd and r.random() < 0.3: s["enum"] = [1, 2.5, True, None]
    if lt in ("integer", "number") and r.random() < 0.2: s["enum"] = [1, 2]
    if lt == "array":
        if r.random() < 0.8:
            items = rnd_schema(r, depth + 1, odd)
            if odd and r.random() < 0.3: items[r.choice(["title", "minimum", "Enum", "format"])] = rnd_value(r, 2)
            if odd and r.random() < 0.2: items["items"] = {"type": "integer"}
            if odd and r.random() < 0.1: items["type"] = ["string", "null"]
            if odd and r.random() < 0.1: items["required"] = r.choice(["abc", ["x", "y"], {"k": 1}])
            if odd and r.random() < 0.1: items["nullable"] = None
            s["items"] = items
        elif odd and r.random() < 0.5:
            s["items"] = {}
    if lt == "object":
        if r.random() < 0.85:
            props = {}
            for _ in range(r.randrange(5)):
                props[r.choice(WORDS)] = rnd_schema(r, depth + 1, odd)
            if odd and r.random() < 0.2: props[r.choice(["type", "description", "nullable", "required"])] = {"type": "string"}
            if odd and r.random() < 0.1: props["weird"] = r.choice(["str", 5, None, []])
            s["properties"] = props
            if props and r.random() < 0.6:
                s["required"] = r.sample(list(props), r.randrange(1, len(props) + 1))
        elif odd:
            s[r.choice(["additionalProperties", "title", "Extra"])] = r.choice([{"type": "string"}, "t", True])
        if odd and r.random() < 0.1: s["required"] = r.choice(["ab", {"p": 1}, []])
    return s


def rnd_tool(r, odd):
    fn = {"name": r.choice(["get_weather", "set_light", "f", "Timer", "x.y", "send-email"]) + str(r.randrange(9))}
    if r.random() < 0.9: fn["description"] = r.choice(TEXTS)
    k = r.random()
    if k < 0.75:
        p = rnd_schema(r, 0, odd)
        p["type"] = r.choice(["object", "OBJECT", "Object"])
        if odd and r.random() < 0.1: del p["type"]
        fn["parameters"] = p
    elif k < 0.85:
        fn["parameters"] = {"type": "object", "properties": {}}
    elif k < 0.9:
        fn["parameters"] = {}
    if r.random() < 0.1: fn["return"] = {"type": "string"}
    tool = {"type": "function", "function": fn}
    if r.random() < 0.1: del tool["type"]
    return tool


def rnd_content(r, allow_image=False):
    k = r.random()
    if k < 0.7: return r.choice(TEXTS + ["What's the weather?", "  Turn on the lights  "])
    parts = []
    for _ in range(r.randrange(1, 4)):
        if allow_image and r.random() < 0.2: parts.append({"type": "image"})
        else: parts.append({"type": "text", "text": r.choice(TEXTS)})
    return parts


def rnd_args(r, odd):
    k = r.random()
    if odd and k < 0.1: return json.dumps({"city": "Paris"})
    if odd and k < 0.13: return None
    return {r.choice(WORDS): rnd_value(r) for _ in range(r.randrange(4))}


def rnd_tool_message(r, odd):
    m = {"role": "tool"}
    k = r.randrange(6)
    name = r.choice(["get_weather", " spaced ", "f"])
    if k == 0:
        m["name"] = name
        m["content"] = r.choice(TEXTS[1:])
    elif k == 1:
        m["content"] = {"name": name, "response": {r.choice(WORDS): rnd_value(r) for _ in range(r.randrange(4))}}
    elif k == 2:
        m["name"] = name
        m["content"] = {r.choice(WORDS): rnd_value(r) for _ in range(1, 4)}
    elif k == 3:
        m["content"] = [{"name": name, "response": {r.choice(WORDS): rnd_value(r)}} for _ in range(r.randrange(1, 3))]
    elif k == 4:
        m["name"] = name
        m["content"] = [{r.choice(WORDS): rnd_value(r)} for _ in range(r.randrange(1, 3))]
    else:
        m["name"] = name
        m["content"] = r.choice(["", {}, [], None])
    if odd and r.random() < 0.05: m.pop("name", None)
    return m


def rnd_request(r):
    odd = r.random() < 0.5
    tools = [rnd_tool(r, odd) for _ in range(r.randrange(4))] if r.random() < 0.85 else r.choice([None, []])
    msgs = []
    k = r.random()
    if k < 0.6: msgs.append({"role": r.choice(["developer", "system"]), "content": rnd_content(r)})
    for _ in range(r.randrange(1, 7)):
        role = r.choice(["user", "user", "assistant", "assistant", "tool", "system", "model" if odd else "user"])
        if role == "tool":
            msgs.append(rnd_tool_message(r, odd))
        elif role == "assistant":
            m = {"role": "assistant"}
            if r.random() < 0.6: m["content"] = rnd_content(r) if r.random() < 0.8 else None
            if r.random() < 0.5:
                m["tool_calls"] = [{"type": "function", "function": {"name": r.choice(["get_weather", "f"]), "arguments": rnd_args(r, odd)}}
                                   for _ in range(r.randrange(1, 3))]
                if odd and r.random() < 0.1: del m["tool_calls"][0]["function"]["arguments"]
            msgs.append(m)
        else:
            msgs.append({"role": role, "content": rnd_content(r, allow_image=(role == "user"))})
    return {"tools": tools, "messages": msgs, "add_generation_prompt": r.random() < 0.7}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cli", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build", "release", "tools", "fgemma"))
    ap.add_argument("--variant", action="store_true", help="use the default-preamble variant template")
    args = ap.parse_args()
    name = "chat_template.variant-default-preamble.jinja" if args.variant else "chat_template.jinja"
    template = make_env(os.path.join(FIXTURES, name))
    r = random.Random(args.seed)
    counts = {"same": 0, "both_error": 0, "unsupported": 0, "differ": 0}
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "request.json")
        for i in range(args.cases):
            req = rnd_request(r)
            try:
                want, want_err = template.render(messages=req["messages"], tools=req["tools"],
                                                 add_generation_prompt=req["add_generation_prompt"], bos_token="<bos>",
                                                 eos_token="<eos>"), None
            except Exception as e:  # jinja2 raised: fgemma must fail too
                want, want_err = None, e
            with open(path, "w") as f:
                json.dump(req, f, ensure_ascii=r.random() < 0.5)
            cmd = [args.cli, "render", "--raw", "--request", path]
            if args.variant:
                cmd += ["--chat-template", os.path.join(FIXTURES, name)]
            res = subprocess.run(cmd, capture_output=True)
            got = res.stdout.decode("utf-8") if res.returncode == 0 else None
            err = res.stderr.decode("utf-8", "replace").strip()
            if want is not None and got == want:
                counts["same"] += 1
            elif want is None and got is None:
                counts["both_error"] += 1
            elif got is None and "unsupported" in err:
                counts["unsupported"] += 1
            else:
                counts["differ"] += 1
                if counts["differ"] <= 5:
                    print(f"case {i} differs:\n request {json.dumps(req, ensure_ascii=False)}\n jinja2 {want!r} ({want_err})\n fgemma {got!r} ({err})\n")
    print(" ".join(f"{k}={v}" for k, v in counts.items()))
    return 1 if counts["differ"] else 0


if __name__ == "__main__":
    sys.exit(main())
