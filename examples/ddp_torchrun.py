"""A complete DDP training script with qccl's hook, launched by torchrun:

    torchrun --nproc_per_node 2 examples/ddp_torchrun.py

qccl.init() joins torchrun's ranks (torch.distributed with gloo, from
torchrun's environment); the hook encodes each gradient bucket with 8-bit
Global-QSGD and the bucket's integers are summed by the process group's own
allreduce. The model is bf16 where the process group can broadcast bf16
(PyTorch 2), fp32 otherwise; the replicas end bitwise identical."""

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

import qccl


def main():
    qccl.init()  # under torchrun: torch.distributed's default group, gloo
    rank, size = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)  # the same initial model everywhere (DDP also broadcasts it)
    dtype = torch.bfloat16 if int(torch.__version__.split(".")[0]) >= 2 else torch.float32
    model = DDP(nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 1)).to(dtype))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    state, hook = qccl.ddp_hook(model, codec="global-qsgd:bits=8")
    model.register_comm_hook(state, hook)

    data = torch.Generator().manual_seed(rank)  # each rank its own samples
    target = torch.arange(20, dtype=torch.float32) / 20
    for step in range(50):
        x = torch.randn(32, 20, generator=data)
        y = (x @ target).unsqueeze(1)
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(x.to(dtype)).float(), y)
        loss.backward()
        optimizer.step()
        if rank == 0 and step % 10 == 0:
            print(f"step {step}: loss {loss.item():.4f}")

    # Rank 0 compares every rank's weights with its own, received point to
    # point: gloo sends and receives on this thread, so no gloo worker thread
    # still holds these tensors when the process ends (docs/pytorch.md).
    weights = torch.cat([p.detach().float().reshape(-1) for p in model.parameters()])
    if rank != 0:
        dist.send(weights, dst=0)
    else:
        replica, same = torch.empty_like(weights), True
        for other in range(1, size):
            dist.recv(replica, src=other)
            same = same and torch.equal(weights, replica)
        print(f"{size} ranks, {dtype}, {state.codec}: loss {loss.item():.4f}, "
              f"{state.compression_ratio:.1f}x fewer bytes than fp32, "
              f"replicas {'identical' if same else 'DIFFER'}")
    qccl.shutdown()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
