"""LoRA fine-tune of Gemma 3 270M (the GGUF fgemma runs) into a phone-actions caller, on 2 CPU cores.

python train.py --fgemma build/release/tools/fgemma --base ~/.cache/fgemma/real/gemma-3-270m-q4_k_m.gguf \
    --tokenizer assets/functiongemma/tokenizer.json --data ../shared/fixtures/eval/phone-actions.jsonl \
    --generated generated.jsonl --out cartridges/phone-actions

Rows sharing a tool catalog form a batch: the catalog prefix runs once and its keys/values fan out
to the rows; the head (262,144 rows) is applied only where the model's turn is predicted; the loss
is on the model's turn only. Every random choice comes from --seed.
"""
import argparse
import json
import math
import os
import random
import resource
import time

import torch
import torch.nn.functional as F
from safetensors.torch import save_file

from gemma3_gguf import PROJECTIONS, Gemma3Lora, load_gguf_weights
from prepare import prepare


def common_prefix_len(seqs):
    n = min(len(s) for s in seqs)
    for i in range(n):
        if any(s[i] != seqs[0][i] for s in seqs):
            return i
    return n


def make_groups(items):
    """tools_key -> (shared prefix ids, [item]); the prefix ends before the first token some row differs in."""
    groups = {}
    for it in items:
        groups.setdefault(it["tools_key"], []).append(it)
    out = []
    for rows in groups.values():
        prompts = [r["prompt_ids"] for r in rows]
        # A catalog seen once still splits off its catalog: everything up to its user turn's last 16 ids.
        n = common_prefix_len(prompts) if len(rows) > 1 else max(1, len(prompts[0]) - 16)
        out.append((prompts[0][:n], rows))
    return out


def batch_loss(model, prefix, rows):
    """Sum of token losses over the rows' model turns, and the token count."""
    suffixes = [r["prompt_ids"][len(prefix):] + r["target_ids"] for r in rows]
    S = max(len(s) for s in suffixes)
    ids = torch.zeros(len(rows), S, dtype=torch.long)
    valid = torch.zeros(len(rows), S, dtype=torch.bool)
    pick_rows, pick_cols, labels = [], [], []
    for b, (s, r) in enumerate(zip(suffixes, rows)):
        ids[b, :len(s)] = torch.tensor(s)
        valid[b, :len(s)] = True
        first = len(s) - len(r["target_ids"])  # index of the first model-turn token in the suffix
        for j in range(first, len(s)):
            pick_rows.append(b)
            pick_cols.append(j - 1)  # the position that predicts token j
            labels.append(s[j])
    hidden = model.forward_shared_prefix(torch.tensor(prefix), ids, valid)
    h = hidden[torch.tensor(pick_rows), torch.tensor(pick_cols)]
    logits = model.logits(h)
    return F.cross_entropy(logits, torch.tensor(labels), reduction="sum"), len(labels)


