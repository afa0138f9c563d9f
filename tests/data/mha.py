# tests/data/mha.py: writes tests/data/mha.safetensors, the state_dict of a PyTorch
# nn.MultiheadAttention(8, 2) with non-zero biases, and prints its outputs for fixed inputs, which
# tests/test_layers.cpp compares against after loading the file into tg::nn::MultiheadAttention.
# Inputs are fill(shape, seed) = sin(0.7 i + seed) over the flattened tensor, in float32. The file is
# written by hand in the safetensors format (see small_cnn.py). Run: python3 tests/data/mha.py
import json
import os
import struct

import torch
import torch.nn as nn


def fill(shape, seed):
    n = 1
    for s in shape:
        n *= s
    return torch.sin(torch.arange(n, dtype=torch.float64) * 0.7 + seed).reshape(shape).float()


def show(name, t):
    print("  // %s %s" % (name, list(t.shape)))
    print("  {" + ", ".join("%.9g" % v for v in t.detach().flatten().tolist()) + "},")


torch.manual_seed(0)
mha = nn.MultiheadAttention(8, 2)   # batch_first=False: (L, N, E)
with torch.no_grad():
    mha.in_proj_bias.uniform_(-0.5, 0.5)
    mha.out_proj.bias.uniform_(-0.5, 0.5)
mha.eval()

# self-attention, L = S = 4, N = 2, with a key_padding_mask and a bool attn_mask, averaged weights
x = fill((4, 2, 8), 0.5)
kpm = torch.tensor([[False, False, False, True], [False, True, False, False]])
am = torch.tensor([[False, True, False, False], [False, False, False, False],
                   [True, False, False, False], [False, False, True, False]])
out1, w1 = mha(x, x, x, key_padding_mask=kpm, attn_mask=am)
# cross-attention, L = 3, S = 5, a float attn_mask, per-head weights
q, kv = fill((3, 2, 8), 1.5), fill((5, 2, 8), 2.5)
fm = fill((3, 5), 3.5)
out2, w2 = mha(q, kv, kv, attn_mask=fm, average_attn_weights=False)
# without weights (the scaled_dot_product_attention path), unbatched
out3, _ = mha(fill((3, 8), 4.5), fill((5, 8), 5.5), fill((5, 8), 6.5), need_weights=False)

header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
for name, t in mha.state_dict().items():
    data = t.contiguous().numpy().tobytes()
    header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
    blobs.append(data)
    offset += len(data)
text = json.dumps(header).encode()
text += b" " * (-len(text) % 8)
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "mha.safetensors"), "wb") as f:
    f.write(struct.pack("<Q", len(text)))
    f.write(text)
    for b in blobs:
        f.write(b)
print("  // keys:", ", ".join(mha.state_dict().keys()))
show("out1", out1)
show("w1", w1)
show("out2", out2)
show("w2", w2)
show("out3", out3)
