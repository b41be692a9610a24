/* The variable-update strategies, by the value of ct_variable_update that
 * names each: a new strategy is one file that fills a ct_strategy and one
 * line here. */
#include "parallel/parallel_internal.h"

const ct_strategy *ct_strategy_of(ct_variable_update update) {
  static const ct_strategy *const strategies[CT_VARIABLE_UPDATE_COUNT] = {
      [CT_VARIABLE_UPDATE_PARAMETER_SERVER] = &ct_strategy_parameter_server,
      [CT_VARIABLE_UPDATE_REPLICATED] = &ct_strategy_replicated,
      [CT_VARIABLE_UPDATE_PS_TASKS] = &ct_strategy_ps_tasks,
      [CT_VARIABLE_UPDATE_ASYNC] = &ct_strategy_async,
      [CT_VARIABLE_UPDATE_BLOCK_MOMENTUM] = &ct_strategy_block_momentum,
  };
  return (int)update >= 0 && update < CT_VARIABLE_UPDATE_COUNT ? strategies[update] : NULL;
}
