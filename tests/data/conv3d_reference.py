# tests/data/conv3d_reference.py: writes tests/data/conv3d_reference.h, the PyTorch reference numbers
# that tests/test_conv3d.cpp checks conv3d, conv_transpose3d, max_pool3d, avg_pool3d, adaptive_avg_pool3d,
# adaptive_max_pool3d and the modules Conv3d, ConvTranspose3d, MaxPool3d, AvgPool3d, AdaptiveAvgPool3d,
# AdaptiveMaxPool3d, BatchNorm3d and InstanceNorm3d against.
# Made with pip's PyTorch 2.15.0 (CPU, float64) by running, from the repository root:
#   python3 tests/data/conv3d_reference.py > tests/data/conv3d_reference.h
# As in tests/data/layers_extra_reference.py, every input and every module weight is fill(shape, seed) =
# sin(0.7 i + seed) over the flattened float64 tensor, which the C++ test builds the same way (input i of
# a case has seed 1 + i; a module's parameters the seeds given below). For each case it records the loss
# sum(out * fill(out.shape, 9)), the first eight outputs, and the probes sum(grad * fill(grad.shape, 5))
# of each input's gradient, then of each module parameter's gradient in named_parameters() order.
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_default_dtype(torch.float64)

cases = []      # (name, loss, first, probes)
values = []     # (name, values): running statistics, initial weights
reprs = []      # (name, repr)
keys = []       # (name, state_dict keys)


def fill(shape, seed):
    n = 1
    for s in shape:
        n *= s
    return torch.sin(torch.arange(n, dtype=torch.float64) * 0.7 + seed).reshape(shape)


def report(name, fn, *shapes, module=None):
    if module is not None:
        module.zero_grad()
    ins = [fill(s, 1.0 + i).requires_grad_(True) for i, s in enumerate(shapes)]
    out = fn(*ins)
    loss = (out * fill(out.shape, 9.0)).sum()
    loss.backward()
    grads = [t.grad for t in ins]
    if module is not None:
        grads += [p.grad for _, p in module.named_parameters()]
    probes = [(g * fill(g.shape, 5.0)).sum().item() for g in grads]
    cases.append((name, loss.item(), out.detach().flatten()[:8].tolist(), probes))


def set_params(module, seeds):
    """Each parameter (named_parameters() order) set to fill(shape, seed)."""
    with torch.no_grad():
        for (_, p), seed in zip(module.named_parameters(), seeds):
            p.copy_(fill(p.shape, seed))


# ---- ops
report("conv3d stride 2 padding 1 bias", lambda x, w, b: F.conv3d(x, w, b, stride=2, padding=1),
       (2, 3, 5, 6, 5), (4, 3, 3, 3, 3), (4,))
report("conv3d stride (1, 2, 1) padding (2, 0, 1) dilation (2, 1, 2) groups 2",
       lambda x, w, b: F.conv3d(x, w, b, stride=(1, 2, 1), padding=(2, 0, 1), dilation=(2, 1, 2), groups=2),
       (1, 4, 6, 5, 7), (6, 2, 2, 3, 2), (6,))
report("conv3d unbatched no bias", lambda x, w: F.conv3d(x, w), (2, 4, 4, 4), (3, 2, 2, 1, 3))
report("conv3d kernel depth 1 stride (3, 1, 1)", lambda x, w: F.conv3d(x, w, stride=(3, 1, 1)),
       (2, 2, 7, 4, 4), (3, 2, 1, 2, 2))
report("conv_transpose3d stride 2 padding 1 output_padding 1 groups 2 dilation 2",
       lambda x, w, b: F.conv_transpose3d(x, w, b, stride=2, padding=1, output_padding=1, groups=2, dilation=2),
       (2, 4, 3, 4, 3), (4, 3, 3, 2, 3), (6,))
report("conv_transpose3d stride (2, 1, 3) padding (1, 0, 1) output_padding (1, 0, 2) dilation (1, 2, 1)",
       lambda x, w, b: F.conv_transpose3d(x, w, b, stride=(2, 1, 3), padding=(1, 0, 1), output_padding=(1, 0, 2),
                                          dilation=(1, 2, 1)),
       (1, 3, 4, 3, 3), (3, 2, 3, 2, 3), (2,))
