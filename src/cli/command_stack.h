/* The stack the command runs on (command_stack.c). */
#ifndef CTOWER_CLI_COMMAND_STACK_H
#define CTOWER_CLI_COMMAND_STACK_H

/* Returns fn(argc, argv), run on a stack of at least 8 MiB: on the calling
 * thread where the process's stack limit allows that much, else on a thread
 * of its own, every thread created after it getting as much. */
int ct_cli_run_on_command_stack(int (*fn)(int, char **), int argc, char **argv);

#endif
