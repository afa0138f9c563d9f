# tests/data/losses_extra_reference.py: writes tests/data/losses_extra_reference.h, the PyTorch reference
# numbers that tests/test_losses_extra.cpp checks hinge_embedding_loss, triplet_margin_loss,
# multi_margin_loss, poisson_nll_loss, gaussian_nll_loss, ctc_loss, soft_margin_loss,
# multilabel_soft_margin_loss, multilabel_margin_loss and triplet_margin_with_distance_loss against.
# Made with pip's PyTorch 2.15.0 (CPU, float64) by running, from the repository root:
#   python3 tests/data/losses_extra_reference.py > tests/data/losses_extra_reference.h
# Every floating input is fill(shape, seed) * scale + shift, fill = sin(0.7 i + seed) over the flattened
# float64 tensor, which the C++ test builds the same way; targets and lengths are written out in both.
# For each case it records every element of the loss, and the probes sum(grad * fill(grad.shape, 5)) of
# each differentiable input's gradient of sum(out * fill(out.shape, 9)).
import math

import torch
import torch.nn.functional as F

torch.set_default_dtype(torch.float64)
cases = []   # (name, values, probes)


def fill(shape, seed, scale=1.0, shift=0.0):
    n = 1
    for s in shape:
        n *= s
    return (torch.sin(torch.arange(n, dtype=torch.float64) * 0.7 + seed) * scale + shift).reshape(shape)


def leaf(shape, seed, scale=1.0, shift=0.0):
    return fill(shape, seed, scale, shift).requires_grad_(True)


def report(name, out, leaves):
    loss = (out * fill(out.shape, 9.0)).sum()
    if loss.requires_grad:
        loss.backward()
    probes = [(t.grad * fill(t.grad.shape, 5.0)).sum().item() for t in leaves]
    cases.append((name, out.detach().flatten().tolist(), probes))


def y_pm(shape, period):
    """1 where i % period == 0, else -1 (flattened)."""
    n = 1
    for s in shape:
        n *= s
    return torch.tensor([1.0 if i % period == 0 else -1.0 for i in range(n)]).reshape(shape)


# ---- hinge_embedding_loss: x (3, 4) * 2, y = +-1
for red, margin in (("mean", 1.0), ("sum", 0.5), ("none", 1.5)):
    x = leaf((3, 4), 1.0, 2.0)
    report(f"hinge_embedding_loss margin {margin} {red}",
           F.hinge_embedding_loss(x, y_pm((3, 4), 3), margin=margin, reduction=red), [x])

# ---- triplet_margin_loss: anchor, positive, negative (4, 5)
for name, kw, shape in (("defaults", {}, (4, 5)),
                        ("margin 0.5 p 1 swap sum", dict(margin=0.5, p=1, swap=True, reduction="sum"), (4, 5)),
                        ("p 3 eps 1e-3 none", dict(p=3, eps=1e-3, reduction="none"), (4, 5)),
                        ("unbatched margin 2", dict(margin=2.0), (5,))):
    a, p, n = leaf(shape, 1.0), leaf(shape, 2.0, 1.5), leaf(shape, 1.3, 0.9)
    report("triplet_margin_loss " + name, F.triplet_margin_loss(a, p, n, **kw), [a, p, n])

# ---- multi_margin_loss: x (4, 5) * 1.5, target [0, 3, 4, 1]
tgt = torch.tensor([0, 3, 4, 1])
w = fill((5,), 7.0, 0.4, 1.0)
for name, kw in (("defaults", {}), ("p 2 margin 0.7 weight sum", dict(p=2, margin=0.7, weight=w, reduction="sum")),
                 ("weight none", dict(weight=w, reduction="none"))):
    x = leaf((4, 5), 1.0, 1.5)
    report("multi_margin_loss " + name, F.multi_margin_loss(x, tgt, **kw), [x])
x = leaf((5,), 1.0, 1.5)
report("multi_margin_loss unbatched target 2 none", F.multi_margin_loss(x, torch.tensor(2), reduction="none"), [x])

# ---- poisson_nll_loss: target 2 fill + 2 (in [0, 4]: some at most 1, where full adds nothing)
for name, kw, scale, shift in (("defaults", {}, 1.0, 0.0), ("full sum", dict(full=True, reduction="sum"), 1.0, 0.0),
                               ("log_input false none", dict(log_input=False, reduction="none"), 0.4, 0.6),
                               ("log_input false full eps 0.1", dict(log_input=False, full=True, eps=0.1), 0.4, 0.6)):
    x, t = leaf((3, 4), 1.0, scale, shift), leaf((3, 4), 2.0, 2.0, 2.0)
    report("poisson_nll_loss " + name, F.poisson_nll_loss(x, t, **kw), [x, t])

