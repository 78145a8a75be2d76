/* lns_fail.h -- failpoints: named steps of a daemon where a test makes the step fail or the
 * process die, to prove that every failure and every crash leaves consistent state.
 *
 * A failpoint is one call at the step it names, e.g.
 *     if (lns_fail("data.fsync") < 0 || fdatasync(fd) < 0)  ...the error path...
 * Unarmed (no LNS_FAILPOINTS in the environment: every production run) it costs one load and
 * one branch.  Armed, from the environment variable read once at the first call:
 *     LNS_FAILPOINTS="NAME=ACTION[@N][,NAME=ACTION[@N]...]"
 *         ACTION  error       the step fails with ENOSPC (lns_fail returns -1, errno set)
 *                 eio         the step fails with EIO
 *                 kill        the process gets SIGKILL there, before the step
 *                 stop        the process gets SIGSTOP there (hung until a SIGCONT, then
 *                             the step goes on); the thread that reached the point is
 *                             stopped before it goes past it
 *         @N      on the N-th time the point is reached (default: the first), once;
 *                 @N+ every time from the N-th on
 *     LNS_FAILPOINTS="random=SEED/PERMILLE[/kill]"
 *         every point fails (ENOSPC or EIO) with probability PERMILLE/1000, drawn from SEED;
 *         with /kill one hit in twenty of those dies instead
 *     LNS_FAILPOINTS_LOG=FILE   appends "NAME\n" for every point reached (coverage)
 * What happened is logged at WARN, so a test's depot log shows each injected failure.
 */
#ifndef LNS_FAIL_H
#define LNS_FAIL_H

/* 0: go on.  -1 with errno set: the step must behave as if it failed.  Does not return when
 * the point is armed to kill. */
int lns_fail(const char *name);

/* 1 if failpoints are armed: a step that has a point only on a slower path (a send cut in
 * two) takes that path then, and the fast one in every production run. */
int lns_fail_armed(void);

#endif
