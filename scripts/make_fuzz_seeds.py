#!/usr/bin/env python3
"""Writes the seed corpora under fuzz/corpus/ (small files; rerun to regenerate). Crash
regressions found by fuzzing are kept there too, named regress-*, and are not touched here."""
import json
import os
import struct
import sys

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fuzz", "corpus")
shared = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..", "shared")


def put(target, name, data):
    d = os.path.join(root, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


# safetensors: 8-byte header length, JSON header, data.
def safetensors(tensors, meta=None):
    header, blob = {}, b""
    if meta:
        header["__metadata__"] = meta
    for name, (dtype, shape, data) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(blob), len(blob) + len(data)]}
        blob += data
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h + blob


put("safetensors", "f32.safetensors", safetensors({"w": ("F32", [2, 2], struct.pack("<4f", 1, 2, 3, 4))}, {"format": "pt"}))
put("safetensors", "mixed.safetensors", safetensors({"a": ("BF16", [3], b"\x80\x3f" * 3), "b": ("F16", [1, 2], b"\x00\x3c" * 2),
                                                     "c": ("I8", [0], b"")}))


# GGUF v3: header, metadata key/values, tensor infos, aligned data.
def gstr(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def gguf(kvs, tensors, align=32):
    out = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs))
    for key, (vtype, payload) in kvs:
        out += gstr(key) + struct.pack("<I", vtype) + payload
    offset, blob = 0, b""
    for name, dims, ttype, data in tensors:
        out += gstr(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims)
        out += struct.pack("<IQ", ttype, offset)
        blob += data + b"\0" * (-len(data) % align)
        offset = len(blob)
    out += b"\0" * (-len(out) % align)
    return out + blob


kv = [("general.architecture", (8, gstr("gemma3"))), ("general.alignment", (4, struct.pack("<I", 32))),
      ("gemma3.block_count", (4, struct.pack("<I", 1))),
      ("tokenizer.ggml.tokens", (9, struct.pack("<IQ", 8, 3) + gstr("<pad>") + gstr("a") + gstr("b"))),
      ("tokenizer.ggml.scores", (9, struct.pack("<IQ", 6, 3) + struct.pack("<3f", 0, -1, -2)))]
put("gguf", "f32.gguf", gguf(kv, [("token_embd.weight", [4, 2], 0, struct.pack("<8f", *range(8)))]))
q8 = struct.pack("<e", 0.5) + bytes(range(32))
put("gguf", "q8_0.gguf", gguf(kv[:2], [("blk.0.attn_q.weight", [32, 1], 8, q8), ("x", [2], 1, b"\0\x3c\0\x3c")]))

# tokenizer.json: the synthetic Gemma-style vocabulary the tokenizer tests use, tiny.
vocab = {"<0x%02X>" % b: b for b in range(256)}
for i, t in enumerate(["<pad>", "<eos>", "<bos>", "\u2581a", "ab", "\u2581ab", "<start_function_call>"]):
    vocab[t] = 256 + i
tok = {"version": "1.0",
       "added_tokens": [{"id": 256, "content": "<pad>", "single_word": False, "lstrip": False, "rstrip": False,
                         "normalized": False, "special": True},
                        {"id": 258, "content": "<bos>", "single_word": False, "lstrip": False, "rstrip": False,
                         "normalized": False, "special": True},
                        {"id": 262, "content": "<start_function_call>", "single_word": False, "lstrip": False,
                         "rstrip": False, "normalized": False, "special": False}],
       "normalizer": {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"},
       "pre_tokenizer": {"type": "Split", "pattern": {"String": " "}, "behavior": "MergedWithPrevious", "invert": False},
       "post_processor": None,
       "decoder": {"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
                                                    {"type": "ByteFallback"}, {"type": "Fuse"}]},
       "model": {"type": "BPE", "dropout": None, "unk_token": None, "fuse_unk": True, "byte_fallback": True,
                 "ignore_merges": False, "vocab": vocab, "merges": [["\u2581", "a"], ["a", "b"], ["\u2581a", "b"]]}}
put("tokenizer_json", "synthetic.json", json.dumps(tok, ensure_ascii=False))
tok2 = dict(tok)
tok2["model"] = dict(tok["model"], merges=["\u2581 a", "a b"])
put("tokenizer_json", "merges-as-strings.json", json.dumps(tok2))

