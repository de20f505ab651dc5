"""One rank of a PyTorch DDP run of scripts/ddp-compare, started by mpirun:
trains a model of `qccl train` with one communication hook and writes rank
0's measurements (ms/step, test accuracy, bytes) as JSON.

    mpirun -np 4 /usr/bin/python3 ddp_worker.py --model recommender --hook fp16 \
        --init-file /tmp/x/store --output run.json"""

import argparse
import datetime
import json
import os
import statistics
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

import ddp_data
import ddp_options
from ddp_hooks import RegisteredHook
from ddp_models import Cnn, Recommender

EVAL_BATCH = 500  # test samples per forward pass, as the qccl trainer


def parse_arguments(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", choices=ddp_options.MODELS, required=True)
    p.add_argument("--hook", required=True,
                   help="none, fp16, sparse or sparse-adam (recommender), powersgd:RANK, "
                        "qccl:CODEC or qccl-pg:CODEC")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--max-steps", type=int, default=0, help="steps per epoch at most; 0: all")
    p.add_argument("--warmup-steps", type=int, default=5)
    p.add_argument("--seed", type=int, default=ddp_options.SEED)
    p.add_argument("--fields", type=int, default=ddp_options.FIELDS, help="the recommender's fields")
    p.add_argument("--values-per-field", type=int, default=ddp_options.VALUES_PER_FIELD,
                   help="rows of each of the recommender's tables")
    p.add_argument("--init-file", required=True, help="a file all ranks see (torch's FileStore)")
    p.add_argument("--output", required=True, help="rank 0's JSON")
    p.add_argument("--ifname", default=None, help="the network interface gloo uses (eth0)")
    p.add_argument("--data-dir", default=ddp_data.FASHION_MNIST_DIRECTORY)
    p.add_argument("--timeout", type=int, default=600, help="seconds any collective may wait")
    return p.parse_args(argv)


class Task:
    """A model with its data: train batches by index, test sums by shard."""

    def __init__(self, model, data_dir, sparse_tables=False, fields=ddp_options.FIELDS,
                 values_per_field=ddp_options.VALUES_PER_FIELD):
        if sparse_tables and model != "recommender":
            raise ValueError(f"sparse embedding gradients: the {model} has no embedding tables")
        if model == "cnn":
            self.net = Cnn()
            self.train_set = ddp_data.FashionMnist(data_dir, test=False)
            self.test_set = ddp_data.FashionMnist(data_dir, test=True)
            self.train_size, self.test_size = len(self.train_set), len(self.test_set)
        else:
            o = ddp_options
            self.net = Recommender(fields, values_per_field, sparse=sparse_tables)
            self.clicks = ddp_data.click_data(fields, values_per_field, o.CLICK_SAMPLES,
                                              o.CLICK_TEST_SAMPLES, ddp_options.SEED)
            self.train_size, self.test_size = o.CLICK_SAMPLES, o.CLICK_TEST_SAMPLES
        self.model = model

    def batch(self, indices, test):
        indices = np.asarray(indices, dtype=np.int64)
        if self.model == "cnn":
            x, y = (self.test_set if test else self.train_set).batch(indices)
            return torch.from_numpy(np.ascontiguousarray(x)), torch.from_numpy(y)
        x = self.clicks.features(indices, test)
        y = self.clicks.labels(indices, test)
        return torch.from_numpy(np.asarray(x, np.int64)), torch.from_numpy(np.asarray(y, np.float32))


def make_optimizers(model, net, hook_kind):
    """The run's optimizers: the model's one over every parameter, or for
    sparse-adam torch.optim.SparseAdam over the embedding tables (lazy Adam:
    only the rows a step touched move, their moments alone change) and Adam
    over the rest, both at the model's rate with PyTorch's default betas and
    eps — `qccl train --embedding-optimizer lazy-adam`'s semantics."""
    s = ddp_options.model_settings(model)
    if s["optimizer"] == "sgd":
        return [torch.optim.SGD(net.parameters(), lr=s["lr"], momentum=s["momentum"])]
    if hook_kind != "sparse-adam":
        return [torch.optim.Adam(net.parameters(), lr=s["lr"])]
    tables = [table.weight for table in net.tables]
    table_ids = {id(t) for t in tables}
    rest = [p for p in net.parameters() if id(p) not in table_ids]
    return [torch.optim.Adam(rest, lr=s["lr"]), torch.optim.SparseAdam(tables, lr=s["lr"])]


def densify_sparse_gradients(net):
    """The tables' averaged sparse gradients as dense ones, for Adam (which
    refuses sparse gradients), as `qccl train` hands its dense optimizers a
    dense gradient of the rows it exchanged."""
    for parameter in net.parameters():
        if parameter.grad is not None and parameter.grad.is_sparse:
            parameter.grad = parameter.grad.to_dense()


def wire_tx_bytes(ifname):
    """Bytes this network namespace's `ifname` has sent (headers included)."""
    if not ifname:
        return None
    with open("/proc/self/net/dev") as f:
        for line in f:
            name, _, counters = line.partition(":")
            if name.strip() == ifname:
                return int(counters.split()[8])
    return None


def evaluate(task, ddp_model, rank, size):
    """Summed test loss and accuracy over every rank's shard (i ≡ rank mod size)."""
    sums = torch.zeros(3, dtype=torch.float64)
    shard = np.arange(rank, task.test_size, size)
    with torch.no_grad():
        for start in range(0, len(shard), EVAL_BATCH):
            x, y = task.batch(shard[start:start + EVAL_BATCH], test=True)
            loss, correct = task.net.test_sums(ddp_model.module(x), y)
            sums += torch.tensor([loss, correct, len(y)], dtype=torch.float64)
    dist.all_reduce(sums)
    return sums[0].item() / sums[2].item(), sums[1].item() / sums[2].item()


def train(args, rank, size):
    """Rank 0's measurements of the whole run."""
    torch.manual_seed(args.seed)
    hook_kind = ddp_options.parse_hook(args.hook)[0]
    sparse = hook_kind in ddp_options.SPARSE_HOOKS
    task = Task(args.model, args.data_dir, sparse_tables=sparse, fields=args.fields,
                values_per_field=args.values_per_field)
    ddp_model = DistributedDataParallel(task.net)
    optimizers = make_optimizers(args.model, task.net, hook_kind)
    hook = RegisteredHook(ddp_model, args.hook, None, args.warmup_steps, args.seed, optimizers[0])
    batch = ddp_options.model_settings(args.model)["batch"]
    steps_per_epoch = task.train_size // (batch * size)
    if args.max_steps > 0:
        steps_per_epoch = min(steps_per_epoch, args.max_steps)
    step_seconds, timed_tx, timed_data = [], 0, 0
    for epoch in range(args.epochs):
        # One permutation of (seed, epoch) on every rank; step s takes the
        # size·batch samples at s·size·batch, rank r the batch at offset r·batch.
        order = np.random.default_rng([args.seed, epoch]).permutation(task.train_size)
        for s in range(steps_per_epoch):
            timed = len(step_seconds) >= args.warmup_steps
            tx_before, data_before = wire_tx_bytes(args.ifname), hook.data_bytes_sent()
            start = time.perf_counter()
            first = s * size * batch + rank * batch
            x, y = task.batch(order[first:first + batch], test=False)
            # Sparse gradients must arrive fresh each step (DDP refuses one
            # accumulated into a dense tensor), hence set_to_none.
            for optimizer in optimizers:
                optimizer.zero_grad(set_to_none=sparse)
            task.net.loss(ddp_model(x), y).backward()
            if hook_kind == "sparse":
                densify_sparse_gradients(task.net)
            for optimizer in optimizers:
                optimizer.step()
            step_seconds.append(time.perf_counter() - start)
            if timed and tx_before is not None:
                timed_tx += wire_tx_bytes(args.ifname) - tx_before
            if timed and data_before is not None:
                timed_data += hook.data_bytes_sent() - data_before
    test_loss, accuracy = evaluate(task, ddp_model, rank, size)
    timed_steps = step_seconds[args.warmup_steps:]
    per_step = (lambda total: total / len(timed_steps) if timed_steps else None)
    return {
        "system": "PyTorch DDP", "model": args.model, "method": args.hook, "ranks": size,
        "steps": len(step_seconds), "warmup_steps": args.warmup_steps,
        "ms_per_step": 1000 * statistics.median(timed_steps) if timed_steps else None,
        "step_seconds": step_seconds, "accuracy": accuracy, "test_loss": test_loss,
        "wire_tx_bytes_per_step": per_step(timed_tx) if args.ifname else None,
        "data_bytes_per_step": per_step(timed_data) if hook.data_bytes_sent() is not None else None,
        "settings": ddp_options.settings_text(args.model), "torch": torch.__version__,
    }


def main(argv):
    args = parse_arguments(argv)
    rank = int(os.environ.get("OMPI_COMM_WORLD_RANK", "0"))
    size = int(os.environ.get("OMPI_COMM_WORLD_SIZE", "1"))
    torch.set_num_threads(1)  # 4 ranks on 2 cores, as `qccl train --threads 1`
    if args.ifname:
        os.environ["GLOO_SOCKET_IFNAME"] = args.ifname
    dist.init_process_group("gloo", init_method="file://" + args.init_file, rank=rank,
                            world_size=size, timeout=datetime.timedelta(seconds=args.timeout))
    if ddp_options.parse_hook(args.hook)[0] in ddp_options.QCCL_HOOKS:
        from ddp_hooks import import_qccl
        import_qccl().init()
    result = train(args, rank, size)
    if rank == 0:
        with open(args.output + ".tmp", "w") as f:
            json.dump(result, f, indent=2)
        os.replace(args.output + ".tmp", args.output)
    dist.destroy_process_group()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
