/* ctower._ctower.checkpoint_write and checkpoint_read: safetensors
 * checkpoints (ctower/checkpoint.h) from and to NumPy's buffers. */
#include "binding.h"

/* checkpoint_write(path, [(name, buffer)], {key: value}) */
PyObject *ct_py_checkpoint_write(PyObject *self, PyObject *args) {
  (void)self;
  const char *path;
  PyObject *seq, *metadata;
  if (!PyArg_ParseTuple(args, "sOO!", &path, &seq, &PyDict_Type, &metadata)) return NULL;
  PyObject *fast = PySequence_Fast(seq, "tensors are a sequence of (name, array)");
  if (fast == NULL) return NULL;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(fast), n_views = 0, n_meta = PyDict_Size(metadata);
  ct_named_tensor *named = PyMem_Calloc((size_t)n + 1, sizeof *named);
  ct_tensor *values = PyMem_Calloc((size_t)n + 1, sizeof *values);
  Py_buffer *views = PyMem_Calloc((size_t)n + 1, sizeof *views);
  const char **kv = PyMem_Calloc((size_t)(2 * n_meta) + 1, sizeof *kv);
  PyObject *result = NULL;
  if (!named || !values || !views || !kv) {
    PyErr_NoMemory();
    goto done;
  }
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject *name, *array;
    if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(fast, i), "UO", &name, &array)) goto done;
    if ((named[i].name = PyUnicode_AsUTF8(name)) == NULL) goto done;
    if (ct_py_tensor_view(array, CT_F32, &views[i], &values[i])) goto done;
    ++n_views;
    named[i].tensor = &values[i];
  }
  Py_ssize_t pos = 0, k = 0;
  PyObject *key, *value;
  while (PyDict_Next(metadata, &pos, &key, &value)) {
    if ((kv[k++] = PyUnicode_AsUTF8(key)) == NULL || (kv[k++] = PyUnicode_AsUTF8(value)) == NULL)
      goto done;
  }
  ct_status status = CT_STATUS_INIT;
  int failed;
  Py_BEGIN_ALLOW_THREADS
  failed = ct_checkpoint_write(path, named, (int)n, kv, (int)n_meta, &status);
  Py_END_ALLOW_THREADS
  if (failed) ct_py_raise(&status);
  else result = Py_NewRef(Py_None);
done:
  for (Py_ssize_t i = 0; i < n_views; ++i) PyBuffer_Release(&views[i]);
  PyMem_Free(named), PyMem_Free(values), PyMem_Free(views), PyMem_Free(kv);
  Py_DECREF(fast);
  return result;
}

/* checkpoint_read(path) -> ({name: HostTensor}, {key: value}) */
PyObject *ct_py_checkpoint_read(PyObject *self, PyObject *args) {
  (void)self;
  const char *path;
  if (!PyArg_ParseTuple(args, "s", &path)) return NULL;
  ct_status status = CT_STATUS_INIT;
  ct_checkpoint *checkpoint;
  Py_BEGIN_ALLOW_THREADS
  checkpoint = ct_checkpoint_read(path, &status);
  Py_END_ALLOW_THREADS
  if (checkpoint == NULL) return ct_py_raise(&status);
  PyObject *tensors = PyDict_New(), *metadata = PyDict_New();
  for (int i = 0; tensors && i < ct_checkpoint_count(checkpoint); ++i) {
    const char *name = ct_checkpoint_name(checkpoint, i);
    ct_tensor *copy = ct_tensor_clone(ct_checkpoint_find(checkpoint, name), &status);
    PyObject *t = copy ? ct_py_tensor_wrap(copy) : ct_py_raise(&status);
    if (t == NULL || PyDict_SetItemString(tensors, name, t)) Py_CLEAR(tensors);
    Py_XDECREF(t);
  }
  static const char *const keys[] = {"global_step", "epoch", "epoch_example", "test_accuracy"};
  for (size_t i = 0; metadata && i < sizeof keys / sizeof keys[0]; ++i) {
    const char *value = ct_checkpoint_metadata(checkpoint, keys[i]);
    PyObject *v = value ? PyUnicode_FromString(value) : NULL;
    if (value && (v == NULL || PyDict_SetItemString(metadata, keys[i], v))) Py_CLEAR(metadata);
    Py_XDECREF(v);
  }
  ct_checkpoint_free(checkpoint);
  if (tensors == NULL || metadata == NULL) {
    Py_XDECREF(tensors), Py_XDECREF(metadata);
    return NULL;
  }
  return Py_BuildValue("(NN)", tensors, metadata);
}
