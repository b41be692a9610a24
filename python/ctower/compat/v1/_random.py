"""TensorFlow's seed rules (tf.get_seed): the (seed, seed2) pair a random op
gives its kernel, from the graph seed (tf.set_random_seed) and the op's own.

- graph seed and op seed: both, each modulo 2**31 - 1;
- graph seed only: the op seed is the count of such ops the graph made
  before it (0, 1, 2, ...), as TensorFlow 2's tf.compat.v1 counts them
  (TensorFlow 1.x took the id of the graph's last op instead, which counts
  TensorFlow's own ops: ctower's graph has other nodes, so that rule is not
  followed);
- op seed only: graph seed DEFAULT_GRAPH_SEED;
- neither: (None, None), TensorFlow's random seeds;
and (0, 0) becomes (0, 2**31 - 1), as TensorFlow avoids it.
"""
from ctower.compat.v1 import _framework as fw

DEFAULT_GRAPH_SEED = 87654321
_MAXINT32 = 2**31 - 1


def get_seed(op_seed):
    graph = fw.get_default_graph()
    if graph.seed is not None:
        if op_seed is None:
            op_seed = graph._seed_count
            graph._seed_count += 1
        seeds = int(graph.seed) % _MAXINT32, int(op_seed) % _MAXINT32
    elif op_seed is not None:
        seeds = DEFAULT_GRAPH_SEED, int(op_seed) % _MAXINT32
    else:
        seeds = None, None
    if seeds == (0, 0):
        return 0, _MAXINT32
    return seeds
