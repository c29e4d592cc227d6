"""Gemma 3 (270M shape) in plain torch over a GGUF's dequantized weights, with LoRA on the seven
projections, written for training rows that share one long prompt prefix.

The weights are the GGUF's own tensors dequantized by llama.cpp's `gguf` package (Q4_K, Q5_0, Q6_K,
Q8_0 ...), so the adapter is trained against the base fgemma runs. Gemma specifics: RMSNorm scaled by
the stored weight (llama.cpp's converter already stores 1+w), embedding times sqrt(hidden), q/k norms,
GELU-tanh MLP, sliding window on 5 of 6 layers, rope theta 10k local / 1M global, attention scale
query_pre_attn_scalar ** -0.5, tied output head.
"""
import math

import numpy as np
import torch
import torch.nn.functional as F
from gguf import GGUFReader
from gguf.quants import dequantize

PROJECTIONS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
GGUF_NAME = {"q_proj": "attn_q", "k_proj": "attn_k", "v_proj": "attn_v", "o_proj": "attn_output",
             "gate_proj": "ffn_gate", "up_proj": "ffn_up", "down_proj": "ffn_down"}


def _field(reader, key):
    f = reader.fields[key]
    return f.parts[f.data[0]].tolist()[0]


class Config:
    def __init__(self, reader):
        a = "gemma3."
        self.hidden = int(_field(reader, a + "embedding_length"))
        self.layers = int(_field(reader, a + "block_count"))
        self.heads = int(_field(reader, a + "attention.head_count"))
        self.kv_heads = int(_field(reader, a + "attention.head_count_kv"))
        self.head_dim = int(_field(reader, a + "attention.key_length"))
        self.window = int(_field(reader, a + "attention.sliding_window"))
        self.eps = float(_field(reader, a + "attention.layer_norm_rms_epsilon"))
        self.rope_global = float(_field(reader, a + "rope.freq_base"))
        self.rope_local = 10000.0
        self.query_pre_attn_scalar = 256.0 if self.head_dim == 256 else float(self.head_dim)
        # Every sixth layer attends globally (Gemma 3's sliding_window_pattern = 6).
        self.is_global = [(i + 1) % 6 == 0 for i in range(self.layers)]


def load_gguf_weights(path):
    """Returns (config, {gguf tensor name: float32 torch tensor in [out, in] order})."""
    reader = GGUFReader(path)
    cfg = Config(reader)
    weights = {}
    for t in reader.tensors:
        values = dequantize(t.data, t.tensor_type)
        shape = [int(d) for d in reversed(t.shape.tolist())]  # ggml lists ne0 (the inner dim) first
        weights[t.name] = torch.from_numpy(np.ascontiguousarray(values, dtype=np.float32).reshape(shape))
    return cfg, weights


def rms_norm(x, weight, eps):
    x32 = x.float()
    return x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + eps) * weight


