/* tf.summary's C side: the values of summary ops packed as serialized
 * Summaries (observe/summary_values.h), and SummaryWriter, the event file
 * of a FileWriter (observe/summary_writer.h: the file `ctower train`'s
 * train.log_dir gets, created by core/files' rules). */
#include "binding.h"
#include "observe/summary_values.h"
#include "observe/summary_writer.h"

static PyObject *take_bytes(int failed, uint8_t *bytes, size_t size, const ct_status *status) {
  if (failed) return ct_py_raise(status);
  PyObject *result = PyBytes_FromStringAndSize((const char *)bytes, (Py_ssize_t)size);
  free(bytes);
  return result;
}

/* summary_scalar(tag, value) -> bytes */
PyObject *ct_py_summary_scalar(PyObject *self, PyObject *args) {
  (void)self;
  const char *tag;
  double value;
  if (!PyArg_ParseTuple(args, "sd", &tag, &value)) return NULL;
  ct_status status = CT_STATUS_INIT;
  uint8_t *bytes;
  size_t size;
  const int failed = ct_summary_pack_scalar(tag, value, &bytes, &size, &status);
  return take_bytes(failed, bytes, size, &status);
}

/* summary_histogram(tag, values: a C-contiguous buffer of doubles) -> bytes */
PyObject *ct_py_summary_histogram(PyObject *self, PyObject *args) {
  (void)self;
  const char *tag;
  Py_buffer values;
  if (!PyArg_ParseTuple(args, "sy*", &tag, &values)) return NULL;
  ct_status status = CT_STATUS_INIT;
  uint8_t *bytes;
  size_t size;
  const int failed = ct_summary_pack_histogram(
      tag, values.buf, values.len / (Py_ssize_t)sizeof(double), &bytes, &size, &status);
  PyBuffer_Release(&values);
  return take_bytes(failed, bytes, size, &status);
}

/* summary_images(tags: list of str, pixels: bytes, height, width, channels)
 * -> bytes: len(tags) images of height x width x channels bytes each */
PyObject *ct_py_summary_images(PyObject *self, PyObject *args) {
  (void)self;
  PyObject *tag_list;
  Py_buffer pixels;
  int height, width, channels;
  if (!PyArg_ParseTuple(args, "O!y*iii", &PyList_Type, &tag_list, &pixels, &height, &width,
                        &channels))
    return NULL;
  const Py_ssize_t n = PyList_GET_SIZE(tag_list);
  const char **tags = calloc((size_t)n + 1, sizeof *tags);
  if (tags == NULL) {
    PyBuffer_Release(&pixels);
    return PyErr_NoMemory();
  }
  for (Py_ssize_t i = 0; i < n; ++i)
    if ((tags[i] = PyUnicode_AsUTF8(PyList_GET_ITEM(tag_list, i))) == NULL) {
      free(tags);
      PyBuffer_Release(&pixels);
      return NULL;
    }
  if (pixels.len != (Py_ssize_t)n * height * width * channels) {
    free(tags);
    PyBuffer_Release(&pixels);
    PyErr_SetString(PyExc_ValueError, "summary_images: the pixels are not n x h x w x c bytes");
    return NULL;
  }
  ct_status status = CT_STATUS_INIT;
  uint8_t *bytes;
  size_t size;
  const int failed = ct_summary_pack_images(tags, pixels.buf, (int)n, height, width, channels,
                                            &bytes, &size, &status);
  free(tags);
  PyBuffer_Release(&pixels);
  return take_bytes(failed, bytes, size, &status);
}

/* ---- SummaryWriter(logdir): one event file ---------------------------------------- */

typedef struct {
  PyObject_HEAD ct_summary_writer *writer; /* NULL once closed */
} summary_writer;

static int writer_init(summary_writer *self, PyObject *args, PyObject *kwargs) {
  static char *names[] = {"logdir", NULL};
  const char *logdir;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "s", names, &logdir)) return -1;
  ct_summary_writer_free(self->writer);
  ct_status status = CT_STATUS_INIT;
  Py_BEGIN_ALLOW_THREADS self->writer = ct_summary_writer_new(logdir, &status);
  Py_END_ALLOW_THREADS if (self->writer == NULL) {
    ct_py_raise(&status);
    return -1;
  }
  return 0;
}

static void writer_dealloc(summary_writer *self) {
  ct_summary_writer_free(self->writer);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static ct_summary_writer *open_writer(summary_writer *self) {
  if (self->writer == NULL)
    PyErr_SetString(PyExc_RuntimeError,
                    "the event file is closed; make a new FileWriter (or "
                    "call reopen()) to write more");
  return self->writer;
}

/* write(step, summary: bytes) */
static PyObject *writer_write(summary_writer *self, PyObject *args) {
  long long step;
  Py_buffer summary;
  if (!PyArg_ParseTuple(args, "Ly*", &step, &summary)) return NULL;
  ct_summary_writer *w = open_writer(self);
  ct_status status = CT_STATUS_INIT;
  const int failed = w == NULL || ct_summary_write_summary(w, (int64_t)step, summary.buf,
                                                           (size_t)summary.len, &status);
  PyBuffer_Release(&summary);
  if (w == NULL) return NULL;
  if (failed) return ct_py_raise(&status);
  Py_RETURN_NONE;
}

static PyObject *writer_flush(summary_writer *self, PyObject *unused) {
  (void)unused;
  ct_summary_writer *w = open_writer(self);
  if (w == NULL) return NULL;
  ct_status status = CT_STATUS_INIT;
  if (ct_summary_writer_flush(w, &status)) return ct_py_raise(&status);
  Py_RETURN_NONE;
}

/* close(): flushes and closes; again does nothing */
static PyObject *writer_close(summary_writer *self, PyObject *unused) {
  (void)unused;
  if (self->writer == NULL) Py_RETURN_NONE;
  ct_status status = CT_STATUS_INIT;
  const int failed = ct_summary_writer_flush(self->writer, &status);
  ct_summary_writer_free(self->writer);
  self->writer = NULL;
  if (failed) return ct_py_raise(&status);
  Py_RETURN_NONE;
}

static PyObject *writer_path(summary_writer *self, void *closure) {
  (void)closure;
  ct_summary_writer *w = open_writer(self);
  return w ? PyUnicode_DecodeFSDefault(ct_summary_writer_path(w)) : NULL;
}

static PyMethodDef writer_methods[] = {
    {"write", (PyCFunction)writer_write, METH_VARARGS, "write(step, summary): one event"},
    {"flush", (PyCFunction)writer_flush, METH_NOARGS, "hand what was written to the system"},
    {"close", (PyCFunction)writer_close, METH_NOARGS, "flush and close the file"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef writer_getset[] = {
    {"path", (getter)writer_path, NULL, "the event file's path", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject ct_py_summary_writer_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ctower._ctower.SummaryWriter",
    .tp_basicsize = sizeof(summary_writer),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "SummaryWriter(logdir): a new TensorBoard event file in logdir",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)writer_init,
    .tp_dealloc = (destructor)writer_dealloc,
    .tp_methods = writer_methods,
    .tp_getset = writer_getset,
};
