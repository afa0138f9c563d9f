# tests/data/transformer_reference.py: writes tests/data/transformer_reference.h, the PyTorch reference
# numbers that tests/test_transformer.cpp checks TransformerEncoderLayer, TransformerEncoder,
# TransformerDecoderLayer, TransformerDecoder and Transformer against.
# Made with pip's PyTorch 2.x (CPU, float32) by running, from the repository root:
#   python3 tests/data/transformer_reference.py > tests/data/transformer_reference.h
# Each case builds a small module (d_model 8, nhead 2, dim_feedforward 16, the default dropout 0.1)
# from torch.manual_seed(a seed per case), adds 0.1 randn to every parameter (so that the biases are
# not zero and the LayerNorm weights not one), puts it
# in eval() (dropout off; with gradients enabled PyTorch takes its general path, not the fast path),
# and records its state_dict, its inputs (masks included), the output, and the gradients of
# loss = sum(out * w), w = sin(0.7 i + 9) over the flattened output, with respect to every floating
# input and every parameter (in named_parameters() order).
import math
import sys

import torch
import torch.nn as nn

D, H, FF = 8, 2, 16


def fill(shape, seed):
    n = math.prod(shape)
    return torch.sin(torch.arange(n, dtype=torch.float32) * 0.7 + seed).reshape(shape)


def causal(sz):
    return nn.Transformer.generate_square_subsequent_mask(sz)


def padding(n, s, pads):
    """(n, s) bool key padding mask: batch entry b has its last pads[b] positions masked."""
    m = torch.zeros(n, s, dtype=torch.bool)
    for b, p in enumerate(pads):
        if p:
            m[b, s - p:] = True
    return m


cases = []   # (name, params [(name, tensor)], inputs [(name, tensor)], out, input grads, param grads)


def record(name, module, inputs, call):
    """inputs: [(name, tensor)]; call(module, dict of tensors) -> output."""
    with torch.no_grad():
        for p in module.parameters():
            p.add_(0.1 * torch.randn(p.shape))
    module.eval()
    ins = {}
    for n, t in inputs:
        t = t.clone()
        if t.is_floating_point() and not n.endswith('mask'):
            t.requires_grad_(True)
        ins[n] = t
    out = call(module, ins)
    loss = (out * fill(out.shape, 9.0)).sum()
    loss.backward()
    in_grads = [(n, t.grad) for n, t in ins.items() if t.requires_grad]
    p_grads = [(n, p.grad) for n, p in module.named_parameters()]
    params = [(n, p.detach()) for n, p in module.state_dict().items()]
    cases.append((name, params, [(n, t.detach()) for n, t in ins.items()], out.detach(), in_grads, p_grads))


def enc_layer(seed, **kw):
    torch.manual_seed(seed)
    return nn.TransformerEncoderLayer(D, H, dim_feedforward=FF, **kw)


def dec_layer(seed, **kw):
    torch.manual_seed(seed)
    return nn.TransformerDecoderLayer(D, H, dim_feedforward=FF, **kw)


# ---- TransformerEncoderLayer
m = enc_layer(1)
record("encoder layer post-norm relu (L, N, E) causal src_mask", m,
       [("src", torch.randn(5, 3, D)), ("src_mask", causal(5))],
       lambda m, x: m(x["src"], src_mask=x["src_mask"]))
m = enc_layer(2, norm_first=True, activation="gelu", batch_first=True)
record("encoder layer norm_first gelu batch_first causal src_mask and key padding mask", m,
       [("src", torch.randn(3, 5, D)), ("src_mask", causal(5)), ("src_key_padding_mask", padding(3, 5, [0, 2, 1]))],
       lambda m, x: m(x["src"], src_mask=x["src_mask"], src_key_padding_mask=x["src_key_padding_mask"]))
m = enc_layer(3, activation="gelu", batch_first=True)
record("encoder layer post-norm gelu batch_first key padding mask", m,
       [("src", torch.randn(2, 4, D)), ("src_key_padding_mask", padding(2, 4, [1, 0]))],
       lambda m, x: m(x["src"], src_key_padding_mask=x["src_key_padding_mask"]))
m = enc_layer(4, norm_first=True)
record("encoder layer norm_first relu (L, N, E) is_causal", m,
       [("src", torch.randn(6, 2, D)), ("src_mask", causal(6))],
       lambda m, x: m(x["src"], src_mask=x["src_mask"], is_causal=True))
m = enc_layer(5, bias=False)
record("encoder layer no bias unbatched", m,
       [("src", torch.randn(4, D))],
       lambda m, x: m(x["src"]))

# ---- TransformerEncoder: two layers and a final LayerNorm
torch.manual_seed(6)
layer = nn.TransformerEncoderLayer(D, H, dim_feedforward=FF, batch_first=True)
m = nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(D), enable_nested_tensor=False)
with torch.no_grad():   # the clones start equal; make the second layer differ
    for p in m.layers[1].parameters():
        p.add_(0.1 * torch.randn(p.shape))
