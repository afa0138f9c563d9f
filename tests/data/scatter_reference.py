# tests/data/scatter_reference.py: prints the PyTorch values of the scatter_add / index_add case of
# tests/test_ops.cpp (`python3 tests/data/scatter_reference.py`, pip torch 2.15.0, CPU, float64).
# Inputs are vals(n, a, b)[i] = a + b sin(1.3 i + 0.4) (tests/testing.h).
import torch
d = torch.float64
vals = lambda n, a, b: a + b * torch.sin(1.3 * torch.arange(n, dtype=d) + 0.4)
def pr(name, t): print(name, [float(v) for v in t.detach().reshape(-1)])
x = vals(12, 0, 1).reshape(3, 4).requires_grad_()
src = vals(6, 0.5, 2).reshape(2, 3).requires_grad_()
index = torch.tensor([[0, 2, 2], [1, 0, 3]])   # dim 1, with a repeat
w = vals(12, -1, 0.5).reshape(3, 4)
y = torch.scatter_add(x, 1, index, src)
(y * w).sum().backward()
pr("scatter_add", y); pr("scatter_add dx", x.grad); pr("scatter_add dsrc", src.grad)
x.grad = None
s2 = vals(8, 1, 1).reshape(2, 4).requires_grad_()
i2 = torch.tensor([2, 0])
y2 = torch.index_add(x, 0, i2, s2, alpha=-1.5)
(y2 * w).sum().backward()
pr("index_add", y2); pr("index_add dx", x.grad); pr("index_add dsrc", s2.grad)
try: torch.scatter_add(x, 1, index, src.float())
except Exception as e: print("err", repr(str(e)))
try: torch.index_add(x, 0, torch.tensor([0, 1, 2]), s2)
except Exception as e: print("err", repr(str(e)))
