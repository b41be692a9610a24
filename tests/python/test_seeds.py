"""Every Python code block of the documents ctower was built from (the
TensorFlow guides on devices, placement and GPU memory), as written there
with only the import line changed, prints what TensorFlow prints: the
values, and the placement log in TensorFlow's format. These machines have
no GPU: /gpu:2 without soft placement is TensorFlow's InvalidArgumentError,
with soft placement the ops run on the CPU."""
import re

import pytest

from conftest import run_script

IMPORT = "import ctower.compat.v1 as tf\n"
CPU0 = "/job:localhost/replica:0/task:0/device:CPU:0"

# "Manual device placement", then `print(sess.run(c))` as the text goes on
MANUAL_PLACEMENT = """\
with tf.device('/cpu:0'): # keep these on cpu
  a = tf.constant([1.0, 2.0, 3.0, 4.0], shape=[2, 2], name='a')
  b = tf.constant([1.0, 2.0, 3.0, 4.0], shape=[2, 2], name='b')
c = tf.matmul(a, b)

# Create a session with log_device_placement set to True.
sess = tf.Session(config=tf.ConfigProto(log_device_placement=True))
"""

# "Using multiple GPUs on computing devices"
MULTI_GPU = """\
c = []
for d in ['/gpu:2', '/gpu:3']:
  # Choose gpu:2 and gpu:3 for execution
  with tf.device(d):
    a = tf.constant([1.0, 2.0, 3.0, 4.0], shape=[2, 2])
    b = tf.constant([1.0, 2.0, 3.0, 4.0], shape=[2, 2])
    c.append(tf.matmul(a, b))
with tf.device('/cpu:0'):
  sum = tf.add_n(c)

sess = tf.Session(config=tf.ConfigProto(log_device_placement=True))

print(sess.run(sum))
"""

# "GPU memory growth", both blocks; and the other document's
MEMORY_FRACTION = """\
config = tf.ConfigProto()
config.gpu_options.per_process_gpu_memory_fraction = 0.4
session = tf.Session(config=config, ...)
"""
ALLOW_GROWTH = """\
config = tf.ConfigProto()
config.gpu_options.allow_growth = True
session = tf.Session(config=config, ...)
"""
MEMORY_FRACTION_003 = """\
config = tf.ConfigProto()
config.gpu_options.per_process_gpu_memory_fraction = 0.4
session = tf.Session(config=config)
"""
SOFT_PLACEMENT = """\
sess = tf.Session(config=tf.ConfigProto(
      allow_soft_placement=True, log_device_placement=True))
"""

# TensorFlow's printed text: NumPy's print of the product, and the log's lines
MATMUL_VALUE = "[[ 7. 10.]\n [15. 22.]]\n"
SUM_VALUE = "[[14. 20.]\n [30. 44.]]\n"


def log_lines(stdout):
    return [l for l in stdout.splitlines() if re.match(r"^\S+: \(\w+\): /job:", l)]


def test_manual_placement_prints_log_and_product():
    rc, out, err = run_script(IMPORT + MANUAL_PLACEMENT + "print(sess.run(c))\n")
    assert rc == 0, err
    assert out.startswith("Device mapping:\n%s -> device: 0, name: cpu" % CPU0)
    assert log_lines(out) == ["a: (Const): " + CPU0, "b: (Const): " + CPU0,
                              "MatMul: (MatMul): " + CPU0]
    assert out.endswith(MATMUL_VALUE)


def test_gpu_2_without_soft_placement_is_invalid_argument():
    rc, out, err = run_script(IMPORT + MULTI_GPU)
    assert rc != 0
    assert ("ctower.errors.InvalidArgumentError: Cannot assign a device for operation 'Const': "
            "Operation was explicitly assigned to /device:GPU:2 but available devices are "
            "[ %s ]. Make sure the device specification refers to a valid device." % CPU0) in err
    assert SUM_VALUE not in out


def test_gpu_2_with_soft_placement_runs_on_the_cpu():
    script = MULTI_GPU.replace("tf.ConfigProto(log_device_placement=True)",
                               "tf.ConfigProto(allow_soft_placement=True, "
                               "log_device_placement=True)")
    rc, out, err = run_script(IMPORT + script)
    assert rc == 0, err
    placed = log_lines(out)
    assert [l.split(": ")[0] for l in placed] == ["Const", "Const_1", "MatMul", "Const_2",
                                                 "Const_3", "MatMul_1", "AddN"]
    assert all(l.endswith(CPU0) for l in placed)
    assert "MatMul: requested /device:GPU:2, which does not exist; placed on %s by " \
           "allow_soft_placement" % CPU0 in out
    assert out.endswith(SUM_VALUE)


def test_two_cpu_devices():
    script = MULTI_GPU.replace("tf.ConfigProto(log_device_placement=True)",
                               "tf.ConfigProto(allow_soft_placement=True, "
                               "log_device_placement=True, device_count={'CPU': 2})")
    script = script.replace("'/cpu:0'", "'/cpu:1'")
    rc, out, err = run_script(IMPORT + script)
    assert rc == 0, err
    cpu1 = CPU0[:-1] + "1"
    assert "%s -> device: 1, name: cpu" % cpu1 in out
    assert "AddN: (AddN): " + cpu1 in log_lines(out)
    assert out.endswith(SUM_VALUE)


def test_soft_placement_session():
    rc, out, err = run_script(IMPORT + SOFT_PLACEMENT + "print(type(sess).__name__)\n")
    assert rc == 0, err
    assert out.startswith("Device mapping:\n") and out.endswith("Session\n")


def test_memory_options_of_the_guides():
    # The guide's `tf.Session(config=config, ...)` puts a positional argument
    # after a keyword one: no Python compiles it, with TensorFlow or without.
    for block in (MEMORY_FRACTION, ALLOW_GROWTH):
        with pytest.raises(SyntaxError):
            compile(IMPORT + block, "<guide>", "exec")
        rc, out, err = run_script(IMPORT + block.replace(", ...)", ")") +
                                  "print(session.run(tf.constant(3.0)))\n")
        assert rc == 0, err
        assert out == "3.0\n"
    rc, out, err = run_script(IMPORT + MEMORY_FRACTION_003 + "print(config.gpu_options)\n")
    assert rc == 0, err
    assert "per_process_gpu_memory_fraction=0.4" in out


def test_interactive_block():
    # the `>>> import tensorflow as tf`, `>>> sess = tf.Session()` of the guide
    rc, out, err = run_script(IMPORT + "sess = tf.Session()\nprint(sess.run(tf.add(1.0, 2.0)))\n")
    assert rc == 0, err
    assert out == "3.0\n"