report("conv_transpose3d unbatched no bias", lambda x, w: F.conv_transpose3d(x, w), (2, 3, 2, 4), (2, 3, 2, 2, 2))
report("conv_transpose3d depth output_padding 1 below dilation 2",
       lambda x, w: F.conv_transpose3d(x, w, output_padding=(1, 0, 0), dilation=2), (1, 2, 3, 3, 3), (2, 2, 2, 2, 2))
report("max_pool3d 3 stride 2 padding 1", lambda x: F.max_pool3d(x, 3, 2, 1), (2, 3, 7, 6, 5))
report("max_pool3d (2, 3, 2) stride (1, 2, 2) padding (1, 1, 0) dilation (2, 1, 2) ceil_mode",
       lambda x: F.max_pool3d(x, (2, 3, 2), (1, 2, 2), (1, 1, 0), dilation=(2, 1, 2), ceil_mode=True), (1, 2, 6, 7, 7))
report("max_pool3d 2 unbatched", lambda x: F.max_pool3d(x, 2), (2, 4, 5, 6))
report("avg_pool3d 3 stride 2 padding 1", lambda x: F.avg_pool3d(x, 3, 2, 1), (2, 3, 7, 6, 5))
report("avg_pool3d (2, 3, 3) stride (2, 2, 1) padding 1 ceil_mode count_include_pad false",
       lambda x: F.avg_pool3d(x, (2, 3, 3), (2, 2, 1), 1, ceil_mode=True, count_include_pad=False), (1, 2, 7, 6, 5))
report("avg_pool3d 3 stride 2 padding 1 ceil_mode", lambda x: F.avg_pool3d(x, 3, 2, 1, ceil_mode=True), (1, 2, 6, 6, 6))
report("avg_pool3d 2 unbatched", lambda x: F.avg_pool3d(x, 2), (2, 4, 5, 6))
report("adaptive_avg_pool3d (3, 4, 2) of (7, 6, 5)", lambda x: F.adaptive_avg_pool3d(x, (3, 4, 2)), (2, 3, 7, 6, 5))
report("adaptive_avg_pool3d 2 unbatched of (5, 5, 5)", lambda x: F.adaptive_avg_pool3d(x, 2), (2, 5, 5, 5))
report("adaptive_max_pool3d (3, 4, 2) of (7, 6, 5)", lambda x: F.adaptive_max_pool3d(x, (3, 4, 2)), (2, 3, 7, 6, 5))
report("adaptive_max_pool3d (2, 3, 5) of (4, 6, 5)", lambda x: F.adaptive_max_pool3d(x, (2, 3, 5)), (1, 2, 4, 6, 5))
report("adaptive_max_pool3d 2 unbatched of (5, 4, 3)", lambda x: F.adaptive_max_pool3d(x, 2), (2, 5, 4, 3))

# ---- modules, their parameters set to known values
m = nn.Conv3d(4, 6, (3, 2, 3), stride=(2, 1, 1), padding=1, groups=2)
set_params(m, [2.0, 3.0])
report("Conv3d(4, 6, (3, 2, 3)) stride (2, 1, 1) padding 1 groups 2", m, (2, 4, 5, 4, 5), module=m)
reprs.append(("Conv3d(4, 6, (3, 2, 3)) stride (2, 1, 1) padding 1 groups 2", repr(m)))
keys.append(("Conv3d(4, 6, (3, 2, 3))", list(m.state_dict().keys())))
reprs.append(("Conv3d(2, 3, 2) no bias dilation 2", repr(nn.Conv3d(2, 3, 2, dilation=2, bias=False))))

m = nn.ConvTranspose3d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2)
set_params(m, [2.0, 3.0])
report("ConvTranspose3d(4, 6, 3) stride 2 padding 1 output_padding 1 groups 2", m, (2, 4, 3, 2, 3), module=m)
reprs.append(("ConvTranspose3d(4, 6, 3) stride 2 padding 1 output_padding 1 groups 2", repr(m)))
keys.append(("ConvTranspose3d(4, 6, 3)", list(m.state_dict().keys())))

