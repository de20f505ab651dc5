"""The settings of the side-by-side benchmark: the command line of
scripts/ddp-compare, the communication hooks it understands, and the training
settings of each model (scripts/compare-codecs' choices, shared by the DDP
runs and the `qccl train` runs). No torch here: the checks run anywhere."""

import datetime
import os
import re

from bench_cli import CheckedParser, UsageError, whole_number

DEFAULT_HOOKS = ("none fp16 powersgd:1 powersgd:2 qccl:global-qsgd:bits=8 "
                 "qccl:global-qsgd:bits=4 qccl:intsgd qccl-pg:global-qsgd:bits=8 qccl-pg:intsgd")
# qccl's hook in its MPI mode (qccl's own ring) and in its process-group mode
# (the exchange through DDP's gloo group).
QCCL_HOOKS = ("qccl", "qccl-pg")
MODELS = ("cnn", "recommender")
SEED = 1  # `qccl train`'s default seed: initialisation, data order, generated clicks

# The recommender's shape: `qccl train`'s defaults (train_config.h); the
# test set is a tenth of the training set, as in tasks.cc.
FIELDS, VALUES_PER_FIELD, CLICK_SAMPLES = 8, 100000, 200000
CLICK_TEST_SAMPLES = CLICK_SAMPLES // 10


def model_settings(model):
    """Optimizer, learning rate, momentum and batch per rank of MODEL."""
    if model == "cnn":
        return {"optimizer": "sgd", "lr": 0.05, "momentum": 0.9, "batch": 64}
    return {"optimizer": "adam", "lr": 0.003, "momentum": None, "batch": 256}


def settings_text(model):
    s = model_settings(model)
    text = f"{s['optimizer']} lr {s['lr']}"
    if s["momentum"] is not None:
        text += f" momentum {s['momentum']}"
    return text + f", batch {s['batch']}/rank"


# Hooks that give the recommender's tables sparse gradients: DDP without a
# hook then allreduces them as rows over gloo.
SPARSE_HOOKS = ("sparse", "sparse-adam")
EMBEDDING_OPTIMIZERS = ("dense", "lazy-adam", "rowwise-adagrad")


def parse_hook(spec):
    """('none'|'fp16'|'sparse'|'sparse-adam'|'powersgd'|'qccl'|'qccl-pg',
    parameter) of a --hooks entry: powersgd's parameter is its rank (a whole
    number >= 1), qccl's and qccl-pg's (the process-group mode) the codec
    spec. sparse is DDP without a hook on the recommender with sparse
    embedding gradients (gloo's sparse allreduce), densified for Adam;
    sparse-adam the same with torch.optim.SparseAdam for the tables (only
    the rows a step touched move) and Adam for the rest."""
    if spec in ("none", "fp16") + SPARSE_HOOKS:
        return spec, None
    name, colon, parameter = spec.partition(":")
    if name == "powersgd":
        if not colon or not re.fullmatch(r"[1-9][0-9]*", parameter):
            raise UsageError(f"hook '{spec}': powersgd needs its rank, e.g. powersgd:1 or powersgd:2")
        return "powersgd", int(parameter)
    if name in QCCL_HOOKS:
        if not parameter:
            raise UsageError(f"hook '{spec}': {name} needs a codec spec, e.g. "
                             f"{name}:global-qsgd:bits=8")
        return name, parameter
    raise UsageError(f"unknown hook '{spec}': use none, fp16, sparse, sparse-adam, powersgd:RANK, "
                     "qccl:CODEC or qccl-pg:CODEC")


def hook_applies(model, spec):
    """Whether DDP runs `model` with hook `spec`: sparse and sparse-adam
    need embedding tables, which only the recommender has."""
    return parse_hook(spec)[0] not in SPARSE_HOOKS or model == "recommender"


