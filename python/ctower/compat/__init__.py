"""TensorFlow's compatibility namespaces: `import ctower.compat.v1 as tf`."""
