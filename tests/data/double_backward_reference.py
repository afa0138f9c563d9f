# Reference values for tests/test_double_backward.cpp, from PyTorch 2.x (pip torch 2.15.0, CPU, float64):
#   python3 tests/data/double_backward_reference.py
# Inputs are vals(n, a, b)[i] = a + b sin(1.3 i + 0.4) (tests/testing.h), so no random stream is involved.
import math
import torch
import torch.nn.functional as F
from torch.autograd.functional import hessian, hvp, jacobian, jvp, vhp

torch.set_default_dtype(torch.float64)


def vals(n, a, b, shape):
    return torch.tensor([a + b * math.sin(1.3 * i + 0.4) for i in range(n)]).reshape(shape)


def show(name, t):
    print(name, "=", "{" + ", ".join("%.17g" % v for v in t.flatten().tolist()) + "}")


X = vals(12, 0.0, 1.0, (4, 3))
W1 = vals(15, 0.1, 0.5, (5, 3))
b1 = vals(5, 0.0, 0.3, (5,))
W2 = vals(10, 0.0, 0.4, (2, 5))
T = vals(8, 0.2, 0.5, (4, 2))
V = vals(15, 0.0, 1.0, (5, 3))


def mlp_loss(w1):
    return F.mse_loss(F.linear(torch.tanh(F.linear(X, w1, b1)), W2), T)


loss, hv = hvp(mlp_loss, W1, V)
show("mlp_loss", loss)
show("mlp_hvp", hv)

x = vals(4, 0.3, 0.8, (4,))


def scalar(x):
    return (x.pow(3) * torch.sin(x)).sum() + torch.logsumexp(x, 0)


show("scalar_hessian", hessian(scalar, x))
show("softmax_jacobian", jacobian(lambda x: torch.softmax(x * x, 0), x))
A = vals(12, 0.0, 0.7, (3, 4))
u = vals(4, 0.5, 0.5, (4,))
show("sigmoid_jvp", jvp(lambda x: torch.sigmoid(A @ x), x, u)[1])
show("scalar_vhp", vhp(scalar, x, u)[1])

# A composite of conv2d, tanh, layer_norm, attention, linear and cross_entropy: the Hessian-vector
# product with respect to the convolution's weight.
Xc = vals(50, 0.0, 1.0, (2, 1, 5, 5))
Wc = vals(27, 0.1, 0.4, (3, 1, 3, 3))
bc = vals(3, 0.0, 0.1, (3,))
Wl = vals(300, 0.0, 0.2, (4, 75))
Vc = vals(27, 0.0, 1.0, (3, 1, 3, 3))
targets = torch.tensor([1, 3])


def composite_loss(w):
    h = torch.tanh(F.conv2d(Xc, w, bc, padding=1)).reshape(2, 3, 25)
    h = F.layer_norm(h, (25,))
    # scaled_dot_product_attention's math (PyTorch's fused CPU kernel has no double backward)
    h = torch.softmax(h @ h.transpose(-1, -2) / math.sqrt(25.0), -1) @ h
    return F.cross_entropy(F.linear(h.reshape(2, 75), Wl), targets)


closs, chv = hvp(composite_loss, Wc, Vc)
show("composite_loss", closs)
show("composite_hvp", chv)
