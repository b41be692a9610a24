/* Variables for the optimizer's slots: by full name, whatever the scopes. */
#ifndef CTOWER_OPS_VARIABLES_H
#define CTOWER_OPS_VARIABLES_H

#include "ctower/ops.h"

/* Gets or creates a variable by its full name, ignoring variable scopes
 * (optimizer slots: "conv1/weights/Momentum"); ct_variable otherwise. */
ct_output ct_variable_absolute(ct_graph *g, const char *full_name, ct_shape shape,
                               ct_initializer init, int trainable);

#endif
