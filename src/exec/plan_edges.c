/* Edges between tasks: passes 1b and 3b of building a plan (plan_build.c).
 * Under mpirun a node placed on another task's device runs in that task's
 * process; where a graph edge crosses processes this process's plan gets a
 * send step or a receive step, as an edge between two of its own devices
 * gets a copy step. The job's list of such edges is the same on every rank;
 * an edge's index names its messages (transfer.h), which transfer.c moves
 * in a run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/communication.h"
#include "core/hash.h"
#include "exec/plan.h"
#include "exec/transfer.h"

enum { CONTROL_OUTPUT = -1 };

/* An edge of the job's plan between two tasks: a producer's output (or
 * its end, for a control edge) that rank `to` reads. */
typedef struct ct_plan_edge {
  int producer; /* node id */
  int output;   /* CONTROL_OUTPUT: a control edge */
  int from, to; /* ranks */
} edge;

int ct_plan_receiving_device(const ct_session *s) {
  for (int i = 0; i < s->n_devices; ++i)
    if (s->devices[i]->ops->host_addressable) return i;
  return 0;
}

typedef struct edge_list {
  edge *items;
  int n, cap;
} edge_list;

static int add_edge(edge_list *list, int producer, int output, int from, int to) {
  if (from == to) return 0;
  if (ct_plan_grow((void **)&list->items, &list->cap, list->n + 1, sizeof *list->items)) return 1;
  list->items[list->n++] = (edge){producer, output, from, to};
  return 0;
}

static int edge_order(const void *a, const void *b) {
  const edge *x = a, *y = b;
  if (x->producer != y->producer) return x->producer < y->producer ? -1 : 1;
  if (x->output != y->output) return x->output < y->output ? -1 : 1;
  return (x->to > y->to) - (x->to < y->to);
}

/* The ranks each node runs on, as bit sets of `words` words per node. */
typedef struct rank_sets {
  uint64_t *bits;
  int words;
} rank_sets;

static uint64_t *ranks_of(const rank_sets *r, int id) { return r->bits + (size_t)id * r->words; }
static int has_rank(const rank_sets *r, int id, int rank) {
  return (int)(ranks_of(r, id)[rank / 64] >> (rank % 64) & 1);
}
/* Adds `from`'s ranks to node id's; returns whether that changed them. */
static int add_ranks(rank_sets *r, int id, const uint64_t *from) {
  uint64_t *to = ranks_of(r, id), changed = 0;
  for (int w = 0; w < r->words; ++w) changed |= from[w] & ~to[w], to[w] |= from[w];
  return changed != 0;
}

/* Where each node runs: a node pinned to a task there alone; any other on
 * every task that needs it (one that fetches it, runs it as a target, or
 * runs a node that reads it or waits for it), so that it is computed
 * beside its readers, as TensorFlow's between-graph replication computes
 * the unplaced part of the graph in every process. Found from the readers
 * back, until nothing changes (a control input may be a later node). */
static int find_ranks(const ct_plan *p, const ct_session *s, const unsigned char *needed,
                      const unsigned char *fed, rank_sets *r) {
  const ct_graph *g = s->graph;
  const int size = ct_cluster_size();
  r->words = (size + 63) / 64;
  r->bits = calloc((size_t)g->n_nodes * (size_t)r->words + 1, sizeof *r->bits);
  uint64_t *all = calloc((size_t)r->words, sizeof *all);
  if (r->bits == NULL || all == NULL) {
    free(all);
    return 1;
  }
  for (int rank = 0; rank < size; ++rank) all[rank / 64] |= 1ull << (rank % 64);
  for (int id = 0; id < g->n_nodes; ++id)
    if (needed[id] && s->node_home[id] >= 0)
      ranks_of(r, id)[s->node_home[id] / 64] |= 1ull << (s->node_home[id] % 64);
  for (int i = 0; i < p->n_fetches + p->n_targets; ++i) {
    const ct_node *n = i < p->n_fetches ? p->fetch_outputs[i].node : p->targets[i - p->n_fetches];
    if (s->node_home[n->id] < 0) add_ranks(r, n->id, all);
  }
  free(all);
  for (int changed = 1; changed;) {
    changed = 0;
    for (int id = g->n_nodes - 1; id >= 0; --id) {
      if (!needed[id] || fed[id]) continue;
      const ct_node *n = g->nodes[id];
      for (int j = 0; j < n->n_inputs + n->n_control; ++j) {
        const ct_node *in = j < n->n_inputs ? n->inputs[j].node : n->control[j - n->n_inputs];
        if (!fed[in->id] && s->node_home[in->id] < 0)
          changed |= add_ranks(r, in->id, ranks_of(r, id));
      }
    }
  }
  return 0;
}

