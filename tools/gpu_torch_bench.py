#!/usr/bin/env python3
"""tools/gpu_torch_bench.py: PyTorch eager on the same GPU, on the rows gpu_probe --bench --tsv wrote.

Each TSV row is "key, shape, tensorgrad median ms, launches per call". For the keys below this script
builds the same computation in PyTorch (shapes from the row), times it the way gpu_probe does (3
warm-up calls, then the median of --reps calls, each followed by torch.cuda.synchronize()), and prints
both medians and the ratio tensorgrad / PyTorch (below 1: tensorgrad is faster):

  matmul_f32, matmul_f64  shape MxKxN: torch.matmul of (M, K) and (K, N)
  bmm_f32                 shape BxMxKxN: torch.matmul of (B, M, K) and (B, K, N)
  mlp_step                shape Bx784x128x10: README's MLP (Linear, ReLU, Linear), SGD lr 0.01 momentum
                          0.9, cross-entropy; one step = zero_grad, forward, loss, backward, step
  mlp_step_graph          the same step captured into a CUDA graph and replayed (torch.cuda.graph)
  sdpa_causal_fwd_DT,     shape BxHxLxE: torch.nn.functional.scaled_dot_product_attention(q, k, v,
  sdpa_causal_fwd_bwd_DT  is_causal=True) on (B, H, L, E) of dtype DT (f32 or bf16; PyTorch picks its
                          kernel), with sum().backward() for the second; a key ending in _cudacores
                          (tensorgrad's CUDA-core kernels) is compared with the same PyTorch call

Exit status: 0 after printing the table, 77 when PyTorch has no CUDA device (tools/gpu_check.sh records
SKIP), 1 on a bad TSV. Usage: gpu_torch_bench.py TSV [--reps N] [--device cpu] (cpu: to try the script
itself on a machine without a GPU; its ratios then compare a GPU, or the emulator, with a CPU).
"""
import argparse
import statistics
import sys
import time


def median_ms(fn, reps, sync):
    for _ in range(3):
        fn()
    sync()
    ms = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        sync()
        ms.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ms)


def mlp(shape, dev):
    """README's MLP for a row of shape BxINxHIDDENxOUT: model, SGD, loss, input and target."""
    import torch
    batch, d_in, hidden, d_out = shape
    model = torch.nn.Sequential(torch.nn.Linear(d_in, hidden), torch.nn.ReLU(),
                                torch.nn.Linear(hidden, d_out)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(batch, d_in, device=dev)
    y = torch.randint(0, d_out, (batch,), device=dev)
    return model, opt, torch.nn.CrossEntropyLoss(), x, y


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tsv", help="the file gpu_probe --bench --tsv wrote")
    ap.add_argument("--reps", type=int, default=10, help="timed calls per row (median)")
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda", help="where PyTorch runs")
    args = ap.parse_args()

    import torch  # imported here so that --help works without it

    if args.device == "cuda":
        if not torch.cuda.is_available():
            print(f"PyTorch {torch.__version__} sees no CUDA device: nothing to compare")
            return 77
        sync = torch.cuda.synchronize
        print(f"PyTorch {torch.__version__}, CUDA {torch.version.cuda}, {torch.cuda.get_device_name(0)}; "
              f"torch.backends.cuda.matmul.allow_tf32={torch.backends.cuda.matmul.allow_tf32}")
    else:
        sync = lambda: None  # noqa: E731
        print(f"PyTorch {torch.__version__} on the CPU (--device cpu): these ratios do not compare GPUs")
    dev = torch.device(args.device)
    torch.manual_seed(0)

    rows = []
    with open(args.tsv) as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) != 4:
                print(f"gpu_torch_bench: bad row {line!r} in {args.tsv}", file=sys.stderr)
                return 1
            key, shape, ms, launches = parts
            rows.append((key, [int(v) for v in shape.split("x")], float(ms), launches))

    print(f"\n{'row':<34} {'shape':<20} {'tensorgrad':>12} {'PyTorch':>12} {'ratio':>8}  launches (tensorgrad)")
    for key, shape, ours, launches in rows:
        if key in ("matmul_f32", "matmul_f64"):
            m, k, n = shape
            dtype = torch.float32 if key == "matmul_f32" else torch.float64
            a = torch.randn(m, k, device=dev, dtype=dtype)
            b = torch.randn(k, n, device=dev, dtype=dtype)
            fn = lambda: torch.matmul(a, b)  # noqa: E731
            what = f"torch.matmul {'f32' if dtype == torch.float32 else 'f64'}"
        elif key == "bmm_f32":
            bsz, m, k, n = shape
            a = torch.randn(bsz, m, k, device=dev)
            b = torch.randn(bsz, k, n, device=dev)
            fn = lambda: torch.matmul(a, b)  # noqa: E731
            what = "torch.matmul batched f32"
        elif key == "mlp_step":
            batch = shape[0]
            model, opt, crit, x, y = mlp(shape, dev)

            def step():
                opt.zero_grad()
                loss = crit(model(x), y)
                loss.backward()
                opt.step()

            fn = step
            what = f"MLP step, batch {batch}"
        elif key == "mlp_step_graph":
            # PyTorch's whole-step capture recipe (torch.cuda.graphs docs): warm up on a side stream,
            # gradients set to None before the capture so that backward allocates them in the pool.
            batch = shape[0]
            model, opt, crit, x, y = mlp(shape, dev)
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                for _ in range(3):
                    opt.zero_grad(set_to_none=True)
                    crit(model(x), y).backward()
                    opt.step()
            torch.cuda.current_stream().wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            opt.zero_grad(set_to_none=True)
            with torch.cuda.graph(graph):
                crit(model(x), y).backward()
                opt.step()
            fn = graph.replay
            what = f"MLP step captured, batch {batch}"
        elif key.startswith("sdpa_causal_"):
            parts = key[len("sdpa_causal_"):].replace("_cudacores", "").split("_")
            backward = parts[:2] == ["fwd", "bwd"]
            tag = parts[-1]
            if tag not in ("f32", "bf16"):
                continue
            dtype = torch.float32 if tag == "f32" else torch.bfloat16
            bsz, heads, seq, width = shape
            q, k, v = (torch.randn(bsz, heads, seq, width, device=dev, dtype=dtype, requires_grad=backward)
                       for _ in range(3))

            def attend(q=q, k=k, v=v, backward=backward):
                out = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
                if backward:
                    out.sum().backward()

            fn = attend
            what = f"torch sdpa causal {tag}{' fwd+bwd' if backward else ''}"
            if key.endswith("_cudacores"):
                what += " (ours: CUDA cores)"
        else:
            continue
        theirs = median_ms(fn, args.reps, sync)
        print(f"{what:<34} {'x'.join(map(str, shape)):<20} {ours:9.3f} ms {theirs:9.3f} ms {ours / theirs:7.2f}x  "
              f"{launches}")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
