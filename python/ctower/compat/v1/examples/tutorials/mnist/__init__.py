"""tf.examples.tutorials.mnist: input_data, as the MNIST tutorials import it."""
from ctower.compat.v1.examples.tutorials.mnist import input_data  # noqa: F401
