/* lors_keep_state.h -- lors_keep's state file (lors_keep_state.c has the tables).
 * Each call is one statement, on disk when it returns; 0, or -1 (the database failed). */
#ifndef LNS_LORS_KEEP_STATE_H
#define LNS_LORS_KEEP_STATE_H

#include <stddef.h>
#include <stdint.h>

typedef struct keep_state keep_state_t;

/* Open or create, owner-only with its side files (they hold manage capabilities): 0; 1 when
 * some were open to others and have been made owner-only, a warning naming them in err; -1
 * with "PATH: why" in err. */
int ks_open(const char *path, keep_state_t **out, char *err, size_t errlen);
void ks_close(keep_state_t *s);

/* The allocations made for exnode that its file may not hold yet (manage capabilities). */
int ks_pending_add(keep_state_t *s, const char *exnode, const char *cap, int64_t now);
int ks_pending_del(keep_state_t *s, const char *exnode, const char *cap);
int ks_pending_list(keep_state_t *s, const char *exnode, char ***caps, size_t *n);
void ks_strings_free(char **v, size_t n);

/* The schedule: when exnode is due again (0: never kept, or not known). */
int ks_file_put(keep_state_t *s, const char *exnode, const char *status, int64_t last_pass,
                int64_t next_due);
int64_t ks_file_due(keep_state_t *s, const char *exnode);

#endif
