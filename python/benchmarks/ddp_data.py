"""The training data of the side-by-side benchmark, read the way `qccl train`
reads it: Fashion-MNIST from Debian's gzipped IDX files, and the generated
clicks of src/qccl/data/click_data.h (from the qccl module when it is
importable, else from the NumPy port below, which yields the same samples)."""

import gzip
import os
import struct

import numpy as np

FASHION_MNIST_DIRECTORY = "/usr/share/datasets/fashion-mnist"  # data::kFashionMnistDirectory
FASHION_MEAN, FASHION_DEVIATION = 0.2860, 0.3530


def read_idx(path, dimensions):
    """The uint8 array of a gzipped IDX file with `dimensions` axes."""
    if not os.path.exists(path):
        raise FileNotFoundError(f"'{path}' is missing: install Debian's dataset-fashion-mnist, "
                                "or pass --data-dir with the gzipped IDX files")
    with gzip.open(path, "rb") as f:
        raw = f.read()
    zero, kind, count = struct.unpack(">HBB", raw[:4])
    if zero != 0 or kind != 0x08 or count != dimensions:
        raise ValueError(f"'{path}' is not an IDX file of {dimensions}-dimensional uint8 data")
    shape = struct.unpack(f">{count}I", raw[4:4 + 4 * count])
    values = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * count)
    if values.size != int(np.prod(shape)):
        raise ValueError(f"'{path}' holds {values.size} values, its header says {shape}")
    return values.reshape(shape)


class FashionMnist:
    """Images standardised as tasks.cc does: (x/255 - mean) / deviation."""

    def __init__(self, directory, test):
        prefix = os.path.join(directory, "t10k" if test else "train")
        images = read_idx(prefix + "-images-idx3-ubyte.gz", 3)
        self.labels = read_idx(prefix + "-labels-idx1-ubyte.gz", 1).astype(np.int64)
        if images.shape[0] != self.labels.shape[0] or images.shape[1:] != (28, 28):
            raise ValueError(f"'{directory}': expected as many labels as 28x28 images")
        scaled = images.astype(np.float32) / np.float32(255)
        self.images = ((scaled - np.float32(FASHION_MEAN)) / np.float32(FASHION_DEVIATION))
        self.images = self.images.reshape(-1, 1, 28, 28)

    def __len__(self):
        return self.labels.shape[0]

    def batch(self, indices):
        return self.images[indices], self.labels[indices]


# ---- The click generator ------------------------------------------------------
# A counter-based generator (splitmix64's finaliser over a key folded from the
# seed and the draw's coordinates, src/qccl/common/counter_rng.h): sample i's
# field f is ⌊V·u³⌋ for u the f-th draw of key (seed, i); its click is a draw
# below σ(-0.5 + Σ_f 1.2·(2·w_f[value] - 1)), w_f a hidden uniform per value.

_MASK = (1 << 64) - 1
_DATA_STREAM = 6
_BIAS, _WEIGHT_SCALE = -0.5, 1.2


def _mix64_int(x):
    x ^= x >> 30
    x = (x * 0xBF58476D1CE4E5B9) & _MASK
    x ^= x >> 27
    x = (x * 0x94D049BB133111EB) & _MASK
    return x ^ (x >> 31)


def _key(seed, step, bucket, rank):
    key = _mix64_int(seed ^ 0x6A09E667F3BCC909)
    for part in (step, bucket, rank, _DATA_STREAM):
        key = _mix64_int(key ^ part)
    return key


def _mix64(x):
    with np.errstate(over="ignore"):
        x = x ^ (x >> np.uint64(30))
        x = x * np.uint64(0xBF58476D1CE4E5B9)
        x = x ^ (x >> np.uint64(27))
        x = x * np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))


def _uniform(keys, counters):
    """CounterRng::uniform: 24 bits of the high half, in [0, 1), as float64."""
    with np.errstate(over="ignore"):
        bits = _mix64(keys + counters.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15))
    return ((bits >> np.uint64(40)).astype(np.float64)) * 2.0 ** -24


class NumpyClickData:
    """src/qccl/data/click_data.cc in NumPy, for when the qccl module is absent."""

    def __init__(self, fields, values_per_field, train_samples, test_samples, seed):
        self.fields, self.values = fields, values_per_field
        self.train_samples, self.test_samples, self.seed = train_samples, test_samples, seed

    def _sample_keys(self, indices, test, bucket):
        limit = self.test_samples if test else self.train_samples
        indices = np.asarray(indices, dtype=np.int64)
        if indices.size and (indices.min() < 0 or indices.max() >= limit):
            raise IndexError(f"click data: sample index out of range 0..{limit - 1}")
        steps = (indices + (self.train_samples if test else 0)).astype(np.uint64)
        keys = _mix64(np.uint64(_mix64_int(self.seed ^ 0x6A09E667F3BCC909)) ^ steps)
        for part in (bucket, 0, _DATA_STREAM):
            keys = _mix64(keys ^ np.uint64(part))
        return keys

    def features(self, indices, test):
        keys = self._sample_keys(indices, test, 0)[:, None]
        fields = np.arange(self.fields, dtype=np.uint64)[None, :]
        u = _uniform(keys, fields)
        return (float(self.values) * u * u * u).astype(np.int64)

    def labels(self, indices, test):
        features = self.features(indices, test)
        logit = np.full(features.shape[0], _BIAS)
        for f in range(self.fields):
            weight_key = np.uint64(_key(self.seed, _MASK, f, 1))
            logit += _WEIGHT_SCALE * (2.0 * _uniform(weight_key, features[:, f]) - 1.0)
        probability = 1.0 / (1.0 + np.exp(-logit))
        draws = _uniform(self._sample_keys(indices, test, 1), np.zeros(len(features), np.uint64))
        return (draws < probability).astype(np.float32)


def click_data(fields, values_per_field, train_samples, test_samples, seed):
    """qccl.data.ClickData when the qccl module imports, else the NumPy port."""
    try:
        import qccl.data
        return qccl.data.ClickData(fields=fields, values_per_field=values_per_field,
                                   train_samples=train_samples, test_samples=test_samples,
                                   seed=seed)
    except ImportError:
        return NumpyClickData(fields, values_per_field, train_samples, test_samples, seed)
