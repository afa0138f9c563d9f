# tests/data/histogram_observer_reference.py: the PyTorch values behind the HistogramObserver cases of
# tests/test_qat.cpp. Run with PyTorch 1.13 (Debian python3-torch):
#   /usr/bin/python3 tests/data/histogram_observer_reference.py
# PyTorch 1.13 bins each batch with torch.histc(x, bins, min=int(min_val), max=int(max_val)): the range
# truncated to integers, so values outside it are not counted; the recorded numbers include that.
import math

import torch
from torch.ao.quantization import HistogramObserver


def wave(n, off, s):
    """x[k] = s sin(off + 1.7 k) + 0.3, computed in float64, then float32 (test_qat.cpp's wave())."""
    return torch.tensor([s * math.sin(off + 1.7 * k) + 0.3 for k in range(n)], dtype=torch.float64).float()


cases = [
    ("one call quint8 affine", HistogramObserver(), [wave(200, 0.0, 2.0)]),
    ("widening calls quint8 affine", HistogramObserver(),
     [wave(200, 0.0, 2.0), wave(300, 1.0, 3.0), wave(100, 2.0, 0.5), wave(150, 0.7, 6.5)]),
    ("widening calls qint8 symmetric", HistogramObserver(dtype=torch.qint8, qscheme=torch.per_tensor_symmetric),
     [wave(120, 0.3, 1.5), wave(250, 1.1, 4.0), wave(80, 2.5, 9.0)]),
    ("quint8 affine reduce_range, range inside (0, 1)", HistogramObserver(reduce_range=True),
     [wave(64, 0.5, 0.25), wave(64, 1.5, 0.2)]),
]
for name, obs, xs in cases:
    for x in xs:
        obs(x)
    s, z = obs.calculate_qparams()
    h = obs.histogram
    moment = sum(i * float(v) for i, v in enumerate(h.tolist()))
    print(name)
    print("  min_val", repr(float(obs.min_val)), "max_val", repr(float(obs.max_val)))
    print("  histogram sum", repr(float(h.double().sum())), "sum i*h[i]", repr(moment))
    print("  scale", repr(float(s)), "zero_point", int(z))
print("state_dict keys", list(HistogramObserver().state_dict().keys()))

# a single repeated value, 8 bins: histc widens [3, 3] to [2, 4]
one = HistogramObserver(bins=8)
one(torch.full((5,), 3.0))
s, z = one.calculate_qparams()
print("one value: histogram", one.histogram.tolist(), "scale", repr(float(s)), "zero_point", int(z))
