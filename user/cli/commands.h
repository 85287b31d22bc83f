/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The commands of the depwatch binary, one handler each, called by
 * main.c's table with argv[0] the command's name. Each returns the exit
 * status (cli.h). Nothing calls back into main.c.
 */
#ifndef DW_COMMANDS_H
#define DW_COMMANDS_H

/* daemon.c */
int dw_cmd_run(int argc, char **argv);
/* check.c */
int dw_cmd_check(int argc, char **argv);
/* client.c: they ask the running daemon */
int dw_cmd_status(int argc, char **argv);
int dw_cmd_breaker(int argc, char **argv);
int dw_cmd_top(int argc, char **argv);

#endif /* DW_COMMANDS_H */
