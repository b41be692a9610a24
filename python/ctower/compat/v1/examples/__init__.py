"""tf.examples: what TensorFlow 1.x's tutorials import from it."""
from ctower.compat.v1.examples import tutorials  # noqa: F401
