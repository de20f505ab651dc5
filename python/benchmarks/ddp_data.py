"""The training data of the side-by-side benchmark, from qccl's own readers
(the qccl Python module's `qccl.data`), so that PyTorch trains on the samples
`qccl train` does: Fashion-MNIST standardised as tasks.cc does, and the
recommender's generated clicks."""

import numpy as np

import qccl.data

FASHION_MNIST_DIRECTORY = "/usr/share/datasets/fashion-mnist"  # data::kFashionMnistDirectory
FASHION_MEAN, FASHION_DEVIATION = 0.2860, 0.3530


class FashionMnist:
    """Images standardised as tasks.cc does: (x/255 - mean) / deviation."""

    def __init__(self, directory, test):
        images, self.labels = qccl.data.fashion_mnist("test" if test else "train", directory)
        scaled = images.astype(np.float32) / np.float32(255)
        self.images = ((scaled - np.float32(FASHION_MEAN)) / np.float32(FASHION_DEVIATION))
        self.images = self.images.reshape(-1, 1, 28, 28)

    def __len__(self):
        return self.labels.shape[0]

    def batch(self, indices):
        return self.images[indices], self.labels[indices]


def click_data(fields, values_per_field, train_samples, test_samples, seed):
    """`qccl train --model recommender`'s generated clicks."""
    return qccl.data.ClickData(fields=fields, values_per_field=values_per_field,
                               train_samples=train_samples, test_samples=test_samples, seed=seed)