record("encoder 2 layers + norm batch_first causal mask and key padding mask", m,
       [("src", torch.randn(2, 5, D)), ("mask", causal(5)), ("src_key_padding_mask", padding(2, 5, [2, 0]))],
       lambda m, x: m(x["src"], mask=x["mask"], src_key_padding_mask=x["src_key_padding_mask"]))

# ---- TransformerDecoderLayer
m = dec_layer(7)
record("decoder layer post-norm relu (T, N, E) causal tgt_mask and memory key padding mask", m,
       [("tgt", torch.randn(4, 2, D)), ("memory", torch.randn(5, 2, D)), ("tgt_mask", causal(4)),
        ("memory_key_padding_mask", padding(2, 5, [0, 2]))],
       lambda m, x: m(x["tgt"], x["memory"], tgt_mask=x["tgt_mask"],
                      memory_key_padding_mask=x["memory_key_padding_mask"]))
m = dec_layer(8, norm_first=True, activation="gelu", batch_first=True)
record("decoder layer norm_first gelu batch_first tgt_is_causal and tgt key padding mask", m,
       [("tgt", torch.randn(2, 4, D)), ("memory", torch.randn(2, 3, D)), ("tgt_mask", causal(4)),
        ("tgt_key_padding_mask", padding(2, 4, [1, 0]))],
       lambda m, x: m(x["tgt"], x["memory"], tgt_mask=x["tgt_mask"],
                      tgt_key_padding_mask=x["tgt_key_padding_mask"], tgt_is_causal=True))

# ---- TransformerDecoder: two layers and a final LayerNorm
torch.manual_seed(9)
layer = nn.TransformerDecoderLayer(D, H, dim_feedforward=FF, batch_first=True)
m = nn.TransformerDecoder(layer, 2, norm=nn.LayerNorm(D))
with torch.no_grad():
    for p in m.layers[1].parameters():
        p.add_(0.1 * torch.randn(p.shape))
record("decoder 2 layers + norm batch_first causal tgt_mask", m,
       [("tgt", torch.randn(2, 4, D)), ("memory", torch.randn(2, 5, D)), ("tgt_mask", causal(4))],
       lambda m, x: m(x["tgt"], x["memory"], tgt_mask=x["tgt_mask"]))

# ---- Transformer: one encoder and two decoder layers
torch.manual_seed(10)
m = nn.Transformer(D, H, num_encoder_layers=1, num_decoder_layers=2, dim_feedforward=FF, batch_first=True)
record("transformer 1 + 2 layers batch_first causal tgt_mask, src key padding mask as memory's", m,
       [("src", torch.randn(2, 5, D)), ("tgt", torch.randn(2, 3, D)), ("tgt_mask", causal(3)),
        ("src_key_padding_mask", padding(2, 5, [0, 1])), ("memory_key_padding_mask", padding(2, 5, [0, 1]))],
       lambda m, x: m(x["src"], x["tgt"], tgt_mask=x["tgt_mask"], src_key_padding_mask=x["src_key_padding_mask"],
                      memory_key_padding_mask=x["memory_key_padding_mask"]))


def num(v):
    if math.isinf(v):
        return "-kInf" if v < 0 else "kInf"
    s = "%.9g" % v
    return s + ("f" if ("." in s or "e" in s) else ".0f")


def tensor(name, t):
    shape = ", ".join(str(s) for s in t.shape)
    vals = ", ".join(num(v) for v in t.detach().float().flatten().tolist())
    return '{"%s", {%s}, {%s}}' % (name, shape, vals)


def tensors(items):
    return "{\n        " + ",\n        ".join(tensor(n, t) for n, t in items) + "}"


print("// tests/data/transformer_reference.h: written by tests/data/transformer_reference.py (PyTorch %s, CPU,"
      % torch.__version__)
print("// float32) with `python3 tests/data/transformer_reference.py > tests/data/transformer_reference.h`;")
print("// do not edit. Read by tests/test_transformer.cpp, whose cases follow the script's.")
print("""#pragma once
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace transformer_ref {

constexpr float kInf = std::numeric_limits<float>::infinity();   ///< the masks' -inf

/// A named tensor: a state_dict entry, an input (a bool mask as 0 and 1), or a gradient.
struct Named {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<float> values;
};

/// One case: the module's state_dict (in PyTorch's order), the inputs of forward, the output, the
/// gradients of sum(out * sin(0.7 i + 9)) for the floating inputs and the parameters (named_parameters() order).
struct Case {
  std::string name;
  std::vector<Named> params;
  std::vector<Named> inputs;
  Named out;
  std::vector<Named> input_grads;
  std::vector<Named> param_grads;
};

/// In the script's order.
inline const std::vector<Case> kCases = {""")
for name, params, ins, out, igr, pgr in cases:
    print('    {"%s",' % name)
    print('     %s,' % tensors(params))
    print('     %s,' % tensors(ins))
    print('     %s,' % tensor("out", out))
    print('     %s,' % tensors(igr))
    print('     %s},' % tensors(pgr))
print("};\n\n}  // namespace transformer_ref")
