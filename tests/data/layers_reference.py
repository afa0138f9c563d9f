# tests/data/layers_reference.py: prints the PyTorch reference numbers that tests/test_layers.cpp
# checks conv1d/conv2d/pooling/normalization/embedding/attention against. Run with Debian's PyTorch
# 1.13 (/usr/bin/python3 tests/data/layers_reference.py) up to layer_norm; the embedding, group_norm and
# attention cases at the end need PyTorch >= 2.1 (scaled_dot_product_attention's scale=), e.g. from
# `pip install torch` in a virtual environment.
# Every input is fill(shape, seed) = sin(0.7 i + seed) over the flattened float64 tensor, which the C++
# test builds the same way. For each case it prints the loss sum(out * fill(out.shape, 9)), the first
# eight outputs, and the gradient probes sum(grad * fill(grad.shape, 5)) for each input.
import torch
import torch.nn.functional as F

torch.set_printoptions(precision=17)


def fill(shape, seed):
    n = 1
    for s in shape:
        n *= s
    return torch.sin(torch.arange(n, dtype=torch.float64) * 0.7 + seed).reshape(shape)


def report(name, fn, *shapes):
    ins = [fill(s, 1.0 + i).requires_grad_(True) for i, s in enumerate(shapes)]
    out = fn(*ins)
    loss = (out * fill(out.shape, 9.0)).sum()
    loss.backward()
    first = ", ".join("%.17g" % v for v in out.flatten()[:8].tolist())
    probes = ", ".join("%.17g" % (t.grad * fill(t.shape, 5.0)).sum().item() for t in ins)
    print('  {"%s", %.17g, {%s}, {%s}},' % (name, loss.item(), first, probes))


report("conv2d groups stride padding dilation",
       lambda x, w, b: F.conv2d(x, w, b, stride=(2, 1), padding=(1, 2), dilation=(1, 2), groups=2),
       (2, 4, 5, 6), (6, 2, 3, 2), (6,))
report("conv2d 3x3 padding 1", lambda x, w, b: F.conv2d(x, w, b, padding=1), (1, 3, 7, 7), (4, 3, 3, 3), (4,))
report("conv2d 1x1 no bias", lambda x, w: F.conv2d(x, w), (2, 5, 3, 4), (3, 5, 1, 1))
report("conv1d stride 2 padding 1", lambda x, w, b: F.conv1d(x, w, b, stride=2, padding=1), (2, 3, 9), (4, 3, 3), (4,))
report("max_pool2d 3 stride 2 padding 1", lambda x: F.max_pool2d(x, 3, 2, 1), (2, 3, 7, 8))
report("max_pool2d 2", lambda x: F.max_pool2d(x, 2), (2, 2, 6, 5))
report("avg_pool2d (3, 2) stride 2 padding 1",
       lambda x: F.avg_pool2d(x, (3, 2), 2, 1), (2, 3, 7, 8))
report("avg_pool2d count_include_pad false",
       lambda x: F.avg_pool2d(x, 3, 2, 1, count_include_pad=False), (2, 3, 7, 8))
report("adaptive_avg_pool2d (3, 4)", lambda x: F.adaptive_avg_pool2d(x, (3, 4)), (2, 3, 7, 9))


def bn_train(x, w, b):
    rm, rv = torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
    y = F.batch_norm(x, rm, rv, w, b, training=True, momentum=0.1, eps=1e-5)
    print("  // running_mean after one step:", ", ".join("%.17g" % v for v in rm.tolist()))
    print("  // running_var after one step:", ", ".join("%.17g" % v for v in rv.tolist()))
    return y


report("batch_norm training", bn_train, (4, 3, 2, 5), (3,), (3,))
report("batch_norm eval",
       lambda x, w, b: F.batch_norm(x, fill((3,), 7.0), fill((3,), 8.0).exp(), w, b, training=False),
       (2, 3, 4), (3,), (3,))
report("layer_norm over (3, 4)", lambda x, w, b: F.layer_norm(x, (3, 4), w, b, eps=1e-5), (2, 3, 4), (3, 4), (3, 4))

# Embedding, group_norm and scaled_dot_product_attention (needs PyTorch >= 2.1 for scale=; the math
# backend is forced, the one tensorgrad's composition follows).
try:
    from torch.nn.attention import SDPBackend, sdpa_kernel
    math_only = lambda: sdpa_kernel(SDPBackend.MATH)
except ImportError:
    import contextlib
    math_only = contextlib.nullcontext

ids = torch.tensor([[0, 2, 1], [4, 2, 3]])
report("embedding padding_idx 1", lambda w: F.embedding(ids, w, padding_idx=1), (5, 4))
report("embedding repeated indices", lambda w: F.embedding(ids.flatten(), w), (6, 3))
report("group_norm 2 groups", lambda x, w, b: F.group_norm(x, 2, w, b, eps=1e-5), (2, 6, 3, 2), (6,), (6,))
report("group_norm 3 groups no affine", lambda x: F.group_norm(x, 3), (3, 6, 5))
with math_only():
    report("sdpa", lambda q, k, v: F.scaled_dot_product_attention(q, k, v), (2, 3, 5, 4), (2, 3, 6, 4), (2, 3, 6, 3))
    report("sdpa causal L < S", lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
           (2, 5, 4), (2, 6, 4), (2, 6, 3))
    keep = torch.tensor([[True, False, True, True, False, True]]).expand(5, 6).clone()
    keep[2, 0] = False
    report("sdpa bool mask, broadcast key batch",
           lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=keep), (2, 3, 5, 4), (1, 3, 6, 4),
           (1, 3, 6, 3))
    report("sdpa float mask with gradient, scale 0.3",
           lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m, scale=0.3), (3, 5, 4), (3, 6, 4),
           (3, 6, 2), (5, 6))

# Pooling with dilation and ceil_mode (any PyTorch >= 1.13; recorded with 2.15). ceil_mode's output size
# rounds up unless the last window would start past the input and its left padding; avg_pool2d divides
# a window reaching past the padded input by the part inside it.
report("max_pool2d 3 stride 2 padding 1 dilation 2",
       lambda x: F.max_pool2d(x, 3, 2, 1, dilation=2), (2, 3, 9, 10))
report("max_pool2d (3, 2) stride 2 padding 1 dilation (1, 2) ceil_mode",
       lambda x: F.max_pool2d(x, (3, 2), 2, 1, dilation=(1, 2), ceil_mode=True), (2, 3, 8, 10))
report("max_pool2d 2 padding 1 ceil_mode, last window dropped",
       lambda x: F.max_pool2d(x, 2, 2, 1, ceil_mode=True), (1, 2, 5, 7))
report("avg_pool2d 3 stride 2 padding 1 ceil_mode",
       lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True), (2, 3, 8, 10))
report("avg_pool2d (3, 2) stride (2, 3) padding (1, 0) ceil_mode count_include_pad false",
       lambda x: F.avg_pool2d(x, (3, 2), (2, 3), (1, 0), ceil_mode=True, count_include_pad=False), (2, 3, 8, 10))
report("avg_pool2d 2 ceil_mode no padding",
       lambda x: F.avg_pool2d(x, 2, ceil_mode=True), (1, 2, 5, 5))
# A stride-1 convolution whose input gradient the CPU computes as a convolution of dy, with rows as long
# as the input's (im2col's one-copy-per-row path).
report("conv2d stride 1 groups 2 padding (2, 1) dilation (2, 1)",
       lambda x, w, b: F.conv2d(x, w, b, padding=(2, 1), dilation=(2, 1), groups=2), (2, 4, 7, 6), (6, 2, 3, 3), (6,))
