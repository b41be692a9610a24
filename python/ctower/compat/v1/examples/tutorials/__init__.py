"""tf.examples.tutorials."""
from ctower.compat.v1.examples.tutorials import mnist  # noqa: F401
