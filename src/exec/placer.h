/* The placer: assigns every node to one of a session's devices, as
 * TensorFlow's placer does, in numbered passes per node:
 *   1. colocation: a variable's reads, its updates and its optimizer slots
 *      go where the variable was created (its device scope then);
 *   2. explicit: the innermost device scope the node was built in;
 *   3. default: the first device of the highest-priority type (GPU before
 *      CPU) that has a kernel for the op;
 *   4. soft fallback: with allow_soft_placement, a node whose requested
 *      device does not exist or cannot run it moves to a device of the same
 *      type that can, else to the default; without it, placement fails with
 *      TensorFlow's message.
 * Under mpirun the devices of the other tasks are candidates for a request
 * that names a job or a task (a job alone: its task 0), which pins the
 * node to that task; a node without one is placed on this process's
 * devices (and runs in every process that needs it: transfer.c). */
#ifndef CTOWER_EXEC_PLACER_H
#define CTOWER_EXEC_PLACER_H

#include <stdio.h>

#include "ctower/session.h"
#include "device/device.h"
#include "graph/graph_internal.h"

/* Places nodes first_node .. graph->n_nodes-1, writing a device index into
 * device_of[node id], when reason_of is not NULL the pass that decided it
 * (a ct_placement_reason) into reason_of[node id], and when pinned_of is
 * not NULL whether the node's request named the task it is on into
 * pinned_of[node id]. With `log` not NULL writes one line per node
 * ("NAME: (OP): DEVICE") and a second line for each node soft placement
 * moved. Returns 0, or fills status (INVALID_ARGUMENT) and leaves the
 * entries of the failed node and later ones untouched. */
int ct_place_nodes(const ct_graph *graph, int first_node, ct_device *const *devices, int n_devices,
                   int allow_soft_placement, FILE *log, int *device_of, unsigned char *reason_of,
                   unsigned char *pinned_of, ct_status *status);

/* Writes TensorFlow's "Device mapping:" block for the devices. */
void ct_log_device_mapping(ct_device *const *devices, int n_devices, FILE *log);

#endif
