# tests/data/autocast_lists.py: the PyTorch dtypes behind the op-list cases of
# tests/test_autocast_lists.cpp. Run with PyTorch 2.15 (CPU build with CUDA compiled in; no GPU needed):
#   python3 tests/data/autocast_lists.py
# For each op that tensorgrad has, the output dtype under torch.autocast for each region dtype (bfloat16,
# float16) and input dtype (bfloat16, float16, float32, float64), on the CPU by running the op, on CUDA
# by running it on fake CUDA tensors (FakeTensorMode) with CUDA autocast switched on directly: autocast
# dispatches on the tensors' device, so the fake tensors take CUDA's lists. Each line prints the op and,
# per region, the four output dtypes as letters: b bfloat16, h float16, f float32, d float64.
# gaussian_nll_loss runs on the fake tensors without its data-dependent check of var; ctc_loss cannot run
# on them, and the last line says instead whether CUDA's autocast has a kernel for it (False: not listed,
# so it runs in its input's dtype).
import torch
import torch.nn.functional as F
from torch._subclasses.fake_tensor import FakeTensorMode

LETTER = {torch.bfloat16: "b", torch.float16: "h", torch.float32: "f", torch.float64: "d"}
INPUTS = [torch.bfloat16, torch.float16, torch.float32, torch.float64]


def ops(dev):
    """(name, f(dtype) -> output): every floating operand of the op in that dtype."""
    def t(*shape, dt):
        return torch.ones(*shape, dtype=dt, device=dev)
    target = torch.zeros(3, dtype=torch.long, device=dev)
    return [
        ("matmul", lambda d: torch.matmul(t(3, 5, dt=d), t(5, 4, dt=d))),
        ("linear", lambda d: F.linear(t(3, 5, dt=d), t(4, 5, dt=d), t(4, dt=d))),
        ("conv1d", lambda d: F.conv1d(t(2, 3, 9, dt=d), t(4, 3, 3, dt=d), t(4, dt=d))),
        ("conv2d", lambda d: F.conv2d(t(2, 3, 7, 7, dt=d), t(4, 3, 3, 3, dt=d), t(4, dt=d))),
        ("scaled_dot_product_attention", lambda d: F.scaled_dot_product_attention(
            t(2, 5, 8, dt=d), t(2, 6, 8, dt=d), t(2, 6, 8, dt=d))),
        ("softmax", lambda d: torch.softmax(t(3, 5, dt=d), 1)),
        ("log_softmax", lambda d: torch.log_softmax(t(3, 5, dt=d), 1)),
        ("cross_entropy", lambda d: F.cross_entropy(t(3, 5, dt=d), target)),
        ("mse_loss", lambda d: F.mse_loss(t(3, 5, dt=d), t(3, 5, dt=d))),
        ("sum", lambda d: torch.sum(t(3, 5, dt=d))),
        ("sum_dim", lambda d: torch.sum(t(3, 5, dt=d), 1)),
        ("mean", lambda d: torch.mean(t(3, 5, dt=d))),
        ("exp", lambda d: torch.exp(t(3, 5, dt=d))),
        ("log", lambda d: torch.log(t(3, 5, dt=d))),
        ("pow_scalar", lambda d: torch.pow(t(3, 5, dt=d), 2.5)),
        ("pow_tensor", lambda d: torch.pow(t(3, 5, dt=d), t(3, 5, dt=d))),
        ("layer_norm", lambda d: F.layer_norm(t(3, 5, dt=d), (5,), t(5, dt=d), t(5, dt=d))),
        ("group_norm", lambda d: F.group_norm(t(2, 4, 3, dt=d), 2, t(4, dt=d), t(4, dt=d))),
        ("batch_norm", lambda d: F.batch_norm(t(2, 4, 3, dt=d), None, None, t(4, dt=d), t(4, dt=d), True)),
        ("softplus", lambda d: F.softplus(t(3, 5, dt=d))),
        ("gelu", lambda d: F.gelu(t(3, 5, dt=d))),
        ("sigmoid", lambda d: torch.sigmoid(t(3, 5, dt=d))),
        ("relu", lambda d: torch.relu(t(3, 5, dt=d))),
        ("max_pool2d", lambda d: F.max_pool2d(t(2, 3, 6, 6, dt=d), 2)),
        ("avg_pool2d", lambda d: F.avg_pool2d(t(2, 3, 6, 6, dt=d), 2)),
        ("conv_transpose2d", lambda d: F.conv_transpose2d(t(2, 3, 5, 5, dt=d), t(3, 4, 3, 3, dt=d), t(4, dt=d))),
        ("nll_loss", lambda d: F.nll_loss(t(3, 5, dt=d), target)),
        ("binary_cross_entropy_with_logits",
         lambda d: F.binary_cross_entropy_with_logits(t(3, 5, dt=d), t(3, 5, dt=d))),
        ("l1_loss", lambda d: F.l1_loss(t(3, 5, dt=d), t(3, 5, dt=d))),
        ("smooth_l1_loss", lambda d: F.smooth_l1_loss(t(3, 5, dt=d), t(3, 5, dt=d))),
        ("huber_loss", lambda d: F.huber_loss(t(3, 5, dt=d), t(3, 5, dt=d))),
        ("kl_div", lambda d: F.kl_div(t(3, 5, dt=d), t(3, 5, dt=d).abs(), reduction="batchmean")),
        ("margin_ranking_loss", lambda d: F.margin_ranking_loss(t(3, 5, dt=d), t(3, 5, dt=d), t(3, 5, dt=d).sign())),
        ("cosine_embedding_loss",
         lambda d: F.cosine_embedding_loss(t(3, 5, dt=d), t(3, 5, dt=d), torch.tensor([1.0, -1.0, 1.0], device=dev))),
        ("hinge_embedding_loss", lambda d: F.hinge_embedding_loss(t(3, 5, dt=d), t(3, 5, dt=d).sign())),
        ("triplet_margin_loss", lambda d: F.triplet_margin_loss(t(3, 5, dt=d), t(3, 5, dt=d), t(3, 5, dt=d))),
        ("multi_margin_loss", lambda d: F.multi_margin_loss(t(3, 5, dt=d), target)),
        ("poisson_nll_loss", lambda d: F.poisson_nll_loss(t(3, 5, dt=d), t(3, 5, dt=d))),
        ("gaussian_nll_loss", lambda d: gaussian_nll_loss(t(3, 5, dt=d), t(3, 5, dt=d), t(3, 5, dt=d), dev)),
        ("soft_margin_loss", lambda d: F.soft_margin_loss(t(3, 5, dt=d), t(3, 5, dt=d))),
        ("multilabel_soft_margin_loss", lambda d: F.multilabel_soft_margin_loss(t(3, 5, dt=d), t(3, 5, dt=d))),
        ("multilabel_margin_loss",
         lambda d: F.multilabel_margin_loss(t(3, 5, dt=d), torch.zeros(3, 5, dtype=torch.long, device=dev))),
        ("triplet_margin_with_distance_loss",
         lambda d: F.triplet_margin_with_distance_loss(t(3, 5, dt=d), t(3, 5, dt=d), t(3, 5, dt=d))),
    ] + ([] if dev != "cpu" else [
        # fake CUDA tensors cannot run ctc_loss; CUDA's list is read from the dispatcher below
        ("ctc_loss", lambda d: F.ctc_loss(t(6, 2, 4, dt=d), torch.ones(2, 3, dtype=torch.long), [6, 6], [3, 2])),
    ])