def _parser():
    p = CheckedParser(prog="scripts/ddp-compare", description=(
        "Trains the models of `qccl train` in PyTorch DistributedDataParallel with several "
        "communication hooks, and `qccl train` itself, on the emulated cluster; one table."))
    p.add_argument("--models", default="cnn recommender", help="cnn and/or recommender")
    p.add_argument("--rates", default="100mbit 1gbit", help="link rates of scripts/cluster")
    p.add_argument("--hooks", default=DEFAULT_HOOKS,
                   help="none, fp16, sparse and sparse-adam (recommender), powersgd:RANK, "
                        "qccl:CODEC (qccl's ring, MPI), qccl-pg:CODEC (qccl's codec, DDP's gloo "
                        "group) (default: %(default)s)")
    p.add_argument("--train-codecs", default=None,
                   help="codecs of the `qccl train` runs (default: fp32 and the qccl: hooks' codecs)")
    p.add_argument("--hosts", default="4", help="emulated hosts, one rank each (2..64)")
    p.add_argument("--cnn-epochs", default="1", help="epochs of the CNN")
    p.add_argument("--recommender-steps", default="30", help="steps of the recommender")
    p.add_argument("--recommender-fields", default=str(FIELDS),
                   help="the recommender's fields, one table each (default %(default)s; "
                        "26: Criteo's shape)")
    p.add_argument("--recommender-values", default=str(VALUES_PER_FIELD),
                   help="rows of each table (default %(default)s)")
    p.add_argument("--qccl-embedding-optimizer", default="dense",
                   help="`qccl train --embedding-optimizer` of the recommender's qccl runs: "
                        "dense (default), lazy-adam or rowwise-adagrad")
    p.add_argument("--repeats", default="1",
                   help="rounds of every run, interleaved; the table shows each run's median "
                        "ms/step (default 1)")
    p.add_argument("--warmup-steps", default="5",
                   help="first steps left out of ms/step; PowerSGD compresses from this step on")
    p.add_argument("--timeout", default="1800", help="seconds one run may take before it is stopped")
    p.add_argument("--output", default=None, help="results directory")
    p.add_argument("--qccl", default=None, help="the qccl program (default: build/qccl)")
    p.add_argument("--data-dir", default=None, help="Fashion-MNIST directory")
    p.add_argument("--no-qccl-train", action="store_true", help="run no `qccl train` runs")
    return p


def parse_arguments(argv, root):
    """The checked options; UsageError names the first bad one."""
    a = _parser().parse_args(argv)
    a.models = a.models.split()
    for model in a.models:
        if model not in MODELS:
            raise UsageError(f"model '{model}': use cnn or recommender")
    a.rates = a.rates.split()
    for rate in a.rates:
        if not (re.fullmatch(r"[1-9][0-9]*(kbit|mbit|gbit)", rate) or rate == "unshaped"):
            raise UsageError(f"rate '{rate}': write it like 100mbit or 1gbit, or unshaped")
    a.hooks = a.hooks.split()
    for hook in a.hooks:
        parse_hook(hook)
    if a.train_codecs is None:
        codecs = ["fp32"] + [parse_hook(h)[1] for h in a.hooks
                             if parse_hook(h)[0] in QCCL_HOOKS]
        a.train_codecs = list(dict.fromkeys(codecs))
    else:
        a.train_codecs = a.train_codecs.split()
    if a.no_qccl_train:
        a.train_codecs = []
    if not a.models or not a.rates or not (a.hooks or a.train_codecs):
        raise UsageError("nothing to run: give at least one model, rate and hook or train codec")
    a.hosts = whole_number(a.hosts, "--hosts", 2, 64)
    a.cnn_epochs = whole_number(a.cnn_epochs, "--cnn-epochs", 1)
    a.recommender_steps = whole_number(a.recommender_steps, "--recommender-steps", 1)
    a.recommender_fields = whole_number(a.recommender_fields, "--recommender-fields", 1, 64)
    a.recommender_values = whole_number(a.recommender_values, "--recommender-values", 2, 1 << 26)
    if a.qccl_embedding_optimizer not in EMBEDDING_OPTIMIZERS:
        raise UsageError(f"--qccl-embedding-optimizer '{a.qccl_embedding_optimizer}': use "
                         + ", ".join(EMBEDDING_OPTIMIZERS))
    a.warmup_steps = whole_number(a.warmup_steps, "--warmup-steps", 0)
    a.repeats = whole_number(a.repeats, "--repeats", 1, 20)
    a.timeout = whole_number(a.timeout, "--timeout", 10)
    if "recommender" in a.models and a.recommender_steps <= a.warmup_steps:
        raise UsageError(f"--recommender-steps {a.recommender_steps} leaves no timed step after "
                         f"{a.warmup_steps} warm-up steps: raise it or lower --warmup-steps")
    if a.output is None:
        stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
        a.output = os.path.join(root, "results", f"ddp-compare-{stamp}")
    a.qccl = a.qccl or os.path.join(root, "build", "qccl")
    return a