# ---- gaussian_nll_loss: input, target (4, 3), var positive
for name, vshape, kw, vscale, vshift in (
        ("defaults", (4, 3), {}, 0.5, 0.6), ("full sum", (4, 3), dict(full=True, reduction="sum"), 0.5, 0.6),
        ("var (4) none", (4,), dict(reduction="none"), 0.5, 0.6), ("var (4, 1)", (4, 1), {}, 0.5, 0.6),
        ("var below eps", (4, 3), dict(reduction="sum"), 1e-7, 1e-7), ("eps 0.5", (4, 3), dict(eps=0.5), 0.5, 0.6)):
    i, t, v = leaf((4, 3), 1.0), leaf((4, 3), 2.0), leaf(vshape, 3.0, vscale, vshift)
    report("gaussian_nll_loss " + name, F.gaussian_nll_loss(i, t, v, **kw), [i, t, v])

# ---- ctc_loss: log_probs = log_softmax(x, -1), x = 2 fill; probes of the logits' gradient and of the
# gradient PyTorch gives a log_probs leaf (Note [ctc_loss gradient] in src/tensorgrad/kernels/ctc.h)
def ctc(name, shape, targets, il, tl, **kw):
    x = leaf(shape, 1.0, 2.0)
    lp = F.log_softmax(x, -1)
    lp_leaf = lp.detach().requires_grad_(True)
    out = F.ctc_loss(lp, targets, il, tl, **kw)
    loss = (out * fill(out.shape, 9.0)).sum()
    loss.backward()
    out2 = F.ctc_loss(lp_leaf, targets, il, tl, **kw)
    (out2 * fill(out2.shape, 9.0)).sum().backward()
    probes = [(x.grad * fill(x.grad.shape, 5.0)).sum().item(), (lp_leaf.grad * fill(lp_leaf.grad.shape, 5.0)).sum().item()]
    cases.append(("ctc_loss " + name, out.detach().flatten().tolist(), probes))


padded = torch.tensor([[1, 2, 2, 3], [4, 4, 0, 0], [1, 3, 2, 0]])
concat = torch.tensor([1, 2, 2, 3, 4, 4, 1, 3, 2])
il, tl = torch.tensor([6, 5, 4]), torch.tensor([4, 2, 3])
for red in ("mean", "sum", "none"):
    ctc("padded " + red, (6, 3, 5), padded, il, tl, reduction=red)
ctc("concatenated mean", (6, 3, 5), concat, il, tl)
ctc("blank 2 empty target sum", (4, 2, 3), torch.tensor([[1, 0], [0, 0]]), torch.tensor([4, 3]), torch.tensor([2, 0]),
    blank=2, reduction="sum")
ctc("blank 2 empty target mean", (4, 2, 3), torch.tensor([[1, 0], [0, 0]]), torch.tensor([4, 3]), torch.tensor([2, 0]),
    blank=2)
ctc("unbatched blank 3", (5, 4), torch.tensor([0, 2, 2]), torch.tensor(5), torch.tensor(3), blank=3)
imp = torch.tensor([[1, 2, 0], [2, 2, 2]])
for red in ("none", "mean", "sum"):
    ctc("impossible zero_infinity " + red, (4, 2, 5), imp, torch.tensor([4, 4]), torch.tensor([2, 3]),
        reduction=red, zero_infinity=True)
x = fill((4, 2, 5), 1.0, 2.0)
out = F.ctc_loss(F.log_softmax(x, -1), imp, torch.tensor([4, 4]), torch.tensor([2, 3]), reduction="none")
cases.append(("ctc_loss impossible none", out.flatten().tolist(), []))

# ---- soft_margin_loss: x (3, 4) * 2, y = +-1, and y (4) broadcast
for red in ("mean", "sum", "none"):
    x = leaf((3, 4), 1.0, 2.0)
    report("soft_margin_loss " + red, F.soft_margin_loss(x, y_pm((3, 4), 3), reduction=red), [x])
x = leaf((3, 4), 1.0, 2.0)
report("soft_margin_loss target (4) broadcast", F.soft_margin_loss(x, y_pm((4,), 3)), [x])


def y01(shape, period):
    """1 where i % period == 0, else 0 (flattened)."""
    return (y_pm(shape, period) + 1) / 2


