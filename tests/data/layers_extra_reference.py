# tests/data/layers_extra_reference.py: writes tests/data/layers_extra_reference.h, the PyTorch reference
# numbers that tests/test_layers_extra.cpp checks prelu, instance_norm, the 1-D and adaptive max poolings,
# conv_transpose1d and the modules PReLU, InstanceNorm1d/2d, ConvTranspose1d, MaxPool1d, AvgPool1d,
# AdaptiveMaxPool2d, AdaptiveAvgPool1d, AdaptiveMaxPool1d and the padding layers against.
# Made with pip's PyTorch 2.15.0 (CPU, float64) by running, from the repository root:
#   python3 tests/data/layers_extra_reference.py > tests/data/layers_extra_reference.h
# As in tests/data/layers_reference.py, every input and every module weight is fill(shape, seed) =
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
report("prelu one weight", lambda x, w: F.prelu(x, w), (2, 3, 4), (1,))
report("prelu per channel", lambda x, w: F.prelu(x, w), (2, 3, 4, 2), (3,))
report("prelu 1-D input", lambda x, w: F.prelu(x, w), (7,), (1,))
report("prelu unbatched (C, L) per channel", lambda x, w: F.prelu(x, w), (4, 5), (5,))


def in_train(x, w, b):
    rm, rv = fill((3,), 7.0), fill((3,), 8.0).exp()
    y = F.instance_norm(x, rm, rv, w, b, use_input_stats=True, momentum=0.2, eps=1e-5)
    values.append(("instance_norm training running_mean", rm.tolist()))
    values.append(("instance_norm training running_var", rv.tolist()))
    return y


report("instance_norm training with running stats, momentum 0.2", in_train, (2, 3, 5), (3,), (3,))
report("instance_norm no affine, no running stats", lambda x: F.instance_norm(x), (2, 3, 4, 3))
report("instance_norm eval with running stats",
       lambda x, w, b: F.instance_norm(x, fill((3,), 7.0), fill((3,), 8.0).exp(), w, b, use_input_stats=False),
       (2, 3, 4), (3,), (3,))
report("max_pool1d 3 stride 2 padding 1", lambda x: F.max_pool1d(x, 3, 2, 1), (2, 3, 9))
report("max_pool1d 3 stride 2 padding 1 dilation 2 ceil_mode",
       lambda x: F.max_pool1d(x, 3, 2, 1, dilation=2, ceil_mode=True), (2, 3, 10))
report("avg_pool1d 3 stride 2 padding 1 ceil_mode count_include_pad false",
       lambda x: F.avg_pool1d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False), (2, 3, 10))
report("avg_pool1d 2 unbatched", lambda x: F.avg_pool1d(x, 2), (2, 7))
report("adaptive_max_pool2d (3, 4) of (7, 9)", lambda x: F.adaptive_max_pool2d(x, (3, 4)), (2, 3, 7, 9))
report("adaptive_max_pool2d (2, 3) of (6, 9): equal windows", lambda x: F.adaptive_max_pool2d(x, (2, 3)), (1, 2, 6, 9))
report("adaptive_max_pool2d (5, 4) of unbatched (2, 3, 3): overlapping windows",
       lambda x: F.adaptive_max_pool2d(x, (5, 4)), (2, 3, 3))
report("adaptive_max_pool2d (3, 3) of (6, 7): equal rows, unequal columns",
       lambda x: F.adaptive_max_pool2d(x, 3), (1, 2, 6, 7))
report("adaptive_avg_pool1d 4 of 10", lambda x: F.adaptive_avg_pool1d(x, 4), (2, 3, 10))
report("adaptive_max_pool1d 4 of 10", lambda x: F.adaptive_max_pool1d(x, 4), (2, 3, 10))
report("adaptive_max_pool1d 5 of 10 unbatched", lambda x: F.adaptive_max_pool1d(x, 5), (2, 10))
report("conv_transpose1d stride 2 padding 1 output_padding 1 groups 2 dilation 2",
       lambda x, w, b: F.conv_transpose1d(x, w, b, stride=2, padding=1, output_padding=1, groups=2, dilation=2),
       (2, 4, 5), (4, 3, 3), (6,))
report("conv_transpose1d no bias", lambda x, w: F.conv_transpose1d(x, w), (1, 3, 6), (3, 2, 4))
report("conv_transpose1d unbatched stride 3", lambda x, w, b: F.conv_transpose1d(x, w, b, stride=3), (2, 4), (2, 3, 2), (3,))

# ---- modules, their parameters set to known values
m = nn.PReLU(3, init=0.1)
values.append(("PReLU(3, init 0.1) initial weight", m.weight.detach().tolist()))
set_params(m, [2.0])
report("PReLU(3) module", m, (2, 3, 4), module=m)
reprs.append(("PReLU(3)", repr(m)))
keys.append(("PReLU(3)", list(m.state_dict().keys())))

