/* tool_stop.c -- Ctrl-C and SIGTERM for the tools whose engine winds down on its own
 * (lors_upload, lors_augment, lors_download): the first signal asks the engine to stop (and
 * free what it allocated), a second one ends the program at once.
 *
 * The handler only stores the signal's number in a flag the engine polls
 * (lors_upload_opts_t.stop), so the engine winds down on its own threads, frees its
 * allocations and returns LORS_E_STOPPED; the tool then says what it freed and exits 128 + the
 * signal (130 for SIGINT, 143 for SIGTERM), as a shell reports a death by that signal.  A user
 * who will not wait for that (a depot that does not answer holds the engine up to -T) presses
 * Ctrl-C again: the handler writes one line with write(2), the only output that is safe
 * there, and _exits.  lors_download, which allocates nothing, says instead what -R will find.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tool.h"

static volatile sig_atomic_t stop_sig;
static const char *stop_tool = "lns";
static const char *stop_again = "what was allocated stays on the depots until it expires";

static void say(const char *s)
{
    ssize_t w = write(STDERR_FILENO, s, strlen(s));
    (void)w;
}

static void on_signal(int sig)
{
    if (stop_sig) {
        say("\n");
        say(stop_tool);
        say(": interrupted again: exiting at once; ");
        say(stop_again);
        say("\n");
        _exit(128 + sig);
    }
    stop_sig = sig;
}

static const int stop_sigs[2] = {SIGINT, SIGTERM};
static struct sigaction stop_old[2];

const volatile sig_atomic_t *tool_stop_install(const char *tool, const char *again)
{
    struct sigaction sa;
    stop_tool = tool;
    if (again)
        stop_again = again;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    /* a signal the caller ignores (SIGINT in a script's background job) stays ignored */
    for (int i = 0; i < 2; i++)
        if (sigaction(stop_sigs[i], NULL, &stop_old[i]) == 0 &&
            stop_old[i].sa_handler != SIG_IGN)
            sigaction(stop_sigs[i], &sa, NULL);
    return &stop_sig;
}

void tool_stop_release(void)
{
    for (int i = 0; i < 2; i++)
        sigaction(stop_sigs[i], &stop_old[i], NULL);
}

int tool_stop_exit_code(void)
{
    return stop_sig ? 128 + stop_sig : 0;
}

void tool_freed_text(const lors_freed_t *f, char *buf, size_t size)
{
    if (f->freed + f->unfreed == 0) {
        snprintf(buf, size, "nothing was left allocated");
        return;
    }
    int n = 0;
    if (f->freed > 0)
        n = snprintf(buf, size, "freed %d allocation%s on %d depot%s%s", f->freed,
                     f->freed == 1 ? "" : "s", f->depots, f->depots == 1 ? "" : "s",
                     f->unfreed ? ", " : "");
    if (f->unfreed > 0 && n >= 0 && (size_t)n < size)
        snprintf(buf + n, size - (size_t)n, "%d allocation%s could not be freed and stay%s until "
                 "%s expire", f->unfreed, f->unfreed == 1 ? "" : "s", f->unfreed == 1 ? "s" : "",
                 f->unfreed == 1 ? "it" : "they");
}
