"""Saver's `checkpoint` state file is written and read by core/files' rules
(src/core/files.c), as the command's files are: replaced whole through a
temporary renamed over it (a symbolic link is followed and stays a link),
and a FIFO or a folder at its path is an error naming it, never a hang."""
import os
import textwrap

import pytest

import ctower.compat.v1 as tf
from conftest import run_script


def _saver():
    tf.get_variable("v", [2], initializer=tf.ones_initializer())
    return tf.train.Saver()


def test_state_file_round_trip(tmp_path):
    saver = _saver()
    with tf.Session() as sess:
        saver.save(sess, str(tmp_path / "model"), global_step=3)
    assert tf.train.latest_checkpoint(str(tmp_path)) == str(tmp_path / "model-3")
    assert tf.train.latest_checkpoint(str(tmp_path / "none")) is None


def test_a_link_named_checkpoint_is_followed_and_its_target_replaced_whole(tmp_path):
    target = tmp_path / "elsewhere" / "state"
    target.parent.mkdir()
    target.write_text("old\n")
    kept = tmp_path / "kept"
    os.link(target, kept)  # a second name for the old file: a write in place would change it
    (tmp_path / "checkpoint").symlink_to(target)
    saver = _saver()
    with tf.Session() as sess:
        saver.save(sess, str(tmp_path / "model"))
    assert (tmp_path / "checkpoint").is_symlink()
    assert 'model_checkpoint_path: "model"' in target.read_text()
    assert kept.read_text() == "old\n"
    assert tf.train.latest_checkpoint(str(tmp_path)) == str(tmp_path / "model")


def test_a_fifo_named_checkpoint_is_an_error_not_a_hang(tmp_path):
    # in a process of its own: before core/files' rules, both calls blocked forever
    os.mkfifo(tmp_path / "checkpoint")
    code, out, err = run_script(textwrap.dedent("""
        import ctower.compat.v1 as tf
        folder = %r
        tf.get_variable("v", [2])
        with tf.Session() as sess:
            try:
                tf.train.Saver().save(sess, folder + "/model")
            except tf.errors.InvalidArgumentError as e:
                print("save:", e)
        try:
            tf.train.latest_checkpoint(folder)
        except tf.errors.InvalidArgumentError as e:
            print("latest:", e)
    """ % str(tmp_path)), timeout=60)
    assert code == 0, err[-2000:]
    assert "save: cannot write checkpoint state file '%s/checkpoint'" % tmp_path in out
    assert "is a FIFO, not a regular file" in out.splitlines()[0]
    assert "latest: checkpoint state file '%s/checkpoint' is a FIFO" % tmp_path in out
    assert (tmp_path / "model").exists()  # the checkpoint itself was written


def test_a_folder_named_checkpoint(tmp_path):
    (tmp_path / "checkpoint").mkdir()
    saver = _saver()
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="is a directory"):
            saver.save(sess, str(tmp_path / "model"))
    with pytest.raises(tf.errors.InvalidArgumentError, match="is a directory"):
        tf.train.latest_checkpoint(str(tmp_path))
