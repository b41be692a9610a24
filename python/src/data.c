/* ctower._ctower.Batcher: a dataset read as the trainer reads it
 * (ct_batcher, include/ctower/data.h): for the same seed the same examples
 * in the same order, augmented alike, so that a Python training loop sees
 * the batches `ctower train` trains on. */
#include <string.h>

#include "binding.h"

typedef struct {
  PyObject_HEAD
  ct_dataset *dataset;
  ct_batcher *batcher;
  int64_t batch, h, w, c;
} ct_py_batcher;

static PyObject *batcher_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
  static char *keywords[] = {"name", "path", "train", "batch_size", "shuffle", "seed", "crop",
                             "pad", "flip", "brightness", "contrast", "standardize", NULL};
  const char *name, *path;
  int train, shuffle = 1, flip = 0, standardize = 0;
  long long batch, seed = 0, pad = 0, crop_h = 0, crop_w = 0;
  double brightness = 0, contrast_lo = 1, contrast_hi = 1;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "szpL|pL(LL)Lpd(dd)p", keywords, &name, &path,
                                   &train, &batch, &shuffle, &seed, &crop_h, &crop_w, &pad, &flip,
                                   &brightness, &contrast_lo, &contrast_hi, &standardize))
    return NULL;
  ct_py_batcher *self = (ct_py_batcher *)type->tp_alloc(type, 0);
  if (self == NULL) return NULL;
  ct_status status = CT_STATUS_INIT;
  Py_BEGIN_ALLOW_THREADS
  if (strcmp(name, "cifar10") == 0 || strcmp(name, "cifar100") == 0)
    self->dataset = ct_dataset_open_cifar(path, strcmp(name, "cifar100") == 0 ? 100 : 10, train,
                                          NULL, &status);
  else if (strcmp(name, "mnist") == 0 || strcmp(name, "fashion_mnist") == 0)
    self->dataset = ct_dataset_open_mnist(path, train, &status);
  else
    ct_status_set(&status, CT_INVALID_ARGUMENT,
                  "Batcher reads cifar10, cifar100, mnist and fashion_mnist, not '%s'", name);
  Py_END_ALLOW_THREADS
  ct_augment_options augment = {{crop_h, crop_w}, pad, flip, brightness,
                                {contrast_lo, contrast_hi}, standardize};
  if (self->dataset)
    self->batcher = ct_batcher_new(self->dataset, batch, shuffle, (uint64_t)seed, &status);
  if (self->batcher && ct_batcher_set_augment(self->batcher, &augment, train, &status)) {
    ct_batcher_free(self->batcher);
    self->batcher = NULL;
  }
  if (self->batcher == NULL) {
    Py_DECREF(self);
    return ct_py_raise(&status);
  }
  self->batch = batch;
  ct_batcher_image_shape(self->batcher, &self->h, &self->w, &self->c);
  return (PyObject *)self;
}

static void batcher_dealloc(ct_py_batcher *self) {
  ct_batcher_free(self->batcher);
  ct_dataset_free(self->dataset);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *b_start_epoch(ct_py_batcher *self, PyObject *arg) {
  long long epoch = PyLong_AsLongLong(arg);
  if (epoch == -1 && PyErr_Occurred()) return NULL;
  ct_batcher_start_epoch(self->batcher, (int64_t)epoch);
  Py_RETURN_NONE;
}

/* next() -> (images [n, h, w, c] f32, labels [n] i32), or None after the epoch's last batch */
static PyObject *b_next(ct_py_batcher *self, PyObject *unused) {
  (void)unused;
  const int64_t n = ct_batcher_next_size(self->batcher);
  if (n == 0) Py_RETURN_NONE;
  ct_status status = CT_STATUS_INIT;
  ct_shape image_shape = ct_shape_of(4, n, self->h, self->w, self->c);
  ct_shape label_shape = ct_shape_of(1, n);
  ct_tensor *images = ct_tensor_new(CT_F32, &image_shape, &status);
  ct_tensor *labels = images ? ct_tensor_new(CT_I32, &label_shape, &status) : NULL;
  int64_t got = -1;
  if (labels) {
    Py_BEGIN_ALLOW_THREADS
    got = ct_batcher_next(self->batcher, ct_tensor_f32(images), ct_tensor_i32(labels), &status);
    Py_END_ALLOW_THREADS
  }
  if (got != n) {
    ct_tensor_free(images), ct_tensor_free(labels);
    if (got >= 0) ct_status_set(&status, CT_INTERNAL, "the batcher handed out another size");
    return ct_py_raise(&status);
  }
  return Py_BuildValue("(NN)", ct_py_tensor_wrap(images), ct_py_tensor_wrap(labels));
}

static PyObject *b_size(ct_py_batcher *self, PyObject *unused) {
  (void)unused;
  return PyLong_FromLongLong((long long)ct_dataset_size(self->dataset));
}

static PyMethodDef batcher_methods[] = {
    {"start_epoch", (PyCFunction)(void (*)(void))b_start_epoch, METH_O, NULL},
    {"next", (PyCFunction)(void (*)(void))b_next, METH_NOARGS, NULL},
    {"size", (PyCFunction)(void (*)(void))b_size, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

PyTypeObject ct_py_batcher_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ctower._ctower.Batcher",
    .tp_basicsize = sizeof(ct_py_batcher),
    .tp_new = batcher_new,
    .tp_dealloc = (destructor)batcher_dealloc,
    .tp_methods = batcher_methods,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A dataset's batches as the trainer reads them (ctower/data.h).",
};
