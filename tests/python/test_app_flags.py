"""tf.app.run and tf.flags: a program written as TensorFlow 1.x's MNIST
tutorials are (flags defined at import, tf.app.run(), main reading FLAGS),
run in a process of its own with a command line."""
import os
import subprocess
import sys

import pytest

from ctower.compat.v1 import _flags

PROGRAM = '''
import ctower.compat.v1 as tf

flags = tf.app.flags
flags.DEFINE_string("data_dir", "/tmp/data", "Directory for storing input data")
flags.DEFINE_integer("max_steps", 1000, "Number of steps to run trainer.", lower_bound=1)
flags.DEFINE_float("learning_rate", 0.01, "Initial learning rate.")
flags.DEFINE_boolean("fake_data", False, "If true, uses fake data for unit testing.")
tf.flags.DEFINE_list("hidden", ["128", "32"], "Units of each hidden layer.")
tf.flags.DEFINE_enum("mode", "train", ["train", "eval"], "What to do.")
FLAGS = flags.FLAGS


def main(argv):
    print(repr(argv[1:]))
    print(FLAGS.data_dir, FLAGS.max_steps, FLAGS.learning_rate, FLAGS.fake_data, FLAGS.hidden,
          FLAGS.mode)
    return 7 if FLAGS.fake_data else 0


if __name__ == "__main__":
    tf.app.run()
'''


def run_program(tmp_path, *args):
    path = tmp_path / "mnist_with_flags.py"
    path.write_text(PROGRAM)
    done = subprocess.run([sys.executable, str(path)] + list(args), capture_output=True,
                          text=True, timeout=120, env=dict(os.environ))
    return done.returncode, done.stdout.splitlines(), done.stderr


def test_defaults_without_flags(tmp_path):
    code, out, err = run_program(tmp_path)
    assert (code, out) == (0, ["[]", "/tmp/data 1000 0.01 False ['128', '32'] train"]), err


def test_each_form_of_flag_and_the_exit_status_of_main(tmp_path):
    code, out, err = run_program(tmp_path, "--data_dir=/d", "--max_steps", "5", "-learning_rate=0.5",
                                 "--fake_data", "--hidden=64,8", "--mode", "eval", "input.txt")
    assert code == 7, err
    assert out == ["['input.txt']", "/d 5 0.5 True ['64', '8'] eval"]


def test_unknown_flags_and_what_follows_two_dashes_reach_main(tmp_path):
    code, out, err = run_program(tmp_path, "--nofake_data", "--other=3", "pos", "--",
                                 "--max_steps=2")
    assert code == 0, err
    assert out == ["['--other=3', 'pos', '--', '--max_steps=2']",
                   "/tmp/data 1000 0.01 False ['128', '32'] train"]


@pytest.mark.parametrize("arg, message", [
    ("--max_steps=abc", "flag --max_steps=abc: invalid literal for int()"),
    ("--max_steps=0", "flag --max_steps=0: 0 is not a positive integer"),
    ("--mode=test", "flag --mode=test: value should be one of <train|eval>"),
    ("--fake_data=maybe", "flag --fake_data=maybe: Non-boolean argument to boolean flag")])
def test_a_bad_value_ends_the_program_saying_which(tmp_path, arg, message):
    code, out, err = run_program(tmp_path, arg)
    assert code == 1 and out == []
    assert "FATAL Flags parsing error: " + message in err and "Traceback" not in err


def test_help_lists_the_flags_and_exits_1(tmp_path):
    code, out, err = run_program(tmp_path, "--help")
    assert code == 1, err
    assert "  --max_steps: Number of steps to run trainer." in out
    assert "  --[no]fake_data: If true, uses fake data for unit testing." in out
    assert "  --mode: <train|eval>: What to do." in out


def test_explicit_parsing_and_reading_before_it():
    values = _flags.FlagValues()
    _flags.DEFINE_integer("n", 1, "n", flag_values=values)
    _flags.DEFINE_bool("b", True, "b", flag_values=values)
    assert values(["prog", "--n=3", "--nob", "rest"]) == ["prog", "rest"]
    assert (values.n, values.b, values.is_parsed()) == (3, False, True)
    with pytest.raises(_flags.UnrecognizedFlagError, match="Unknown command line flag 'zz'"):
        values(["prog", "--zz"])
    assert values(["prog", "--zz", "--n", "4"], known_only=True) == ["prog", "--zz"]
    assert values.n == 4
    with pytest.raises(_flags.DuplicateFlagError, match="The flag 'n' is defined twice"):
        _flags.DEFINE_integer("n", 2, "again", flag_values=values)
    with pytest.raises(AttributeError):
        values.not_a_flag
    values.n = 9
    assert values.n == 9


def test_reading_a_flag_before_parsing_parses_sys_argv(monkeypatch):
    values = _flags.FlagValues()
    _flags.DEFINE_string("name", "x", "name", flag_values=values)
    monkeypatch.setattr(sys, "argv", ["prog", "--name=from_argv"])
    assert values.name == "from_argv"
    values.unparse_flags()
    values.mark_as_parsed()
    assert values.name == "x"


def test_tensorflow_1_keyword_names():
    values = _flags.FlagValues()
    _flags.DEFINE_string(flag_name="dir", default_value="/d", docstring="a folder",
                         flag_values=values)
    values.mark_as_parsed()
    assert values.dir == "/d" and values["dir"].help == "a folder"
