"""The device check's DDP rows (scripts/device-check, docs/gpu.md): the CNN
of `qccl train` under PyTorch DDP, several processes sharing one GPU
(torchrun, gloo), trained for a number of SGD steps on generated images,
once with DDP's own allreduce, once per dtype with qccl's hook, which
averages the CUDA buckets with the codec's device step, and once in fp32
per further codec (IntSGD, whose optimizer feedback the hook then sums on
the device; min-max, whose ranks' encodings are gathered and decoded on
the device). Rank 0 prints one
row per run. Exit status 1 when a qccl run's replicas differ, or its loss
does not fall as DDP's does.

    torchrun --standalone --nproc_per_node 4 device_ddp_check.py
    torchrun ... device_ddp_check.py --device cpu   # the same on CPU tensors, through the
                                                    # device step's host reference (no GPU)
"""

import argparse
import statistics
import sys
import time

import torch
import torch.distributed as dist
from torch.nn import functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

import qccl
from ddp_models import Cnn

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
WARMUP = 5  # steps left out of the step time


def options(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--codec", default="global-qsgd:bits=8")
    parser.add_argument("--dtypes", default="fp32,bf16,fp16",
                        help="the dtypes of qccl's runs (DDP's own runs in fp32)")
    parser.add_argument("--more-codecs", default="intsgd;minmax",
                        help="semicolon-separated codecs run once more each, in fp32 ('' for none)")
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--batch", type=int, default=32, help="images per process and step")
    return parser.parse_args(argv)


def images(rank, step, batch, device, dtype):
    """Ten fixed 28×28 class templates plus unit noise: a task a CNN learns
    in tens of steps. The same images for every run; each rank its own."""
    templates = torch.randn(10, 1, 28, 28, generator=torch.Generator().manual_seed(7))
    g = torch.Generator().manual_seed(100_003 * step + rank)
    labels = torch.randint(0, 10, (batch,), generator=g)
    x = templates[labels] + torch.randn(batch, 1, 28, 28, generator=g)
    return x.to(device=device, dtype=dtype), labels.to(device)


def synchronize(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def train(run, dtype, args, device):
    """One run: (losses per step on this rank, ms per step, this rank's
    parameters as fp32 on the CPU, the hook state or None)."""
    torch.manual_seed(1)
    model = Cnn().to(device=device, dtype=dtype)
    ddp = DDP(model, device_ids=[device.index] if device.type == "cuda" else None)
    state = None
    sgd = torch.optim.SGD(ddp.parameters(), lr=0.02, momentum=0.9)
    if run != "ddp":
        state, hook = qccl.ddp_hook(ddp, codec=run, optimizer=sgd)  # intsgd adapts to its steps
        if device.type == "cpu":
            state._set_host_buckets("host-reference")  # pylint: disable=protected-access
        ddp.register_comm_hook(state, hook)
    losses, times = [], []
    for step in range(args.steps):
        x, y = images(dist.get_rank(), step, args.batch, device, dtype)
        synchronize(device)
        started = time.perf_counter()
        sgd.zero_grad()
        loss = F.cross_entropy(ddp(x).float(), y)
        loss.backward()
        sgd.step()
        synchronize(device)
        times.append(1e3 * (time.perf_counter() - started))
        losses.append(loss.item())
    flat = torch.cat([p.detach().float().reshape(-1) for p in model.parameters()]).cpu()
    return losses, statistics.median(times[WARMUP:] or times), flat, state


def replicas_identical(flat):
    parts = [torch.empty_like(flat) for _ in range(dist.get_world_size())]
    dist.all_gather(parts, flat)
    return all(torch.equal(flat, theirs) for theirs in parts)


def mean_over_ranks(value):
    t = torch.tensor([value], dtype=torch.float64)
    dist.all_reduce(t)
    return t.item() / dist.get_world_size()


def window(losses):
    """Mean loss over ranks of the first and last ten steps."""
    k = min(10, len(losses))
    return mean_over_ranks(sum(losses[:k]) / k), mean_over_ranks(sum(losses[-k:]) / k)


def main(argv):
    args = options(argv)
    qccl.init()  # torchrun: the process-group mode, gloo
    if args.device == "cuda":
        if not torch.cuda.is_available():
            print("device_ddp_check: no CUDA device", file=sys.stderr)
            return 2
        device = torch.device("cuda", 0)  # every process shares the one GPU
        torch.cuda.set_device(device)
        where = torch.cuda.get_device_name(device)
    else:
        device, where = torch.device("cpu"), "CPU (the device step's host reference)"
    runs = [("ddp", "fp32")] + [(args.codec, d) for d in args.dtypes.split(",")]
    runs += [(codec, "fp32") for codec in args.more_codecs.split(";") if codec]
    rows, failures = [], []
    ddp_last = None
    for run, dtype_name in runs:
        losses, ms, flat, state = train(run, DTYPES[dtype_name], args, device)
        first, last = window(losses)
        identical = replicas_identical(flat)
        ms = mean_over_ranks(ms)
        sent = state.bytes_sent / args.steps if state is not None else None
        if run == "ddp":
            ddp_last = last
        elif not identical:
            failures.append(f"{run} {dtype_name}: the replicas differ")
        elif not (last < 0.5 * first and last <= 1.5 * ddp_last + 0.05):
            failures.append(f"{run} {dtype_name}: loss {first:.3f} → {last:.3f}, DDP's → "
                            f"{ddp_last:.3f}")
        rows.append((("DDP allreduce" if run == "ddp" else "qccl " + run), dtype_name,
                     f"{first:.3f} → {last:.3f}", f"{ms:.2f}", "yes" if identical else "NO",
                     "" if sent is None else f"{sent / 1024:.1f}"))
    if dist.get_rank() == 0:
        print(f"DDP CNN on {where}: {dist.get_world_size()} processes (torchrun, gloo), "
              f"{args.steps} SGD steps, {args.batch} images per process and step")
        header = ("run", "dtype", "loss first 10 → last 10", "ms/step", "replicas identical",
                  "KiB sent/step")
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        for row in rows:
            print("| " + " | ".join(row) + " |")
        for failure in failures:
            print("FAILED: " + failure)
    qccl.shutdown()
    dist.destroy_process_group()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
