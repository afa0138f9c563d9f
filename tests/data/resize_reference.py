# tests/data/resize_reference.py: prints the PyTorch values of tests/test_resize.cpp for pad and
# interpolate (`python3 tests/data/resize_reference.py`, torch 2.15.0, float64). Inputs are closed forms:
# vals(n, a, b)[i] = a + b sin(1.3 i + 0.4); each gradient is of sum(out * w), w = vals(out.numel(), 0.5, 1).
import torch
import torch.nn.functional as F

d = torch.float64
vals = lambda n, a, b: a + b * torch.sin(1.3 * torch.arange(n, dtype=d) + 0.4)


def show(name, f, shape):
    x = vals(torch.Size(shape).numel(), 0, 1).reshape(shape).requires_grad_()
    y = f(x)
    w = vals(y.numel(), 0.5, 1).reshape(y.shape)
    (y * w).sum().backward()
    print(name, list(y.shape))
    print("  y", [round(float(v), 15) for v in y.detach().reshape(-1)])
    print("  dx", [round(float(v), 15) for v in x.grad.reshape(-1)])


show("pad reflect (1, 2, 2, 0)", lambda x: F.pad(x, (1, 2, 2, 0), mode="reflect"), (1, 2, 3, 4))
show("pad replicate (2, 1)", lambda x: F.pad(x, (2, 1), mode="replicate"), (2, 3))
show("pad circular (1, 2, 1, 0)", lambda x: F.pad(x, (1, 2, 1, 0), mode="circular"), (1, 1, 2, 3))
show("pad constant (-1, 2, 1, 1) value 0.5", lambda x: F.pad(x, (-1, 2, 1, 1), value=0.5), (2, 3))
show("nearest size 5", lambda x: F.interpolate(x, size=5), (1, 2, 3))
show("nearest scale 2", lambda x: F.interpolate(x, scale_factor=2), (1, 1, 2, 3))
show("nearest scale 1.7 (2D)", lambda x: F.interpolate(x, scale_factor=1.7), (1, 1, 3, 2))
show("linear size 7", lambda x: F.interpolate(x, size=7, mode="linear"), (1, 2, 4))
show("bilinear size (5, 3)", lambda x: F.interpolate(x, size=(5, 3), mode="bilinear"), (1, 2, 3, 4))
show("bilinear scale 2 align_corners", lambda x: F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=True),
     (1, 1, 2, 3))
show("bilinear scale 0.6 (down)", lambda x: F.interpolate(x, scale_factor=0.6, mode="bilinear"), (1, 1, 5, 5))
