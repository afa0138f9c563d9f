# tests/data/linalg_reference.py: writes tests/data/linalg_reference.h, the PyTorch values and error
# messages that tests/test_linalg.cpp checks matmul, mm, bmm, dot, outer and einsum against. Run by hand
# with pip's PyTorch 2.x (CPU, float64) from the repository root:
#   python3 tests/data/linalg_reference.py > tests/data/linalg_reference.h
# Operand j of a case is vals(n, 0.1 (j + 1), 1, shape) (tests/testing.h: a + b sin(1.3 i + 0.4) over the
# flattened tensor), built transposed in its last two dims and transposed back where the case says so
# (a non-contiguous view). Each case records the output and the gradient of sum(out * w) with respect to
# every operand, w = vals(out.numel(), 0.5, -0.7, out.shape). Each error case records a phrase of
# PyTorch's message, checked here to be in the message PyTorch raises, which tensorgrad's must contain.
import math

import torch

torch.set_default_dtype(torch.float64)


def vals(shape, a, b):
    n = math.prod(shape)
    return (a + b * torch.sin(1.3 * torch.arange(n, dtype=torch.float64) + 0.4)).reshape(shape)


def operand(shape, j, transposed):
    if transposed and len(shape) >= 2:
        swapped = list(shape[:-2]) + [shape[-1], shape[-2]]
        return vals(swapped, 0.1 * (j + 1), 1.0).transpose(-1, -2)
    return vals(shape, 0.1 * (j + 1), 1.0)


def run(op, eq, ins):
    if op == "einsum":
        return torch.einsum(eq, *ins)
    return getattr(torch, op)(*ins)


def numbers(t):
    return "{" + ", ".join("%.17g" % v for v in t.flatten().tolist()) + "}"


def shape(s):
    return "{" + ", ".join(str(d) for d in s) + "}"


