"""Registers a --hooks entry on a DistributedDataParallel model and reports
what it sent: DDP's own allreduce, fp16 compression, PowerSGD, or qccl's hook
in its MPI mode (qccl:) or its process-group mode (qccl-pg:)."""

import torch
import torch.distributed
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks, powerSGD_hook

from ddp_options import parse_hook


class QcclMissing(RuntimeError):
    """The qccl Python module is not importable."""


def import_qccl():
    try:
        import qccl
    except ImportError as error:
        raise QcclMissing(f"the qccl Python module does not import ({error}): build it and put "
                          "its directory (build/python) on PYTHONPATH: the runs read qccl's data "
                          "through it, and the qccl: hooks are it") from error
    return qccl


def one_bucket_at_a_time(hook):
    """`hook` with each bucket finished before backward goes on.

    PowerSGD's hook starts its second and third allreduce from callbacks that
    run on gloo's worker threads, and waits for them there. With several
    buckets in flight those callbacks occupy every worker thread while the
    allreduces they wait for queue behind them, and ranks may start them in
    different orders: the recommender's three buckets hang (one bucket, the
    CNN's, does not). One bucket at a time costs PowerSGD the overlap of its
    communication with backward; it is the price of running it on gloo."""
    def serial(state, bucket):
        reduced = hook(state, bucket).wait()
        future = torch.futures.Future()
        future.set_result(reduced)
        return future
    return serial


class RegisteredHook:
    """The hook on `model`; data_bytes_sent() is None where DDP counts nothing."""

    def __init__(self, model, spec, process_group, warmup_steps, seed, optimizer):
        kind, parameter = parse_hook(spec)
        self._qccl_state = None
        if kind == "fp16":
            model.register_comm_hook(process_group, default_hooks.fp16_compress_hook)
        elif kind == "powersgd":
            # PyTorch's advice: plain allreduce for the first steps, then
            # compress. PowerSGD starts where the timed steps start (it
            # needs at least 2), so every timed step is compressed.
            state = powerSGD_hook.PowerSGDState(
                process_group=process_group, matrix_approximation_rank=parameter,
                start_powerSGD_iter=max(2, warmup_steps), random_seed=seed)
            model.register_comm_hook(state, one_bucket_at_a_time(powerSGD_hook.powerSGD_hook))
        elif kind in ("qccl", "qccl-pg"):
            qccl = import_qccl()
            # qccl-pg: the process-group mode, on DDP's group (the default one).
            group = (process_group or torch.distributed.group.WORLD) if kind == "qccl-pg" else None
            # The optimizer: codecs that adapt to its learning rate (intsgd) read it.
            self._qccl_state, hook = qccl.ddp_hook(model, codec=parameter, seed=seed,
                                                   optimizer=optimizer, process_group=group)
            model.register_comm_hook(self._qccl_state, hook)

    def data_bytes_sent(self):
        return None if self._qccl_state is None else int(self._qccl_state.bytes_sent)
