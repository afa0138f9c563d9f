# tests/data/packed_rnn_reference.py: writes tests/data/packed_rnn_reference.h, the PyTorch values that
# tests/test_packed_rnn.cpp checks packed sequences (torch.nn.utils.rnn) and RNN, LSTM and GRU on packed
# input and LSTM's proj_size against. Made with pip's PyTorch (CPU, float64) by running, from the
# repository root:
#   python3 tests/data/packed_rnn_reference.py > tests/data/packed_rnn_reference.h
# As in tests/data/rnn_reference.py, parameter j of named_parameters() has element
# i = 0.3 sin(1.1 i + 0.7 j + 0.1) and vals(n, a, b)[i] = a + b sin(1.3 i + 0.4): the padded input x is
# vals(n, 0, 1) of its shape, h0 vals(n, 0.1, 0.5), c0 vals(n, -0.2, 0.7). The loss is
# sum(out * vals(out.numel(), 0.5, 1)) + sum(h_n * vals(h_n.numel(), -0.3, 0.8)) + sum(c_n), where out is
# the packed output's data (its row order is checked with it) or the padded output.
import math

import torch
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence, pad_sequence, pack_sequence

d = torch.float64
vals = lambda n, a, b: a + b * torch.sin(1.3 * torch.arange(n, dtype=d) + 0.4)
cases = []   # (name, {field: list of numbers}, parameter names)


def setup(m):
    m.double()
    with torch.no_grad():
        for j, (name, p) in enumerate(m.named_parameters()):
            n = p.numel()
            p.copy_(torch.tensor([0.3 * math.sin(1.1 * i + 0.7 * j + 0.1) for i in range(n)], dtype=d).reshape(p.shape))
    return m


def flat(t):
    return [float(v) for v in t.detach().reshape(-1)]


def run(name, m, shape, lengths=None, enforce_sorted=True, batch_first=False, with_state=False):
    """lengths None: the padded input itself; else packed with pack_padded_sequence."""
    setup(m)
    x = vals(torch.Size(shape).numel(), 0, 1).reshape(shape).requires_grad_()
    is_lstm = isinstance(m, torch.nn.LSTM)
    dirs = 2 if m.bidirectional else 1
    batch = shape[0] if batch_first else shape[1]
    out_size = m.proj_size if getattr(m, "proj_size", 0) else m.hidden_size
    state = None
    leaves = []
    if with_state:
        h0 = vals(m.num_layers * dirs * batch * out_size, 0.1, 0.5).reshape(m.num_layers * dirs, batch, out_size).requires_grad_()
        leaves.append(h0)
        state = h0
        if is_lstm:
            c0 = vals(m.num_layers * dirs * batch * m.hidden_size, -0.2, 0.7).reshape(m.num_layers * dirs, batch, m.hidden_size).requires_grad_()
            leaves.append(c0)
            state = (h0, c0)
    inp = x if lengths is None else pack_padded_sequence(x, torch.tensor(lengths), batch_first=batch_first,
                                                         enforce_sorted=enforce_sorted)
    y, h = m(inp) if state is None else m(inp, state)
    hn, cn = h if is_lstm else (h, None)
    out = y if lengths is None else y.data
    loss = (out * vals(out.numel(), 0.5, 1).reshape(out.shape)).sum() + (hn * vals(hn.numel(), -0.3, 0.8).reshape(hn.shape)).sum()
    if cn is not None:
        loss = loss + cn.sum()
    loss.backward()
    f = {"out_shape": list(out.shape), "out": flat(out), "hn": flat(hn), "cn": flat(cn) if cn is not None else [],
         "dx": flat(x.grad), "dh0": flat(leaves[0].grad) if leaves else [],
         "dc0": flat(leaves[1].grad) if len(leaves) > 1 else []}
    if lengths is not None:
        padded, lens = pad_packed_sequence(y, batch_first=batch_first)
        f["padded_shape"] = list(padded.shape)
        f["padded"] = flat(padded)
        f["lengths"] = [int(v) for v in lens]
    names = []
    for n, p in m.named_parameters():
        names.append(n)
        f["d_" + n] = flat(p.grad)
    cases.append((name, f, names))


run("lstm packed unsorted 2 layers bidirectional with state", torch.nn.LSTM(3, 4, num_layers=2, bidirectional=True),
    (5, 4, 3), lengths=[3, 5, 1, 5], enforce_sorted=False, with_state=True)