CASES = [
    # op, einsum equation, operand shapes, operands transposed
    ("matmul", "", [(4,), (4,)], False),                 # 1-D @ 1-D: dot, 0-d
    ("matmul", "", [(3, 4), (4,)], False),               # 2-D @ 1-D
    ("matmul", "", [(4,), (4, 5)], False),               # 1-D @ 2-D
    ("matmul", "", [(3, 4), (4, 5)], False),             # 2-D @ 2-D
    ("matmul", "", [(3, 4), (4, 5)], True),
    ("matmul", "", [(2, 3, 4), (2, 4, 5)], False),       # 3-D @ 3-D
    ("matmul", "", [(2, 3, 4), (4, 5)], False),          # 3-D @ 2-D
    ("matmul", "", [(3, 4), (2, 4, 5)], False),          # 2-D @ 3-D
    ("matmul", "", [(2, 3, 4), (4,)], False),            # 3-D @ 1-D
    ("matmul", "", [(4,), (2, 4, 5)], False),            # 1-D @ 3-D
    ("matmul", "", [(2, 3, 3, 4), (4,)], True),          # 4-D @ 1-D
    ("matmul", "", [(4,), (2, 3, 4, 5)], False),         # 1-D @ 4-D
    ("matmul", "", [(5, 2, 3, 4), (4, 2)], False),       # 4-D @ 2-D: folded
    ("matmul", "", [(2, 2, 3, 4), (1, 4, 2)], False),    # 4-D @ batch of 1: folded
    ("matmul", "", [(1, 3, 4), (2, 2, 4, 5)], False),    # batch of 1 @ 4-D
    ("matmul", "", [(3, 4), (2, 2, 4, 5)], True),        # 2-D @ 4-D
    ("matmul", "", [(2, 2, 3, 4), (2, 2, 4, 5)], True),  # 4-D @ 4-D, same batch
    ("matmul", "", [(3, 1, 3, 4), (2, 4, 5)], False),    # both broadcast
    ("matmul", "", [(2, 1, 2, 3, 2), (3, 1, 2, 4)], False),   # 5-D @ 4-D: (2, 3, 2, 3, 4)
    ("matmul", "", [(3, 0), (0,)], False),               # K = 0
    ("matmul", "", [(2, 3, 0), (2, 0, 4)], False),
    ("matmul", "", [(0, 2, 3, 4), (4, 5)], False),       # empty batch
    ("mm", "", [(3, 4), (4, 5)], False),
    ("mm", "", [(3, 4), (4, 5)], True),
    ("bmm", "", [(2, 3, 4), (2, 4, 5)], False),
    ("bmm", "", [(2, 3, 4), (2, 4, 5)], True),
    ("dot", "", [(5,), (5,)], False),
    ("outer", "", [(3,), (4,)], False),
    ("einsum", "ij,jk->ik", [(2, 3), (3, 4)], False),             # matrix product
    ("einsum", "ij,jk->ik", [(2, 3), (3, 4)], True),
    ("einsum", "bij,bjk->bik", [(2, 3, 4), (2, 4, 5)], False),    # batch product
    ("einsum", "ii->", [(3, 3)], False),                          # trace
    ("einsum", "ii->i", [(3, 3)], False),                         # diagonal
    ("einsum", "ii->i", [(3, 3)], True),
    ("einsum", "iii->i", [(2, 2, 2)], False),
    ("einsum", "iij->ji", [(2, 2, 3)], False),
    ("einsum", "ij->ji", [(2, 3)], False),                        # transpose
    ("einsum", "ijk->kji", [(2, 3, 4)], False),
    ("einsum", "i,j->ij", [(3,), (4,)], False),                   # outer
    ("einsum", "bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)], False),   # bilinear
    ("einsum", "...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)], False),   # ellipsis, broadcast
    ("einsum", "ij...,jk...->ik...", [(2, 3, 4), (3, 2, 1)], False),   # trailing ellipsis
    ("einsum", "...ij->ij", [(4, 2, 3)], False),                  # ellipsis summed
    ("einsum", "ij,jk", [(2, 3), (3, 4)], False),                 # implicit: ik
    ("einsum", "ba", [(2, 3)], False),                            # implicit: ab, a transpose
    ("einsum", "Ba,ab", [(2, 3), (3, 4)], False),                 # implicit: Bb (uppercase first)
    ("einsum", "i,i", [(4,), (4,)], False),                       # implicit: dot
    ("einsum", "...ij", [(2, 3, 4)], False),                      # implicit with ellipsis
    ("einsum", "ij->", [(2, 3)], False),                          # sum
    ("einsum", "ij->j", [(2, 3)], False),
    ("einsum", "i,i->", [(4,), (4,)], False),
    ("einsum", "ij,ij->ij", [(2, 3), (2, 3)], False),             # elementwise
    ("einsum", "i,i->i", [(1,), (3,)], False),                    # a size-1 letter broadcast
    ("einsum", "bhqd,bhkd->bhqk", [(1, 2, 3, 4), (1, 2, 5, 4)], False),   # attention scores
    ("einsum", "ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)], False),  # chain of three
    ("einsum", "ii,i->i", [(3, 3), (3,)], False),
    ("einsum", "bij,jk->bik", [(2, 3, 4), (4, 5)], False),
    ("einsum", " i j -> j i ", [(2, 3)], False),                  # spaces
    ("einsum", "ij,jk->ik", [(2, 0), (0, 3)], False),             # K = 0
    ("einsum", "ij,jk->ik", [(0, 3), (3, 2)], False),             # M = 0
]

ERRORS = [
    # op, equation, operand shapes, tensorgrad's error type, phrase of PyTorch's message
    ("matmul", "", [(), (4,)], "ShapeError", "both arguments to matmul need to be at least 1D, but they are 0D and 1D"),
    ("matmul", "", [(3, 2), (3,)], "ShapeError", "size mismatch, got input (3), mat (3x2), vec (3)"),
    ("matmul", "", [(3,), (4,)], "ShapeError", "inconsistent tensor size, expected tensor [3] and src [4]"),
    ("matmul", "", [(3,), (2, 4)], "ShapeError", "mat1 and mat2 shapes cannot be multiplied (1x3 and 2x4)"),
    ("matmul", "", [(3, 2), (3, 2)], "ShapeError", "mat1 and mat2 shapes cannot be multiplied (3x2 and 3x2)"),
    ("matmul", "", [(2, 3, 4), (5, 6)], "ShapeError", "mat1 and mat2 shapes cannot be multiplied"),
    ("matmul", "", [(2, 3, 4), (2, 5, 6, 7)], "ShapeError",
     "size of tensor a (2) must match the size of tensor b (5) at non-singleton dimension 1"),
    ("matmul", "", [(2, 3, 4), (3, 4, 6, 2)], "ShapeError",
     "size of tensor a (2) must match the size of tensor b (4) at non-singleton dimension 1"),
    ("matmul", "", [(2, 2, 3, 4), (3, 4, 5)], "ShapeError",
     "size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 1"),
    ("mm", "", [(3,), (3, 2)], "ShapeError", "self must be a matrix"),
    ("mm", "", [(3, 2), (3,)], "ShapeError", "mat2 must be a matrix"),
    ("mm", "", [(2, 3, 2), (2, 2)], "ShapeError", "self must be a matrix"),
    ("mm", "", [(3, 2), (3, 2)], "ShapeError", "mat1 and mat2 shapes cannot be multiplied (3x2 and 3x2)"),
    ("bmm", "", [(3, 2), (3, 2, 2)], "ShapeError", "batch1 must be a 3D tensor"),
    ("bmm", "", [(3, 3, 2), (3, 2)], "ShapeError", "batch2 must be a 3D tensor"),
    ("bmm", "", [(2, 3, 2), (3, 2, 4)], "ShapeError",
     "Expected size for first two dimensions of batch2 tensor to be: [2, 2] but got: [3, 2]"),
    ("bmm", "", [(2, 3, 2), (2, 3, 4)], "ShapeError",
     "Expected size for first two dimensions of batch2 tensor to be: [2, 2] but got: [2, 3]"),
    ("bmm", "", [(1, 3, 2), (2, 2, 4)], "ShapeError",
     "Expected size for first two dimensions of batch2 tensor to be: [1, 2] but got: [2, 2]"),
    ("dot", "", [(3, 1), (3,)], "ShapeError", "1D tensors expected, but got 2D and 1D tensors"),
    ("dot", "", [(3,), (4,)], "ShapeError",
     "inconsistent tensor size, expected tensor [3] and src [4] to have the same number of elements, but got 3 and 4 elements respectively"),
    ("outer", "", [(3, 1), (3,)], "ShapeError", "Expected 1-D argument self, but got 2-D"),
    ("outer", "", [(3,), (3, 2)], "ShapeError", "Expected 1-D argument vec2, but got 2-D"),
    ("einsum", "i1->i", [(3, 3)], "Error",
     "einsum(): invalid subscript given at index 1 in the equation string, subscripts must be in [a-zA-Z]"),
    ("einsum", "ij->i.", [(2, 3)], "Error", "einsum(): found '.' for output that is not part of any ellipsis (...)"),
    ("einsum", "ij->->i", [(2, 3)], "Error", "einsum(): invalid subscript given at index 4 in the equation string"),
    ("einsum", "i.j", [(2, 2)], "Error", "einsum(): found '.' for operand 0 that is not part of any ellipsis"),
    ("einsum", "......", [(2, 2)], "Error", "einsum(): found '.' for operand 0 for which an ellipsis was already found"),
    ("einsum", "ij->......", [(2, 3)], "Error", "einsum(): found '.' for output but an ellipsis (...) was already found"),
    ("einsum", "ij,jk", [(2, 3)], "Error", "einsum(): fewer operands were provided than specified in the equation"),
    ("einsum", "ij", [(2, 3), (3,)], "Error", "einsum(): more operands were provided than specified in the equation"),
    ("einsum", "ijk", [(2, 3)], "ShapeError",
     "einsum(): the number of subscripts in the equation (3) does not match the number of dimensions (2) for operand 0 and no ellipsis was given"),
    ("einsum", "i,ij", [(2,), (2,)], "ShapeError",
     "einsum(): the number of subscripts in the equation (2) does not match the number of dimensions (1) for operand 1 and no ellipsis was given"),
    ("einsum", "ij...k", [(2,)], "ShapeError",
     "einsum(): the number of subscripts in the equation (3) is more than the number of dimensions (1) for operand 0"),
    ("einsum", "ii", [(2, 3)], "ShapeError", "einsum(): subscript i is repeated for operand 0 but the sizes don't match, 3 != 2"),
    ("einsum", "i,i", [(2,), (3,)], "ShapeError",
     "einsum(): subscript i has size 3 for operand 1 which does not broadcast with previously seen size 2"),
    ("einsum", "ij,jk->ik", [(2, 3), (4, 5)], "ShapeError",
     "einsum(): subscript j has size 4 for operand 1 which does not broadcast with previously seen size 3"),
    ("einsum", "...i,...i->...", [(2, 3), (4, 3)], "ShapeError",
     "einsum(): dimension 0 covered by ellipsis in operand 1"),
    ("einsum", "ij->ii", [(2, 2)], "Error", "einsum(): output subscript i appears more than once in the output"),
    ("einsum", "ij->k", [(2, 2)], "Error", "einsum(): output subscript k does not appear in the equation for any input operand"),
]


def main():
    print("// tests/data/linalg_reference.h: written by tests/data/linalg_reference.py with PyTorch %s (CPU, float64):"
          % torch.__version__)
    print("//   python3 tests/data/linalg_reference.py > tests/data/linalg_reference.h")
    print("// The inputs, weights and phrases are described in the script. Not edited by hand.")
    print("#pragma once")
    print("#include <cstdint>")
    print("#include <vector>")
    print()
    print("namespace linalg_reference {")
    print()
    print("struct Case {")
    print("  const char* op;         // matmul, mm, bmm, dot, outer or einsum")
    print("  const char* equation;   // einsum's, empty for the others")
    print("  bool transposed;        // operands of 2 or more dims are transposed views")
    print("  std::vector<std::vector<int64_t>> shapes;   // the operands'")
    print("  std::vector<int64_t> out_shape;")
    print("  std::vector<double> out;                    // row-major")
    print("  std::vector<std::vector<double>> grads;     // d sum(out * w) / d operand, per operand")
    print("};")
    print()
    print("struct ErrorCase {")
    print("  const char* op;")
    print("  const char* equation;")
    print("  std::vector<std::vector<int64_t>> shapes;")
    print("  const char* type;     // the tg error class")
    print("  const char* phrase;   // part of PyTorch's message")
    print("};")
    print()
    print("inline const std::vector<Case>& cases() {")
    print("  static const std::vector<Case> c = {")
    for op, eq, shapes, transposed in CASES:
        ins = [operand(s, j, transposed).requires_grad_(True) for j, s in enumerate(shapes)]
        out = run(op, eq, ins)
        w = vals(tuple(out.shape), 0.5, -0.7)
        grads = torch.autograd.grad((out * w).sum(), ins, allow_unused=True)
        grads = [g if g is not None else torch.zeros_like(x) for g, x in zip(grads, ins)]
        print('      {"%s", "%s", %s, {%s}, %s, %s, {%s}},' % (
            op, eq, "true" if transposed else "false", ", ".join(shape(s) for s in shapes), shape(out.shape),
            numbers(out.detach()), ", ".join(numbers(g) for g in grads)))
    print("  };")
    print("  return c;")
    print("}")
    print()
    print("inline const std::vector<ErrorCase>& errors() {")
    print("  static const std::vector<ErrorCase> c = {")
    for op, eq, shapes, kind, phrase in ERRORS:
        ins = [operand(s, j, False) for j, s in enumerate(shapes)]
        try:
            run(op, eq, ins)
        except RuntimeError as e:
            assert phrase in str(e), (op, eq, str(e))
        else:
            raise AssertionError("PyTorch accepted %s %s %s" % (op, eq, shapes))
        print('      {"%s", "%s", {%s}, "%s", "%s"},' % (op, eq, ", ".join(shape(s) for s in shapes), kind, phrase))
    print("  };")
    print("  return c;")
    print("}")
    print()
    print("}  // namespace linalg_reference")


main()
