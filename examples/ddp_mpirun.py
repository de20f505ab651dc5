"""A complete DDP training script with qccl's hook, launched by mpirun:

    mpirun -np 2 python3 examples/ddp_mpirun.py

qccl.init() joins mpirun's ranks over MPI; DDP still needs a
torch.distributed group, initialised here with the same ranks. The hook
averages each gradient bucket on qccl's own ring (the MPI mode), where every
codec runs — here exponential dithering, whose levels are combined hop by
hop, which a torch process group cannot do."""

import os
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

import qccl


def main():
    qccl.init()  # under mpirun: MPI's ranks
    rank, size = qccl.rank(), qccl.size()
    # DDP's own group, on the same ranks; a file store every rank can reach
    # (on several hosts: a shared directory, or init_method="tcp://host:port").
    job = os.environ.get("OMPI_COMM_WORLD_JOBID", os.environ.get("PMIX_NAMESPACE", "job"))
    store = os.path.join(tempfile.gettempdir(), f"qccl-ddp-example-{job}-{os.getuid()}")
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=size)

    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 1)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    state, hook = qccl.ddp_hook(model, codec="global-qsgd:bits=8,dither=exp")
    model.register_comm_hook(state, hook)

    data = torch.Generator().manual_seed(rank)
    target = torch.arange(20, dtype=torch.float32) / 20
    for step in range(50):
        x = torch.randn(32, 20, generator=data)
        y = (x @ target).unsqueeze(1)
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        if rank == 0 and step % 10 == 0:
            print(f"step {step}: loss {loss.item():.4f}")

    # Rank 0 compares every rank's weights with its own, received point to
    # point: gloo sends and receives on this thread, so no gloo worker thread
    # still holds these tensors when the process ends (docs/pytorch.md).
    weights = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    if rank != 0:
        dist.send(weights, dst=0)
    else:
        replica, same = torch.empty_like(weights), True
        for other in range(1, size):
            dist.recv(replica, src=other)
            same = same and torch.equal(weights, replica)
        print(f"{size} ranks, {state.codec}: loss {loss.item():.4f}, "
              f"{state.compression_ratio:.1f}x fewer bytes than fp32, "
              f"replicas {'identical' if same else 'DIFFER'}")
    dist.barrier()
    dist.destroy_process_group()
    if rank == 0 and os.path.exists(store):
        os.remove(store)
    qccl.shutdown()


if __name__ == "__main__":
    main()
