/* The `ctower` command's help texts (help.c). */
#ifndef CTOWER_CLI_HELP_H
#define CTOWER_CLI_HELP_H

#ifndef CTOWER_VERSION
#define CTOWER_VERSION "unknown"
#endif

extern const char ct_help_overview[];
extern const char ct_help_train[];
extern const char ct_help_eval[];
extern const char ct_help_devices[];
extern const char ct_help_bench[];
extern const char ct_help_plan[];

#endif
