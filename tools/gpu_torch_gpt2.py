#!/usr/bin/env python3
"""tools/gpu_torch_gpt2.py: PyTorch on the GPT-2 training step that examples/14_train_gpt2 times.

The same model (GPT-2 small: 12 pre-norm blocks of width 768, 12 heads, context 1024, vocabulary 50304,
token embeddings tied to the head, exact GELU, no dropout), the same synthetic tokens (each sequence
follows a fixed random permutation of the vocabulary), the same step (zero_grad, forward, cross-entropy,
backward, clip_grad_norm_ 1.0, AdamW lr 6e-4 betas (0.9, 0.95) weight decay 0.1), timed the same way
(the median of the steps after --warmup, each ending when the loss is read back). Four runs: eager and
torch.compile (default mode), each in float32 with TF32 off and under bfloat16 autocast. With --ours /
--ours-amp (the logs of train_gpt2 in float32 and bfloat16), each line ends with tensorgrad's median step
and the ratio tensorgrad / PyTorch (below 1: tensorgrad is faster).

Exit status: 0 after printing the table, 77 when PyTorch has no CUDA device (tools/gpu_check.sh records
SKIP). --device cpu --preset tiny tries the script itself on a machine without a GPU.
"""
import argparse
import math
import re
import statistics
import sys
import time

PRESETS = {"gpt2": (12, 12, 768, 1024, 50304), "mini": (4, 4, 256, 256, 4096), "tiny": (2, 2, 64, 32, 512)}


def ours_median(path):
    """The median step in ms that train_gpt2 printed into its log, or None."""
    if not path:
        return None
    try:
        with open(path) as f:
            m = re.search(r"^median step ([0-9.]+) ms", f.read(), re.M)
    except OSError:
        return None
    return float(m.group(1)) if m else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", choices=sorted(PRESETS), default="gpt2")
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    ap.add_argument("--no-compile", action="store_true", help="eager only")
    ap.add_argument("--ours", help="train_gpt2's float32 log")
    ap.add_argument("--ours-amp", help="train_gpt2's --amp log")
    args = ap.parse_args()

    import torch  # imported here so that --help works without it
    from torch import nn
    import torch.nn.functional as F

    if args.device == "cuda" and not torch.cuda.is_available():
        print(f"PyTorch {torch.__version__} sees no CUDA device: nothing to compare")
        return 77
    dev = torch.device(args.device)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    layers, heads, embed, context, vocab = PRESETS[args.preset]
    B, L = args.batch_size, context
    print(f"PyTorch {torch.__version__}, {torch.cuda.get_device_name(0) if args.device == 'cuda' else 'CPU'}; "
          f"{args.preset}: {layers} blocks, width {embed}, {heads} heads, batch {B} x {L}, vocabulary {vocab}; "
          f"TF32 off")

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(embed), nn.LayerNorm(embed)
            self.qkv, self.proj = nn.Linear(embed, 3 * embed), nn.Linear(embed, embed)
            self.fc, self.out = nn.Linear(embed, 4 * embed), nn.Linear(4 * embed, embed)

        def forward(self, x):
            b, l, d = x.shape
            q, k, v = self.qkv(self.ln1(x)).view(b, l, 3, heads, d // heads).permute(2, 0, 3, 1, 4)
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(y.transpose(1, 2).reshape(b, l, d))
            return x + self.out(F.gelu(self.fc(self.ln2(x))))

    class Gpt2(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok, self.pos = nn.Embedding(vocab, embed), nn.Embedding(context, embed)
            nn.init.normal_(self.tok.weight, 0.0, 0.02)
            nn.init.normal_(self.pos.weight, 0.0, 0.02)
            self.blocks = nn.Sequential(*[Block() for _ in range(layers)])
            self.ln_f = nn.LayerNorm(embed)

        def forward(self, idx):
            x = self.tok(idx) + self.pos(torch.arange(idx.shape[1], device=idx.device))
            return self.ln_f(self.blocks(x)) @ self.tok.weight.t()

    gen = torch.Generator().manual_seed(0)
    perm = torch.randperm(vocab, generator=gen)

    def batch():
        t = torch.randint(0, vocab, (B,), generator=gen)
        seq = [t]
        for _ in range(L):
            t = perm[t]
            seq.append(t)
        s = torch.stack(seq, 1)
        return s[:, :-1].to(dev), s[:, 1:].to(dev)

    def run(compiled, amp):
        torch.manual_seed(0)
        model = Gpt2().to(dev)
        opt = torch.optim.AdamW(model.parameters(), lr=6e-4, betas=(0.9, 0.95), weight_decay=0.1)
        fwd = torch.compile(model) if compiled else model
        if args.device == "cuda":
            torch.cuda.reset_peak_memory_stats()
        times, losses = [], []
        for step in range(args.steps):
            x, y = batch()
            if args.device == "cuda":
                torch.cuda.synchronize()
            t0 = time.perf_counter()
            opt.zero_grad(set_to_none=True)
            with torch.autocast(args.device, dtype=torch.bfloat16, enabled=amp):
                loss = F.cross_entropy(fwd(x).view(-1, vocab), y.reshape(-1))
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            losses.append(loss.item())
            if step >= args.warmup:
                times.append((time.perf_counter() - t0) * 1e3)
        peak = torch.cuda.max_memory_allocated() / 2**20 if args.device == "cuda" else float("nan")
        return statistics.median(times), peak, losses

    ours = {False: ours_median(args.ours), True: ours_median(args.ours_amp)}
    tokens = B * L
    print(f"\n{'run':<26} {'median ms':>10} {'tokens/s':>10} {'peak MiB':>9} {'loss':>16}  tensorgrad (ratio)")
    for compiled in ([False] if args.no_compile else [False, True]):
        for amp in (False, True):
            name = f"{'compile' if compiled else 'eager'} {'bf16 autocast' if amp else 'float32'}"
            try:
                ms, peak, losses = run(compiled, amp)
            except Exception as e:  # torch.compile may be unavailable (no Triton, no compiler): say so
                print(f"{name:<26} failed: {type(e).__name__}: {str(e).splitlines()[0][:120]}")
                continue
            mine = ours[amp]
            tail = f"{mine:.2f} ms ({mine / ms:.2f}x)" if mine else "-"
            print(f"{name:<26} {ms:10.2f} {tokens / ms * 1e3:10.0f} {peak:9.1f} {losses[0]:7.3f}->{losses[-1]:7.3f}  "
                  f"{tail}")
            sys.stdout.flush()
    print(f"(uniform guess: loss {math.log(vocab):.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
