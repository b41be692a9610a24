/* `ctower bench --calibrate`: measuring the rates of the cost model
 * (calibrate.c). */
#ifndef CTOWER_COMMANDS_CALIBRATE_H
#define CTOWER_COMMANDS_CALIBRATE_H

#include <stdio.h>

#include "ctower/session_options.h"
#include "observe/cost_model.h"

/* Measures this machine: kernel rates of each kind of device
 * a session with these options has, the all-reduce between two CPU
 * devices, and under mpirun the ranks' MPI all-reduce (every rank takes
 * part). Prints each figure to report (NULL: nothing). Returns 0 or fills
 * status. */
int ct_calibration_measure(const ct_session_options *session, ct_calibration *calibration,
                           FILE *report, ct_status *status);

#endif