/* The job's edges between tasks, the same list on every rank: each input
 * and control input of a node, from a task it does not run on, and each
 * fetch (every rank fetches every value; fed values are each rank's own),
 * one per value and reading task, sorted. */
static int collect_edges(const ct_plan *p, const ct_session *s, const unsigned char *needed,
                         const unsigned char *fed, const rank_sets *r, edge_list *list) {
  const ct_graph *g = s->graph;
  const int size = ct_cluster_size();
  for (int id = 0; id < g->n_nodes; ++id) {
    if (!needed[id] || fed[id]) continue;
    const ct_node *n = g->nodes[id];
    for (int j = 0; j < n->n_inputs + n->n_control; ++j) {
      const ct_node *in = j < n->n_inputs ? n->inputs[j].node : n->control[j - n->n_inputs];
      const int from = s->node_home[in->id];
      if (fed[in->id] || from < 0) continue; /* unpinned: computed beside its reader */
      const int output = j < n->n_inputs ? n->inputs[j].index : CONTROL_OUTPUT;
      for (int to = 0; to < size; ++to)
        if (has_rank(r, id, to) && add_edge(list, in->id, output, from, to)) return 1;
    }
  }
  for (int i = 0; i < p->n_fetches; ++i) {
    const ct_output *f = &p->fetch_outputs[i];
    const int from = s->node_home[f->node->id];
    if (fed[f->node->id] || from < 0) continue;
    for (int to = 0; to < size; ++to)
      if (add_edge(list, f->node->id, f->index, from, to)) return 1;
  }
  if (list->n == 0) return 0;
  qsort(list->items, (size_t)list->n, sizeof *list->items, edge_order);
  int kept = 1;
  for (int i = 1; i < list->n; ++i)
    if (edge_order(&list->items[i], &list->items[kept - 1]) != 0)
      list->items[kept++] = list->items[i];
  list->n = kept;
  return 0;
}

/* Every rank must have found the same edges: a rank that built another
 * graph, placed it otherwise or ran it with other fetches would wait for
 * messages that never come. */
static int check_ranks_agree(const ct_session *s, const edge_list *list, ct_status *status) {
  uint64_t mine[2] = {(uint64_t)list->n, CT_FNV1A_START};
  for (int i = 0; i < list->n; ++i) {
    const edge *e = &list->items[i];
    const char *name = s->graph->nodes[e->producer]->name;
    mine[1] = ct_fnv1a(mine[1], name, strlen(name) + 1);
    mine[1] = ct_fnv1a(mine[1], &e->output, sizeof e->output);
    mine[1] = ct_fnv1a(mine[1], &e->from, sizeof e->from);
    mine[1] = ct_fnv1a(mine[1], &e->to, sizeof e->to);
  }
  const int size = ct_cluster_size();
  uint64_t *all = malloc((size_t)size * sizeof mine);
  if (all == NULL) {
    ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory planning a run");
    return 1;
  }
  int failed = ct_cluster_allgather(mine, sizeof mine, all, status);
  for (int r = 0; !failed && r < size; ++r)
    if (all[2 * r] != mine[0] || all[2 * r + 1] != mine[1]) {
      ct_status_set(status, CT_FAILED_PRECONDITION,
                    "the ranks disagree on the graph's edges between tasks: rank %d finds %llu, "
                    "rank %d finds %llu%s; every rank must build the same graph, with the same "
                    "device scopes, and make the same runs (feeds, fetches, targets) in the same "
                    "order",
                    ct_cluster_rank(), (unsigned long long)mine[0], r,
                    (unsigned long long)all[2 * r],
                    all[2 * r] == mine[0] ? ", between other nodes or tasks" : "");
      failed = 1;
    }
  free(all);
  return failed;
}

/* "_Send/<node>:<output>", "_Recv/^<node>" (a control edge), ... */
static char *transfer_name(const char *kind, const ct_node *producer, int output) {
  size_t len = strlen(producer->name) + 32;
  char *name = malloc(len);
  if (name == NULL) return NULL;
  if (output == CONTROL_OUTPUT)
    snprintf(name, len, "_%s/^%s", kind, producer->name);
  else
    snprintf(name, len, "_%s/%s:%d", kind, producer->name, output);
  return name;
}

/* The send step of edge k: the value where a host device holds it (a copy
 * first when its device is not host memory), or the producer's end. */
