# tests/data/mha_options.py: writes tests/data/mha_options.safetensors, the state_dict of a PyTorch
# nn.MultiheadAttention(8, 2, kdim=5, vdim=3, add_bias_kv=True, add_zero_attn=True) with non-zero
# biases (q/k/v_proj_weight, in_proj_bias, bias_k, bias_v, out_proj), and prints its outputs,
# attention weights and parameter-gradient probes for fixed inputs, which tests/test_layers.cpp
# compares against after loading the file into tg::nn::MultiheadAttention. Inputs are fill(shape,
# seed) = sin(0.7 i + seed) over the flattened tensor, in float32; the file is written by hand in the
# safetensors format (see small_cnn.py). Run: python3 tests/data/mha_options.py
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
mha = nn.MultiheadAttention(8, 2, add_bias_kv=True, add_zero_attn=True, kdim=5, vdim=3)   # (L, N, E)
with torch.no_grad():
    mha.in_proj_bias.uniform_(-0.5, 0.5)
    mha.out_proj.bias.uniform_(-0.5, 0.5)
mha.eval()

# 1. cross-attention L = 3, S = 4, N = 2, bool key_padding_mask and bool attn_mask, averaged weights
#    (N, L, S + 2), and the gradient probes sum(grad * fill(param.shape, 5)) of sum(out * fill(out, 9))
q, k, v = fill((3, 2, 8), 0.5), fill((4, 2, 5), 1.5), fill((4, 2, 3), 2.5)
kpm = torch.tensor([[False, False, True, False], [False, False, False, False]])
am = torch.tensor([[False, True, False, False], [False, False, False, True], [True, False, False, False]])
out1, w1 = mha(q, k, v, key_padding_mask=kpm, attn_mask=am)
(out1 * fill(out1.shape, 9)).sum().backward()
probes = [(name, float((p.grad * fill(p.shape, 5)).sum())) for name, p in mha.named_parameters()]
# 2. the same inputs without weights (scaled_dot_product_attention), a float attn_mask
out2, _ = mha(q, k, v, attn_mask=fill((3, 4), 3.5), need_weights=False)
# 3. is_causal with a causal attn_mask and no weights: the hint replaces the mask by
#    scaled_dot_product_attention's is_causal over (L, S + 2)
causal = torch.triu(torch.ones(4, 4, dtype=torch.bool), diagonal=1)
q4, k4, v4 = fill((4, 2, 8), 4.5), fill((4, 2, 5), 5.5), fill((4, 2, 3), 6.5)
out3, _ = mha(q4, k4, v4, attn_mask=causal, need_weights=False, is_causal=True)
# 4. is_causal with weights: the mask is applied as given, padded for the two extra keys
out4, w4 = mha(q4, k4, v4, attn_mask=causal, is_causal=True)
# 5. unbatched, weights per head
out5, w5 = mha(fill((3, 8), 7.5), fill((4, 5), 8.5), fill((4, 3), 9.5), average_attn_weights=False)

header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
for name, t in mha.state_dict().items():
    flat = t.detach().contiguous().flatten().tolist()
    data = struct.pack("<%df" % len(flat), *flat)   # float32, little-endian (no numpy needed)
    header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
    blobs.append(data)
    offset += len(data)
text = json.dumps(header).encode()
text += b" " * (-len(text) % 8)
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "mha_options.safetensors"), "wb") as f:
    f.write(struct.pack("<Q", len(text)))
    f.write(text)
    for b in blobs:
        f.write(b)
print("  // PyTorch", torch.__version__)
print("  // keys:", ", ".join(mha.state_dict().keys()))
print("  // probes:", ", ".join("%s %.9g" % p for p in probes))
show("out1", out1)
show("w1", w1)
show("out2", out2)
show("out3", out3)
show("out4", out4)
show("w4", w4)
show("out5", out5)
show("w5", w5)
