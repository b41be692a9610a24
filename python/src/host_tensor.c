/* ctower._ctower.HostTensor: a host tensor owned by Python, read through
 * the buffer protocol (NumPy reads it in place), and the headers over the
 * callers' buffers that feeds, constants and checkpoints are read from. */
#include <string.h>

#include "binding.h"

typedef struct {
  PyObject_HEAD
  ct_tensor *tensor;
  Py_ssize_t shape[CT_MAX_RANK];
  int exports; /* buffers handed out */
} ct_py_tensor;

static const char *format_of(ct_dtype dtype) {
  switch (dtype) {
    case CT_F32: return "f";
    case CT_I32: return "i";
    case CT_I64: return "q";
    case CT_U8: return "B";
    default: return NULL;
  }
}

PyObject *ct_py_tensor_wrap(ct_tensor *tensor) {
  ct_py_tensor *self = PyObject_New(ct_py_tensor, &ct_py_tensor_type);
  if (self == NULL) {
    ct_tensor_free(tensor);
    return NULL;
  }
  self->tensor = tensor;
  self->exports = 0;
  for (int d = 0; d < tensor->shape.rank; ++d) self->shape[d] = (Py_ssize_t)tensor->shape.dims[d];
  return (PyObject *)self;
}

static void tensor_dealloc(ct_py_tensor *self) {
  ct_tensor_free(self->tensor);
  PyObject_Free(self);
}

static int tensor_getbuffer(ct_py_tensor *self, Py_buffer *view, int flags) {
  const ct_tensor *t = self->tensor;
  view->obj = (PyObject *)self;
  Py_INCREF(self);
  view->buf = t->data;
  view->len = (Py_ssize_t)ct_tensor_nbytes(t);
  view->readonly = 0;
  view->itemsize = (Py_ssize_t)ct_dtype_size(t->dtype);
  view->format = (flags & PyBUF_FORMAT) ? (char *)format_of(t->dtype) : NULL;
  view->ndim = t->shape.rank;
  view->shape = (flags & PyBUF_ND) ? self->shape : NULL;
  view->strides = NULL;
  view->suboffsets = NULL;
  view->internal = NULL;
  ++self->exports;
  return 0;
}

static void tensor_releasebuffer(ct_py_tensor *self, Py_buffer *view) {
  (void)view;
  --self->exports;
}

static PyBufferProcs tensor_buffer = {(getbufferproc)tensor_getbuffer,
                                      (releasebufferproc)tensor_releasebuffer};

PyTypeObject ct_py_tensor_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ctower._ctower.HostTensor",
    .tp_basicsize = sizeof(ct_py_tensor),
    .tp_dealloc = (destructor)tensor_dealloc,
    .tp_as_buffer = &tensor_buffer,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A tensor computed by ctower; numpy.asarray reads it without a copy.",
};

int ct_py_tensor_view(PyObject *obj, ct_dtype dtype, Py_buffer *view, ct_tensor *out) {
  if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) != 0) return -1;
  const char *want = format_of(dtype), *got = view->format ? view->format : "B";
  if (got[0] == '<' || got[0] == '=' || got[0] == '@') ++got;
  /* numpy writes int64 as 'l' on LP64 and booleans as '?' */
  int same = want && (strcmp(got, want) == 0 || (dtype == CT_I64 && strcmp(got, "l") == 0) ||
                      (dtype == CT_U8 && strcmp(got, "?") == 0));
  if (!same || view->itemsize != (Py_ssize_t)ct_dtype_size(dtype) || view->ndim > CT_MAX_RANK) {
    PyErr_Format(PyExc_TypeError, "a buffer of format '%s' and rank %d cannot be read as %s",
                 got, view->ndim, ct_dtype_name(dtype));
    PyBuffer_Release(view);
    return -1;
  }
  out->dtype = dtype;
  out->shape.rank = view->ndim;
  for (int d = 0; d < view->ndim; ++d) out->shape.dims[d] = (int64_t)view->shape[d];
  out->data = view->buf;
  out->owns_data = 0;
  return 0;
}
