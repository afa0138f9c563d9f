# tests/data/indexing_reference.py: writes tests/data/indexing_reference.h, the PyTorch values and error
# phrases that tests/test_indexing.cpp checks index_put, index_put_, advanced index() and one_hot against.
# Run by hand with pip's PyTorch 2.x (CPU, float64) from the repository root:
#   python3 tests/data/indexing_reference.py > tests/data/indexing_reference.h
# x of a case is vals(x.shape, 0.1, 1) and values vals(values.shape, 0.2, -1) (tests/testing.h: a + b
# sin(1.3 i + 0.4) over the flattened tensor); an index is a bool mask or an int64 tensor with the
# listed entries, followed by `slices` full slices (Slice()). Each case records x[indices] (read), its
# gradient for sum(read * w), index_put's output and the gradients of sum(out * w) with respect to x
# and values, w = vals(shape, 0.5, -0.7) of the result's shape. Where the case has a position written
# twice without accumulate, values' gradient is not recorded: PyTorch gives the overwritten value the
# position's gradient, tensorgrad gives it none (docs/limits.md); the test checks that by hand.
# Each phrase is checked here to be in the message PyTorch raises; tensorgrad's message must contain it.
import math

import torch

torch.set_default_dtype(torch.float64)


def vals(shape, a, b):
    n = math.prod(shape)
    return (a + b * torch.sin(1.3 * torch.arange(n, dtype=torch.float64) + 0.4)).reshape(shape)


def numbers(t):
    return "{" + ", ".join("%.17g" % v for v in t.flatten().tolist()) + "}"


def ints(v):
    return "{" + ", ".join(str(int(e)) for e in v) + "}"


def shape(s):
    return "{" + ", ".join(str(d) for d in s) + "}"


def mask(shape_, entries):
    return ("mask", shape_, entries)


def idx(shape_, entries):
    return ("int", shape_, entries)


CASES = [
    # what, x shape, indices, full slices after them, values shape, accumulate, a position written twice
    ("mask (3) of (3, 4), values (4)", (3, 4), [mask((3,), [1, 0, 1])], 0, (4,), False, False),
    ("mask (3, 4), 0-d value", (3, 4), [mask((3, 4), [1, 0, 0, 1, 0, 1, 1, 0, 0, 0, 1, 0])], 0, (), False, False),
    ("mask (2, 3) of (2, 3, 2), values (3, 2)", (2, 3, 2), [mask((2, 3), [0, 1, 1, 0, 0, 1])], 0, (3, 2), False, False),
    ("empty mask, 0-d value", (3, 2), [mask((3,), [0, 0, 0])], 0, (), False, False),
    ("int (3) with a negative entry, values (1, 4)", (5, 4), [idx((3,), [0, -2, 2])], 0, (1, 4), False, False),
    ("int (2, 1) and (3) broadcast, values (3, 2)", (4, 5, 2), [idx((2, 1), [0, 3]), idx((3,), [1, -1, 2])], 0, (3, 2),
     False, False),
    ("int (2) then Slice(), values (2, 3, 2)", (4, 3, 2), [idx((2,), [3, 1])], 1, (2, 3, 2), False, False),
    ("mask (3) and int (2), values (2)", (3, 4), [mask((3,), [1, 0, 1]), idx((2,), [0, 3])], 0, (2,), False, False),
    ("accumulate, int (5) with repeats, values (5, 3)", (4, 3), [idx((5,), [1, 3, 1, 1, 0])], 0, (5, 3), True, False),
    ("accumulate, two int (3) with a repeat, 0-d value", (3, 4), [idx((3,), [0, 2, 0]), idx((3,), [1, 3, 1])], 0, (),
     True, False),
    ("accumulate, mask (3), values (3)", (3, 3), [mask((3,), [1, 1, 0])], 0, (3,), True, False),
    ("repeats without accumulate: the last occurrence", (4, 3), [idx((3,), [2, 0, 2])], 0, (3, 3), False, True),
]


def build(spec):
    kind, s, entries = spec
    t = torch.tensor(entries, dtype=torch.int64).reshape(s)
    return t.bool() if kind == "mask" else t


def run(case):
    what, xs, specs, slices, vs, acc, twice = case
    index = tuple(build(s) for s in specs) + (slice(None),) * slices
    x = vals(xs, 0.1, 1.0).requires_grad_()
    read = x[index]
    w_read = vals(read.shape, 0.5, -0.7)
    (read * w_read).sum().backward()
    dread = x.grad.clone()
    x.grad = None
    v = vals(vs, 0.2, -1.0).requires_grad_()
    if slices:   # torch.index_put takes Tensors only: Python's assignment, on a copy
        assert not acc
        out = x.clone()
        out[index] = v
    else:
        out = torch.index_put(x, index, v, accumulate=acc)
    w = vals(out.shape, 0.5, -0.7)
    (out * w).sum().backward()
    # the same through the in-place form on a copy (what Python's x[index] = v runs)
    y = x.detach().clone()
    if slices:
        y[index] = v.detach()
    else:
        y.index_put_(index, v.detach(), accumulate=acc)
    assert torch.equal(y, out.detach())
    kinds = ", ".join("{%s, %s, %s}" % ("true" if k == "mask" else "false", shape(s), ints(e)) for k, s, e in specs)
    dv = "{}" if twice else numbers(v.grad)
    print('      {"%s", %s, {%s}, %d, %s, %s, %s, %s, %s, %s, %s, %s, %s},' % (
        what, shape(xs), kinds, slices, shape(vs), "true" if acc else "false", shape(read.shape), numbers(read),
        numbers(dread), numbers(out), numbers(x.grad), dv, "true" if twice else "false"))


