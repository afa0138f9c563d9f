# tests/data/mixed_index_reference.py: writes tests/data/mixed_index_reference.h, the PyTorch values and
# error phrases that tests/test_indexing.cpp checks index Tensors mixed with slices, integers, None and
# Ellipsis against (x[:, idx], x[1:3, idx, 0], x[idx, :, idx2], ... and their index_put forms).
# Run by hand with pip's PyTorch 2.x (CPU, float64) from the repository root:
#   python3 tests/data/mixed_index_reference.py > tests/data/mixed_index_reference.h
# x of a case is vals(x.shape, 0.1, 1) and values vals(values.shape, 0.2, -1) (tests/testing.h: a + b
# sin(1.3 i + 0.4) over the flattened tensor). An entry of an index list is a slice (start, stop, step,
# each possibly None), an integer, None, Ellipsis, an int64 or int32 tensor or a bool mask with the
# listed entries. Each case records x[index] (read), the gradient of sum(read * w) with respect to x,
# the index_put output (accumulate as the case says) and the gradients of sum(out * w) with respect to
# x and values, w = vals(shape, 0.5, -0.7) of the result's shape. The put is PyTorch's own two steps:
# the basic entries' view of a copy of x, then index_put_ on it with the index Tensors (None for the
# other dims of the view); without accumulate it is checked here to equal Python's out[index] = v.
# Positions repeat only in cases with accumulate (PyTorch leaves the value kept unspecified otherwise).
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


# entries of an index list: (kind, shape, entries) for tensors, (kind, value) for the others
def S(start=None, stop=None, step=None):
    return ("slice", (start, stop, step))


def i64(s, e):
    return ("int64", s, e)


def i32(s, e):
    return ("int32", s, e)


def mask(s, e):
    return ("mask", s, e)


NONE = ("none",)
ELLIPSIS = ("ellipsis",)


def I(v):  # noqa: E743 - an integer entry
    return ("int", v)


CASES = [
    # what, x shape, index list, values shape, accumulate
    ("x[:, idx] with a negative position", (4, 5, 3), [S(), i64((3,), [3, -1, 0])], (3,), False),
    ("x[..., idx] int32", (2, 3, 5), [ELLIPSIS, i32((4,), [4, 0, -2, 1])], (2, 3, 4), False),
    ("x[idx, :, idx2] non-adjacent: the index dims first", (4, 3, 5), [i64((3,), [0, 3, 1]), S(), i64((3,), [4, 0, 2])],
     (3, 3), False),
    ("x[:, i(2, 1), i(3)] broadcast, accumulate with repeats", (3, 4, 5),
     [S(), i64((2, 1), [0, 2]), i64((3,), [1, -1, 1])], (2, 3), True),
    ("x[:, mask] a 2-D mask on dims 1-2", (2, 3, 4), [S(), mask((3, 4), [1, 0, 0, 1, 0, 1, 1, 0, 0, 0, 1, 0])], (2, 1),
     False),
    ("x[1:3, idx, 0]", (4, 5, 3), [S(1, 3), i64((3,), [4, -5, 2]), I(0)], (1, 3), False),
    ("x[None, idx]", (3, 4), [NONE, i64((2,), [2, 0])], (4,), False),
    ("x[idx, None, idx2] separated by None, accumulate", (3, 4, 5), [i64((2,), [0, 2]), NONE, i64((2,), [1, 3])],
     (2, 1, 5), True),
    ("x[idx, 0, idx2] an integer between index Tensors", (3, 4, 5), [i64((3,), [2, 0, 1]), I(-4), i64((3,), [4, 4, -1])],
     (3,), False),
    ("x[0, :, idx] int32, accumulate with repeats", (3, 4, 5), [I(0), S(), i32((3,), [1, 1, 3])], (4, 3), True),
    ("x[::2, mask] a stepped slice and a 1-D mask", (5, 4, 2), [S(None, None, 2), mask((4,), [1, 0, 1, 1])], (3, 1, 2),
     False),
    ("x[i(2, 1), 1:, i(2)] non-adjacent broadcast, accumulate with repeats", (4, 3, 5),
     [i64((2, 1), [1, 3]), S(1, None), i64((2,), [0, 0])], (2, 2, 2), True),
    ("x[..., idx, :] then a full slice", (2, 5, 3), [ELLIPSIS, i64((2,), [4, 1]), S()], (2, 2, 3), False),
    ("x[-2:, None, idx] slices and None before", (4, 3, 2), [S(-2, None), NONE, i64((2, 1), [2, 0])], (2,), False),
]


def build(entry):
    kind = entry[0]
    if kind == "slice":
        return slice(*entry[1])
    if kind == "int":
        return entry[1]
    if kind == "none":
        return None
    if kind == "ellipsis":
        return Ellipsis
    t = torch.tensor(entry[2], dtype=torch.int64).reshape(entry[1])
    return t.bool() if kind == "mask" else t.to(torch.int32) if kind == "int32" else t


def split(entries, rank):
    """PyTorch's two steps: the basic entries (index Tensors as full slices) and, per dim of their view,
    the index Tensor that indexes it (None for the other dims)."""
    consumed = sum(1 if e[0] in ("slice", "int", "int64", "int32") else len(e[1]) if e[0] == "mask" else 0
                   for e in entries)
    basic, over_view = [], []
    for e in entries:
        t = build(e)
        if e[0] in ("int64", "int32", "mask"):
            k = len(e[1]) if e[0] == "mask" else 1
            basic += [slice(None)] * k
            over_view.append(t)   # a mask covers its k dims with one entry
        elif e[0] == "int":
            basic.append(t)
        elif e[0] == "ellipsis":
            basic.append(Ellipsis)
            over_view += [None] * (rank - consumed)
        else:
            basic.append(t)
            over_view.append(None)
    return tuple(basic), over_view