def rope(x, positions, theta):
    """Rotate-half rope over the last dim; x [..., T, D], positions [T]."""
    d = x.shape[-1]
    inv = 1.0 / (theta ** (torch.arange(0, d, 2, dtype=torch.float32) / d))
    ang = positions.float()[:, None] * inv[None, :]
    cos, sin = torch.cat([ang.cos(), ang.cos()], -1), torch.cat([ang.sin(), ang.sin()], -1)
    x1, x2 = x[..., : d // 2], x[..., d // 2:]
    return x * cos + torch.cat([-x2, x1], -1) * sin


class LoraLinear(torch.nn.Module):
    def __init__(self, weight, rank, alpha, generator):
        super().__init__()
        self.weight = weight  # frozen base, [out, in]
        out_features, in_features = weight.shape
        self.lora_A = torch.nn.Parameter(torch.empty(rank, in_features))
        self.lora_B = torch.nn.Parameter(torch.zeros(out_features, rank))
        # PEFT's default init: kaiming-uniform A (a = sqrt(5)), zero B.
        bound = 1.0 / math.sqrt(in_features)
        with torch.no_grad():
            self.lora_A.uniform_(-bound, bound, generator=generator)
        self.scale = alpha / rank

    def forward(self, x):
        return F.linear(x, self.weight) + F.linear(F.linear(x, self.lora_A), self.lora_B) * self.scale


class Gemma3Lora(torch.nn.Module):
    def __init__(self, cfg, w, rank, alpha, seed, targets=PROJECTIONS):
        super().__init__()
        self.cfg = cfg
        g = torch.Generator().manual_seed(seed)
        self.embed = w["token_embd.weight"]  # tied head, frozen
        self.final_norm = w["output_norm.weight"]
        self.blocks = []
        self.lora = torch.nn.ModuleDict()
        for i in range(cfg.layers):
            b = {n: w[f"blk.{i}.{n}.weight"] for n in (
                "attn_norm", "attn_q_norm", "attn_k_norm", "post_attention_norm", "ffn_norm", "post_ffw_norm")}
            for proj in PROJECTIONS:
                base = w[f"blk.{i}.{GGUF_NAME[proj]}.weight"]
                if proj in targets:
                    mod = LoraLinear(base, rank, alpha, g)
                    self.lora[f"{i}_{proj}"] = mod
                    b[proj] = mod
                else:
                    b[proj] = (lambda base: (lambda x: F.linear(x, base)))(base)
            self.blocks.append(b)

    def _mask(self, q_pos, k_pos, key_valid, is_global):
        """Additive mask [B, 1, Tq, Tk]: causal, sliding window, padded keys."""
        diff = q_pos[:, :, None] - k_pos[:, None, :]  # [B, Tq, Tk]
        ok = diff >= 0
        if not is_global:
            ok = ok & (diff < self.cfg.window)
        ok = ok & key_valid[:, None, :]
        return torch.where(ok, 0.0, float("-inf"))[:, None]

    def forward_shared_prefix(self, prefix_ids, suffix_ids, suffix_valid):
        """prefix_ids [P] shared by every row; suffix_ids [B, S] (right-padded; suffix_valid [B, S]).
        Returns the final-normed hidden states of the suffix, [B, S, H]. The prefix runs once per
        call and its keys/values fan out to the rows; gradients flow back through it."""
        cfg = self.cfg
        B, S = suffix_ids.shape
        P = prefix_ids.shape[0]
        scale = math.sqrt(cfg.hidden)
        hp = self.embed[prefix_ids][None] * scale       # [1, P, H]
        hs = self.embed[suffix_ids] * scale             # [B, S, H]
        pos_p = torch.arange(P)
        pos_s = torch.arange(P, P + S)
        q_pos_p = pos_p[None].expand(1, P)
        q_pos_s = pos_s[None].expand(B, S)
        k_pos = torch.cat([pos_p, pos_s])[None].expand(B, P + S)
        key_valid = torch.cat([torch.ones(B, P, dtype=torch.bool), suffix_valid], 1)
        masks = {}
        for g in (False, True):
            masks[g] = (self._mask(q_pos_p, pos_p[None], torch.ones(1, P, dtype=torch.bool), g),
                        self._mask(q_pos_s, k_pos, key_valid, g))
        attn_scale = cfg.query_pre_attn_scalar ** -0.5
        for i, b in enumerate(self.blocks):
            theta = cfg.rope_global if cfg.is_global[i] else cfg.rope_local
            mp, ms = masks[cfg.is_global[i]]

            def qkv(h, positions):
                x = rms_norm(h, b["attn_norm"], cfg.eps)
                n, t = x.shape[0], x.shape[1]
                q = b["q_proj"](x).view(n, t, cfg.heads, cfg.head_dim).transpose(1, 2)
                k = b["k_proj"](x).view(n, t, cfg.kv_heads, cfg.head_dim).transpose(1, 2)
                v = b["v_proj"](x).view(n, t, cfg.kv_heads, cfg.head_dim).transpose(1, 2)
                q = rope(rms_norm(q, b["attn_q_norm"], cfg.eps), positions, theta)
                k = rope(rms_norm(k, b["attn_k_norm"], cfg.eps), positions, theta)
                return q, k, v

            qp, kp, vp = qkv(hp, pos_p)
            qs, ks, vs = qkv(hs, pos_s)
            rep = cfg.heads // cfg.kv_heads
            # Prefix queries see the prefix only; suffix queries see the prefix (fanned out) and their own row.
            k_all = torch.cat([kp.expand(B, -1, -1, -1), ks], 2).repeat_interleave(rep, 1)
            v_all = torch.cat([vp.expand(B, -1, -1, -1), vs], 2).repeat_interleave(rep, 1)
            op = F.scaled_dot_product_attention(qp, kp.repeat_interleave(rep, 1), vp.repeat_interleave(rep, 1),
                                                attn_mask=mp, scale=attn_scale)
            os_ = F.scaled_dot_product_attention(qs, k_all, v_all, attn_mask=ms, scale=attn_scale)

            def finish(h, o):
                n, t = h.shape[0], h.shape[1]
                o = b["o_proj"](o.transpose(1, 2).reshape(n, t, cfg.heads * cfg.head_dim))
                h = h + rms_norm(o, b["post_attention_norm"], cfg.eps)
                x = rms_norm(h, b["ffn_norm"], cfg.eps)
                m = b["down_proj"](F.gelu(b["gate_proj"](x), approximate="tanh") * b["up_proj"](x))
                return h + rms_norm(m, b["post_ffw_norm"], cfg.eps)

            hp = finish(hp, op)
            hs = finish(hs, os_)
        return rms_norm(hs, self.final_norm, cfg.eps)

    def logits(self, hidden):
        return hidden @ self.embed.T

    def peft_state_dict(self):
        out = {}
        for key, mod in self.lora.items():
            layer, proj = key.split("_", 1)
            group = "self_attn" if proj in ("q_proj", "k_proj", "v_proj", "o_proj") else "mlp"
            stem = f"base_model.model.model.layers.{layer}.{group}.{proj}"
            out[stem + ".lora_A.weight"] = mod.lora_A.detach()
            out[stem + ".lora_B.weight"] = mod.lora_B.detach()
        return out
