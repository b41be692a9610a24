/* Session options from keyword arguments (ConfigProto's fields), and
 * ctower._ctower.devices: the devices a session with such options has. */
#include <limits.h>
#include <string.h>

#include "binding.h"

/* kwargs[key] into *out; an integer past int's range is a ValueError that
 * names `field` (TensorFlow's spelling), as protobuf's int32 fields refuse it. */
static int get_int(PyObject *kwargs, const char *key, const char *field, int *out) {
  PyObject *v = PyDict_GetItemString(kwargs, key);
  if (v == NULL || v == Py_None) return 0;
  int overflow = 0;
  long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
  if (x == -1 && PyErr_Occurred()) return -1;
  if (overflow || x < INT_MIN || x > INT_MAX) {
    PyObject *text = PyObject_Repr(v);
    PyErr_Format(PyExc_ValueError, "%s = %s is out of range: it must fit a 32-bit int (at most %d)",
                 field, text ? PyUnicode_AsUTF8(text) : "?", INT_MAX);
    Py_XDECREF(text);
    return -1;
  }
  *out = (int)x;
  return 0;
}

int ct_py_session_options(PyObject *kwargs, ct_session_options *o) {
  ct_session_options_defaults(o);
  if (kwargs == NULL) return 0;
  if (get_int(kwargs, "log_device_placement", "log_device_placement", &o->log_device_placement) ||
      get_int(kwargs, "allow_soft_placement", "allow_soft_placement", &o->allow_soft_placement) ||
      get_int(kwargs, "cpu", "device_count['CPU']", &o->device_count_cpu) ||
      get_int(kwargs, "gpu", "device_count['GPU']", &o->device_count_gpu) ||
      get_int(kwargs, "intra_op_parallelism_threads", "intra_op_parallelism_threads",
              &o->intra_op_parallelism_threads) ||
      get_int(kwargs, "inter_op_parallelism_threads", "inter_op_parallelism_threads",
              &o->inter_op_parallelism_threads) ||
      get_int(kwargs, "allow_growth", "gpu_options.allow_growth", &o->gpu_options.allow_growth))
    return -1;
  PyObject *fraction = PyDict_GetItemString(kwargs, "per_process_gpu_memory_fraction");
  if (fraction && fraction != Py_None) {
    double f = PyFloat_AsDouble(fraction);
    if (f == -1.0 && PyErr_Occurred()) return -1;
    o->gpu_options.per_process_gpu_memory_fraction = f;
  }
  PyObject *visible = PyDict_GetItemString(kwargs, "visible_device_list");
  if (visible && visible != Py_None) {
    const char *list = PyUnicode_AsUTF8(visible);
    if (list == NULL) return -1;
    if (strlen(list) >= sizeof o->gpu_options.visible_device_list) {
      PyErr_SetString(PyExc_ValueError, "visible_device_list is too long");
      return -1;
    }
    strcpy(o->gpu_options.visible_device_list, list);
  }
  return 0;
}

PyObject *ct_py_devices(PyObject *self, PyObject *args, PyObject *kwargs) {
  (void)self, (void)args;
  ct_session_options options;
  if (ct_py_session_options(kwargs, &options)) return NULL;
  options.log_device_placement = 0;
  ct_graph *graph = ct_graph_new();
  if (graph == NULL) return PyErr_NoMemory();
  ct_status status = CT_STATUS_INIT;
  ct_session *session;
  Py_BEGIN_ALLOW_THREADS
  session = ct_session_new(graph, &options, &status);
  Py_END_ALLOW_THREADS
  if (session == NULL) {
    ct_graph_free(graph);
    return ct_py_raise(&status);
  }
  PyObject *list = PyList_New(0);
  for (int i = 0; list && i < ct_session_device_count(session); ++i) {
    ct_device_info info;
    if (ct_session_device_info(session, i, &info)) continue;
    PyObject *d = Py_BuildValue("{s:s,s:s,s:i,s:n,s:s}", "name", info.name, "kind", info.kind,
                                "threads", info.threads, "memory_limit",
                                (Py_ssize_t)info.memory_limit, "description",
                                info.description ? info.description : "");
    if (d == NULL || PyList_Append(list, d)) Py_CLEAR(list);
    Py_XDECREF(d);
  }
  ct_session_free(session);
  ct_graph_free(graph);
  return list;
}
