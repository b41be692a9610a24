"""tf.gfile (TensorFlow 1.x's names) and tf.io.gfile (TensorFlow 2's), on
the local file system only (no gs://, hdfs:// or other schemes).

Errors are TensorFlow's classes with its messages: a missing file is
tf.errors.NotFoundError, a folder where a file belongs
FailedPreconditionError, a file that exists where Copy and Rename would
replace it without overwrite=True AlreadyExistsError.

Files are written by ctower's rule for files (core/files, through
_ctower.file_write): a file is replaced whole through a temporary renamed
over it, so that a reader sees the old file or the new one, never part of
one. GFile in mode 'w' or 'a' keeps what is written in memory and replaces
the file with all of it at each flush() and at close(); Copy reads and
writes the file whole. Reading ('r') is plain Python I/O, streamed, from a
file checked to be a regular file before a byte is read (a FIFO is refused,
not waited on), and so are the modes 'r+', 'w+' and 'a+', which read and
write in place.
"""
import errno as _errno
import glob as _glob
import os as _os
import shutil as _shutil
import stat as _stat

from ctower import _ctower, errors

# what a GFile's file is to the user, for core/files' messages
_ROLE = ("file", "check the path given to tf.gfile")

_BY_ERRNO = {
    _errno.ENOENT: errors.NotFoundError,
    _errno.EISDIR: errors.FailedPreconditionError,
    _errno.ENOTDIR: errors.FailedPreconditionError,
    _errno.EEXIST: errors.AlreadyExistsError,
    _errno.EACCES: errors.PermissionDeniedError,
    _errno.EPERM: errors.PermissionDeniedError,
    _errno.ENOSPC: errors.ResourceExhaustedError,
}


def _os_error(path, error):
    """TensorFlow's error for an OSError at path: "<path>; <strerror>"."""
    kind = _BY_ERRNO.get(error.errno, errors.UnknownError)
    return kind(None, None, "%s; %s" % (path, error.strerror or error))


def _call(path, function, *args):
    try:
        return function(*args)
    except OSError as error:
        raise _os_error(path, error) from None


def _check_writable(path):
    """A file can be written at path: its folder exists and path is no
    folder (core/files would make the folders; TensorFlow does not)."""
    if _os.path.isdir(path):
        raise errors.FailedPreconditionError(None, None, "%s; Is a directory" % path)
    folder = _os.path.dirname(_os.path.abspath(path))
    if not _os.path.isdir(folder):
        raise errors.NotFoundError(None, None, "%s; No such file or directory" % path)


def _open_regular(path, mode):
    """A Python file object of a regular file at path, opened without
    blocking first so that a FIFO or a device is an error, not a hang."""
    flags = _os.O_RDWR if "+" in mode else _os.O_RDONLY
    if mode[0] == "w":
        flags |= _os.O_CREAT | _os.O_TRUNC
    elif mode[0] == "a":
        flags |= _os.O_CREAT | _os.O_APPEND
    fd = _call(path, _os.open, path, flags | _os.O_NONBLOCK | _os.O_CLOEXEC, 0o666)
    st = _os.fstat(fd)
    if not _stat.S_ISREG(st.st_mode):
        _os.close(fd)
        if _stat.S_ISDIR(st.st_mode):
            raise errors.FailedPreconditionError(None, None, "%s; Is a directory" % path)
        raise errors.InvalidArgumentError(None, None, "%s is not a regular file" % path)
    _os.set_blocking(fd, True)
    return _os.fdopen(fd, {"r": "rb", "w": "wb", "a": "ab"}[mode[0]] + ("+" if "+" in mode else ""))


class GFile:
    """A file as TensorFlow's GFile: a context manager with read, readline,
    readlines, iteration, write, flush, seek, tell and size. In a mode
    without 'b' reads return str (UTF-8; read(n) reads n bytes, as
    TensorFlow's does); write takes str or bytes in either mode. A file to
    read is opened at the first read, as TensorFlow opens it."""

    def __init__(self, name, mode="r"):
        base = mode.replace("b", "")
        if base not in ("r", "w", "a", "r+", "w+", "a+"):
            raise errors.InvalidArgumentError(
                None, None, "mode is not 'r' or 'w' or 'a' or 'r+' or 'w+' or 'a+'")
        self.name = _os.fspath(name)
        self.mode = mode
        self._text = "b" not in mode
        self._file = None
        self._pending = None  # all the bytes of a file written whole ('w', 'a')
        self._closed = False
        self._dirty = False
        if base in ("w", "a"):
            _check_writable(self.name)
            self._pending = bytearray()
            if base == "a" and _os.path.exists(self.name):
                self._pending += _ctower.file_read(self.name, *_ROLE)
            self._dirty = True  # 'w' makes the file even when nothing is written

    def _stream(self):
        if self._closed:
            raise ValueError("I/O operation on closed file %s" % self.name)
        if self._file is None:
            self._file = _open_regular(self.name, self.mode.replace("b", ""))
        return self._file

    def _reading(self):
        if self._pending is not None:
            raise errors.PermissionDeniedError(None, None, "File isn't open for reading")
        return self._stream()

    def _out(self, data):
        return data.decode("utf-8") if self._text else data

    def read(self, n=-1):
        return self._out(self._reading().read(-1 if n is None else n))

    def readline(self):
        return self._out(self._reading().readline())

    def readlines(self):
        return [self._out(line) for line in self._reading().readlines()]

    def __iter__(self):
        return self

    def __next__(self):
        line = self.readline()
        if not line:
            raise StopIteration
        return line

    next = __next__

    def write(self, file_content):
        data = file_content.encode("utf-8") if isinstance(file_content, str) else file_content
        if self._pending is None:
            if self.mode.replace("b", "") == "r":
                raise errors.PermissionDeniedError(None, None, "File isn't open for writing")
            self._stream().write(data)
        else:
            if self._closed:
                raise ValueError("I/O operation on closed file %s" % self.name)
            self._pending += data
            self._dirty = True

    def flush(self):
        """Replaces the file with all that was written (modes 'w' and 'a')."""
        if self._pending is not None and self._dirty and not self._closed:
            _ctower.file_write(self.name, bytes(self._pending), *_ROLE)
            self._dirty = False
        elif self._file is not None:
            self._file.flush()

    def close(self):
        self.flush()
        if self._file is not None:
            self._file.close()
            self._file = None
        self._closed = True

    def seek(self, offset=None, whence=0, position=None):
        self._reading().seek(position if offset is None else offset, whence)

    def tell(self):
        return len(self._pending) if self._pending is not None else self._stream().tell()

    def size(self):
        return len(self._pending) if self._pending is not None else Stat(self.name).length

    def __enter__(self):
        return self

    def __exit__(self, *unused):
        self.close()


