"""tf.gfile and tf.io.gfile on a folder of the test's own: each function,
and the error classes TensorFlow raises."""
import os

import pytest

import ctower.compat.v1 as tf


def test_exists_isdir_makedirs_mkdir(tmp_path):
    deep = str(tmp_path / "a" / "b" / "c")
    assert not tf.gfile.Exists(deep)
    tf.gfile.MakeDirs(deep)
    tf.gfile.MakeDirs(deep)
    assert tf.gfile.Exists(deep) and tf.gfile.IsDirectory(deep)
    tf.gfile.MkDir(str(tmp_path / "m"))
    tf.gfile.MkDir(str(tmp_path / "m"))
    assert tf.io.gfile.isdir(str(tmp_path / "m"))
    with pytest.raises(tf.errors.NotFoundError, match="No such file or directory"):
        tf.gfile.MkDir(str(tmp_path / "x" / "y"))
    (tmp_path / "file").write_text("x")
    assert not tf.gfile.IsDirectory(str(tmp_path / "file"))
    with pytest.raises(tf.errors.FailedPreconditionError, match="is not a directory"):
        tf.gfile.MakeDirs(str(tmp_path / "file" / "sub"))


def test_write_then_read_text_and_binary(tmp_path):
    path = str(tmp_path / "f.txt")
    with tf.gfile.GFile(path, "w") as f:
        f.write("hello\n")
        f.write(b"world\nlast")
    with tf.gfile.Open(path) as f:
        assert f.read() == "hello\nworld\nlast"
    with tf.gfile.GFile(path) as f:
        assert list(f) == ["hello\n", "world\n", "last"]
    with tf.gfile.FastGFile(path, "r") as f:
        assert f.readline() == "hello\n"
        assert f.readlines() == ["world\n", "last"]
        assert f.tell() == 16
    with tf.io.gfile.GFile(path, "rb") as f:
        assert f.read(3) == b"hel"
        f.seek(12)
        assert f.read() == b"last"
        assert f.size() == 16


def test_append_and_flush_replace_the_file_whole(tmp_path):
    path = str(tmp_path / "log")
    f = tf.gfile.GFile(path, "w")
    f.write("abc")
    assert not os.path.exists(path)
    f.flush()
    assert open(path).read() == "abc"
    f.write("d")
    f.close()
    assert open(path).read() == "abcd"
    with tf.gfile.GFile(path, "a") as f:
        f.write("e")
    assert open(path).read() == "abcde"
    assert [n for n in os.listdir(str(tmp_path)) if n != "log"] == []


def test_file_errors(tmp_path):
    missing = str(tmp_path / "none")
    with pytest.raises(tf.errors.NotFoundError, match="none; No such file or directory"):
        tf.gfile.GFile(missing).read()
    with pytest.raises(tf.errors.NotFoundError):
        tf.gfile.GFile(str(tmp_path / "no" / "f"), "w")
    with pytest.raises(tf.errors.InvalidArgumentError, match="mode is not 'r' or 'w'"):
        tf.gfile.GFile(missing, "x")
    (tmp_path / "f").write_text("x")
    with pytest.raises(tf.errors.PermissionDeniedError, match="isn't open for writing"):
        tf.gfile.GFile(str(tmp_path / "f")).write("y")
    with pytest.raises(tf.errors.PermissionDeniedError, match="isn't open for reading"):
        tf.gfile.GFile(str(tmp_path / "g"), "w").read()
    os.mkfifo(str(tmp_path / "fifo"))
    with pytest.raises(tf.errors.InvalidArgumentError, match="not a regular file"):
        tf.gfile.GFile(str(tmp_path / "fifo")).read()


def test_list_glob_walk_stat(tmp_path):
    os.makedirs(str(tmp_path / "d" / "sub"))
    (tmp_path / "d" / "a.txt").write_text("12345")
    (tmp_path / "d" / "b.bin").write_text("")
    folder = str(tmp_path / "d")
    assert sorted(tf.gfile.ListDirectory(folder)) == ["a.txt", "b.bin", "sub"]
    assert sorted(tf.io.gfile.listdir(folder)) == ["a.txt", "b.bin", "sub"]
    assert tf.gfile.Glob(folder + "/*.txt") == [folder + "/a.txt"]
    assert tf.io.gfile.glob(folder + "/*") == [folder + "/a.txt", folder + "/b.bin",
                                               folder + "/sub"]
    assert tf.gfile.Glob(folder + "/*.none") == []
    walked = list(tf.gfile.Walk(folder))
    assert [w[0] for w in walked] == [folder, folder + "/sub"]
    assert sorted(walked[0][2]) == ["a.txt", "b.bin"]
    stat = tf.gfile.Stat(folder + "/a.txt")
    assert (stat.length, stat.is_directory, stat.mtime_nsec > 0) == (5, False, True)
    assert tf.io.gfile.stat(folder).is_directory
    with pytest.raises(tf.errors.NotFoundError, match="Could not find directory"):
        tf.gfile.ListDirectory(str(tmp_path / "none"))
    with pytest.raises(tf.errors.NotFoundError):
        tf.gfile.Stat(str(tmp_path / "none"))


def test_copy_rename_remove(tmp_path):
    src, dst = str(tmp_path / "src"), str(tmp_path / "dst")
    (tmp_path / "src").write_bytes(b"\x00\x01data")
    tf.gfile.Copy(src, dst)
    assert open(dst, "rb").read() == b"\x00\x01data"
    with pytest.raises(tf.errors.AlreadyExistsError):
        tf.gfile.Copy(src, dst)
    (tmp_path / "src").write_bytes(b"new")
    tf.io.gfile.copy(src, dst, overwrite=True)
    assert open(dst, "rb").read() == b"new"
    with pytest.raises(tf.errors.NotFoundError):
        tf.gfile.Copy(str(tmp_path / "none"), str(tmp_path / "other"))
    with pytest.raises(tf.errors.AlreadyExistsError):
        tf.gfile.Rename(src, dst)
    tf.gfile.Rename(src, str(tmp_path / "moved"))
    assert not os.path.exists(src) and os.path.exists(str(tmp_path / "moved"))
    tf.io.gfile.rename(str(tmp_path / "moved"), dst, overwrite=True)
    with pytest.raises(tf.errors.NotFoundError):
        tf.gfile.Rename(src, str(tmp_path / "x"))
    tf.gfile.Remove(dst)
    assert not os.path.exists(dst)
    with pytest.raises(tf.errors.NotFoundError):
        tf.io.gfile.remove(dst)
    os.mkdir(str(tmp_path / "folder"))
    with pytest.raises(tf.errors.FailedPreconditionError, match="Is a directory"):
        tf.gfile.Remove(str(tmp_path / "folder"))


def test_delete_recursively(tmp_path):
    os.makedirs(str(tmp_path / "t" / "u"))
    (tmp_path / "t" / "u" / "f").write_text("x")
    tf.gfile.DeleteRecursively(str(tmp_path / "t"))
    assert not os.path.exists(str(tmp_path / "t"))
    (tmp_path / "file").write_text("x")
    tf.io.gfile.rmtree(str(tmp_path / "file"))
    assert not os.path.exists(str(tmp_path / "file"))
    with pytest.raises(tf.errors.NotFoundError, match="not found"):
        tf.gfile.DeleteRecursively(str(tmp_path / "t"))