m = nn.InstanceNorm1d(3, affine=True, track_running_stats=True, momentum=0.3)
set_params(m, [2.0, 3.0])
report("InstanceNorm1d(3, affine, track) training", m, (4, 3, 6), module=m)
values.append(("InstanceNorm1d training running_mean", m.running_mean.tolist()))
values.append(("InstanceNorm1d training running_var", m.running_var.tolist()))
values.append(("InstanceNorm1d num_batches_tracked", [float(m.num_batches_tracked.item())]))
m.eval()
report("InstanceNorm1d(3, affine, track) eval after one step", m, (2, 3, 5), module=m)
reprs.append(("InstanceNorm1d(3, affine, track, momentum 0.3)", repr(m)))
keys.append(("InstanceNorm1d(3, affine, track)", list(m.state_dict().keys())))

m = nn.InstanceNorm2d(3)
report("InstanceNorm2d(3) unbatched", m, (3, 4, 5))
m.eval()
report("InstanceNorm2d(3) eval without running stats", m, (2, 3, 2, 4))
reprs.append(("InstanceNorm2d(3)", repr(m)))
keys.append(("InstanceNorm2d(3)", list(m.state_dict().keys())))

m = nn.ConvTranspose1d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2)
set_params(m, [2.0, 3.0])
report("ConvTranspose1d(4, 6, 3) stride 2 padding 1 output_padding 1 groups 2", m, (2, 4, 5), module=m)
reprs.append(("ConvTranspose1d(4, 6, 3) stride 2 padding 1 output_padding 1 groups 2", repr(m)))
keys.append(("ConvTranspose1d(4, 6, 3)", list(m.state_dict().keys())))
reprs.append(("ConvTranspose1d(3, 2, 4) no bias", repr(nn.ConvTranspose1d(3, 2, 4, bias=False))))

m = nn.MaxPool1d(3, stride=2, padding=1, ceil_mode=True)
report("MaxPool1d(3) stride 2 padding 1 ceil_mode", m, (2, 3, 10))
reprs.append(("MaxPool1d(3) stride 2 padding 1 ceil_mode", repr(m)))
m = nn.AvgPool1d(4, stride=3, padding=2, count_include_pad=False)
report("AvgPool1d(4) stride 3 padding 2 count_include_pad false", m, (2, 3, 11))
reprs.append(("AvgPool1d(4) stride 3 padding 2 count_include_pad false", repr(m)))
m = nn.AdaptiveMaxPool2d((4, 3))
report("AdaptiveMaxPool2d((4, 3))", m, (2, 3, 7, 5))
reprs.append(("AdaptiveMaxPool2d((4, 3))", repr(m)))
m = nn.AdaptiveAvgPool1d(3)
report("AdaptiveAvgPool1d(3)", m, (2, 3, 8))
reprs.append(("AdaptiveAvgPool1d(3)", repr(m)))
m = nn.AdaptiveMaxPool1d(3)
report("AdaptiveMaxPool1d(3)", m, (2, 3, 8))
reprs.append(("AdaptiveMaxPool1d(3)", repr(m)))

pads = [
    ("ZeroPad1d((1, 2))", nn.ZeroPad1d((1, 2)), (2, 3, 4)),
    ("ZeroPad2d((1, 1, 2, 0))", nn.ZeroPad2d((1, 1, 2, 0)), (2, 3, 4)),
    ("ConstantPad1d(2, 3.5)", nn.ConstantPad1d(2, 3.5), (2, 3, 4)),
    ("ConstantPad2d((1, 0, 2, 1), -1.5)", nn.ConstantPad2d((1, 0, 2, 1), -1.5), (1, 2, 3, 4)),
    ("ReflectionPad1d((1, 3))", nn.ReflectionPad1d((1, 3)), (2, 3, 5)),
    ("ReflectionPad2d(2)", nn.ReflectionPad2d(2), (1, 2, 3, 4)),
    ("ReplicationPad1d((2, 1))", nn.ReplicationPad1d((2, 1)), (3, 4)),
    ("ReplicationPad2d((1, 0, 2, 1))", nn.ReplicationPad2d((1, 0, 2, 1)), (2, 3, 3, 2)),
]
for name, m, shape in pads:
    report(name, m, shape)
    reprs.append((name, repr(m)))


def num(v):
    return "%.17g" % v


def cstr(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


print("// tests/data/layers_extra_reference.h: written by tests/data/layers_extra_reference.py (PyTorch %s,"
      % torch.__version__)
print("// float64); do not edit. Read by tests/test_layers_extra.cpp, whose cases follow the script's.")
print("#pragma once")
print("#include <string>")
print("#include <vector>")
print()
print("namespace layers_extra {")
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
print("}  // namespace layers_extra")
