"""Checks that the torch model computes what fgemma computes on the same GGUF: top-1 ids and logits
at chosen positions of one id sequence, against `fgemma score` (which runs the quantized matmuls on
int8 activations, so logits differ by that rounding; the argmax should agree).

python check_base.py --fgemma FGEMMA --base BASE.gguf --ids IDS.json --positions -1,-5,-20,10
"""
import argparse
import json
import subprocess

import torch

from gemma3_gguf import Gemma3Lora, load_gguf_weights


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--fgemma", required=True)
    p.add_argument("--base", required=True)
    p.add_argument("--ids", required=True, help="JSON array of token ids")
    p.add_argument("--positions", default="-1,-5,-10,-20,-30,-300,10")
    a = p.parse_args()
    torch.set_num_threads(2)
    ids = json.load(open(a.ids))
    out = subprocess.run([a.fgemma, "score", "--model", a.base, "--ids", a.ids, "--positions=" + a.positions,
                          "--top", "3", "--threads", "2"], check=True, capture_output=True).stdout.decode()
    theirs = [json.loads(l) for l in out.splitlines()]
    cfg, w = load_gguf_weights(a.base)
    model = Gemma3Lora(cfg, w, rank=1, alpha=1, seed=0)  # B = 0: the base alone
    with torch.no_grad():
        hidden = model.forward_shared_prefix(torch.tensor(ids[:1]), torch.tensor([ids[1:]]),
                                             torch.ones(1, len(ids) - 1, dtype=torch.bool))[0]
        agree = 0
        for t in theirs:
            logits = model.logits(hidden[t["pos"] - 1])
            top = torch.topk(logits, 3)
            mine = [[int(i), round(float(v), 3)] for i, v in zip(top.indices, top.values)]
            agree += mine[0][0] == t["top"][0][0]
            print(f"pos {t['pos']}: torch {mine}  fgemma {[[i, round(v, 3)] for i, v in t['top']]}")
    print(f"top-1 agreement {agree}/{len(theirs)}")


if __name__ == "__main__":
    main()
