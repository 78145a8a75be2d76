/* lns_conf.h -- the "key = value" configuration files of the lns daemons.
 *
 * One format for ibp_depot and lbone_server: a setting per line, '#' to the end of a line is
 * a comment, blank lines are skipped, spaces around key and value do not count.  The keys
 * are the long command-line options without their dashes, so a file and flags say the same
 * things; "config" and "check-config" cannot be set from a file.
 */
#ifndef LNS_CONF_H
#define LNS_CONF_H

#include <stddef.h>

/* Applies one setting: 0, or -1 with one line in why. */
typedef int (*lns_conf_set_fn)(void *arg, const char *key, const char *value, char *why,
                               size_t whylen);

/* Read path and apply each setting in order with set(arg, ...).  0, or -1 with
 * "PATH:LINE: why" (or why the file cannot be read) in err; settings before the bad line
 * have been applied. */
int lns_conf_read(const char *path, lns_conf_set_fn set, void *arg, char *err, size_t errlen);

#endif
