"""Datasets of qccl's training engine, for PyTorch scripts that train on the
same samples as `qccl train`:

- ClickData: the recommender's generated click-through data (sample i is a
  pure function of (seed, i)); features(indices) and labels(indices).
- fashion_mnist(split): (images uint8 (n, 28, 28), labels int64 (n)) from
  Debian's dataset-fashion-mnist, read by qccl's own reader.
"""

from ._native import native

ClickData = native.data.ClickData
fashion_mnist = native.data.fashion_mnist

__all__ = ["ClickData", "fashion_mnist"]
