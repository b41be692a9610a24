/* AllReduce on GPUs (the op: src/ops/ops_collective.c).
 *
 * NCCL takes one rank per physical GPU, while virtual devices put several
 * parts on one GPU. So the sum is taken in three stages, all queued on the
 * GPUs' streams with events between them, no host waits:
 *   1. on each physical GPU, the first part's device (its leader) adds that
 *      GPU's parts in input order, on its compute stream;
 *   2. the leaders all-reduce their sums through NCCL on their
 *      communication streams (communicators made when first needed, shared
 *      by the session's AllReduce nodes); with one physical GPU this is a
 *      one-rank NCCL call, kept so that the NCCL path runs wherever towers
 *      do, virtual GPUs included;
 *   3. every other part gets a copy of its leader's sum, on the leader's
 *      communication stream.
 * Every output thus holds bitwise the same values. Stages 2 and 3 leave the
 * compute streams free for the rest of the backward pass: the outputs are
 * finished on the communication streams, after which a mark per leader
 * (output_marks) is recorded, and their readers wait for it. */
#include <nccl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/communication.h"
#include "device/cuda/cuda_libraries.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/launch_basic.h"

/* Communicators between one set of GPUs. Each takes NCCL buffers on every
 * GPU, so all AllReduce nodes between the same GPUs share one set, kept in a
 * list on the first GPU's device until the session ends. */
typedef struct nccl_state {
  int n_ranks;
  int ordinals[CT_MAX_DEVICES];
  ncclComm_t comms[CT_MAX_DEVICES];
  struct nccl_state *next;
} nccl_state;

static void nccl_states_free(void *data) {
  for (nccl_state *st = data, *next; st; st = next) {
    next = st->next;
    for (int r = 0; r < st->n_ranks; ++r)
      if (st->comms[r]) ncclCommDestroy(st->comms[r]);
    free(st);
  }
}

/* NCCL's code and its own account of the error (ncclGetLastError: what
 * failed and why, e.g. which system call or which peer). */
static int nccl_check(ncclResult_t result, ct_kernel_ctx *ctx) {
  if (result == ncclSuccess) return 0;
  const char *detail = ncclGetLastError(NULL);
  ct_status_set(ctx->status, CT_INTERNAL, "%s: NCCL error %s%s%s", ctx->node->name,
                ncclGetErrorString(result), detail && detail[0] ? ": " : "",
                detail ? detail : "");
  return 1;
}

/* The communicators between these GPUs (in rank order), made on first use
 * and kept by `owner`, the first rank's device. Called under
 * ct_cuda_order_lock, like every use of them. */
static nccl_state *communicators(ct_kernel_ctx *ctx, ct_gpu *owner, int n_ranks,
                                 const int *ordinals) {
  for (nccl_state *st = owner->collectives; st; st = st->next) {
    int same = st->n_ranks == n_ranks;
    for (int r = 0; same && r < n_ranks; ++r) same = st->ordinals[r] == ordinals[r];
    if (same) return st;
  }
  if (ct_cuda_library_require(CT_CUDA_NCCL, ctx->node->name, ctx->status)) return NULL;
  nccl_state *st = calloc(1, sizeof *st);
  if (st == NULL) {
    ct_status_set(ctx->status, CT_RESOURCE_EXHAUSTED, "out of host memory for NCCL");
    return NULL;
  }
  st->n_ranks = n_ranks;
  for (int r = 0; r < n_ranks; ++r) st->ordinals[r] = ordinals[r];
  if (nccl_check(ncclCommInitAll(st->comms, n_ranks, st->ordinals), ctx)) {
    nccl_states_free(st);
    return NULL;
  }
  st->next = owner->collectives;
  owner->collectives = st;
  owner->collectives_free = nccl_states_free;
  return st;
}

static cudaStream_t stream_of(const ct_kernel_ctx *ctx, int part) {
  return ct_gpu_of(ctx->input_devices[part])->stream;
}

static cudaStream_t comm_stream_of(const ct_kernel_ctx *ctx, int part) {
  return ct_gpu_of(ctx->input_devices[part])->comm_stream;
}

static int ordinal_of(const ct_kernel_ctx *ctx, int part) {
  return ct_gpu_of(ctx->input_devices[part])->ordinal;
}

/* Stage 1: the leader's output = its GPU's parts, added in input order. */
static int sum_on_leader(ct_kernel_ctx *ctx, int leader, const int *leader_of) {
  const int64_t count = ct_in_elements(ctx, 0);
  const size_t bytes = (size_t)count * sizeof(float);
  float *sum = ct_out_f32(ctx, leader);
  cudaStream_t stream = stream_of(ctx, leader);
  int first = 1;
  cudaSetDevice(ordinal_of(ctx, leader));
  for (int k = 0; k < ctx->n_inputs; ++k) {
    if (leader_of[k] != leader) continue;
    if (ct_cuda_stream_wait(stream, stream_of(ctx, k), ctx->status)) return 1;
    const float *terms[2] = {sum, ct_in_f32(ctx, k)};
    cudaError_t err =
        first ? cudaMemcpyAsync(sum, ct_in_f32(ctx, k), bytes, cudaMemcpyDeviceToDevice, stream)
              : ct_launch_add_n(terms, 2, sum, count, stream);
    if (ct_kernel_launch_failed(ctx, err)) return 1;
    first = 0;
  }
  return 0;
}