# ---- multilabel_soft_margin_loss: x (3, 5) * 2, targets 0/1 or soft (leaves), weight (5) a leaf
x = leaf((3, 5), 1.0, 2.0)
report("multilabel_soft_margin_loss defaults", F.multilabel_soft_margin_loss(x, y01((3, 5), 3)), [x])
x, t, w = leaf((3, 5), 1.0, 2.0), leaf((3, 5), 2.0, 0.5, 0.5), leaf((5,), 7.0, 0.4, 1.0)
report("multilabel_soft_margin_loss soft target weight sum",
       F.multilabel_soft_margin_loss(x, t, weight=w, reduction="sum"), [x, t, w])
x = leaf((3, 5), 1.0, 2.0)
report("multilabel_soft_margin_loss none", F.multilabel_soft_margin_loss(x, y01((3, 5), 2), reduction="none"), [x])
x, w = leaf((5,), 1.0, 2.0), leaf((5,), 7.0, 0.4, 1.0)
report("multilabel_soft_margin_loss unbatched weight none",
       F.multilabel_soft_margin_loss(x, y01((5,), 3), weight=w, reduction="none"), [x, w])

# ---- multilabel_margin_loss: x (4, 5) * 1.5; rows: a list ending at -1 (entries after it ignored), a
# repeated index, every class listed (0), an empty list (0)
ml_target = torch.tensor([[3, 0, -1, 1, 2], [4, 4, 1, -1, -1], [0, 1, 2, 3, 4], [-1, 2, 2, 2, 2]])
for red in ("mean", "sum", "none"):
    x = leaf((4, 5), 1.0, 1.5)
    report("multilabel_margin_loss " + red, F.multilabel_margin_loss(x, ml_target, reduction=red), [x])
for red in ("mean", "none"):
    x = leaf((5,), 1.0, 1.5)
    report("multilabel_margin_loss unbatched " + red,
           F.multilabel_margin_loss(x, torch.tensor([2, 4, -1, 0, 0]), reduction=red), [x])


# ---- triplet_margin_with_distance_loss: anchor, positive, negative (4, 5); the default distance
# (pairwise_distance), and two written out in the test the same way
def l1_distance(a, b):
    return (a - b).abs().sum(-1)


def cosine_distance(a, b):
    return 1 - (a * b).sum(-1) / (a.norm(dim=-1) * b.norm(dim=-1))


# (the swap cases' negative, fill(2.4) * 1.2, lies nearer the positive than the anchor: the swap changes them)
for name, kw, shape, nseed, nscale in (
        ("defaults", {}, (4, 5), 1.3, 0.9),
        ("swap sum", dict(swap=True, reduction="sum"), (4, 5), 2.4, 1.2),
        ("l1 distance margin 0.5 swap none", dict(distance_function=l1_distance, margin=0.5, swap=True, reduction="none"),
         (4, 5), 2.4, 1.2),
        ("cosine distance margin 1.5", dict(distance_function=cosine_distance, margin=1.5), (4, 5), 1.3, 0.9),
        ("unbatched margin 2", dict(margin=2.0), (5,), 1.3, 0.9)):
    a, p, n = leaf(shape, 1.0), leaf(shape, 2.0, 1.5), leaf(shape, nseed, nscale)
    report("triplet_margin_with_distance_loss " + name, F.triplet_margin_with_distance_loss(a, p, n, **kw), [a, p, n])


def num(v):
    if math.isinf(v):
        return "kInf" if v > 0 else "-kInf"
    return repr(v)


print(f"""// tests/data/losses_extra_reference.h: written by tests/data/losses_extra_reference.py (PyTorch {torch.__version__},
// float64); do not edit. Read by tests/test_losses_extra.cpp, whose cases follow the script's.
#pragma once
#include <limits>
#include <string>
#include <vector>

namespace losses_extra_ref {{

constexpr double kInf = std::numeric_limits<double>::infinity();

/// One case: every element of the loss, and the gradient probes sum(grad * fill(grad.shape, 5)).
struct Reference {{
  std::string name;
  std::vector<double> values;
  std::vector<double> probes;
}};

/// In the script's order.
inline const std::vector<Reference> kCases = {{""")
for name, values, probes in cases:
    print(f'    {{"{name}", {{{", ".join(num(v) for v in values)}}}, {{{", ".join(num(v) for v in probes)}}}}},')
print("""};

}  // namespace losses_extra_ref""")
