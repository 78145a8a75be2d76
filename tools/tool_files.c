/* tool_files.c -- the network files of lors_serve and lors_mount: a lors_dir of the paths
 * given on one shared block cache, with the reader settings both programs take. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tool.h"

int tool_files_open(const char *tool, tool_files_t *tf, char **paths, int npaths, int threads,
                    int64_t timeout_s, int64_t readahead, int64_t cache_bytes, int fetches,
                    const char *key_file)
{
    char err[600];
    int code;
    memset(tf, 0, sizeof *tf);
    lors_reader_opts_t ro;
    lors_reader_opts_init(&ro);
    ro.readahead = readahead;
    ro.dl.threads = threads;
    ro.dl.timeout_ms = (int)timeout_s * 1000;
    if (key_file || getenv("LNS_KEY") || getenv("LNS_KEY_FILE")) {
        const unsigned char *use = NULL;
        if ((code = tool_key(tool, "aes", key_file, tf->key, &use)))
            return code;
        ro.dl.key = use;
    }
    lors_cache_opts_t co;
    lors_cache_opts_init(&co);
    co.bytes = cache_bytes;
    co.max_jobs = fetches;
    co.timeout_ms = ro.dl.timeout_ms;
    if (!(tf->cache = lors_cache_new(&co))) {
        tool_error(tool, "cannot make the cache: %s", strerror(errno));
        return TOOL_EXIT_INTERNAL;
    }
    if (!(tf->dir = lors_dir_new(&ro, tf->cache))) {
        tool_error(tool, "out of memory");
        tool_files_close(tf);
        return TOOL_EXIT_INTERNAL;
    }
    for (int i = 0; i < npaths; i++) {
        int rc = lors_dir_add(tf->dir, paths[i], err, sizeof err);
        if (rc != LORS_OK) {
            code = rc == LORS_E_NOMEM ? TOOL_EXIT_INTERNAL : tool_usage(tool, "%s", err);
            if (rc == LORS_E_NOMEM)
                tool_error(tool, "out of memory");
            tool_files_close(tf);
            return code;
        }
    }
    return TOOL_EXIT_OK;
}

void tool_files_close(tool_files_t *tf)
{
    lors_dir_free(tf->dir);
    lors_cache_free(tf->cache);
    tf->dir = NULL;
    tf->cache = NULL;
}