run("gru packed sorted bidirectional batch_first", torch.nn.GRU(3, 4, bidirectional=True, batch_first=True),
    (3, 4, 3), lengths=[4, 2, 2], batch_first=True)
run("rnn packed unsorted 2 layers with state", torch.nn.RNN(2, 3, num_layers=2), (4, 3, 2), lengths=[2, 4, 3],
    enforce_sorted=False, with_state=True)
run("rnn relu packed bidirectional no bias", torch.nn.RNN(2, 3, bidirectional=True, nonlinearity="relu", bias=False),
    (3, 2, 2), lengths=[3, 1])
run("lstm proj_size 2 layers bidirectional with state", torch.nn.LSTM(3, 4, num_layers=2, bidirectional=True, proj_size=2),
    (4, 2, 3), with_state=True)
run("lstm proj_size batch_first no bias", torch.nn.LSTM(3, 5, proj_size=3, bias=False, batch_first=True), (2, 4, 3))
run("lstm proj_size packed unsorted bidirectional", torch.nn.LSTM(2, 3, proj_size=1, bidirectional=True),
    (4, 3, 2), lengths=[2, 4, 1], enforce_sorted=False, with_state=True)

# packing itself: pack_padded_sequence of (T, B, 2) = vals(., 0, 1) with lengths [2, 5, 3, 5] unsorted
x = vals(5 * 4 * 2, 0, 1).reshape(5, 4, 2)
p = pack_padded_sequence(x, [2, 5, 3, 5], enforce_sorted=False)
packing = {"data": flat(p.data), "batch_sizes": [int(v) for v in p.batch_sizes],
           "sorted_indices": [int(v) for v in p.sorted_indices], "unsorted_indices": [int(v) for v in p.unsorted_indices]}
pl = pad_sequence([vals(2 * 2, 0, 1).reshape(2, 2), vals(4 * 2, 1, 1).reshape(4, 2), vals(3 * 2, 2, 1).reshape(3, 2)],
                  batch_first=True, padding_value=-1.5, padding_side="left")
packing["pad_left"] = flat(pl)
packing["pad_left_shape"] = list(pl.shape)
ps = pack_sequence([vals(2 * 2, 0, 1).reshape(2, 2), vals(4 * 2, 1, 1).reshape(4, 2), vals(3 * 2, 2, 1).reshape(3, 2)],
                   enforce_sorted=False)
packing["pack_sequence_data"] = flat(ps.data)
packing["pack_sequence_batch_sizes"] = [int(v) for v in ps.batch_sizes]


def num(v):
    return "%.17g" % v


def cstr(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def vec(vs):
    return "{" + ", ".join(num(v) if isinstance(v, float) else str(v) for v in vs) + "}"


print("// tests/data/packed_rnn_reference.h: written by tests/data/packed_rnn_reference.py (PyTorch %s, float64);"
      % torch.__version__)
print("// do not edit. Read by tests/test_packed_rnn.cpp, whose cases follow the script's.")
print("#pragma once")
print("#include <map>")
print("#include <string>")
print("#include <vector>")
print()
print("namespace packed_rnn {")
print()
print("/// One layer's case: named lists of values (out, hn, cn, dx, dh0, dc0, padded, lengths, the shapes")
print("/// and d_<parameter> for every parameter) and the parameter names in named_parameters() order.")
print("struct Case {")
print("  std::string name;")
print("  std::map<std::string, std::vector<double>> values;")
print("  std::vector<std::string> parameters;")
print("};")
print()
print("/// In the script's order.")
print("inline const std::vector<Case> kCases = {")
for name, f, names in cases:
    print("    {%s," % cstr(name))
    print("     {")
    for k, v in f.items():
        print("         {%s, %s}," % (cstr(k), vec(v)))
    print("     },")
    print("     {%s}}," % ", ".join(map(cstr, names)))
print("};")
print()
print("/// pack_padded_sequence, pad_sequence and pack_sequence themselves (see the script).")
print("inline const std::map<std::string, std::vector<double>> kPacking = {")
for k, v in packing.items():
    print("    {%s, %s}," % (cstr(k), vec(v)))
print("};")
print()
print("}  // namespace packed_rnn")