ONE_HOT = [
    # what, shape, entries, num_classes
    ("(2, 2) inferred", (2, 2), [0, 2, 1, 0], -1),
    ("(3) of 5 classes", (3,), [3, 0, 4], 5),
    ("0-d of 4 classes", (), [2], 4),
    ("empty (0) of 3 classes", (0,), [], 3),
]


def one_hot(case):
    what, s, entries, n = case
    t = torch.tensor(entries, dtype=torch.int64).reshape(s)
    out = torch.nn.functional.one_hot(t, n)
    assert out.dtype == torch.int64
    print('      {"%s", %s, %s, %d, %s, %s},' % (what, shape(s), ints(entries), n, shape(out.shape),
                                                ints(out.flatten().tolist())))


def message(f):
    try:
        f()
    except Exception as e:  # noqa: BLE001 - any of PyTorch's error classes
        return str(e)
    raise AssertionError("PyTorch raised nothing")


x34 = vals((3, 4), 0.1, 1.0)
PHRASES = [
    # name, phrase, what raises it in PyTorch
    ("one_hot dtype", "one_hot is only applicable to index tensor",
     lambda: torch.nn.functional.one_hot(torch.tensor([0.0]), 2)),
    ("one_hot empty", "Can not infer total number of classes from empty tensor",
     lambda: torch.nn.functional.one_hot(torch.tensor([], dtype=torch.int64))),
    ("one_hot negative", "Class values must be non-negative",
     lambda: torch.nn.functional.one_hot(torch.tensor([1, -1]), 3)),
    ("one_hot too large", "Class values must be smaller than num_classes",
     lambda: torch.nn.functional.one_hot(torch.tensor([1, 3]), 3)),
    ("dtype", "Index put requires the source and destination dtypes match", lambda: x34.clone().index_put_((torch.tensor([0]),), torch.ones(4, dtype=torch.float32))),
    ("values shape", "shape mismatch: value tensor of shape [3] cannot be broadcast to indexing result of shape [2, 4]",
     lambda: x34.clone().index_put_((torch.tensor([0, 1]),), torch.ones(3))),
    ("out of range", "index 3 is out of bounds for dimension 0 with size 3",
     lambda: x34.clone().index_put_((torch.tensor([0, 3]),), torch.ones(()))),
    ("negative out of range", "index -4 is out of bounds for dimension 0 with size 3",
     lambda: x34.clone().index_put_((torch.tensor([-4]),), torch.ones(()))),
    ("mask shape", "The shape of the mask [4] at index 0 does not match the shape of the indexed tensor [3, 4] at index 0",
     lambda: x34.clone().index_put_((torch.tensor([True, False, True, True]),), torch.ones(()))),
    ("broadcast", "shape mismatch: indexing tensors could not be broadcast together with shapes [2], [3]",
     lambda: x34.clone().index_put_((torch.tensor([0, 1]), torch.tensor([0, 1, 2])), torch.ones(()))),
    ("index dtype", "tensors used as indices must be long, int",
     lambda: x34.clone().index_put_((torch.tensor([0.0]),), torch.ones(()))),
    ("too many", "too many indices for tensor of dimension 2",
     lambda: x34.clone().index_put_((torch.tensor([0]), torch.tensor([0]), torch.tensor([0])), torch.ones(()))),
    ("leaf", "that requires grad is being used in an in-place operation",
     lambda: vals((3, 4), 0, 1).requires_grad_().index_put_((torch.tensor([0]),), torch.ones(()))),
]

print("// tests/data/indexing_reference.h: written by tests/data/indexing_reference.py with PyTorch %s (CPU, float64):"
      % torch.__version__)
print("//   python3 tests/data/indexing_reference.py > tests/data/indexing_reference.h")
print("// The inputs, weights and phrases are described in the script. Not edited by hand.")
print("""#pragma once
#include <cstdint>
#include <vector>

namespace indexing_reference {

struct Index {
  bool mask;                      // a bool mask (entries 0 / 1), else an int64 index tensor
  std::vector<int64_t> shape;
  std::vector<int64_t> entries;   // row-major
};

struct PutCase {
  const char* what;
  std::vector<int64_t> x_shape;
  std::vector<Index> indices;
  int slices;                      // full slices (Slice()) after the index Tensors
  std::vector<int64_t> values_shape;
  bool accumulate;
  std::vector<int64_t> read_shape;   // x[indices]
  std::vector<double> read;
  std::vector<double> dread;         // d sum(read * w) / dx
  std::vector<double> out;           // index_put(x, indices, values, accumulate)
  std::vector<double> dx;            // d sum(out * w) / dx
  std::vector<double> dvalues;       // d sum(out * w) / dvalues; empty where written_twice
  bool written_twice;                // a position written twice without accumulate
};

struct OneHotCase {
  const char* what;
  std::vector<int64_t> shape;
  std::vector<int64_t> entries;
  int64_t num_classes;
  std::vector<int64_t> out_shape;
  std::vector<int64_t> out;
};

struct Phrase {
  const char* name;
  const char* phrase;   // part of PyTorch's message
};
""")
print("inline const std::vector<PutCase>& put_cases() {\n  static const std::vector<PutCase> c = {")
for case in CASES:
    run(case)
print("  };\n  return c;\n}\n")
print("inline const std::vector<OneHotCase>& one_hot_cases() {\n  static const std::vector<OneHotCase> c = {")
for case in ONE_HOT:
    one_hot(case)
print("  };\n  return c;\n}\n")
print("inline const std::vector<Phrase>& phrases() {\n  static const std::vector<Phrase> c = {")
for name, phrase, f in PHRASES:
    m = message(f)
    assert phrase in m, (name, m)
    print('      {"%s", "%s"},' % (name, phrase))
print("  };\n  return c;\n}\n\n}  // namespace indexing_reference")