Open = GFile


class FastGFile(GFile):
    """TensorFlow 1.x's deprecated FastGFile: GFile."""


class FileStatistics:
    """What Stat returns: length (bytes), mtime_nsec, is_directory."""

    def __init__(self, length, mtime_nsec, is_directory):
        self.length = length
        self.mtime_nsec = mtime_nsec
        self.is_directory = is_directory


def Exists(filename):
    return _os.path.exists(filename)


def IsDirectory(dirname):
    return _os.path.isdir(dirname)


def MakeDirs(dirname):
    try:
        _os.makedirs(dirname, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise errors.FailedPreconditionError(None, None, "%s is not a directory" % dirname) from None
    except OSError as error:
        raise _os_error(dirname, error) from None


def MkDir(dirname):
    """Makes the folder dirname; nothing when something is there already,
    as in TensorFlow 2."""
    try:
        _os.mkdir(dirname)
    except FileExistsError:
        pass
    except OSError as error:
        raise _os_error(dirname, error) from None


def DeleteRecursively(dirname):
    """Removes the folder dirname and all it holds (or the file dirname)."""
    if not _os.path.lexists(dirname):
        raise errors.NotFoundError(None, None, "%s not found" % dirname)
    if _os.path.isdir(dirname) and not _os.path.islink(dirname):
        _call(dirname, _shutil.rmtree, dirname)
    else:
        _call(dirname, _os.remove, dirname)


def Remove(filename):
    _call(filename, _os.remove, filename)


def ListDirectory(dirname):
    """The names in dirname (not their paths), in the file system's order."""
    if not _os.path.isdir(dirname):
        raise errors.NotFoundError(None, None, "Could not find directory %s" % dirname)
    return _call(dirname, _os.listdir, dirname)


def Glob(filename):
    """The paths matching a pattern (or any of a list of patterns), sorted."""
    patterns = [filename] if isinstance(filename, (str, bytes, _os.PathLike)) else filename
    return sorted({p for pattern in patterns for p in _glob.glob(_os.fspath(pattern))})


def _refuse_existing(newpath, overwrite):
    if not overwrite and _os.path.exists(newpath):
        raise errors.AlreadyExistsError(None, None, "file already exists")


def Copy(oldpath, newpath, overwrite=False):
    """Copies the file oldpath to newpath, read and written whole."""
    if not _os.path.exists(oldpath):
        raise errors.NotFoundError(None, None, "%s; No such file or directory" % oldpath)
    _refuse_existing(newpath, overwrite)
    _check_writable(newpath)
    _ctower.file_write(newpath, _ctower.file_read(oldpath, *_ROLE), *_ROLE)


def Rename(oldname, newname, overwrite=False):
    if not _os.path.lexists(oldname):
        raise errors.NotFoundError(None, None, "%s; No such file or directory" % oldname)
    _refuse_existing(newname, overwrite)
    _call(oldname, _os.replace, oldname, newname)


def Stat(filename):
    st = _call(filename, _os.stat, filename)
    return FileStatistics(st.st_size, st.st_mtime_ns, _stat.S_ISDIR(st.st_mode))


def Walk(top, in_order=True):
    """(folder, subfolder names, file names) for top and each folder below
    it, a folder before those below it when in_order, else after them."""
    for folder, subfolders, files in _os.walk(top, topdown=in_order):
        yield folder, subfolders, files


def walk(top, topdown=True, onerror=None):
    """TensorFlow 2's tf.io.gfile.walk: Walk, with os.walk's onerror."""
    for entry in _os.walk(top, topdown=topdown, onerror=onerror):
        yield entry


def join(path, *paths):
    return _os.path.join(path, *paths)
