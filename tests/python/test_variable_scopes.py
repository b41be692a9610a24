"""variable_scope's default names are made unique as TensorFlow's variable
scope store makes them: counted per variable scope, the counts under a
scope forgotten when it is left, so a model function built twice under
one reused scope finds its variables again."""
import pytest

import ctower.compat.v1 as tf


def _scope(default_name="part"):
    with tf.variable_scope(None, default_name=default_name) as scope:
        tf.get_variable("w", [2])
    return scope.name


def test_default_names_count_up_at_the_top():
    assert [_scope(), _scope(), _scope()] == ["part", "part_1", "part_2"]


def test_name_scopes_do_not_decide_a_default_name():
    with tf.name_scope("a"):
        first = _scope()
    with tf.name_scope("b"):
        second = _scope()
    assert (first, second) == ("part", "part_1")  # not "Variable part/w already exists"


def test_a_reused_model_scope_finds_its_default_named_scopes_again():
    def model():
        with tf.variable_scope("model", reuse=tf.AUTO_REUSE):
            return [_scope(), _scope()]
    assert model() == ["model/part", "model/part_1"]
    assert model() == ["model/part", "model/part_1"]
    assert len(tf.global_variables()) == 2


def test_a_reopened_scope_object_keeps_the_counts_it_had():
    with tf.variable_scope("outer") as outer:
        assert _scope() == "outer/part"
    with tf.variable_scope(outer, reuse=True):
        assert _scope() == "outer/part"


def test_a_name_that_is_not_a_string_is_refused_and_leaves_the_counts_alone():
    with pytest.raises(TypeError, match="must be a string or VariableScope"):
        with tf.variable_scope(5):
            pass
    with tf.variable_scope("after"):
        assert _scope() == "after/part"
