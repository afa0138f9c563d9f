# tests/data/ops_vocab_reference.py: prints the PyTorch reference values of tests/test_reductions.cpp
# and tests/test_splitting.cpp (run with pip's torch 2.x: python3 tests/data/ops_vocab_reference.py).
# For each case: x (float64), y = f(x), and dx, the gradient of sum(y * w) with w_i = 0.5 + 0.25 (i % 5)
# over y's flattened elements; printed as C++ initializers {name, x shape, x, y shape, y, dx}.
import math
import torch

torch.set_default_dtype(torch.float64)
inf = math.inf


def fmt(v):
    if isinstance(v, bool):
        return "1.0" if v else "0.0"
    v = float(v)
    if math.isnan(v):
        return "kNaN"
    if math.isinf(v):
        return "kInf" if v > 0 else "-kInf"
    return repr(v)


def lst(t):
    return "{" + ", ".join(fmt(v) for v in t.reshape(-1).tolist()) + "}"


def shape(t):
    return "{" + ", ".join(str(s) for s in t.shape) + "}"


def emit(name, x, f, grad=True):
    x = x.clone().requires_grad_(grad)
    y = f(x)
    w = torch.tensor([0.5 + 0.25 * (i % 5) for i in range(y.numel())]).reshape(y.shape)
    dx = None
    if grad:
        (y.to(torch.float64) * w).sum().backward()
        dx = x.grad
    print('    {"%s", %s, %s, %s, %s, %s},' % (name, shape(x), lst(x.detach()), shape(y), lst(y.detach().to(torch.float64)),
                                            lst(dx) if dx is not None else "{}"))


a = torch.tensor([[0.3, -1.2, 2.5, 0.7], [1.1, 0.4, -0.6, -2.2], [-0.9, 1.8, 0.2, 0.05]])
b = torch.tensor([[[0.5, -0.25, 1.5], [2.0, -1.0, 0.75]], [[-0.3, 0.9, 1.2], [0.1, -2.5, 0.6]]])
zeros = torch.tensor([[1.5, 0.0, -2.0, 0.5], [0.0, 3.0, 0.0, -1.0], [0.8, -1.25, 2.0, 0.6]])
ties = torch.tensor([[1.0, 3.0, 3.0], [-2.0, 3.0, 0.5], [1.0, -2.0, -2.0]])
print("// reductions")
emit("logsumexp dim 1", a, lambda x: torch.logsumexp(x, 1))
emit("logsumexp dims 0 2 keepdim", b, lambda x: torch.logsumexp(x, (0, 2), keepdim=True))
emit("logsumexp large", a * 1000, lambda x: torch.logsumexp(x, 0))
emit("logsumexp inf rows", torch.tensor([[-inf, -inf, -inf], [1000.0, 1000.5, -inf], [0.5, inf, 1.0]]),
     lambda x: torch.logsumexp(x, 1), grad=False)
emit("var dim 1", a, lambda x: torch.var(x, 1))
emit("var all", a, lambda x: torch.var(x))
emit("var dim 0 correction 0 keepdim", a, lambda x: torch.var(x, 0, correction=0, keepdim=True))
emit("var dims 0 2 correction 2", b, lambda x: torch.var(x, (0, 2), correction=2))
emit("var dim 1 unbiased false", a, lambda x: torch.var(x, 1, unbiased=False))
emit("std dim 0", a, lambda x: torch.std(x, 0))
emit("std all", b, lambda x: torch.std(x))
emit("std zero spread", torch.tensor([[2.0, 2.0, 2.0], [1.0, 2.0, 4.0]]), lambda x: torch.std(x, 1))
emit("norm all", a, lambda x: torch.norm(x))
emit("norm p1 dim 1", a, lambda x: torch.norm(x, 1, 1))
emit("norm inf dim 0", ties, lambda x: torch.norm(x, inf, 0))
emit("norm -inf all", a, lambda x: torch.norm(x, -inf))
emit("norm p3 dim 1 keepdim", a, lambda x: torch.norm(x, 3, 1, keepdim=True))
emit("norm p0.5 dim 1", a, lambda x: torch.norm(x, 0.5, 1))
emit("norm p0 dim 1", zeros, lambda x: torch.norm(x, 0, 1))
emit("norm zero row", torch.tensor([[0.0, 0.0, 0.0], [3.0, 0.0, -4.0]]), lambda x: torch.norm(x, 2, 1))
emit("norm p3 zero row", torch.tensor([[0.0, 0.0, 0.0], [3.0, 0.0, -4.0]]), lambda x: torch.norm(x, 3, 1))
emit("prod all", a, lambda x: torch.prod(x))
emit("prod dim 1 zeros", zeros, lambda x: torch.prod(x, 1))
emit("prod dim 0 keepdim zeros", zeros, lambda x: torch.prod(x, 0, keepdim=True))
emit("prod all one zero", torch.tensor([1.5, 0.0, -2.0, 0.5, 3.0]), lambda x: torch.prod(x))
emit("amax dims 0 1 ties", ties, lambda x: torch.amax(x, (0, 1)))
emit("amax dim 1", ties, lambda x: torch.amax(x, 1))
emit("amin dim 0 keepdim", ties, lambda x: torch.amin(x, 0, keepdim=True))
emit("amin dims 0 2", b, lambda x: torch.amin(x, (0, 2)))
emit("cumsum dim 1", a, lambda x: torch.cumsum(x, 1))
emit("cumsum dim 0", b, lambda x: torch.cumsum(x, 0))
emit("cumprod dim 1 zeros", zeros, lambda x: torch.cumprod(x, 1))
emit("cumprod dim 0", a, lambda x: torch.cumprod(x, 0))
emit("cumprod long zeros", torch.tensor([1.5, -0.5, 2.0, 0.0, 1.25, -3.0, 0.0, 2.0, 0.75, 1.1, -0.9]),
     lambda x: torch.cumprod(x, 0))
emit("all dim 1", zeros, lambda x: torch.all(x, 1), grad=False)
emit("any dim 0", torch.tensor([[0.0, 0.0, 1.0], [0.0, math.nan, 0.0]]), lambda x: torch.any(x, 0), grad=False)
print("// rearranging")
c = torch.arange(24.0).reshape(2, 3, 4) / 4 - 1
emit("flip dims 0 2", c, lambda x: torch.flip(x, (0, 2)))
emit("roll 1 dim 2", c, lambda x: torch.roll(x, 1, 2))
emit("roll -2 5 dims 1 2", c, lambda x: torch.roll(x, (-2, 5), (1, 2)))
emit("roll 3 flat", c, lambda x: torch.roll(x, 3))
emit("repeat 2 1 3", a[:2, :3], lambda x: x.repeat(2, 1, 3))
emit("repeat_interleave 2 dim 1", a[:2, :3], lambda x: torch.repeat_interleave(x, 2, 1))
emit("repeat_interleave 3 flat", a[:2, :2], lambda x: torch.repeat_interleave(x, 3))
d = torch.arange(35.0).reshape(7, 5) / 8
for name, parts in [("split 3 dim 0", torch.split(d, 3, 0)), ("split sizes 1 3 1 dim 1", torch.split(d, [1, 3, 1], 1)),
                    ("chunk 4 dim 0", torch.chunk(d, 4, 0)), ("chunk 3 dim 1", torch.chunk(d, 3, 1)),
                    ("chunk 6 of 6", torch.chunk(torch.arange(6.0), 4)), ("unbind dim 1", torch.unbind(d, 1))]:
    print('    // %s: sizes %s' % (name, [tuple(p.shape) for p in parts]))