def write_adapter(model, out_dir, rank, alpha, base_name):
    os.makedirs(out_dir, exist_ok=True)
    tensors = {k: v.to(torch.float16).contiguous() for k, v in model.peft_state_dict().items()}
    save_file(tensors, os.path.join(out_dir, "adapter_model.safetensors"), metadata={"format": "pt"})
    config = {"peft_type": "LORA", "task_type": "CAUSAL_LM", "base_model_name_or_path": base_name,
              "r": rank, "lora_alpha": alpha, "lora_dropout": 0.0, "target_modules": list(PROJECTIONS),
              "bias": "none", "use_rslora": False, "fan_in_fan_out": False, "inference_mode": True}
    with open(os.path.join(out_dir, "adapter_config.json"), "w") as f:
        json.dump(config, f, indent=2)
        f.write("\n")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--fgemma", required=True, help="the fgemma binary (renders and tokenizes the rows)")
    p.add_argument("--base", required=True, help="the base GGUF (the same file fgemma runs)")
    p.add_argument("--tokenizer", required=True, help="FunctionGemma's tokenizer.json")
    p.add_argument("--data", required=True, help="Mobile Actions JSONL; only rows with metadata 'train' are read")
    p.add_argument("--generated", help="more train rows (generate_rows.py)")
    p.add_argument("--out", required=True, help="adapter directory to write")
    p.add_argument("--rank", type=int, default=8)
    p.add_argument("--alpha", type=float, default=16)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--batch", type=int, default=16, help="rows per step from the full catalog")
    p.add_argument("--subset-every", type=int, default=3, help="add rows of another catalog every N steps")
    p.add_argument("--subset-rows", type=int, default=1,
                   help="rows of that catalog each time (they share its prefix: a row more costs little)")
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--log", help="append one JSON line per step here")
    p.add_argument("--save-every", type=int, default=0, help="also write the adapter every N steps (0: only at the end)")
    a = p.parse_args()

    start = time.time()
    torch.manual_seed(a.seed)
    torch.set_num_threads(a.threads)
    rng = random.Random(a.seed)
    rows = [json.loads(l) for l in open(a.data)]
    rows = [r for r in rows if r["metadata"] == "train"]  # never the eval split
    if a.generated:
        rows += [json.loads(l) for l in open(a.generated)]
    items = prepare(a.fgemma, a.tokenizer, rows)
    groups = sorted(make_groups(items), key=lambda g: -len(g[1]))
    main_prefix, main_rows = groups[0]
    # Rows of the other catalogs, a catalog's rows side by side: a subset step takes the next
    # --subset-rows of them that share one catalog.
    others = [(prefix, rs[i:i + a.subset_rows]) for prefix, rs in groups[1:] for i in range(0, len(rs), a.subset_rows)]
    print(f"{len(items)} rows: {len(main_rows)} on the main catalog (prefix {len(main_prefix)} ids), "
          f"{sum(len(rs) for _, rs in groups[1:])} on {len(groups) - 1} other catalogs; prepared in "
          f"{time.time() - start:.0f} s", flush=True)

    base_name = "google/gemma-3-270m (" + os.path.basename(a.base) + ")"
    cfg, weights = load_gguf_weights(a.base)
    model = Gemma3Lora(cfg, weights, a.rank, a.alpha, a.seed)
    del weights
    params = [p for p in model.lora.parameters()]
    opt = torch.optim.AdamW(params, lr=a.lr, weight_decay=0.0)
    warmup = max(1, a.steps // 10)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: (s + 1) / warmup if s < warmup else 0.5 * (1 + math.cos(math.pi * (s - warmup) / max(1, a.steps - warmup))))
    print(f"model loaded at {time.time() - start:.0f} s; {sum(p.numel() for p in params):,} LoRA parameters", flush=True)

    order, cursor = [], 0
    other_order = list(range(len(others)))
    rng.shuffle(other_order)
    train_start, cpu_start = time.time(), time.process_time()
    for step in range(a.steps):
        chunk = []
        while len(chunk) < a.batch:
            if cursor == len(order):
                order, cursor = list(range(len(main_rows))), 0
                rng.shuffle(order)
            chunk.append(main_rows[order[cursor]])
            cursor += 1
        opt.zero_grad()
        loss_sum, count = batch_loss(model, main_prefix, chunk)
        parts = [(loss_sum, count)]
        if others and a.subset_every > 0 and step % a.subset_every == a.subset_every - 1:
            prefix, subset_rows = others[other_order[(step // a.subset_every) % len(others)]]
            parts.append(batch_loss(model, prefix, subset_rows))
        total = sum(c for _, c in parts)
        loss = sum(l for l, _ in parts) / total
        loss.backward()
        opt.step()
        sched.step()
        # CPU seconds as well as wall time: on a shared machine the wall time says little.
        line = {"step": step + 1, "loss": round(loss.item(), 4), "tokens": total,
                "elapsed_s": round(time.time() - train_start, 1), "cpu_s": round(time.process_time() - cpu_start, 1)}
        print(json.dumps(line), flush=True)
        if a.log:
            with open(a.log, "a") as f:
                f.write(json.dumps(line) + "\n")
        if a.save_every and (step + 1) % a.save_every == 0 and step + 1 < a.steps:
            write_adapter(model, a.out, a.rank, a.alpha, base_name)

    write_adapter(model, a.out, a.rank, a.alpha, base_name)
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"done": True, "train_s": round(time.time() - train_start), "total_s": round(time.time() - start),
                      "peak_rss_mib": round(peak_mib)}), flush=True)


if __name__ == "__main__":
    main()
