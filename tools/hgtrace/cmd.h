/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef HGTRACE_CMD_H
#define HGTRACE_CMD_H

int cmd_report(int argc, char **argv);
int cmd_dump(int argc, char **argv);
int cmd_convert(int argc, char **argv);
int cmd_simulate(int argc, char **argv);
int cmd_attach(int argc, char **argv);
int cmd_record(int argc, char **argv);
int cmd_agent(int argc, char **argv);
int cmd_listen(int argc, char **argv);
int cmd_setup_guest(int argc, char **argv);
int cmd_gen(int argc, char **argv);
int cmd_simpletrace(int argc, char **argv);
int cmd_ctl(int argc, char **argv);

/* Print "hgtrace: MESSAGE" for the library's last error, or @fallback. */
void cmd_error(const char *fallback);

#endif
