/* ctower._ctower.train: what `ctower train` runs, from a YAML file and
 * KEY=VALUE overrides, returning each epoch's results. The GIL is released
 * while the trainer works; it takes SIGINT and SIGTERM as the command does
 * (the first stops after the step with a checkpoint, raised here as
 * KeyboardInterrupt; a second ends the process at once). */
#include <stdio.h>
#include <stdlib.h>

#include <ctower/config.h>

#include "binding.h"

typedef struct {
  PyObject *history; /* [dict], one per epoch */
  int failed;        /* a Python error is set */
} history;

static void on_epoch(void *user, const ct_epoch_result *r) {
  history *h = user;
  PyGILState_STATE gil = PyGILState_Ensure();
  PyObject *d = Py_BuildValue(
      "{s:L,s:L,s:L,s:d,s:d,s:d,s:d,s:d,s:d}", "epoch", (long long)r->epoch, "epochs",
      (long long)r->epochs, "step", (long long)r->step, "train_loss", r->train_loss,
      "train_accuracy", r->train_accuracy, "test_loss", r->test_loss, "test_accuracy",
      r->test_accuracy, "seconds", r->seconds, "images_per_second", r->images_per_second);
  if (d == NULL || PyList_Append(h->history, d)) h->failed = 1;
  Py_XDECREF(d);
  PyGILState_Release(gil);
}

/* train(config path or None, [override], quiet, resume) -> [dict] */
PyObject *ct_py_train(PyObject *self, PyObject *args, PyObject *kwargs) {
  (void)self;
  static char *keywords[] = {"config", "overrides", "quiet", "resume", NULL};
  const char *path = NULL;
  PyObject *override_seq = NULL;
  int quiet = 0, resume = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "zO|pp", keywords, &path, &override_seq, &quiet,
                                   &resume))
    return NULL;
  ct_config *config = PyMem_Malloc(sizeof *config);
  ct_trainer_options *options = PyMem_Malloc(sizeof *options);
  ct_tower_options *towers = PyMem_Malloc(sizeof *towers);
  PyObject *overrides = PySequence_Fast(override_seq, "overrides are a sequence of KEY=VALUE");
  PyObject *result = NULL;
  ct_status status = CT_STATUS_INIT;
  if (config == NULL || options == NULL || towers == NULL) {
    PyErr_NoMemory();
    goto done;
  }
  if (overrides == NULL) goto done;
  ct_config_defaults(config);
  if (path && ct_config_load(config, path, &status)) goto failed;
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(overrides); ++i) {
    const char *assignment = PyUnicode_AsUTF8(PySequence_Fast_GET_ITEM(overrides, i));
    if (assignment == NULL) goto done;
    if (ct_config_apply_override(config, assignment, &status)) goto failed;
  }
  if (ct_config_check(config, &status)) goto failed;
  ct_session_options session;
  ct_config_session_options(config, &session);
  ct_tower_request request;
  ct_config_tower_request(config, &request);
  if (ct_towers_resolve(&request, &session, towers, &status)) goto failed;
  ct_config_trainer_options(config, options);

  char *yaml = NULL;
  size_t yaml_size = 0;
  FILE *text = config->train.log_dir[0] ? open_memstream(&yaml, &yaml_size) : NULL;
  if (text) ct_config_write(config, text);
  history h = {PyList_New(0), 0};
  if (h.history == NULL) goto done;
  ct_train_flags flags = {0};
  flags.quiet = quiet;
  flags.resume = resume;
  flags.handle_signals = 1;
  if (text && fclose(text) == 0) flags.config_text = yaml;
  flags.on_epoch = on_epoch;
  flags.on_epoch_user = &h;
  int train_failed;
  Py_BEGIN_ALLOW_THREADS
  train_failed = ct_train_main(options, towers, &flags, &status);
  fflush(stdout);
  Py_END_ALLOW_THREADS
  free(yaml);
  if (h.failed) {
    Py_DECREF(h.history);
    goto done;
  }
  if (train_failed && status.code == CT_CANCELLED) {
    Py_DECREF(h.history);
    PyErr_SetString(PyExc_KeyboardInterrupt, status.message);
    goto done;
  }
  if (train_failed) {
    Py_DECREF(h.history);
    goto failed;
  }
  result = h.history;
  goto done;
failed:
  ct_py_raise(&status);
done:
  Py_XDECREF(overrides);
  PyMem_Free(config), PyMem_Free(options), PyMem_Free(towers);
  return result;
}
