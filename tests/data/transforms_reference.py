# tests/data/transforms_reference.py: writes tests/data/transforms_reference.h, the torchvision reference
# images that tests/test_transforms.cpp checks tg::data::transforms::functional (resize, the colour
# adjustments, rgb_to_grayscale, rotate, affine, gaussian_blur) against.
# Made with pip's PyTorch 2.15.0 and torchvision 0.29.2 (CPU, float64, torchvision.transforms.v2.functional
# on plain tensors) by running, from the repository root:
#   python3 tests/data/transforms_reference.py > tests/data/transforms_reference.h
# Every input image is image(shape, seed) = 0.5 + 0.5 sin(0.7 i + seed) over the flattened float64
# tensor, values in [0, 1], which the C++ test builds the same way. Each case records the output's
# shape and every element, in the order the test runs them.
import torch
import torchvision
import torchvision.transforms.v2.functional as F
from torchvision.transforms import InterpolationMode

BILINEAR, NEAREST = InterpolationMode.BILINEAR, InterpolationMode.NEAREST
cases = []   # (name, shape, values)


def image(shape, seed):
    n = 1
    for s in shape:
        n *= s
    return (0.5 + 0.5 * torch.sin(torch.arange(n, dtype=torch.float64) * 0.7 + seed)).reshape(shape)


def report(name, out):
    cases.append((name, list(out.shape), out.flatten().tolist()))


# ---- resize
report("resize (3, 7, 9) to (4, 5) bilinear antialias",
       F.resize(image((3, 7, 9), 1.0), [4, 5], interpolation=BILINEAR, antialias=True))
report("resize (3, 7, 9) to (4, 5) bilinear no antialias",
       F.resize(image((3, 7, 9), 1.0), [4, 5], interpolation=BILINEAR, antialias=False))
report("resize (2, 5, 6) to (8, 11) bilinear antialias",
       F.resize(image((2, 5, 6), 2.0), [8, 11], interpolation=BILINEAR, antialias=True))
report("resize (2, 5, 6) to (8, 4) nearest",
       F.resize(image((2, 5, 6), 2.0), [8, 4], interpolation=NEAREST))
report("resize (2, 7, 9) shorter side 4",
       F.resize(image((2, 7, 9), 3.0), [4]))
report("resize (1, 10, 4) shorter side 5 max_size 6",
       F.resize(image((1, 10, 4), 4.0), [5], max_size=6))
report("resize (2, 3, 6, 6) to (3, 9) bilinear antialias",
       F.resize(image((2, 3, 6, 6), 5.0), [3, 9], interpolation=BILINEAR, antialias=True))

# ---- colour
report("rgb_to_grayscale (2, 3, 4, 5) 1 channel", F.rgb_to_grayscale(image((2, 3, 4, 5), 1.0), 1))
report("rgb_to_grayscale (3, 4, 5) 3 channels", F.rgb_to_grayscale(image((3, 4, 5), 2.0), 3))
report("adjust_brightness 1.3", F.adjust_brightness(image((3, 4, 5), 3.0), 1.3))
report("adjust_contrast 0.6 batch", F.adjust_contrast(image((2, 3, 4, 5), 4.0), 0.6))
report("adjust_contrast 1.7 one channel", F.adjust_contrast(image((1, 4, 5), 5.0), 1.7))
report("adjust_saturation 0.4", F.adjust_saturation(image((2, 3, 4, 5), 6.0), 0.4))
report("adjust_saturation 1.8", F.adjust_saturation(image((3, 4, 5), 7.0), 1.8))
report("adjust_hue 0.23", F.adjust_hue(image((2, 3, 4, 5), 8.0), 0.23))
report("adjust_hue -0.41", F.adjust_hue(image((3, 4, 5), 9.0), -0.41))

# ---- rotate and affine
report("rotate 33 nearest", F.rotate(image((3, 7, 8), 1.0), 33.0, interpolation=NEAREST))
report("rotate 33 bilinear", F.rotate(image((3, 7, 8), 1.0), 33.0, interpolation=BILINEAR))
report("rotate -50 bilinear expand fill 0.3",
       F.rotate(image((2, 6, 9), 2.0), -50.0, interpolation=BILINEAR, expand=True, fill=0.3))
report("rotate 20 nearest center (2, 3) fill 0.7",
       F.rotate(image((2, 6, 7), 3.0), 20.0, interpolation=NEAREST, center=[2.0, 3.0], fill=0.7))
report("rotate 90 expand", F.rotate(image((1, 4, 6), 4.0), 90.0, expand=True))
report("rotate 270 square", F.rotate(image((1, 5, 5), 5.0), 270.0))
report("rotate 180", F.rotate(image((1, 3, 4), 6.0), 180.0))
report("affine nearest fill 0.5",
       F.affine(image((3, 7, 8), 7.0), angle=25.0, translate=[1.0, -2.0], scale=0.8, shear=[10.0, -5.0],
                interpolation=NEAREST, fill=0.5))
report("affine bilinear",
       F.affine(image((3, 7, 8), 7.0), angle=25.0, translate=[1.0, -2.0], scale=0.8, shear=[10.0, -5.0],
                interpolation=BILINEAR))
report("affine bilinear center (1.5, 2) fill 0",
       F.affine(image((2, 6, 6), 8.0), angle=-40.0, translate=[0.0, 1.0], scale=1.3, shear=[0.0, 15.0],
                interpolation=BILINEAR, fill=0.0, center=[1.5, 2.0]))

# ---- gaussian_blur
report("gaussian_blur (3, 5) sigma (0.8, 1.3)",
       F.gaussian_blur(image((2, 3, 6, 7), 1.0), kernel_size=[3, 5], sigma=[0.8, 1.3]))
report("gaussian_blur 5 default sigma", F.gaussian_blur(image((1, 5, 5), 2.0), kernel_size=[5, 5]))

print(f"""// tests/data/transforms_reference.h: written by tests/data/transforms_reference.py (PyTorch {torch.__version__},
// torchvision {torchvision.__version__}, float64); do not edit. Read by tests/test_transforms.cpp, whose cases
// follow the script's.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace transforms_ref {{

/// One case: the output's shape and every element, row-major.
struct Reference {{
  std::string name;
  std::vector<int64_t> shape;
  std::vector<double> values;
}};

/// In the script's order.
inline const std::vector<Reference> kCases = {{""")
for name, shape, values in cases:
    print(f'    {{"{name}", {{{", ".join(str(s) for s in shape)}}}, {{{", ".join(repr(v) for v in values)}}}}},')
print("""};

}  // namespace transforms_ref""")
