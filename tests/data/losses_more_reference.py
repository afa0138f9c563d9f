# tests/data/losses_more_reference.py: prints the PyTorch values of tests/test_losses.cpp for kl_div,
# margin_ranking_loss, cosine_embedding_loss and cross_entropy with (N, C, d1, ...) logits and class-probability
# targets (`python3 tests/data/losses_more_reference.py`, torch 2.15.0, float64).
import torch, torch.nn.functional as F
d = torch.float64
vals = lambda n, a, b: a + b * torch.sin(1.3 * torch.arange(n, dtype=d) + 0.4)
def pr(name, t): print(name, [float(x) for x in t.detach().reshape(-1)])
# kl_div: input = log_softmax(vals(12, 0, 2).reshape(3,4), 1), target = softmax(vals(12,1,1.5).reshape(3,4),1) with one 0
x = vals(12, 0, 2).reshape(3, 4).log_softmax(1).detach().requires_grad_()
t = vals(12, 1, 1.5).reshape(3, 4).softmax(1).detach()
t[1, 2] = 0.0
t.requires_grad_()
l = F.kl_div(x, t, reduction='batchmean'); l.backward()
pr("kl batchmean", l); pr("kl dx", x.grad); pr("kl dt", t.grad)
pr("kl mean", F.kl_div(x, t, reduction='mean')); pr("kl none", F.kl_div(x, t, reduction='none'))
lt = vals(12, -1, 0.5).reshape(3, 4)
pr("kl logtarget sum", F.kl_div(x, lt, reduction='sum', log_target=True))
# margin ranking
a = vals(6, 0, 1).requires_grad_(); b = vals(6, 0.2, 0.8).flip(0).requires_grad_()
y = torch.tensor([1., -1, 1, 1, -1, -1], dtype=d)
l = F.margin_ranking_loss(a, b, y, margin=0.3); l.backward()
pr("mr", l); pr("mr da", a.grad); pr("mr db", b.grad)
pr("mr none", F.margin_ranking_loss(a, b, y, margin=0.3, reduction='none'))
# cosine embedding
p = vals(12, 0, 1).reshape(3, 4).requires_grad_(); q = vals(12, 0.5, 1).flip(0).reshape(3, 4).requires_grad_()
y3 = torch.tensor([1., -1, -1], dtype=d)
l = F.cosine_embedding_loss(p, q, y3, margin=-0.2); l.backward()
pr("ce", l); pr("ce dp", p.grad); pr("ce dq", q.grad)
pr("ce none", F.cosine_embedding_loss(p, q, y3, margin=0.1, reduction='none'))
pr("ce 1d", F.cosine_embedding_loss(p[0], q[0], torch.tensor(-1., dtype=d), margin=0.1))
for args in [(p, q, torch.ones(3, 1, dtype=d)), (p, q[:2], y3), (p[0], q[0], y3)]:
    try: F.cosine_embedding_loss(*args)
    except Exception as e: print("err", repr(str(e)))
try: F.margin_ranking_loss(a, b.reshape(2,3), y)
except Exception as e: print("err", repr(str(e)))
# cross_entropy (N, C, d1, d2) index targets, and probability targets
z = vals(24, 0, 2).reshape(2, 3, 2, 2).requires_grad_()
tgt = torch.tensor([[[0, 2], [1, -100]], [[2, 2], [0, 1]]])
l = F.cross_entropy(z, tgt, label_smoothing=0.1); l.backward()
pr("cek", l); pr("cek dz", z.grad)
pr("cek none", F.cross_entropy(z, tgt, reduction='none'))
z2 = vals(12, 0, 2).reshape(3, 4).requires_grad_()
tp = vals(12, 1, 1.5).reshape(3, 4).softmax(1).detach().requires_grad_()
l = F.cross_entropy(z2, tp, label_smoothing=0.2); l.backward()
pr("cep", l); pr("cep dz", z2.grad); pr("cep dt", tp.grad)
z3 = vals(24, 0, 2).reshape(2, 3, 4)
tp3 = vals(24, 1, 1.5).reshape(2, 3, 4).softmax(1)
pr("cep3 sum", F.cross_entropy(z3, tp3, reduction='sum'))
# cross_entropy with class weights: index targets (with an ignored row, with label smoothing, (N, C, d)),
# probability targets
wc = torch.tensor([0.5, 2.0, 1.0, 1.5], dtype=d)
zw = vals(20, 0, 2).reshape(5, 4).requires_grad_()
tw = torch.tensor([1, 3, -100, 0, 1])
l = F.cross_entropy(zw, tw, weight=wc); l.backward()
pr("cew", l); pr("cew dz", zw.grad)
zw.grad = None
l = F.cross_entropy(zw, tw, weight=wc, label_smoothing=0.15); l.backward()
pr("cews", l); pr("cews dz", zw.grad)
pr("cews sum", F.cross_entropy(zw, tw, weight=wc, label_smoothing=0.15, reduction='sum'))
pr("cews none", F.cross_entropy(zw, tw, weight=wc, label_smoothing=0.15, reduction='none'))
w3 = torch.tensor([1.0, 0.25, 3.0], dtype=d)
pr("cewk", F.cross_entropy(z.detach(), tgt, weight=w3, label_smoothing=0.1))
pr("cewp", F.cross_entropy(z2.detach(), tp.detach(), weight=wc, label_smoothing=0.2))
pr("cewp none", F.cross_entropy(z2.detach(), tp.detach(), weight=wc, reduction='none'))
try: F.cross_entropy(zw, tw, weight=torch.ones(3, dtype=d))
except Exception as e: print("err", repr(str(e)))
