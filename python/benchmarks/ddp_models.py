"""The models of `qccl train` (src/qccl/models/tasks.cc) in plain PyTorch:
the same layers, losses and initial distributions, so that DDP and qccl
train the same thing."""

import math

import torch
from torch import nn
from torch.nn import functional as F


def uniform_init(module, fixed_bound=None):
    """tasks.cc's initialize_module: every parameter U(±bound), bound 1/√fan_in
    of the latest weight (PyTorch's rule for linear and convolution layers),
    or `fixed_bound` for embedding tables."""
    fan_in = 1.0
    with torch.no_grad():
        for parameter in module.parameters():
            if fixed_bound is not None:
                parameter.uniform_(-fixed_bound, fixed_bound)
                continue
            if parameter.dim() >= 2:
                fan_in = parameter.numel() / parameter.shape[0]
            bound = 1.0 / math.sqrt(fan_in)
            parameter.uniform_(-bound, bound)


class Cnn(nn.Module):
    """28×28 → conv 5×5 (16) → pool → conv 5×5 (32) → pool → 512 → 128 → 10."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 5)
        self.conv2 = nn.Conv2d(16, 32, 5)
        self.fc1 = nn.Linear(512, 128)
        self.fc2 = nn.Linear(128, 10)
        uniform_init(self)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc2(F.relu(self.fc1(x.flatten(1))))

    @staticmethod
    def loss(logits, target):
        return F.cross_entropy(logits, target)

    @staticmethod
    def test_sums(logits, target):
        """(summed loss, correct predictions) of a test batch."""
        loss = F.cross_entropy(logits, target, reduction="sum").item()
        return loss, logits.argmax(1).eq(target).sum().item()


class Recommender(nn.Module):
    """One 16-wide embedding table per field (dense gradients, or sparse ones:
    the rows a batch touched), concatenated into fields·16 → 128 → 64 → 1;
    the logit of a click."""

    DIM = 16

    def __init__(self, fields, values_per_field, sparse=False):
        super().__init__()
        self.tables = nn.ModuleList(nn.Embedding(values_per_field, self.DIM, sparse=sparse)
                                    for _ in range(fields))
        self.fc1 = nn.Linear(fields * self.DIM, 128)
        self.fc2 = nn.Linear(128, 64)
        self.fc3 = nn.Linear(64, 1)
        for table in self.tables:
            uniform_init(table, fixed_bound=0.05)
        for layer in (self.fc1, self.fc2, self.fc3):
            uniform_init(layer)

    def forward(self, features):
        embedded = [table(features[:, f]) for f, table in enumerate(self.tables)]
        x = F.relu(self.fc1(torch.cat(embedded, 1)))
        return self.fc3(F.relu(self.fc2(x))).squeeze(1)

    @staticmethod
    def loss(logits, target):
        return F.binary_cross_entropy_with_logits(logits, target)

    @staticmethod
    def test_sums(logits, target):
        loss = F.binary_cross_entropy_with_logits(logits, target, reduction="sum").item()
        return loss, logits.gt(0).float().eq(target).sum().item()