for i, text in enumerate(["Hello, world! ab ab", "<start_function_call>call:get_weather{city:<escape>東京<escape>}",
                          "\xff\xfe broken utf-8 \x80", "  tabs\tand\nnewlines  \u2581 emoji \U0001F600"]):
    put("tokenizer_codec", "text%d.txt" % i, text.encode("utf-8", "surrogateescape") if i != 2 else b"\xff\xfe broken utf-8 \x80")

# Chat requests (template input and OpenAI) and tool schemas.
renders = json.load(open(os.path.join(shared, "fixtures", "chat", "renders-dev.json")))
picked = sorted(renders, key=lambda r: len(json.dumps(r)))[:3]
for i, r in enumerate(picked):
    put("request", "template%d.json" % i, b"\x00" + json.dumps({k: r[k] for k in ("tools", "messages", "add_generation_prompt")}).encode())
tools = [{"type": "function", "function": {"name": "get_weather", "description": "Weather",
          "parameters": {"type": "object", "properties": {"city": {"type": "string"},
                         "unit": {"type": "STRING", "enum": ["celsius", "fahrenheit"]},
                         "tags": {"type": "array", "items": {"type": "integer"}}}, "required": ["city"]}}}]
openai = {"model": "functiongemma", "tools": tools,
          "messages": [{"role": "system", "content": "You can call functions."},
                       {"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"}]},
                       {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function",
                        "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}]},
                       {"role": "tool", "tool_call_id": "c1", "content": "{\"temp\": 21}"}]}
put("request", "openai.json", b"\x02" + json.dumps(openai).encode())
put("schema", "tools.json", json.dumps(tools))
put("schema", "schema.json", json.dumps({"type": "object", "properties": {"a": {"type": "number"},
        "o": {"type": "object", "properties": {"x": {"type": "boolean"}}, "additionalProperties": True}},
        "required": ["a"], "additionalProperties": False}))
put("parse_call", "call.txt", "<start_function_call>call:get_weather{city:<escape>Paris<escape>,days:3,hourly:true,"
    "tags:[<escape>a<escape>,b],where:{lat:1.5,lon:-2}}<end_function_call><start_function_response>")
put("parse_call", "text.txt", "Sure, here it is.<end_of_turn>")
put("parse_call", "two.txt", "<start_function_call>call:noop{}<end_function_call><start_function_call>call:x{a:<escape>"
    "unterminated")

# Hostile JSON: nesting far past the parsers' depth limit (util/json.h, 128), which used to overflow
# the stack in recursive code after the parse, and members of the wrong type, which used to escape
# as nlohmann exceptions. One seed per corpus is 100,000 deep (unclosed, ~100 KB); the rest are
# 10,000 deep and closed, so mutations can reach the text after them.
def deep(n, closed=True):
    return "[" * n + ("]" * n if closed else "")


user = '{"role":"user","content":"hi"}'
put("request", "deep-messages.json", b"\x00" + ('{"messages":' + deep(100000, closed=False)).encode())
put("request", "deep-tool-choice.json", b"\x02" + ('{"model":"m","tool_choice":' + deep(10000) + ',"messages":[' + user + ']}').encode())
put("request", "deep-tool-extra-key.json",
    b"\x02" + ('{"model":"m","tools":[{"type":"function","function":{"name":"f","x":' + deep(10000) + '}}],"messages":['
               + user + ']}').encode())
put("request", "deep-tool-content.json",
    b"\x01" + ('{"messages":[' + user + ',{"role":"tool","name":"f","content":' + deep(10000) + '}]}').encode())
put("request", "wrong-type-tool-part.json",
    b"\x02" + json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"},
                                                    {"role": "tool", "name": "f", "content": [{"type": 5}]}]}).encode())
put("request", "wrong-type-user-part.json",
    b"\x00" + json.dumps({"messages": [{"role": "user", "content": [{"type": 5}, {"type": "text", "text": []}]}]}).encode())
put("schema", "deep-tools.json", '[{"type":"function","function":{"name":"f","parameters":' + deep(100000, closed=False))
put("schema", "deep-parameters.json", '{"type":"object","properties":{"a":' + deep(10000) + '}}')
put("schema", "wrong-type.json", json.dumps([{"type": "function", "function": {"name": "f", "parameters": {
    "type": "object", "properties": {"a": {"type": 5}, "b": {"type": "string", "enum": [1]}}, "required": [5]}}},
    {"type": 5, "function": {"name": 5}}]))