m = nn.MaxPool3d(3, stride=2, padding=1, ceil_mode=True)
report("MaxPool3d(3) stride 2 padding 1 ceil_mode", m, (2, 3, 6, 7, 5))
reprs.append(("MaxPool3d(3) stride 2 padding 1 ceil_mode", repr(m)))
reprs.append(("MaxPool3d((1, 2, 2))", repr(nn.MaxPool3d((1, 2, 2)))))
m = nn.AvgPool3d((2, 3, 3), stride=2, padding=1, count_include_pad=False)
report("AvgPool3d((2, 3, 3)) stride 2 padding 1 count_include_pad false", m, (2, 3, 5, 6, 7))
reprs.append(("AvgPool3d((2, 3, 3)) stride 2 padding 1 count_include_pad false", repr(m)))
reprs.append(("AvgPool3d(2)", repr(nn.AvgPool3d(2))))
m = nn.AdaptiveAvgPool3d((2, 3, 1))
report("AdaptiveAvgPool3d((2, 3, 1))", m, (2, 3, 5, 7, 4))
reprs.append(("AdaptiveAvgPool3d((2, 3, 1))", repr(m)))
reprs.append(("AdaptiveAvgPool3d(2)", repr(nn.AdaptiveAvgPool3d(2))))
m = nn.AdaptiveMaxPool3d((3, 2, 2))
report("AdaptiveMaxPool3d((3, 2, 2))", m, (2, 3, 5, 7, 4))
reprs.append(("AdaptiveMaxPool3d((3, 2, 2))", repr(m)))
reprs.append(("AdaptiveMaxPool3d(2)", repr(nn.AdaptiveMaxPool3d(2))))

m = nn.BatchNorm3d(3, momentum=0.2)
set_params(m, [2.0, 3.0])
report("BatchNorm3d(3, momentum 0.2) training", m, (2, 3, 3, 4, 2), module=m)
values.append(("BatchNorm3d training running_mean", m.running_mean.tolist()))
values.append(("BatchNorm3d training running_var", m.running_var.tolist()))
m.eval()
report("BatchNorm3d(3) eval after one step", m, (2, 3, 2, 2, 3), module=m)
keys.append(("BatchNorm3d(3)", list(m.state_dict().keys())))

m = nn.InstanceNorm3d(3, affine=True, track_running_stats=True)
set_params(m, [2.0, 3.0])
report("InstanceNorm3d(3, affine, track) training", m, (2, 3, 3, 2, 4), module=m)
values.append(("InstanceNorm3d training running_mean", m.running_mean.tolist()))
values.append(("InstanceNorm3d training running_var", m.running_var.tolist()))
reprs.append(("InstanceNorm3d(3, affine, track)", repr(m)))
keys.append(("InstanceNorm3d(3, affine, track)", list(m.state_dict().keys())))
m = nn.InstanceNorm3d(2)
report("InstanceNorm3d(2) unbatched", m, (2, 3, 4, 2))


def num(v):
    return "%.17g" % v


def cstr(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


print("// tests/data/conv3d_reference.h: written by tests/data/conv3d_reference.py (PyTorch %s,"
      % torch.__version__)
print("// float64); do not edit. Read by tests/test_conv3d.cpp, whose cases follow the script's.")
print("#pragma once")
print("#include <string>")
print("#include <vector>")
print()
print("namespace conv3d_ref {")
print()
print("/// One case: the loss sum(out * fill(out.shape, 9)), out.flatten()[:8], and the gradient probes.")
print("struct Reference {")
print("  std::string name;")
print("  double loss;")
print("  std::vector<double> first;")
print("  std::vector<double> probes;")
print("};")
print()
print("/// In the script's order.")
print("inline const std::vector<Reference> kCases = {")
for name, loss, first, probes in cases:
    print("    {%s, %s, {%s}, {%s}}," % (cstr(name), num(loss), ", ".join(map(num, first)), ", ".join(map(num, probes))))
print("};")
print()
print("/// Named values: running statistics after the cases above, initial weights.")
print("inline const std::vector<std::pair<std::string, std::vector<double>>> kValues = {")
for name, vs in values:
    print("    {%s, {%s}}," % (cstr(name), ", ".join(map(num, vs))))
print("};")
print()
print("/// repr() of each module.")
print("inline const std::vector<std::pair<std::string, std::string>> kReprs = {")
for name, r in reprs:
    print("    {%s, %s}," % (cstr(name), cstr(r)))
print("};")
print()
print("/// state_dict() keys of each module, in order.")
print("inline const std::vector<std::pair<std::string, std::vector<std::string>>> kStateDictKeys = {")
for name, ks in keys:
    print("    {%s, {%s}}," % (cstr(name), ", ".join(map(cstr, ks))))
print("};")
print()
print("}  // namespace conv3d_ref")