def gaussian_nll_loss(x, target, var, dev):
    """F.gaussian_nll_loss; on fake tensors without its data-dependent check torch.any(var < 0)."""
    if dev == "cpu":
        return F.gaussian_nll_loss(x, target, var)
    real_any = torch.any
    torch.any = lambda _: False
    try:
        return F.gaussian_nll_loss(x, target, var)
    finally:
        torch.any = real_any


def table(dev):
    rows = {}
    for region in (torch.bfloat16, torch.float16):
        if dev == "cpu":
            ctx = torch.autocast("cpu", dtype=region)
            ctx.__enter__()
        else:
            torch.set_autocast_enabled("cuda", True)
            torch.set_autocast_dtype("cuda", region)
        for name, f in ops(dev):
            rows.setdefault(name, []).append("".join(LETTER[f(d).dtype] for d in INPUTS))
        if dev == "cpu":
            ctx.__exit__(None, None, None)
        else:
            torch.set_autocast_enabled("cuda", False)
    return rows


print("torch", torch.__version__)
print("cpu")
for name, cols in table("cpu").items():
    print(f"  {name:30s} {' '.join(cols)}")
with FakeTensorMode(allow_non_fake_inputs=True):
    print("cuda")
    for name, cols in table("cuda").items():
        print(f"  {name:30s} {' '.join(cols)}")
print("cuda list has ctc_loss:", torch._C._dispatch_has_kernel_for_dispatch_key("aten::ctc_loss.IntList", "AutocastCUDA"))
