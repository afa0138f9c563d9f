# tests/data/rnn_reference.py: prints the PyTorch values of tests/test_rnn.cpp (`python3
# tests/data/rnn_reference.py`, torch 2.15.0, float64). Parameter j of named_parameters() (PyTorch's order
# and names) has element i = 0.3 sin(1.1 i + 0.7 j + 0.1); inputs are vals(n, 0, 1), vals(n, a, b)[i] =
# a + b sin(1.3 i + 0.4); the gradients are of sum(output * vals(output.numel(), 0.5, 1)) + sum(h_n).
import math

import torch

d = torch.float64
vals = lambda n, a, b: a + b * torch.sin(1.3 * torch.arange(n, dtype=d) + 0.4)


def setup(m):
    m.double()
    with torch.no_grad():
        for j, (name, p) in enumerate(m.named_parameters()):
            n = p.numel()
            p.copy_(torch.tensor([0.3 * math.sin(1.1 * i + 0.7 * j + 0.1) for i in range(n)], dtype=d).reshape(p.shape))
    return m


def r(t):
    return [round(float(v), 14) for v in t.detach().reshape(-1)]


def run(name, m, shape, extra=None):
    setup(m)
    x = vals(torch.Size(shape).numel(), 0, 1).reshape(shape).requires_grad_()
    out = m(x) if extra is None else m(x, extra)
    y, h = out
    hn = h[0] if isinstance(h, tuple) else h
    loss = (y * vals(y.numel(), 0.5, 1).reshape(y.shape)).sum() + hn.sum()
    loss.backward()
    print(name, [n for n, _ in m.named_parameters()])
    print("  y", list(y.shape), r(y))
    print("  hn", list(hn.shape), r(hn))
    if isinstance(h, tuple):
        print("  cn", r(h[1]))
    print("  dx", r(x.grad))
    first = next(m.parameters())
    print("  dw0", r(first.grad))


run("lstm 2 layers bidirectional batch_first", torch.nn.LSTM(3, 4, num_layers=2, bidirectional=True, batch_first=True), (2, 5, 3))
run("gru", torch.nn.GRU(3, 4), (5, 2, 3))
run("rnn relu 2 layers no bias", torch.nn.RNN(3, 4, num_layers=2, nonlinearity="relu", bias=False), (4, 2, 3))
run("lstm unbatched", torch.nn.LSTM(3, 2), (4, 3))
# cells: one step from a given state
for name, cell in [("lstmcell", torch.nn.LSTMCell(3, 4)), ("grucell", torch.nn.GRUCell(3, 4)), ("rnncell", torch.nn.RNNCell(3, 4))]:
    setup(cell)
    x = vals(6, 0, 1).reshape(2, 3).requires_grad_()
    h = vals(8, 0.1, 0.5).reshape(2, 4)
    if name == "lstmcell":
        h1, c1 = cell(x, (h, vals(8, -0.2, 0.7).reshape(2, 4)))
        (h1.sum() + 2 * c1.sum()).backward()
        print(name, "h", r(h1), "c", r(c1), "dx", r(x.grad))
    else:
        h1 = cell(x, h)
        h1.sum().backward()
        print(name, "h", r(h1), "dx", r(x.grad))
print(torch.nn.LSTM(10, 20, num_layers=2, batch_first=True, dropout=0.5, bidirectional=True))
print(torch.nn.RNN(10, 20, nonlinearity="relu", bias=False), torch.nn.GRU(3, 4), torch.nn.LSTMCell(3, 4))
