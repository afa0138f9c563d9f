# tests/data/attention_masked.py: prints the PyTorch reference numbers of
# tests/test_attention_masked.cpp, attention whose query rows mask every key (PyTorch 2.15.0, CPU,
# float64; scaled_dot_product_attention gives 0 for such a row since PyTorch 2.5). Every input is
# wave(shape, a, b) = sin(a i + b) over the flattened float64 tensor, which the C++ test builds the same
# way. Each case prints the output and the gradients of sum(out * w) for a fixed w, as C++ initializer
# lists, under the case's letter. Run: python3 tests/data/attention_masked.py
import torch
import torch.nn as nn
import torch.nn.functional as F

inf = float("inf")


def wave(shape, a, b):
    n = 1
    for s in shape:
        n *= s
    return torch.sin(torch.arange(n, dtype=torch.float64) * a + b).reshape(shape)


def show(name, t):
    print(f"// {name} {list(t.shape)}\n{{{', '.join(repr(float(x)) for x in t.detach().flatten().tolist())}}}")


def sdpa_case(title, qs, ks, vs, mask, mask_grad=False):
    print("====", title)
    q = wave(qs, 0.7, 0.3).requires_grad_()
    k = wave(ks, 1.3, -0.2).requires_grad_()
    v = (wave(vs, 0.5, 0.9) * 2).requires_grad_()
    m = mask.clone().requires_grad_() if mask_grad else mask
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=m)
    (out * wave(out.shape, 0.9, 0.1)).sum().backward()
    show("out", out)
    show("dq", q.grad)
    show("dk", k.grad)
    show("dv", v.grad)
    if mask_grad:
        show("dmask", m.grad)


# A: bool (3, 5) over a batch of 2: row 0 masks keys 1 and 3, row 1 every key, row 2 none
bm = torch.ones(3, 5, dtype=torch.bool)
bm[0, 1] = bm[0, 3] = False
bm[1] = False
sdpa_case("A bool mask", (2, 3, 4), (2, 5, 4), (2, 5, 3), bm)
# B: the same pattern as a float mask, wave((3, 5), 0.4, 0) with -inf where bm is false, requiring grad
sdpa_case("B float mask", (2, 3, 4), (2, 5, 4), (2, 5, 3), wave((3, 5), 0.4, 0.0).masked_fill(~bm, -inf), True)
# C: key padding (2, 1, 1, 4) over (N, H) = (2, 2): batch 0 keeps keys 0 and 2, batch 1 none
kp = torch.tensor([True, False, True, False, False, False, False, False]).reshape(2, 1, 1, 4)
sdpa_case("C key padding", (2, 2, 2, 3), (2, 2, 4, 3), (2, 2, 4, 2), kp)

# G: no mask, but query row 0 holds -inf and every key's first component is positive: its scores are -inf
print("==== G infinite query")
q = torch.tensor([[[-inf, 0.5, 0.25], [0.3, -0.2, 0.1]]], dtype=torch.float64)
k = torch.tensor([[[1.0, 0.2, -0.3], [0.5, 0.1, 0.7], [2.0, -1.0, 0.4], [0.25, 0.3, 0.3]]], dtype=torch.float64)
show("out", F.scaled_dot_product_attention(q, k, wave((1, 4, 2), 0.5, 0.9) * 2))

# MultiheadAttention(4, 2), float64, (L, N, E) = (3, 2, 4), self-attention on x = wave((3, 2, 4), 0.45, 0.2)
m = nn.MultiheadAttention(4, 2).double()
with torch.no_grad():
    m.in_proj_weight.copy_(wave((12, 4), 0.37, 0.1) * 0.5)
    m.in_proj_bias.copy_(wave((12,), 0.8, 0.4) * 0.1)
    m.out_proj.weight.copy_(wave((4, 4), 0.61, -0.5) * 0.5)
    m.out_proj.bias.copy_(torch.tensor([0.1, 0.2, 0.3, 0.4], dtype=torch.float64))
kpm = torch.tensor([[False, False, True], [True, True, True]])   # batch 1: every key padded


def mha_case(title, **kw):
    print("====", title)
    m.zero_grad()
    x = wave((3, 2, 4), 0.45, 0.2).requires_grad_()
    out, weights = m(x, x, x, **kw)
    (out * wave((3, 2, 4), 0.9, 0.1)).sum().backward()
    show("out", out)
    show("dx", x.grad)
    show("din_proj_weight", m.in_proj_weight.grad)
    if weights is not None:
        show("weights", weights)


mha_case("H key_padding_mask, need_weights=False", key_padding_mask=kpm, need_weights=False)
mha_case("I key_padding_mask, need_weights=True", key_padding_mask=kpm, need_weights=True)
mha_case("I2 float key_padding_mask, need_weights=True",
         key_padding_mask=torch.zeros(2, 3, dtype=torch.float64).masked_fill(kpm, -inf), need_weights=True)
am = torch.tensor([[False, True, False], [True, True, True], [False, False, False]])   # query 1: every key
mha_case("J attn_mask, need_weights=False", attn_mask=am, need_weights=False)
mha_case("K is_causal with the causal attn_mask and key_padding_mask, need_weights=False",
         attn_mask=torch.triu(torch.ones(3, 3, dtype=torch.bool), 1), key_padding_mask=kpm, need_weights=False,
         is_causal=True)
