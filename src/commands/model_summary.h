/* The model's table that `ctower plan` prints (model_summary.c). */
#ifndef CTOWER_COMMANDS_MODEL_SUMMARY_H
#define CTOWER_COMMANDS_MODEL_SUMMARY_H

#include "ctower/graph.h"
#include "ctower/session.h"

/* `ctower plan`'s summary of the model: a row per layer (a name scope of
 * the first tower) with its output shape, parameters and device, and the
 * totals. Returns 0 or fills status. */
int ct_print_model_summary(ct_session *session, const ct_graph *graph, const char *model,
                           ct_status *status);

#endif
