#!/usr/bin/env python3
"""Writes the interop fixtures in tests/data/ with the reference safetensors writer.

The files are produced by safetensors.numpy.save_file from the `safetensors` package
(https://github.com/huggingface/safetensors, Apache-2.0), so tests/test_serialize.cpp checks that
tensorgrad reads what the reference implementation writes. Python is needed only to regenerate the
fixtures; building and testing tensorgrad never runs it.

    pip install safetensors numpy
    python3 tests/data/make_fixtures.py
"""
import os

import numpy as np
from safetensors.numpy import save_file

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    # nn::Linear(3, 2): weight (out=2, in=3), bias (2,). Exact binary fractions, so the test can
    # compare for equality.
    tensors = {
        "weight": np.array([[0.5, -1.25, 2.0], [3.75, -0.125, 8.0]], dtype=np.float32),
        "bias": np.array([1.5, -2.25], dtype=np.float32),
    }
    save_file(tensors, os.path.join(HERE, "linear_2x3.safetensors"), metadata={"format": "np"})


if __name__ == "__main__":
    main()