static int add_send(ct_plan *p, const ct_session *s, const edge *e, int k, const int *slot_base,
                    const int *step_of) {
  const ct_node *producer = s->graph->nodes[e->producer];
  int slot = -1, device = ct_plan_receiving_device(s);
  if (e->output != CONTROL_OUTPUT) {
    slot = slot_base[e->producer] + e->output;
    if (p->devices[p->slot_device[slot]]->ops->host_addressable)
      device = p->slot_device[slot];
    else if ((slot = ct_plan_add_copy(p, slot, device, producer->name)) < 0)
      return 1;
  }
  ct_plan_step *step = ct_plan_add_step(p);
  if (step == NULL) return 1;
  step->transfer = CT_TRANSFER_SEND;
  step->peer = e->to;
  step->edge = k;
  step->device = device;
  step->after = e->output == CONTROL_OUTPUT ? step_of[e->producer] : -1;
  step->copy_name = transfer_name("Send", producer, e->output);
  step->input_slots = malloc(sizeof *step->input_slots);
  if (step->copy_name == NULL || step->input_slots == NULL) return 1;
  if (slot >= 0) {
    step->n_inputs = 1;
    step->input_slots[0] = slot;
    p->slot_consumers[slot]++;
  }
  return 0;
}

/* The receive step of edge k: the value into the slot pass 2 gave the
 * remote producer's output on the receiving device, or the producer's end,
 * which this process's steps with that control input wait for. */
static int add_receive(ct_plan *p, const ct_session *s, const edge *e, int k, const int *slot_base,
                       int *step_of) {
  const ct_node *producer = s->graph->nodes[e->producer];
  ct_plan_step *step = ct_plan_add_step(p);
  if (step == NULL) return 1;
  step->transfer = CT_TRANSFER_RECV;
  step->peer = e->from;
  step->edge = k;
  step->after = -1;
  step->device = ct_plan_receiving_device(s);
  step->copy_name = transfer_name("Recv", producer, e->output);
  step->input_slots = malloc(sizeof *step->input_slots);
  if (step->copy_name == NULL || step->input_slots == NULL) return 1;
  if (e->output == CONTROL_OUTPUT) {
    step_of[e->producer] = p->n_steps - 1;
  } else {
    step->first_slot = slot_base[e->producer] + e->output;
    step->n_outputs = 1;
  }
  return 0;
}

int ct_plan_find_edges(ct_plan *p, const ct_session *s, const unsigned char *needed,
                       const unsigned char *fed, unsigned char *runs_here, ct_status *status) {
  const ct_graph *g = s->graph;
  for (int id = 0; id < g->n_nodes; ++id) runs_here[id] = needed[id] && !fed[id];
  if (s->n_remote == 0) return 0;
  rank_sets ranks = {NULL, 0};
  edge_list list = {NULL, 0, 0};
  int failed =
      find_ranks(p, s, needed, fed, &ranks) || collect_edges(p, s, needed, fed, &ranks, &list);
  if (failed) ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory planning a run");
  for (int id = 0; !failed && id < g->n_nodes; ++id)
    runs_here[id] = runs_here[id] && has_rank(&ranks, id, ct_cluster_rank());
  free(ranks.bits);
  if (!failed && list.n > 0 && ct_transfer_tag(list.n, 0, 0) - 1 > ct_cluster_tag_limit()) {
    ct_status_set(status, CT_UNIMPLEMENTED,
                  "the graph has %d edges between tasks, more than MPI's largest tag (%d) can "
                  "tell apart; place the nodes so that fewer values cross tasks",
                  list.n, ct_cluster_tag_limit());
    failed = 1;
  }
  failed = failed || (list.n > 0 && check_ranks_agree(s, &list, status));
  if (failed) {
    free(list.items);
    return 1;
  }
  p->edges = list.items;
  p->n_edges = list.n;
  return 0;
}

int ct_plan_add_transfers(ct_plan *p, const ct_session *s, const int *slot_base, int *step_of,
                          ct_status *status) {
  const int me = ct_cluster_rank();
  int failed = 0;
  for (int k = 0; !failed && k < p->n_edges; ++k) {
    const edge *e = &p->edges[k];
    if (e->from != me && e->to != me) continue;
    failed = e->from == me ? add_send(p, s, e, k, slot_base, step_of)
                           : add_receive(p, s, e, k, slot_base, step_of);
    if (!failed) p->n_transfers++;
  }
  if (!failed && p->n_transfers > 0) {
    p->transfer_steps = malloc((size_t)p->n_transfers * sizeof *p->transfer_steps);
    failed = p->transfer_steps == NULL || ct_plan_transfers_init(p);
    for (int i = 0, t = 0; !failed && i < p->n_steps; ++i)
      if (p->steps[i].transfer != CT_TRANSFER_NONE) {
        p->steps[i].transfer_index = t;
        p->transfer_steps[t++] = i;
      }
  }
  if (failed) ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory planning a run");
  return failed;
}
