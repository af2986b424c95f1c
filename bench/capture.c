/* capture.c: bench_capture, for the benchmarks that run a peer (PyTorch) or a launcher (mpirun). */
#include "capture.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "paragon.h"

extern char **environ;

char *bench_capture(char *const argv[], bool show_stderr) {
    int out[2];
    if (pipe(out)) return NULL;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&fa, out[0]);
    if (!show_stderr) posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
    pid_t pid;
    int rc = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(out[1]);
    pgn_text text = {0};
    char buf[4096];
    ssize_t n;
    while (rc == 0 && ((n = read(out[0], buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR)))
        if (n > 0) pgn_text_put(&text, buf, (size_t)n);
    close(out[0]);
    int status = 0;
    if (rc == 0 && waitpid(pid, &status, 0) < 0) rc = errno;
    char *s = pgn_text_take(&text);
    if (rc || !WIFEXITED(status) || WEXITSTATUS(status)) {
        free(s);
        return NULL;
    }
    return s ? s : strdup("");
}