def entry_str(e):
    kind = e[0]
    if kind == "slice":
        return '{"slice", {%s}, {}, {}}' % ", ".join("std::nullopt" if v is None else str(v) for v in e[1])
    if kind == "int":
        return '{"int", {%d}, {}, {}}' % e[1]
    if kind in ("none", "ellipsis"):
        return '{"%s", {}, {}, {}}' % kind
    return '{"%s", {}, %s, %s}' % (kind, shape(e[1]), ints(e[2]))


def run(case):
    what, xs, entries, vs, acc = case
    index = tuple(build(e) for e in entries)
    x = vals(xs, 0.1, 1.0).requires_grad_()
    read = x[index]
    (read * vals(read.shape, 0.5, -0.7)).sum().backward()
    dread = x.grad.clone()
    x.grad = None
    v = vals(vs, 0.2, -1.0).requires_grad_()
    basic, over_view = split(entries, len(xs))
    out = x.clone()
    torch.ops.aten.index_put_(out[basic], over_view, v, acc)
    w = vals(out.shape, 0.5, -0.7)
    (out * w).sum().backward()
    if not acc:   # Python's assignment writes the same
        y = x.detach().clone()
        y[index] = v.detach()
        assert torch.equal(y, out.detach())
    print('      {"%s", %s, {%s}, %s, %s, %s, %s, %s, %s, %s, %s},' % (
        what, shape(xs), ", ".join(entry_str(e) for e in entries), shape(vs), "true" if acc else "false",
        shape(read.shape), numbers(read), numbers(dread), numbers(out), numbers(x.grad), numbers(v.grad)))


def message(f):
    try:
        f()
    except Exception as e:  # noqa: BLE001 - any of PyTorch's error classes
        return str(e)
    raise AssertionError("PyTorch raised nothing")


x567 = vals((5, 6, 7), 0.1, 1.0)
idx3 = torch.tensor([0, 2, 4])
PHRASES = [
    # name, phrase, what raises it in PyTorch (x of shape (5, 6, 7))
    ("out of range", "index 9 is out of bounds for dimension", lambda: x567[:, torch.tensor([9])]),
    ("integer out of range", "index 9 is out of bounds for dimension 1 with size 6", lambda: x567[idx3, 9]),
    ("mask shape", "The shape of the mask [2, 3] at index 0 does not match the shape of the indexed tensor [2, 6, 7] "
     "at index 1", lambda: x567[1:3, torch.ones(2, 3, dtype=torch.bool)]),
    ("too many", "too many indices for tensor of dimension 3", lambda: x567[:, :, idx3, 0]),
    ("broadcast", "shape mismatch: indexing tensors could not be broadcast together with shapes [3], [2]",
     lambda: x567[:, idx3, torch.tensor([1, 2])]),
    ("values shape", "shape mismatch: value tensor of shape [2, 2] cannot be broadcast to indexing result of shape "
     "[5, 3, 7]", lambda: x567.clone().__setitem__((slice(None), idx3), torch.ones(2, 2))),
    ("index dtype", "tensors used as indices must be long, int", lambda: x567[:, torch.tensor([1.0])]),
]

print("// tests/data/mixed_index_reference.h: written by tests/data/mixed_index_reference.py with PyTorch %s (CPU, "
      "float64):" % torch.__version__)
print("//   python3 tests/data/mixed_index_reference.py > tests/data/mixed_index_reference.h")
print("// The inputs, weights and phrases are described in the script. Not edited by hand.")
print("""#pragma once
#include <cstdint>
#include <optional>
#include <vector>

namespace mixed_index_reference {

struct Entry {
  const char* kind;                           // slice, int, none, ellipsis, int64, int32, mask
  std::vector<std::optional<int64_t>> value;  // slice: start, stop, step; int: the integer
  std::vector<int64_t> shape;                 // index Tensors: shape and row-major entries
  std::vector<int64_t> entries;
};

struct Case {
  const char* what;
  std::vector<int64_t> x_shape;
  std::vector<Entry> index;
  std::vector<int64_t> values_shape;
  bool accumulate;
  std::vector<int64_t> read_shape;   // x[index]
  std::vector<double> read;
  std::vector<double> dread;         // d sum(read * w) / dx
  std::vector<double> out;           // index_put(x, index, values, accumulate)
  std::vector<double> dx;            // d sum(out * w) / dx
  std::vector<double> dvalues;       // d sum(out * w) / dvalues
};

struct Phrase {
  const char* name;
  const char* phrase;   // part of PyTorch's message
};
""")
print("inline const std::vector<Case>& cases() {\n  static const std::vector<Case> c = {")
for case in CASES:
    run(case)
print("  };\n  return c;\n}\n")
print("inline const std::vector<Phrase>& phrases() {\n  static const std::vector<Phrase> c = {")
for name, phrase, f in PHRASES:
    m = message(f)
    assert phrase in m, (name, m)
    print('      {"%s", "%s"},' % (name, phrase))
print("  };\n  return c;\n}\n\n}  // namespace mixed_index_reference")
