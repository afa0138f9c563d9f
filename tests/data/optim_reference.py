# tests/data/optim_reference.py: prints the reference trajectories of tests/test_optimizers.cpp (run by
# hand with pip's torch 2.x, never by the build): three parameter groups w1 (3), w2 (2), w3 (2) in
# float64, loss sum(a (w - c)^2) + 0.1 sum(w^3) per tensor, 8 steps of each optimizer with per-group
# options, every parameter after each step (flattened w1, w2, w3) as C++ initializer lists.
import torch

torch.set_default_dtype(torch.float64)   # NAdam's mu_product and every step count in float64


def init():
    w = [torch.tensor([1.0, -2.0, 0.5], requires_grad=True), torch.tensor([0.3, -0.7], requires_grad=True),
         torch.tensor([2.0, -1.5], requires_grad=True)]
    a = [torch.tensor([1.0, 3.0, 0.2]), torch.tensor([0.5, 2.0]), torch.tensor([1.5, 0.1])]
    c = [torch.tensor([0.3, 0.1, -1.0]), torch.tensor([-0.4, 0.9]), torch.tensor([0.0, 0.5])]
    return w, a, c


def run(name, make, steps=8, between=None):
    w, a, c = init()
    opt = make(w)
    rows = []
    for s in range(steps):
        opt.zero_grad()
        loss = sum((ai * (wi - ci) ** 2).sum() + 0.1 * (wi ** 3).sum() for wi, ai, ci in zip(w, a, c))
        loss.backward()
        opt.step()
        if between is not None:
            between(opt, s)
        rows.append([float(x) for wi in w for x in wi.detach().flatten()])
    print(f'    {{"{name}",\n     {{' + ",\n      ".join("{" + ", ".join(repr(x) for x in r) + "}" for r in rows) + "}},")


def g(w, **kw):
    return [{"params": [w[0]], **kw[ "g0"]}, {"params": [w[1]], **kw["g1"]}, {"params": [w[2]], **kw["g2"]}]


O = torch.optim
print("// torch", torch.__version__)
run("SGD", lambda w: O.SGD(g(w, g0=dict(momentum=0.9, nesterov=True), g1=dict(lr=0.05, momentum=0.5, dampening=0.1,
                                                                              weight_decay=0.01), g2=dict()), lr=0.1))


def adam_change(opt, s):   # after the third step, group 1's options change (param_groups is writable)
    if s == 2:
        opt.param_groups[1]["weight_decay"] = 0.2
        opt.param_groups[1]["betas"] = (0.5, 0.9)
        opt.param_groups[2]["lr"] = 0.02


run("Adam", lambda w: O.Adam(g(w, g0=dict(betas=(0.8, 0.99), weight_decay=0.1, amsgrad=True), g1=dict(lr=0.05),
                               g2=dict(eps=1e-3)), lr=0.1), between=adam_change)
run("AdamW", lambda w: O.AdamW(g(w, g0=dict(weight_decay=0.1), g1=dict(weight_decay=0.0), g2=dict(lr=0.03)), lr=0.1))
run("RMSprop", lambda w: O.RMSprop(g(w, g0=dict(), g1=dict(alpha=0.9, eps=1e-6, weight_decay=0.1, momentum=0.9,
                                                          centered=True), g2=dict(momentum=0.5, lr=0.02)), lr=0.01))
run("Adagrad", lambda w: O.Adagrad(g(w, g0=dict(), g1=dict(lr_decay=0.1, weight_decay=0.05,
                                                          initial_accumulator_value=0.5, eps=1e-8),
                                     g2=dict(lr=0.3, initial_accumulator_value=0.1)), lr=0.1))
# PyTorch fills the sums from the constructor's initial_accumulator_value; a group's own is not read
run("Adagrad initial_accumulator_value", lambda w: O.Adagrad(g(w, g0=dict(), g1=dict(initial_accumulator_value=0.9),
                                                               g2=dict(lr=0.3)), lr=0.1, initial_accumulator_value=0.3))
run("Adadelta", lambda w: O.Adadelta(g(w, g0=dict(), g1=dict(lr=0.5, rho=0.8, eps=1e-4, weight_decay=0.1),
                                       g2=dict(rho=0.5))))
run("Adamax", lambda w: O.Adamax(g(w, g0=dict(), g1=dict(lr=0.05, betas=(0.7, 0.9), eps=1e-6, weight_decay=0.1),
                                   g2=dict(lr=0.2)), lr=0.1))
run("NAdam", lambda w: O.NAdam(g(w, g0=dict(), g1=dict(lr=0.05, betas=(0.8, 0.95), weight_decay=0.1,
                                                      momentum_decay=0.01),
                                 g2=dict(weight_decay=0.1, decoupled_weight_decay=True)), lr=0.1))
run("RAdam", lambda w: O.RAdam(g(w, g0=dict(), g1=dict(betas=(0.8, 0.9), weight_decay=0.1),
                                 g2=dict(weight_decay=0.1, decoupled_weight_decay=True, betas=(0.9, 0.9))), lr=0.1))
# the default options of each optimizer, one group (torch's defaults; Adagrad/RMSprop lr 1e-2, Adadelta 1.0,
# Adamax/NAdam 2e-3, RAdam 1e-3)
for name in ["RMSprop", "Adagrad", "Adadelta", "Adamax", "NAdam", "RAdam"]:
    run(name + " defaults", lambda w, name=name: getattr(O, name)(w), steps=3)


# LBFGS: w1 (2) on Rosenbrock, w2 (3) on sum(a (w2 - c)^2) + 0.1 sum(w2^4); each row: w1, w2 after a
# step(closure), then the loss step() returned (the one before the step's iterations)
def run_lbfgs(name, steps, **kw):
    w1 = torch.tensor([-1.2, 1.0], requires_grad=True)
    w2 = torch.tensor([0.5, -0.3, 0.8], requires_grad=True)
    a, c = torch.tensor([1.0, 2.0, 0.5]), torch.tensor([0.2, -0.4, 1.0])
    opt = O.LBFGS([w1, w2], **kw)

    def closure():
        opt.zero_grad()
        loss = (1 - w1[0]) ** 2 + 100 * (w1[1] - w1[0] ** 2) ** 2 + (a * (w2 - c) ** 2).sum() + 0.1 * (w2 ** 4).sum()
        loss.backward()
        return loss

    rows = []
    for _ in range(steps):
        loss = opt.step(closure)
        rows.append([float(x) for x in torch.cat([w1.detach(), w2.detach()])] + [float(loss.detach())])
    print(f'    {{"{name}",\n     {{' + ",\n      ".join("{" + ", ".join(repr(x) for x in r) + "}" for r in rows) + "}},")


run_lbfgs("LBFGS", 4, lr=1, max_iter=5)
run_lbfgs("LBFGS lr 0.5 history 3", 4, lr=0.5, max_iter=7, history_size=3)
run_lbfgs("LBFGS strong_wolfe", 4, lr=1, max_iter=10, history_size=4, line_search_fn="strong_wolfe")
run_lbfgs("LBFGS strong_wolfe max_eval", 3, lr=1, max_iter=20, max_eval=9, line_search_fn="strong_wolfe")
# trial steps far too long (the zoom phase, with its steps away from a bracket end) and far too short
# (extrapolation by cubic interpolation)
run_lbfgs("LBFGS strong_wolfe lr 300", 3, lr=300, max_iter=20, line_search_fn="strong_wolfe")
run_lbfgs("LBFGS strong_wolfe lr 0.01", 3, lr=0.01, max_iter=6, line_search_fn="strong_wolfe")
