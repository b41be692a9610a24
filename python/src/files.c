/* ctower._ctower.file_write and file_read: the files Python writes and reads
 * itself (Saver's `checkpoint` state file), by core/files' rules as the
 * command's files are: a write replaces the file whole through a temporary
 * renamed over it (a symbolic link is followed and stays; a FIFO, a device
 * or a folder at the path is refused), and a read refuses anything but a
 * regular file instead of blocking on a FIFO. */
#include "binding.h"
#include "core/files.h"

/* file_write(path, data: bytes, what, fix) */
PyObject *ct_py_file_write(PyObject *self, PyObject *args) {
  (void)self;
  const char *path, *what, *fix;
  Py_buffer data;
  if (!PyArg_ParseTuple(args, "sy*ss", &path, &data, &what, &fix)) return NULL;
  const ct_file_role role = {what, fix};
  ct_status status = CT_STATUS_INIT;
  ct_file_writer w;
  int failed;
  Py_BEGIN_ALLOW_THREADS
  failed = ct_file_writer_open(&w, path, &role, &status);
  if (!failed && ct_file_writer_write(&w, data.buf, (size_t)data.len, &status)) {
    ct_file_writer_discard(&w);
    failed = 1;
  } else if (!failed) {
    failed = ct_file_writer_commit(&w, &status);
  }
  Py_END_ALLOW_THREADS
  PyBuffer_Release(&data);
  if (failed) return ct_py_raise(&status);
  Py_RETURN_NONE;
}

/* file_read(path, what, fix) -> bytes (NotFoundError when there is none) */
PyObject *ct_py_file_read(PyObject *self, PyObject *args) {
  (void)self;
  const char *path, *what, *fix;
  if (!PyArg_ParseTuple(args, "sss", &path, &what, &fix)) return NULL;
  const ct_file_role role = {what, fix};
  ct_status status = CT_STATUS_INIT;
  size_t size;
  unsigned char *data;
  Py_BEGIN_ALLOW_THREADS
  data = ct_file_read_all(path, &role, &size, &status);
  Py_END_ALLOW_THREADS
  if (data == NULL) return ct_py_raise(&status);
  PyObject *result = PyBytes_FromStringAndSize((const char *)data, (Py_ssize_t)size);
  free(data);
  return result;
}
