# tests/data/qat_reference.py: the PyTorch values behind the per-channel fake quantization, the
# per-channel moving-average observer and the quantization-aware Linear cases of tests/test_qat.cpp.
# Run with PyTorch 1.13 (Debian python3-torch): /usr/bin/python3 tests/data/qat_reference.py
import math

import torch
import torch.nn.functional as F
from torch.ao.quantization import MovingAveragePerChannelMinMaxObserver, get_default_qat_qconfig


def wave(n, off, s):
    """x[k] = s sin(off + 1.7 k) + 0.3, computed in float64, then float32 (test_qat.cpp's wave())."""
    return torch.tensor([s * math.sin(off + 1.7 * k) + 0.3 for k in range(n)], dtype=torch.float64).float()


def show(name, t):
    print(name, [float(v) if t.is_floating_point() else int(v) for v in t.detach().flatten().tolist()])


# fake_quantize_per_channel_affine along axis 0 (int8) and axis 1 (uint8), with clamped entries
x = wave(15, 0.5, 2.0).reshape(3, 5).requires_grad_()
y = torch.fake_quantize_per_channel_affine(x, torch.tensor([0.05, 0.011, 0.3]), torch.tensor([0, -3, 10], dtype=torch.int32),
                                           0, -128, 127)
y.backward(torch.arange(1, 16, dtype=torch.float32).reshape(3, 5))
show("fq axis0 y", y)
show("fq axis0 grad", x.grad)
x2 = wave(12, 1.0, 3.0).reshape(3, 4).requires_grad_()
y2 = torch.fake_quantize_per_channel_affine(x2, torch.tensor([0.02, 0.1, 0.005, 0.5]),
                                            torch.tensor([0, 128, 255, 100], dtype=torch.int32), 1, 0, 255)
y2.backward(torch.arange(1, 13, dtype=torch.float32).reshape(3, 4))
show("fq axis1 y", y2)
show("fq axis1 grad", x2.grad)

# per-channel moving-average observers over three batches
batches = [wave(12, 0.0, 2.0).reshape(3, 4), wave(12, 1.0, 3.0).reshape(3, 4), wave(12, 2.0, 0.5).reshape(3, 4)]
for name, obs in [("obs default (uint8 affine) axis0", MovingAveragePerChannelMinMaxObserver()),
                  ("obs int8 symmetric axis0",
                   MovingAveragePerChannelMinMaxObserver(dtype=torch.qint8, qscheme=torch.per_channel_symmetric)),
                  ("obs uint8 affine reduce axis1 c0.5",
                   MovingAveragePerChannelMinMaxObserver(averaging_constant=0.5, ch_axis=1, dtype=torch.quint8,
                                                         qscheme=torch.per_channel_affine, reduce_range=True))]:
    for b in batches:
        obs(b)
    s, z = obs.calculate_qparams()
    show(name + " min_val", obs.min_val)
    show(name + " max_val", obs.max_val)
    show(name + " scale", s)
    show(name + " zero_point", z)

# the fbgemm QAT qconfig's (version 0) fake quantizers around one Linear (torch.ao.nn.qat.Linear's arithmetic,
# observing the Linear's input), after one forward
qconfig = get_default_qat_qconfig("fbgemm", version=0)   # FakeQuantize, not the fused variant of version 1
act, wfq = qconfig.activation(), qconfig.weight()
W = wave(24, 0.3, 0.8).reshape(4, 6)
b = torch.tensor([0.1, -0.2, 0.3, -0.4])
X = wave(18, 2.0, 1.5).reshape(3, 6)
out = F.linear(act(X), wfq(W), b)
print("qat input scale", float(act.scale), "zero_point", int(act.zero_point), "range", act.quant_min, act.quant_max)
show("qat weight scale", wfq.scale)
show("qat weight zero_point", wfq.zero_point)
show("qat out", out)

# static post-training quantization of the same Linear: the input observed by MinMaxObserver (quint8,
# reduce_range), the weight by PerChannelMinMaxObserver (qint8, per_channel_symmetric); the converted
# Linear's arithmetic is the fake-quantized Linear with those parameters
from torch.ao.quantization import MinMaxObserver, PerChannelMinMaxObserver  # noqa: E402

xobs = MinMaxObserver(dtype=torch.quint8, reduce_range=True)
xobs(X)
xobs(wave(18, 4.0, 1.0).reshape(3, 6))
wobs = PerChannelMinMaxObserver(dtype=torch.qint8, qscheme=torch.per_channel_symmetric)
wobs(W)
sx, zx = xobs.calculate_qparams()
sw, zw = wobs.calculate_qparams()
out_static = F.linear(torch.fake_quantize_per_tensor_affine(X, float(sx), int(zx), 0, 127),
                      torch.fake_quantize_per_channel_affine(W, sw, zw.to(torch.int32), 0, -128, 127), b)
print("static input scale", float(sx), "zero_point", int(zx))
show("static weight scale", sw)
show("static out", out_static)
