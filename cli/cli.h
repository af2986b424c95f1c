/* cli.h: the commands of `paragon` that live in their own files, and the exit statuses they
 * share. Every command takes argv with argv[0] its own name, as getopt_long expects, and
 * answers --help. */
#ifndef PGN_CLI_H
#define PGN_CLI_H

#include <jansson.h>
#include <stdbool.h>

#include "paragon.h"

/* Exit statuses, the same for every command (docs/guide.md lists them after its command examples). */
enum {
    CLI_EXIT_OK = 0,
    CLI_EXIT_FAILED = 1,      /* the work failed, or the server refused the request */
    CLI_EXIT_USAGE = 2,       /* bad arguments: nothing was done */
    CLI_EXIT_CANCELLED = 3,   /* the job waited for was cancelled */
    CLI_EXIT_UNREACHABLE = 4, /* no answer from paragond */
    CLI_EXIT_INTERRUPTED = 130 /* Ctrl-C (128 + SIGINT), after saying what was kept */
};

/* The check (cli_opt.check) of --kernels FAMILY of the commands that open devices here (run,
 * bench, devices): auto, cpu or gpu, set as PARAGON_KERNELS, which the engine reads where it
 * builds a device's profile. Prints why and returns false for anything else. */
bool cli_kernels_option(const char *cmd, const char *option, const char *family);

/* The device's tuning from <data_dir>/tunings.json set on dev when it is opened, and on profile
 * when that is given (the profile of a device not opened); with calibrate (and dev), a device
 * without a fitting one is calibrated first and its tuning kept there. False (after saying why)
 * when the calibration failed. */
bool cli_tuning(const char *cmd, const pgn_device_info *info, const char *data_dir, pgn_device *dev, bool calibrate,
                pgn_device_profile *profile);

/* On this machine (the engine linked in): */
int cmd_bench(int argc, char **argv);    /* bench.c */
int cmd_generate(int argc, char **argv); /* generate.c; with --job, on the server */

/* Against a running paragond: jobs (client_jobs.c) */
int cmd_submit(int argc, char **argv);
int cmd_jobs(int argc, char **argv);
int cmd_status(int argc, char **argv);
int cmd_logs(int argc, char **argv);
int cmd_metrics(int argc, char **argv);
int cmd_cancel(int argc, char **argv);
int cmd_resume(int argc, char **argv);
int cmd_delete(int argc, char **argv);
/* and files (client_files.c) */
int cmd_export(int argc, char **argv);
int cmd_datasets(int argc, char **argv);
int cmd_nodes(int argc, char **argv);
int cmd_upload(int argc, char **argv);

#endif
