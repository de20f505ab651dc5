"""qccl.data's arrays are right under the NumPy that is loaded: Fashion-MNIST's
test split has 1000 images of each class and the recommender's clicks are
the engine's. An extension built with a pybind11 that predates NumPy 2
refuses NumPy 2 with a message naming the fix rather than giving wrong
arrays; with --must-work (the pip-installed package, built with a current
pybind11) the arrays must come out under any NumPy."""

import sys

import numpy as np

import qccl
import qccl.data


def check_fashion_mnist():
    images, labels = qccl.data.fashion_mnist("test")
    assert images.shape == (10000, 28, 28) and images.dtype == np.uint8, images.shape
    assert labels.shape == (10000,) and labels.dtype == np.int64, labels.shape
    assert list(np.bincount(labels)) == [1000] * 10, np.bincount(labels)
    assert list(labels[:10]) == [9, 2, 1, 1, 6, 1, 4, 6, 5, 7], labels[:10]
    assert 0 < images.mean() < 255 and len(np.unique(images[0])) > 2


def check_click_data():
    data = qccl.data.ClickData(fields=4, values_per_field=50, train_samples=1000,
                               test_samples=100, seed=3)
    indices = np.arange(1000)
    features, labels = data.features(indices), data.labels(indices)
    assert features.shape == (1000, 4) and features.dtype == np.int64
    assert features.min() >= 0 and features.max() < 50 and len(np.unique(features[:, 0])) > 10
    assert labels.dtype == np.float32 and set(np.unique(labels)) == {0.0, 1.0}
    again = qccl.data.ClickData(fields=4, values_per_field=50, train_samples=1000,
                                test_samples=100, seed=3)
    assert np.array_equal(again.features(indices[::-1]), features[::-1])


def main():
    must_work = "--must-work" in sys.argv[1:]
    numpy_major = int(np.__version__.split(".")[0])
    try:
        check_fashion_mnist()
        check_click_data()
    except qccl.InvalidArgument as error:
        if must_work or numpy_major < 2 or "predates NumPy 2" not in str(error):
            raise
        assert "numpy<2" in str(error) and "pybind11 2.12" in str(error), error
        print(f"NumPy {np.__version__} refused as it should be: {error}")
        return
    print(f"qccl.data's arrays are right under NumPy {np.__version__}")


if __name__ == "__main__":
    main()
