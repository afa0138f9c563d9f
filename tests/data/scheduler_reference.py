# tests/data/scheduler_reference.py: prints the reference learning rates of tests/test_schedulers.cpp
# (run by hand with pip's torch 2.x, never by the build). Each case: an SGD or Adam over one zero
# parameter per group, the scheduler(s) built, then n times opt.step(); scheduler.step(); one row per
# point in time (after construction, then after each step) with every group's lr, followed for
# OneCycleLR by every group's momentum (SGD) or beta1 (Adam).
import warnings

import torch
from torch.optim import lr_scheduler as L

warnings.simplefilter("ignore")


def opt(lrs, kind="sgd", **kw):
    groups = [{"params": [torch.zeros(1, requires_grad=True)], "lr": lr} for lr in lrs]
    return torch.optim.SGD(groups, lr=lrs[0], **kw) if kind == "sgd" else torch.optim.Adam(groups, lr=lrs[0], **kw)


def run(name, o, make, n, metrics=None, momentum=None):
    scheds = make(o)
    def row():
        r = [g["lr"] for g in o.param_groups]
        if momentum == "momentum":
            r += [g["momentum"] for g in o.param_groups]
        elif momentum == "beta1":
            r += [g["betas"][0] for g in o.param_groups]
        return r
    rows = [row()]
    for i in range(n):
        o.step()
        for s in scheds:
            if metrics is not None:
                s.step(metrics[i])
            else:
                s.step()
        rows.append(row())
    print(f'    {{"{name}",\n     {{' + ",\n      ".join("{" + ", ".join(repr(float(x)) for x in r) + "}" for r in rows) + "}},")


print("// torch", torch.__version__)
run("ExponentialLR", opt([1.0, 0.5]), lambda o: [L.ExponentialLR(o, 0.9)], 6)
run("MultiStepLR", opt([1.0, 0.5]), lambda o: [L.MultiStepLR(o, [5, 2, 5, 7], 0.5)], 9)
run("ConstantLR", opt([1.0, 0.5]), lambda o: [L.ConstantLR(o, 0.25, 3)], 5)
run("LambdaLR", opt([1.0, 0.5]), lambda o: [L.LambdaLR(o, lambda e: 0.95 ** e)], 6)
run("LambdaLR per group", opt([1.0, 0.5]), lambda o: [L.LambdaLR(o, [lambda e: 1 / (e + 1), lambda e: 0.5 * e + 1])], 6)
run("MultiplicativeLR", opt([1.0, 0.5]), lambda o: [L.MultiplicativeLR(o, lambda e: 0.9 - 0.01 * e)], 5)
run("ExponentialLR and MultiStepLR chained", opt([1.0, 0.5]),
    lambda o: [L.ExponentialLR(o, 0.9), L.MultiStepLR(o, [2, 4], 0.5)], 6)
run("SequentialLR LinearLR then CosineAnnealingLR", opt([1.0, 0.5]),
    lambda o: [L.SequentialLR(o, [L.LinearLR(o, 0.1, 1.0, 3), L.CosineAnnealingLR(o, 5, 0.01)], [3])], 10)
run("SequentialLR ConstantLR ExponentialLR StepLR", opt([1.0, 0.5]),
    lambda o: [L.SequentialLR(o, [L.ConstantLR(o, 0.5, 2), L.ExponentialLR(o, 0.9), L.StepLR(o, 2, 0.5)], [3, 6])], 10)
run("OneCycleLR cos SGD", opt([0.1, 0.05], momentum=0.9), lambda o: [L.OneCycleLR(o, [1.0, 0.5], total_steps=10)], 10,
    momentum="momentum")
run("OneCycleLR three_phase linear Adam", opt([0.1, 0.05], kind="adam"),
    lambda o: [L.OneCycleLR(o, 1.0, epochs=3, steps_per_epoch=4, pct_start=0.25, anneal_strategy="linear",
                            div_factor=10, final_div_factor=100, three_phase=True, base_momentum=0.8,
                            max_momentum=0.9)], 12, momentum="beta1")
run("OneCycleLR no momentum", opt([0.1]), lambda o: [L.OneCycleLR(o, 0.3, total_steps=7, cycle_momentum=False,
                                                                  pct_start=0.4)], 7, momentum="momentum")
m = [1.0, 0.9, 0.95, 0.96, 0.97, 0.97, 0.5, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6]
run("ReduceLROnPlateau min rel", opt([1.0, 0.5]),
    lambda o: [L.ReduceLROnPlateau(o, "min", 0.5, patience=2, cooldown=1, min_lr=[0.1, 0.01])], len(m), metrics=m)
m2 = [0.1, 0.12, 0.2, 0.24, 0.26, 0.27, 0.28, 0.5, 0.5, 0.5, 0.5]
run("ReduceLROnPlateau max abs", opt([1.0, 0.5]),
    lambda o: [L.ReduceLROnPlateau(o, "max", 0.3, patience=1, threshold=0.05, threshold_mode="abs", min_lr=0.05)],
    len(m2), metrics=m2)
m3 = [1.0] * 8
run("ReduceLROnPlateau eps", opt([1e-7, 1.0]),
    lambda o: [L.ReduceLROnPlateau(o, "min", 0.5, patience=0, eps=1e-7)], len(m3), metrics=m3)
