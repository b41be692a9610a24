/* The check of a model library's exports table (model_library.c), apart
 * from loading it, so that tests/fuzz can hand it any table. */
#ifndef CTOWER_MODELS_MODEL_EXPORTS_H
#define CTOWER_MODELS_MODEL_EXPORTS_H

#include "ctower/models.h"

/* Reads the exports table e of the library at path without trusting it
 * (never faults): its ABI version, a count of 1 to 4096 models in a
 * readable array, and every model (ct_model_library_open). Returns 0, or 1
 * with FAILED_PRECONDITION naming path and what is wrong. */
int ct_model_exports_check(const char *path, const ct_model_exports *e, ct_status *status);

#endif