/* Stage 2: NCCL between the leaders, each on its communication stream once
 * its sum is there. */
static int join_leaders(ct_kernel_ctx *ctx, int n_leaders, const int *leaders) {
  int ordinals[CT_MAX_DEVICES];
  for (int r = 0; r < n_leaders; ++r) {
    ordinals[r] = ordinal_of(ctx, leaders[r]);
    cudaSetDevice(ordinals[r]);
    if (ct_cuda_stream_wait(comm_stream_of(ctx, leaders[r]), stream_of(ctx, leaders[r]),
                            ctx->status))
      return 1;
  }
  nccl_state *st =
      communicators(ctx, ct_gpu_of(ctx->input_devices[leaders[0]]), n_leaders, ordinals);
  if (st == NULL) return 1;
  const size_t count = (size_t)ct_in_elements(ctx, 0);
  if (nccl_check(ncclGroupStart(), ctx)) return 1;
  for (int r = 0; r < n_leaders; ++r) {
    float *sum = ct_out_f32(ctx, leaders[r]);
    ncclResult_t result = ncclAllReduce(sum, sum, count, ncclFloat, ncclSum, st->comms[r],
                                        comm_stream_of(ctx, leaders[r]));
    if (result != ncclSuccess) {
      ncclGroupEnd();
      return nccl_check(result, ctx);
    }
  }
  return nccl_check(ncclGroupEnd(), ctx);
}

/* Stage 3: a part that is not a leader gets a copy of its leader's sum, on
 * the leader's communication stream (the two are devices of one GPU). The
 * part's output buffer and input are done with on its compute stream:
 * stage 1 waited for that stream before reading the input, and the part's
 * later work waits for stage 1 here, so it cannot overwrite the input (once
 * released) before the leader has read it. */
static int copy_from_leader(ct_kernel_ctx *ctx, int part, int leader) {
  cudaSetDevice(ordinal_of(ctx, part));
  return ct_cuda_stream_wait(stream_of(ctx, part), stream_of(ctx, leader), ctx->status) ||
         ct_kernel_launch_failed(
             ctx, cudaMemcpyAsync(ct_out_f32(ctx, part), ct_out_f32(ctx, leader),
                                  ct_tensor_nbytes(&ctx->outputs[part]), cudaMemcpyDeviceToDevice,
                                  comm_stream_of(ctx, leader)));
}

/* The marks of one AllReduce node: one per leader, recorded on its
 * communication stream after stages 2 and 3; kept in the node's state. */
typedef struct done_marks {
  cudaEvent_t of_part[64]; /* by the leader's part index; NULL until needed */
} done_marks;

static void done_marks_free(void *data) {
  done_marks *m = data;
  for (int k = 0; m && k < 64; ++k)
    if (m->of_part[k]) cudaEventDestroy(m->of_part[k]);
  free(m);
}

/* Records each leader's mark and hands it to the executor for the outputs
 * that leader finished. */
static int mark_outputs(ct_kernel_ctx *ctx, int n_leaders, const int *leaders,
                        const int *leader_of) {
  done_marks *m = ctx->state->data;
  if (m == NULL) {
    m = calloc(1, sizeof *m);
    if (m == NULL) {
      ct_status_set(ctx->status, CT_RESOURCE_EXHAUSTED, "out of host memory in %s",
                    ctx->node->name);
      return 1;
    }
    ctx->state->data = m;
    ctx->state->free_fn = done_marks_free;
  }
  for (int r = 0; r < n_leaders; ++r) {
    const int leader = leaders[r];
    cudaSetDevice(ordinal_of(ctx, leader));
    if ((m->of_part[leader] == NULL &&
         ct_cuda_check(cudaEventCreateWithFlags(&m->of_part[leader], cudaEventDisableTiming),
                       ctx->node->name, ctx->status)) ||
        ct_cuda_check(cudaEventRecord(m->of_part[leader], comm_stream_of(ctx, leader)),
                      ctx->node->name, ctx->status))
      return 1;
  }
  for (int k = 0; k < ctx->n_inputs; ++k) ctx->output_marks[k] = m->of_part[leader_of[k]];
  return 0;
}

