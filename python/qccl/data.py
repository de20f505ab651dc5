"""Datasets of qccl's training engine, for PyTorch scripts that train on the
same samples as `qccl train`:

- ClickData: the recommender's generated click-through data (sample i is a
  pure function of (seed, i)); features(indices) and labels(indices).
- fashion_mnist(split): (images uint8 (n, 28, 28), labels int64 (n)) from
  Debian's dataset-fashion-mnist, read by qccl's own reader.
"""

from ._native import native
from .errors import InvalidArgument

if hasattr(native, "data"):
    ClickData = native.data.ClickData
    fashion_mnist = native.data.fashion_mnist
else:  # the device check's build (QCCL_DEVICE_CHECK_ONLY) has no datasets
    def _no_datasets(*_args, **_kwargs):
        raise InvalidArgument("this qccl was built without its datasets (the device check's "
                              "build, QCCL_DEVICE_CHECK_ONLY): build it in full (README) to read them")
    ClickData = fashion_mnist = _no_datasets

__all__ = ["ClickData", "fashion_mnist"]