put("tokenizer_json", "deep-extra.json", '{"extra":' + deep(100000, closed=False))
put("tokenizer_json", "deep-normalizer.json",
    json.dumps(dict(tok, normalizer=None), ensure_ascii=False).replace('"normalizer": null', '"normalizer": ' + deep(10000)))
put("tokenizer_json", "wrong-type-normalizer.json", json.dumps(dict(tok, normalizer=dict(tok["normalizer"], type=5)), ensure_ascii=False))
put("tokenizer_json", "wrong-type-pre-tokenizer.json",
    json.dumps(dict(tok, pre_tokenizer=dict(tok["pre_tokenizer"], type=True, invert="no")), ensure_ascii=False))
put("tokenizer_json", "wrong-type-decoder.json",
    json.dumps(dict(tok, decoder={"type": "Sequence", "decoders": [{"type": []}, {"type": "ByteFallback"}]},
                    post_processor={"single": [{"SpecialToken": {"id": 5}}]}), ensure_ascii=False))

# Catalog caches: mode byte 1 = payload wrapped in a valid header (positions = second byte; 2
# positions of tiny-mqa: 8 layers x K,V x 2 rows x 32 floats); mode 0 = raw file bytes.
put("catalog_cache", "valid-2pos.bin", b"\x01\x02" + bytes(8 * 2 * 2 * 32 * 4))
put("catalog_cache", "raw-header.bin", b"\x00FGKVCACH\x02\x00\x00\x00" + bytes(48))

# Issue 16, findings 3 and 10. GGUF: a complete gemma3 config (what ConfigFromGguf needs) with a
# NaN epsilon, and with block_count 2^32-1; both must be refused by ModelConfig::Validate, naming the key.
def u32(v):
    return (4, struct.pack("<I", v))


def config_kv(blocks=2, eps=1e-6):
    return [("general.architecture", (8, gstr("gemma3"))), ("gemma3.context_length", u32(64)),
            ("gemma3.embedding_length", u32(8)), ("gemma3.block_count", u32(blocks)),
            ("gemma3.feed_forward_length", u32(16)), ("gemma3.attention.head_count", u32(2)),
            ("gemma3.attention.head_count_kv", u32(1)), ("gemma3.attention.key_length", u32(4)),
            ("gemma3.attention.sliding_window", u32(8)),
            ("gemma3.attention.layer_norm_rms_epsilon", (6, struct.pack("<f", eps)))]


embd = [("token_embd.weight", [8, 4], 0, struct.pack("<32f", *range(32)))]
put("gguf", "config-valid.gguf", gguf(config_kv(), embd))
put("gguf", "config-eps-nan.gguf", gguf(config_kv(eps=float("nan")), embd))
put("gguf", "config-eps-negative.gguf", gguf(config_kv(eps=-1e-6), embd))
put("gguf", "config-block-count-max.gguf", gguf(config_kv(blocks=0xFFFFFFFF), embd))

# Requests past the limits of chat/request.h and chat/schema.h: tools counted before parsing
# (1,100 > 1,024, all one name: the old pairwise duplicate search was quadratic), messages, a schema
# with more nodes than 1,024 (properties, enum values).
tool_f = '{"type":"function","function":{"name":"f"}}'
put("request", "too-many-tools.json", b"\x00" + ('{"tools":[' + ",".join([tool_f] * 1100) + '],"messages":[' + user + ']}').encode())
put("request", "duplicate-tools.json", b"\x02" + ('{"model":"m","tools":[' + ",".join([tool_f] * 64) + '],"messages":[' + user + ']}').encode())
put("request", "too-many-messages.json", b"\x00" + ('{"messages":[' + ",".join([user] * 4100) + ']}').encode())
put("schema", "too-many-properties.json",
    json.dumps({"type": "object", "properties": {"p%d" % i: {"type": "integer"} for i in range(1100)}}))
put("schema", "too-many-enum-values.json",
    json.dumps({"type": "object", "properties": {"n": {"type": "integer", "enum": list(range(2000))}}}))