void ct_gpu_all_reduce(ct_kernel_ctx *ctx) {
  const int n = ctx->n_inputs;
  for (int k = 0; k < n; ++k)
    if (ctx->input_devices[k] == NULL || ctx->input_devices[k]->ops != ctx->device->ops) {
      ct_status_set(ctx->status, CT_INVALID_ARGUMENT,
                    "%s: an AllReduce on GPUs needs every part on a GPU, but part %d is on %s",
                    ctx->node->name, k,
                    ctx->input_devices[k] ? ctx->input_devices[k]->name : "the host");
      return;
    }
  if (ct_in_elements(ctx, 0) == 0) return;
  int leader_of[64], leaders[64], n_leaders = 0;
  for (int k = 0; k < n; ++k) {
    leader_of[k] = k;
    for (int j = 0; j < k; ++j)
      if (ordinal_of(ctx, j) == ordinal_of(ctx, k)) {
        leader_of[k] = leader_of[j];
        break;
      }
    if (leader_of[k] == k) leaders[n_leaders++] = k;
  }
  /* Collectives launched from different worker threads must reach every
   * GPU's stream in one order, or two all-reduces could each wait for a rank
   * queued behind the other; cross-stream waits of copies between GPUs must
   * not come between the ranks either (cuda_device.h). */
  pthread_mutex_lock(&ct_cuda_order_lock);
  int failed = 0;
  for (int r = 0; r < n_leaders && !failed; ++r) failed = sum_on_leader(ctx, leaders[r], leader_of);
  if (!failed) failed = join_leaders(ctx, n_leaders, leaders);
  for (int k = 0; k < n && !failed; ++k)
    if (leader_of[k] != k) failed = copy_from_leader(ctx, k, leader_of[k]);
  if (!failed) failed = mark_outputs(ctx, n_leaders, leaders, leader_of);
  pthread_mutex_unlock(&ct_cuda_order_lock);
  /* the worker's current device is its own again */
  cudaSetDevice(ct_kernel_gpu(ctx)->ordinal);
}

/* CollectiveReduce and CollectiveBroadcast on a GPU: the values go through
 * host memory (the ranks meet over MPI), so the worker waits for the copy
 * out, and the copy back is done before the host buffer goes. A process on
 * its own copies on the GPU. */
typedef int (*host_collective)(float *host, const ct_kernel_ctx *ctx);

static int host_reduce(float *host, const ct_kernel_ctx *ctx) {
  const ct_collective_attrs *a = &ctx->attrs->collective;
  const int64_t n = ct_in_elements(ctx, 0);
  if (!a->rooted) return ct_cluster_allreduce_f32(host, n, ctx->status);
  if (ct_cluster_reduce_f32(host, n, a->root, ctx->status)) return 1;
  if (ct_cluster_rank() != a->root) memset(host, 0, (size_t)n * sizeof *host);
  return 0;
}

static int host_broadcast(float *host, const ct_kernel_ctx *ctx) {
  return ct_cluster_broadcast(host, ct_tensor_nbytes(&ctx->inputs[0]), ctx->attrs->collective.root,
                              ctx->status);
}

static void gpu_through_host(ct_kernel_ctx *ctx, host_collective collective) {
  const ct_gpu *gpu = ct_kernel_gpu(ctx);
  const size_t nbytes = ct_tensor_nbytes(&ctx->inputs[0]);
  float *out = ct_out_f32(ctx, 0);
  if (out != ct_in_f32(ctx, 0) &&
      ct_cuda_check(
          cudaMemcpyAsync(out, ct_in_f32(ctx, 0), nbytes, cudaMemcpyDeviceToDevice, gpu->stream),
          ctx->node->name, ctx->status))
    return;
  if (ct_cluster_size() == 1 || nbytes == 0) return;
  float *host = malloc(nbytes);
  if (host == NULL) {
    ct_status_set(ctx->status, CT_RESOURCE_EXHAUSTED, "out of host memory in %s", ctx->node->name);
    return;
  }
  if (!ct_cuda_check(cudaMemcpyAsync(host, out, nbytes, cudaMemcpyDeviceToHost, gpu->stream),
                     ctx->node->name, ctx->status) &&
      !ct_cuda_check(cudaStreamSynchronize(gpu->stream), ctx->node->name, ctx->status)) {
    ct_cluster_progress((int64_t)ctx->step, (int)ctx->attrs->collective.instance_key,
                        ctx->node->name);
    if (!collective(host, ctx))
      ct_cuda_check(cudaMemcpyAsync(out, host, nbytes, cudaMemcpyHostToDevice, gpu->stream),
                    ctx->node->name, ctx->status);
  }
  cudaStreamSynchronize(gpu->stream); /* the copy back reads host */
  free(host);
}

static void gpu_collective_reduce(ct_kernel_ctx *ctx) { gpu_through_host(ctx, host_reduce); }

static void gpu_collective_broadcast(ct_kernel_ctx *ctx) { gpu_through_host(ctx, host_broadcast); }

const ct_kernel_def ct_cuda_collective_kernels[] = {
    {"AllReduce", CT_DEVICE_KIND_GPU, ct_gpu_all_reduce, ct_kernel_scratch_not_estimated},
    {"CollectiveReduce", CT_DEVICE_KIND_GPU, gpu_collective_reduce, ct_kernel_scratch_not_estimated},
    {"CollectiveBroadcast", CT_DEVICE_KIND_GPU, gpu_collective_broadcast, ct_kernel_scratch_not_estimated},
    {0, CT_DEVICE_KIND_GPU, 0, 0},
};
