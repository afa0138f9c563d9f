# tests/data/small_cnn.py: writes tests/data/small_cnn.safetensors, a PyTorch 1.13 checkpoint of the
# small CNN that tests/test_layers.cpp rebuilds with tensorgrad's modules, and prints the model's
# eval-mode output for the fixed input fill((2, 2, 8, 8), 0.5) (sin(0.7 i + 0.5), float32), which the
# test compares against. The safetensors python package is not installed here, so the file is
# written by hand in its format: 8-byte little-endian header length, the JSON header, raw bytes.
# Run: /usr/bin/python3 tests/data/small_cnn.py
import json
import os
import struct

import torch
import torch.nn as nn
import torch.nn.functional as F


class SmallCnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(2, 4, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(4)
        self.pool = nn.MaxPool2d(2)
        self.conv2 = nn.Conv2d(4, 6, 3, padding=(1, 2), dilation=(1, 2), groups=2)
        self.avg = nn.AvgPool2d(2)
        self.gap = nn.AdaptiveAvgPool2d(1)
        self.conv3 = nn.Conv1d(6, 3, 2, bias=False)
        self.ln = nn.LayerNorm(15)
        self.fc = nn.Linear(15, 5)
        self.bn3 = nn.BatchNorm1d(5)

    def forward(self, x):
        h = self.pool(F.relu(self.bn1(self.conv1(x))))   # (N, 4, 4, 4)
        h = self.avg(F.relu(self.conv2(h)))               # (N, 6, 2, 2)
        s = self.conv3(h.flatten(2))                      # (N, 3, 3)
        z = torch.cat([s.flatten(1), self.gap(h).flatten(1)], 1)   # (N, 15)
        return self.bn3(self.fc(self.ln(z)))


def fill(shape, seed):
    n = 1
    for s in shape:
        n *= s
    return torch.sin(torch.arange(n, dtype=torch.float64) * 0.7 + seed).reshape(shape).float()


torch.manual_seed(0)
model = SmallCnn()
with torch.no_grad():   # non-trivial affine parameters, so that loading them matters
    for m in (model.bn1, model.ln, model.bn3):
        m.weight.uniform_(0.5, 1.5)
        m.bias.uniform_(-0.5, 0.5)
model.train()
for step in range(3):   # running statistics and num_batches_tracked = 3
    model(torch.randn(4, 2, 8, 8) * 2 + 0.5)
model.eval()
out = model(fill((2, 2, 8, 8), 0.5))

names = {torch.float32: "F32", torch.int64: "I64"}
header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
for name, t in model.state_dict().items():
    data = t.contiguous().numpy().tobytes()
    header[name] = {"dtype": names[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
    blobs.append(data)
    offset += len(data)
text = json.dumps(header).encode()
text += b" " * (-len(text) % 8)
path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "small_cnn.safetensors")
with open(path, "wb") as f:
    f.write(struct.pack("<Q", len(text)))
    f.write(text)
    for b in blobs:
        f.write(b)
print("keys:", ", ".join(model.state_dict().keys()))
print("output:", ", ".join("%.9g" % v for v in out.flatten().tolist()))
