/* play_gateway.h -- lors_play --start: a private lors_serve child that serves the one exNode
 * on 127.0.0.1, so that the player reads a URL it can seek in instead of a pipe it cannot.
 * Used by lors_play only (players/lors_play.c); see docs/players.md. */
#ifndef PLAY_GATEWAY_H
#define PLAY_GATEWAY_H

#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <sys/types.h>

#include "xnd.h"

/* A start position: seconds ("90", "90.5") or [h:]m:s ("1:30", "1:02:03.5"; minutes and
 * seconds below 60 after a larger unit).  0 and *secs, or -1. */
int play_parse_pos(const char *s, double *secs);
/* secs as the players take it: seconds, at most 3 decimals, no trailing zeros ("90", "90.5"). */
void play_format_secs(double secs, char *buf, size_t size);

typedef struct play_gateway {
    char dir[1024];          /* mkdtemp in $TMPDIR or /tmp: the port file, the request log, lors_serve's stderr,
                              * and an exNode read from stdin; removed by play_gateway_stop */
    char url[PATH_MAX + 64]; /* http://127.0.0.1:PORT/NAME (without the token) */
    char token[65];          /* the session's random token (hex), in DIR/token, mode 0600 */
    char token_url[PATH_MAX + 160]; /* url?token=TOKEN, for players that take no header */
    pid_t pid;               /* lors_serve; 0 once reaped */
    int status;              /* its exit status once reaped (128 + signal when killed) */
} play_gateway_t;

/* Block SIGINT, SIGTERM and SIGCHLD for play_gateway_wait (before any child is started; a
 * child unblocks them before its exec). */
void play_signals_block(void);

/* Start serve_bin (lors_serve) on 127.0.0.1, any free port, serving the exNode at path ("-":
 * x, read from stdin, written into the private directory as stdin.xnd), with the extra flags
 * (NULL-terminated; --rc, --key-file, -T), and wait until it listens (at most 15 s).  It
 * answers only requests with a fresh random token (g->token; --token-file, so that it is in
 * no argv).  0 with g->url and g->token_url set, or -1 with the reason in err (its stderr's
 * first line when it exited); g is to be stopped in both cases. */
int play_gateway_start(play_gateway_t *g, const char *serve_bin, const char *path,
                       const xnd_t *x, const char *const *extra, char *err, size_t errlen);

/* Write text into the file DIR/player.conf (mode 0600; removed by play_gateway_stop), its
 * path into path: a player's option file with the token's header.  0 or -1 (errno). */
int play_gateway_player_conf(const play_gateway_t *g, const char *text, char *path,
                             size_t size);

/* What ended play_gateway_wait. */
enum { PLAY_PLAYER_DONE = 0, PLAY_GATEWAY_DIED = -1 };

/* Wait for the player (pid), with the signals of play_signals_block blocked.  Returns
 * PLAY_PLAYER_DONE with its exit status (128 + signal when killed) in *pstatus; SIGINT or
 * SIGTERM when one came (the player is then stopped: SIGTERM, SIGKILL after 3 s); or
 * PLAY_GATEWAY_DIED when lors_serve exited first (the player is stopped the same way). */
int play_gateway_wait(play_gateway_t *g, pid_t player, int *pstatus);

/* What the player read, from the request log: GET requests and the bytes they asked for. */
void play_gateway_stats(const play_gateway_t *g, int *requests, int64_t *bytes);

/* Stop lors_serve (SIGTERM, SIGKILL after 3 s) if it runs, and remove the directory. */
void play_gateway_stop(play_gateway_t *g);

#endif
